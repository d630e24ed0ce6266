// SubgraphRunner — a graph whose kernels are created once and which then
// runs many times on the CPU, node by node in topological order: the body of
// a control-flow op (If's branches, Loop's and Scan's body), run once per
// iteration, and the reference evaluator's whole graph (graph_evaluator.h).
//
//   SubgraphRunner body(node.attr("body").g(), registry);     // kernels created here
//   for (...) {
//     std::vector<Tensor> outputs = body.run({i, cond, y}, ctx.allocator(), &ctx);
//   }
//
// Each node's KernelContext takes the allocator it is given and, when a
// parent context is given (the control-flow node's own), that context's
// backend, stream, communicator, parameter client and RNG counter: a body
// runs inside the step of the node that owns it. Values are dropped after
// their last reader, so a long loop holds one iteration's intermediates.
//
// What it does not do: placement, memory planning or parallelism (bodies
// run on the CPU, on the caller's thread), or feeding by name.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "ops/kernel.h"

namespace weir {

class SubgraphRunner {
 public:
  // Creates a CPU kernel for every node of `graph` from `kernels`. The graph
  // is kept alive by the runner and must not change while it lives.
  SubgraphRunner(std::shared_ptr<const Graph> graph, const KernelRegistry& kernels);
  SubgraphRunner(SubgraphRunner&&) noexcept;
  ~SubgraphRunner();

  const Graph& graph() const { return *graph_; }

  // The graph's outputs, in order, for `inputs` bound to graph.inputs() in
  // order. Each input must match its declared type (symbolic dims take any
  // size): a mismatch is a weir::Error(kShape) naming the input. A kernel's
  // output that contradicts its value's declared type is a weir::Error
  // (kInternal) naming the node. Safe to call from several threads at once.
  std::vector<Tensor> run(std::vector<Tensor> inputs, Allocator& allocator,
                          const KernelContext* parent = nullptr) const;

  // Every value the run produced or read (inputs, constants, persistent
  // values, every node output), keyed by value. Persistent values must carry
  // their tensor.
  std::unordered_map<const Value*, Tensor> run_all(std::vector<Tensor> inputs, Allocator& allocator,
                                                   const KernelContext* parent = nullptr) const;

 private:
  struct Step;
  std::vector<Tensor> execute(std::vector<Tensor> inputs, Allocator& allocator, const KernelContext* parent,
                              bool keep_all) const;

  std::shared_ptr<const Graph> graph_;
  std::unordered_map<const Value*, int> slot_of_;  // every value a step or the outputs read
  std::vector<const Value*> slot_values_;
  std::vector<Step> steps_;
  std::vector<int> output_slots_;
};

}  // namespace weir
