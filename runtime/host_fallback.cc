#include "runtime/host_fallback.h"

#include <map>

namespace weir {

namespace {

// Whether `node` may run on the host instead of the device it has no kernel
// on (runtime/host_fallback.h says why not).
bool may_move_to_host(const Node& node, const OpRegistry& ops) {
  const OpSchema* schema = ops.find(node.op_type(), node.domain());
  if (schema == nullptr) return false;
  for (OpTrait trait : {OpTrait::kCollective, OpTrait::kSideEffects, OpTrait::kStateful}) {
    if (schema->has(trait)) return false;
  }
  for (const Value* input : node.inputs()) {
    if (input != nullptr && input->is_persistent()) return false;
  }
  return true;
}

}  // namespace

std::string HostFallback::summary() const {
  std::vector<std::string> order;
  std::map<std::string, int> counts;
  for (const Node* node : nodes) {
    const std::string op = node->domain().empty() ? node->op_type() : node->domain() + "." + node->op_type();
    if (counts[op]++ == 0) order.push_back(op);
  }
  std::string text;
  for (const std::string& op : order) text += (text.empty() ? "" : ", ") + op + " (" + std::to_string(counts[op]) + ")";
  return text;
}

HostFallback place_on_host_where_no_kernel(Graph& graph, const Device& device, const Device& host,
                                           const KernelRegistry& kernels, const OpRegistry& ops) {
  HostFallback fallback;
  if (device.type == DeviceType::kCpu) return fallback;
  for (Node* node : graph.topological_order()) {
    if (node->device()) continue;
    const KernelOp op(node->domain(), node->op_type());
    const DType dtype = kernel_dtype(*node);
    if (kernels.find(op, device.type, dtype) != nullptr || kernels.find(op, host.type, dtype) == nullptr) continue;
    if (!may_move_to_host(*node, ops)) continue;
    node->set_device(host);
    fallback.nodes.push_back(node);
  }
  return fallback;
}

size_t rank_devices(const std::vector<Device>& devices) {
  if (devices.empty() || devices.front().type == DeviceType::kCpu) return devices.size();
  size_t ranks = 0;
  while (ranks < devices.size() && devices[ranks].type != DeviceType::kCpu) ++ranks;
  return ranks;
}

}  // namespace weir
