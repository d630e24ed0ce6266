#include "runtime/placement.h"

#include <algorithm>
#include <map>
#include <optional>

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
  // Where a value lives, for the copies its readers elsewhere need: its
  // producer's device. A graph input, constant or parameter needs none (the
  // session puts it on its first reader's device, and host devices share
  // memory), except one read both on the host and on a GPU: it lives on the
  // GPU, and its host readers read a copy, as they read a GPU node's output.
  auto home_of = [](const Value& value) -> std::optional<Device> {
    if (value.producer() != nullptr) return *value.producer()->device();
    std::optional<Device> gpu;
    bool host = false;
    for (const Use& use : value.uses()) {
      if (use.node == nullptr) continue;
      if (use.node->device()->type == DeviceType::kCpu) {
        host = true;
      } else if (!gpu) {
        gpu = *use.node->device();
      }
    }
    if (gpu && host) return gpu;
    return std::nullopt;  // read where it is: no copies (host devices share memory)
  };
  std::vector<Value*> values;
  for (Value* value : graph.inputs()) values.push_back(value);
  for (Value* value : graph.constants()) values.push_back(value);
  for (Value* value : graph.persistents()) values.push_back(value);
  for (Node* producer : nodes) {
    for (Value* value : producer->outputs()) {
      if (value != nullptr) values.push_back(value);
    }
  }
  for (Value* value : values) {
    const std::optional<Device> home = home_of(*value);
    if (!home) continue;
    // Readers by device, other than the value's.
    std::map<std::string, std::vector<std::pair<Node*, size_t>>> remote;
    std::map<std::string, Device> device_of;
    for (const Use& use : value->uses()) {
      if (use.node == nullptr || *use.node->device() == *home) continue;
      std::string key = use.node->device()->to_string();
      remote[key].emplace_back(use.node, static_cast<size_t>(use.input_index));
      device_of.emplace(key, *use.node->device());
    }
    for (auto& [key, readers] : remote) {
      Node* copy = graph.add_node("DeviceCopy", {value}, 1, {}, graph.unique_name(value->name() + "@" + key));
      // Onto a device, the reader's device copies; back to the host, the
      // GPU does (the host cannot read its memory).
      const bool to_host = device_of.at(key).type == DeviceType::kCpu && home->type != DeviceType::kCpu;
      copy->set_device(to_host ? *home : device_of.at(key));
      if (to_host) copy->set_attr("to_host", Attribute(int64_t{1}));
      copy->output(0)->set_type(value->type());
      for (auto& [reader, index] : readers) reader->set_input(index, copy->output(0));
      ++copies;
    }
  }
  return copies;
}

}  // namespace weir
