#include "runtime/placement.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace weir {

int place_graph(Graph& graph, const std::vector<Device>& devices, const Device& default_device) {
  auto known = [&](const Device& d) { return std::find(devices.begin(), devices.end(), d) != devices.end(); };
  if (!known(default_device)) {
    throw Error(ErrorKind::kInvalidArgument,
                "the default device " + default_device.to_string() + " is not one of the plan's devices");
  }
  std::vector<Node*> nodes = graph.topological_order();
  for (Node* node : nodes) {
    if (!node->device()) {
      node->set_device(default_device);
    } else if (!known(*node->device())) {
      std::string list;
      for (const Device& d : devices) list += (list.empty() ? "" : ", ") + d.to_string();
      throw Error(ErrorKind::kInvalidArgument, "node '" + node->name() + "' asks for device " +
                                                   node->device()->to_string() + ", but the plan has only " + list)
          .with_node(node->name());
    }
  }
  int copies = 0;
  for (Node* producer : nodes) {
    for (Value* value : producer->outputs()) {
      if (value == nullptr) continue;
      // Readers by device, other than the producer's.
      std::map<std::string, std::vector<std::pair<Node*, size_t>>> remote;
      std::map<std::string, Device> device_of;
      for (const Use& use : value->uses()) {
        if (use.node == nullptr || *use.node->device() == *producer->device()) continue;
        std::string key = use.node->device()->to_string();
        remote[key].emplace_back(use.node, static_cast<size_t>(use.input_index));
        device_of.emplace(key, *use.node->device());
      }
      for (auto& [key, readers] : remote) {
        Node* copy = graph.add_node("DeviceCopy", {value}, 1, {}, graph.unique_name(value->name() + "@" + key));
        copy->set_device(device_of.at(key));
        copy->output(0)->set_type(value->type());
        for (auto& [reader, index] : readers) reader->set_input(index, copy->output(0));
        ++copies;
      }
    }
  }
  return copies;
}

}  // namespace weir
