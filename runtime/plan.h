// Plan — a graph compiled once for running many times: every node placed on
// a device and a stream, its kernel instantiated, the schedule fixed as data
// and the memory of intermediate values planned.
//
//   weir::CompileOptions options;
//   options.devices = {weir::Device::cpu(0), weir::Device::cpu(1)};
//   std::shared_ptr<const weir::Plan> plan = weir::compile(graph, options);
//   std::cout << plan->to_string();      // the schedule: step, node, device, stream, deps
//   plan->memory().planned_bytes();      // arena bytes over all devices
//   weir::Session session(plan);         // runtime/session.h runs it
//
// compile() = placement (runtime/placement.h: devices, streams, DeviceCopy
// where a value crosses devices) → schedule (runtime/schedule.h: one global
// order that every device's in-order streams follow) → kernels → memory plan
// (runtime/memory_planner.h). The pass pipeline runs before placement once
// passes exist.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "ops/kernel.h"
#include "runtime/memory_planner.h"
#include "runtime/schedule.h"

namespace weir {

struct CompileOptions {
  // The devices the plan runs on; a node's device annotation must be one of
  // them. Empty: {default_device}. Device i runs as communicator rank i.
  std::vector<Device> devices;
  // Where nodes without a device annotation run.
  Device default_device = Device::cpu();
  // Plan intermediate values into one arena per device (offsets, reuse,
  // in-place). Off: every value is allocated when it is produced.
  bool plan_memory = true;
  // Place a Concat's inputs inside its output and a Split's outputs inside
  // its input where safe (runtime/memory_planner.h). Off: the copies they
  // save are made, to measure them (bench/bucket_views_bench).
  bool join_pieces = true;
  // The inference pass pipeline to run first (passes/pass_manager.h): 0
  // runs none, 3 all. Level 2 and up freeze parameters nothing writes into
  // constants, after which Session::set_state no longer reaches them; that
  // is why the default is 0.
  int opt_level = 0;
  std::set<std::string> disabled_passes;
  // Automatic mixed precision for inference (bf16 or f16): the pipeline runs
  // the convs and matmuls in it (passes/pass_manager.h). nullopt: f32.
  std::optional<DType> amp;
  // Nodes the default device (a GPU) has no kernel for run on the host
  // (cpu:0, added after the plan's devices), with copies between; a node
  // that cannot move keeps the refusal (runtime/host_fallback.h). Off: such
  // a node fails compile(), named.
  bool host_fallback = false;
  const OpRegistry* ops = nullptr;           // nullptr: default_op_registry()
  const KernelRegistry* kernels = nullptr;   // nullptr: default_kernel_registry()
};

class Plan {
 public:
  // Assembles a plan from a placed graph, its schedule and memory plan, and
  // instantiates the kernels. compile() and the plan-file loader call it.
  // `replan` (the op registry) lets a Session plan memory again for the
  // shapes it is fed when the graph has symbolic dims; nullptr: it does not.
  Plan(std::unique_ptr<Graph> graph, std::vector<Device> devices, Schedule schedule, MemoryPlan memory,
       const KernelRegistry& kernels, const OpRegistry* replan = nullptr);

  const Graph& graph() const { return *graph_; }
  const std::vector<Device>& devices() const { return devices_; }
  // The index of `device` in devices(): its rank in the in-process group of
  // a plan that holds several devices.
  int device_index(const Device& device) const;
  const Schedule& schedule() const { return schedule_; }
  const MemoryPlan& memory() const { return memory_; }
  const OpRegistry* replan_registry() const { return replan_; }
  // How many of devices() are ranks: all but the host a GPU plan falls
  // back on (runtime/host_fallback.h).
  size_t rank_devices() const;
  OpKernel& kernel(size_t step) const { return *kernels_.at(step); }
  // Index of each value among graph().values(), for per-run tables.
  int value_index(const Value* value) const { return value_index_.at(value); }
  const std::vector<const Value*>& values() const { return values_; }
  // Value indices of a step's inputs and outputs; -1 where absent.
  const std::vector<int>& step_inputs(size_t step) const { return step_inputs_[step]; }
  const std::vector<int>& step_outputs(size_t step) const { return step_outputs_[step]; }
  bool has_collectives() const { return schedule_.has_collectives; }

  // One line per step: "#3 relu1 Relu cpu:0/compute after #1 #2", then the memory plan.
  std::string to_string() const;

 private:
  std::unique_ptr<Graph> graph_;
  std::vector<Device> devices_;
  Schedule schedule_;
  MemoryPlan memory_;
  const OpRegistry* replan_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;
  std::vector<const Value*> values_;
  std::unordered_map<const Value*, int> value_index_;
  std::vector<std::vector<int>> step_inputs_;
  std::vector<std::vector<int>> step_outputs_;
};

// Compiles a copy of `graph` (which is left unchanged). Throws weir::Error
// naming the node for an unknown op, a device outside options.devices, a
// missing kernel, or collectives that cannot be ordered alike on all devices.
std::shared_ptr<const Plan> compile(const Graph& graph, const CompileOptions& options = {});
// The same, on a graph the plan takes over: nothing is copied, and passes may
// rewrite constants that no one else holds where they are (a loaded model's
// weights folded with BatchNorm), which saves start-up time and memory.
std::shared_ptr<const Plan> compile(std::unique_ptr<Graph> graph, const CompileOptions& options = {});

}  // namespace weir
