// Convolutions through oneDNN, in all three directions, with primitives
// cached per problem.
//
//   DnnlConv conv;
//   conv.forward(DType::kFloat32, problem, x, w, bias_or_null, y);
//   conv.forward(DType::kFloat32, problem, x, w, bias_or_null, y, {.activation = relu});  // Conv+ReLU in one pass
//   conv.backward_data(DType::kFloat32, problem, dy, w, dx);
//   conv.backward_weights(DType::kFloat32, problem, dy, x, dw);
//
// Tensors are plain row-major ([N, C, spatial...], or [N, spatial..., C]
// with channels_last; weights [K, C/group, kernel...]). oneDNN picks its own (blocked) layouts for speed: the
// primitive is created with format `any`, and reorders to and from the plain
// layouts run around it, cached with it. f32 and bf16 only; callers widen f16.
#pragma once

#include <memory>
#include <vector>

#include "core/dtype.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/kernel.h"
#include "ops/nn/conv_problem.h"

namespace weir {

struct ConvForwardOptions {
  FusedActivation activation{};  // applied to the result inside the primitive (a oneDNN post-op)
  bool channels_last = false;    // in and out are [N, spatial..., C] (the problem stays in NCHW terms)
  // The weights never change while this object lives (a graph constant), so
  // they are reordered into the primitive's layout once and kept; a
  // different weight pointer is packed again.
  bool constant_weights = false;
  // out = activation(conv + bias + addend): the forward call passes the
  // addend, a tensor shaped like out (a residual), added by a sum post-op.
  bool sum = false;
  // A 3x3, stride-1 f32 forward conv may run as oneDNN's Winograd
  // primitive (blocked layouts, reordered around it; the weights transformed
  // once, so for constant weights): kAuto where it pays on this CPU (both
  // channel counts >= 128, see use_winograd), kAlways wherever oneDNN has
  // it. WEIR_CONV_WINOGRAD=0 (never) or 1 (always) overrides kAuto.
  enum class Winograd { kNever, kAuto, kAlways };
  Winograd winograd = Winograd::kNever;
};

class DnnlConv {
 public:
  DnnlConv();
  ~DnnlConv();
  DnnlConv(const DnnlConv&) = delete;
  DnnlConv& operator=(const DnnlConv&) = delete;

  static bool supports(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kBFloat16; }

  // `addend` (options.sum only) may be `out` itself.
  void forward(DType dtype, const ConvProblem& p, const void* in, const void* weight, const void* bias, void* out,
               const ConvForwardOptions& options = {}, const void* addend = nullptr);
  void backward_data(DType dtype, const ConvProblem& p, const void* d_out, const void* weight, void* d_in);
  // `weight_dtype`: d_weight's, `dtype` or f32 from bf16 (oneDNN sums in f32
  // either way; f32 skips the rounding).
  void backward_weights(DType dtype, const ConvProblem& p, const void* d_out, const void* in, void* d_weight,
                        DType weight_dtype);

  // The constant weights forward convs packed so far, for a plan file
  // (OpKernel::packed_constants).
  std::vector<PackedConstant> packed_weights() const;
  // Packs from a plan file: a forward conv with constant weights whose
  // primitive wants one's layout uses it instead of packing.
  void adopt_packed_weights(std::vector<PackedConstant> packs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
