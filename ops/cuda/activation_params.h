// What the CUDA kernels of the activations take from a node: the device op
// and its attributes, read through the CPU's own attribute structs
// (ops/elementwise/activation_functions.h), so defaults and checks are the
// CPU's; and Clip's optional min and max inputs.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/kernel.h"

namespace weir::cuda {

// The activations with attributes or a <Name>Grad op: LeakyRelu, Elu, Selu,
// Erf, Softplus, Softsign, HardSigmoid, HardSwish, Sin ... Atanh,
// ThresholdedRelu, Shrink, Celu, Reciprocal. (Gelu has kernels of its own,
// gelu_kernels.h.)
const std::vector<std::string>& activation_names();

struct Activation {
  UnaryOp op;
  UnaryParams params;
};
Activation activation_of(const std::string& name, const Node& node);

// Clip's bounds (inputs `first` and `first` + 1, each optional): a bound in
// host memory is read into `values`, one in device memory is passed by
// pointer for the kernel to read. Absent bounds are -inf and +inf. Fails
// naming the node unless each is a one-element tensor of input 0's dtype.
struct ClipBounds {
  UnaryParams values;
  const void* low = nullptr;
  const void* high = nullptr;
};
ClipBounds clip_bounds(const KernelContext& ctx, size_t first);

}  // namespace weir::cuda
