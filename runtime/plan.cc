#include "runtime/plan.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/logging.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/register_ops.h"
#include "passes/pass_manager.h"
#include "runtime/host_fallback.h"
#include "runtime/placement.h"

namespace weir {

Plan::Plan(std::unique_ptr<Graph> graph, std::vector<Device> devices, Schedule schedule, MemoryPlan memory,
           const KernelRegistry& kernels, const OpRegistry* replan)
    : graph_(std::move(graph)), devices_(std::move(devices)), schedule_(std::move(schedule)), memory_(std::move(memory)),
      replan_(replan) {
  for (const ScheduleStep& step : schedule_.steps) {
    kernels_.push_back(kernels.create(*step.node, step.device.type));
  }
  auto add = [&](const Value* value) {
    if (value == nullptr || value_index_.count(value)) return;
    value_index_[value] = static_cast<int>(values_.size());
    values_.push_back(value);
  };
  for (const Value* v : graph_->inputs()) add(v);
  for (const Value* v : graph_->constants()) add(v);
  for (const Value* v : graph_->persistents()) add(v);
  for (const ScheduleStep& step : schedule_.steps) {
    for (const Value* v : step.node->outputs()) add(v);
  }
  auto indices = [&](const std::vector<Value*>& list) {
    std::vector<int> out;
    for (const Value* v : list) out.push_back(v == nullptr ? -1 : value_index_.at(v));
    return out;
  };
  for (const ScheduleStep& step : schedule_.steps) {
    step_inputs_.push_back(indices(step.node->inputs()));
    step_outputs_.push_back(indices(step.node->outputs()));
  }
}

size_t Plan::rank_devices() const { return weir::rank_devices(devices_); }

int Plan::device_index(const Device& device) const {
  auto it = std::find(devices_.begin(), devices_.end(), device);
  if (it == devices_.end()) throw Error(ErrorKind::kInvalidArgument, device.to_string() + " is not a device of this plan");
  return static_cast<int>(it - devices_.begin());
}

std::string Plan::to_string() const {
  std::ostringstream out;
  out << "plan '" << graph_->name() << "': " << schedule_.steps.size() << " steps on";
  for (const Device& d : devices_) out << " " << d.to_string();
  out << "\n";
  for (size_t i = 0; i < schedule_.steps.size(); ++i) {
    const ScheduleStep& step = schedule_.steps[i];
    const StreamInfo& stream = schedule_.streams[step.stream];
    out << "#" << i << " " << step.node->name() << " " << step.node->op_type() << " " << step.device.to_string() << "/"
        << stream.name;
    if (!step.predecessors.empty()) {
      out << " after";
      for (int p : step.predecessors) out << " #" << p;
    }
    out << "\n";
  }
  out << "memory: " << memory_.planned_values << " values (" << memory_.in_place_values << " in place, " << memory_.joined_values << " joined), "
      << memory_.total_value_bytes << " bytes without reuse, " << memory_.planned_bytes() << " bytes planned";
  for (const DeviceArena& arena : memory_.arenas) out << "; " << arena.device.to_string() << " " << arena.bytes;
  out << "\n";
  return out.str();
}

std::shared_ptr<const Plan> compile(const Graph& graph, const CompileOptions& options) {
  return compile(graph.clone(), options);
}

std::shared_ptr<const Plan> compile(std::unique_ptr<Graph> placed, const CompileOptions& options) {
  if (placed == nullptr) throw Error(ErrorKind::kInvalidArgument, "compile: no graph given");
  const OpRegistry& ops = options.ops != nullptr ? *options.ops : default_op_registry();
  const KernelRegistry& kernels = options.kernels != nullptr ? *options.kernels : default_kernel_registry();
  std::vector<Device> devices = options.devices.empty() ? std::vector<Device>{options.default_device} : options.devices;
  std::set<std::string> seen;
  for (const Device& device : devices) {
    if (!seen.insert(device.to_string()).second) {
      throw Error(ErrorKind::kInvalidArgument, "device " + device.to_string() + " is listed twice");
    }
  }
  verify_graph(*placed, ops);
  infer_graph_types(*placed, ops);
  if (options.opt_level > 0 || !options.disabled_passes.empty() || options.amp) {
    // The channels-last layout (and the concat split that follows it) lays
    // convs out for the CPU's oneDNN kernels (ChannelsLastPool exists only
    // there): a plan with another device keeps the graph's own layout.
    std::set<std::string> disabled = options.disabled_passes;
    if (std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.type != DeviceType::kCpu; })) {
      disabled.insert({"channels_last_layout", "concat_conv_split"});
    }
    PassContext context(ops, &kernels);
    inference_pipeline(options.opt_level, disabled, options.amp)->run(*placed, context);
  }
  if (options.host_fallback) {  // nothing moves when the default device is the host
    const Device host = Device::cpu(0);
    HostFallback fallback = place_on_host_where_no_kernel(*placed, options.default_device, host, kernels, ops);
    if (!fallback.nodes.empty()) {
      if (std::find(devices.begin(), devices.end(), host) == devices.end()) devices.push_back(host);
      logger().warn("{} node(s) run on {}: {} has no kernel for {}", fallback.nodes.size(), host.to_string(),
                   options.default_device.to_string(), fallback.summary());
    }
  }
  place_graph(*placed, devices, options.default_device);
  Schedule schedule = build_schedule(*placed, devices, ops);
  MemoryPlan memory = options.plan_memory ? plan_memory(*placed, schedule, ops, nullptr, options.join_pieces) : MemoryPlan{};
  return std::make_shared<const Plan>(std::move(placed), std::move(devices), std::move(schedule), std::move(memory),
                                      kernels, options.plan_memory ? &ops : nullptr);
}

}  // namespace weir
