// Evaluates a graph on the CPU, one node at a time in topological order,
// with kernels from a KernelRegistry.
//
//   std::map<std::string, weir::Tensor> feeds = {{"x", x}};
//   std::vector<weir::Tensor> outputs = weir::evaluate_graph(graph, feeds);
//
// For tests, reference results and constant folding. It is not the runtime's
// executor: no placement, no memory planning, no parallelism, and kernels are
// created anew on every call.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "ops/kernel.h"

namespace weir {

struct EvaluateOptions {
  const KernelRegistry* kernels = nullptr;  // nullptr: default_kernel_registry()
  Allocator* allocator = nullptr;           // nullptr: cpu_allocator()
};

// The graph's outputs, in order. Every graph input must be fed, with its
// declared dtype and a shape that matches the declared one (symbolic dims
// take any size); a mismatch is a weir::Error naming the input.
std::vector<Tensor> evaluate_graph(const Graph& graph, const std::map<std::string, Tensor>& feeds,
                                   const EvaluateOptions& options = {});

// Every value the evaluation produced or read, keyed by value.
std::unordered_map<const Value*, Tensor> evaluate_all_values(const Graph& graph,
                                                             const std::map<std::string, Tensor>& feeds,
                                                             const EvaluateOptions& options = {});

}  // namespace weir
