// Host fallback: nodes a GPU has no kernel for run on the host instead.
//
//   CompileOptions options;
//   options.default_device = Device::cuda(0);
//   options.host_fallback = true;     // TopK, NonZero, ... run on cpu:0
//   compile(graph, options);
//
// An ONNX model on `--device cuda` may hold an op the CUDA backend lacks
// (TopK, NonMaxSuppression, Einsum, a loop). Rather than refuse the model,
// such a node runs on the host, as ONNX Runtime's CPU provider takes over
// from its CUDA provider, and placement (runtime/placement.h) copies its
// inputs back from the GPU and its outputs onto it. A node keeps the
// refusal ("no CUDA kernel for X") when it cannot move: it has a device
// annotation, is a collective (it meets the other ranks on the GPU), has
// side effects or state (an optimizer update writes parameters in GPU
// memory), or reads a persistent value (a parameter lives on the GPU).
//
// The host runs as a device of the plan after the GPUs and is never a rank
// (rank_devices below), so a rank's program in a world keeps its one rank.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

struct HostFallback {
  std::vector<const Node*> nodes;  // placed on the host, in topological order
  // "TopK (2), NonZero (1)": the ops, with counts, in order of first node.
  std::string summary() const;
};

// Places on `host` every node without a device annotation that has no
// kernel on `device` but one on the host and may move (see above). Call
// before place_graph, on a typed graph.
HostFallback place_on_host_where_no_kernel(Graph& graph, const Device& device, const Device& host,
                                           const KernelRegistry& kernels, const OpRegistry& ops);

// How many of a plan's devices are ranks (device i is rank i of the plan's
// in-process group, or the world's rank for the first): all of them in a
// plan of host devices; in a plan of GPUs, the GPUs, which come first, and
// not the host devices after them, which run the nodes they fall back on.
size_t rank_devices(const std::vector<Device>& devices);

}  // namespace weir
