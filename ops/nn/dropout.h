// Dropout (ONNX opset 13 semantics) and its backward op DropoutGrad: the
// schemas, the gradient rule and the CPU kernels.
//
// Dropout(data, ratio?, training_mode?) -> (output, mask?). Outside training
// (training_mode absent or false, or ratio 0) the output is the input and the
// mask all true. In training each element is kept with probability
// 1 - ratio and scaled by 1 / (1 - ratio). The random stream is
// counter-based: element i of the k-th run of a kernel draws from
// hash(seed, k, i), so results do not depend on the thread count and a run
// can be replayed. `seed` defaults to 0, so unseeded graphs are reproducible
// too. The gradient rule needs the mask output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/op_schema.h"
#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_dropout_schemas(OpRegistry& registry);
void register_dropout_cpu_kernels(KernelRegistry& registry);

// Shared with the CUDA kernels (ops/cuda/dropout_kernels.cc), which must
// draw the CPU's random stream and fail with its messages.

// The seed attribute (0 without one).
uint64_t dropout_seed(const Node& node);
// The key of a run's random stream: element i draws from
// splitmix64_mix(key + i).
uint64_t dropout_stream_key(uint64_t seed, uint64_t run);
// The input's tensor in host memory (`what` names it in errors).
using HostTensorFn = std::function<Tensor(const Tensor&, const char* what)>;
// Scalar input `index` (ratio, training_mode) as a double, `fallback` when
// it is absent; fails unless it has one element.
double dropout_scalar(const KernelContext& ctx, size_t index, double fallback, const char* what, const HostTensorFn& on_host);
// The ratio input (0.5 when absent), checked to be in [0, 1).
double dropout_ratio(const KernelContext& ctx, size_t index, const HostTensorFn& on_host);
// DropoutGrad: checks that the mask is bool shaped like dY.
void check_dropout_mask(const KernelContext& ctx, const Tensor& mask, const Tensor& dy);

}  // namespace weir
