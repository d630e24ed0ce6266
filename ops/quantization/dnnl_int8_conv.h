// QLinearConv through oneDNN's int8 convolution: u8 or s8 activations, s8
// weights with zero point 0, s32 accumulation, the i32 bias added to the
// sum, then one multiplier per tensor or per output channel (x_scale *
// w_scale[m] / y_scale), an optional Relu, the output zero point, rounding
// halves to even and saturation to u8 or s8: what the reference loops in
// integer_conv.cc compute (see Int8ConvRun for the one difference).
//
//   DnnlInt8Conv conv;
//   Int8ConvSetup setup{DType::kUInt8, DType::kUInt8, multipliers, /*relu=*/false, /*with_bias=*/true};
//   // setup.sum: y holds a residual addend on entry (FusedQLinearConv's Z)
//   if (!conv.forward(problem, setup, {x, x_zero, w, bias, y_zero, y}, /*constant_weights=*/true)) {
//     ... run the reference loops: oneDNN has no fast kernel for this problem
//   }
//
// Primitives are created once per problem and setup (the multipliers are
// baked into them; the zero points are runtime arguments) and cached. Data is
// plain row-major: [N, C, spatial...], or [N, spatial..., C] with
// channels_last; weights [M, C/group, kernel...]. oneDNN picks its own
// layouts (format `any`); reorders run around it, and constant weights are
// reordered once (PackedWeights).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "ops/nn/conv_problem.h"
#include "ops/kernel.h"

namespace weir {

// What a primitive is made for.
struct Int8ConvSetup {
  DType x_dtype = DType::kUInt8;  // u8 or s8
  DType y_dtype = DType::kUInt8;  // u8 or s8
  // acc * multiplier[m] before the zero point: one value, or one per output channel.
  std::vector<float> multipliers;
  bool relu = false;  // the result is at least y_zero (Relu before quantization)
  bool with_bias = false;
  bool channels_last = false;
  bool x_zero_nonzero = false;
  bool y_zero_nonzero = false;
  // A residual addend of y's type and shape, which y holds on entry: before
  // the Relu, the sum gains (addend - sum_zero) * sum_scale (oneDNN's sum
  // post-op; both are baked into the primitive).
  bool sum = false;
  float sum_scale = 1.0f;
  int32_t sum_zero = 0;
};

// One run's data. Rounding: oneDNN adds y_zero before rounding, so where
// acc * multiplier lies exactly halfway between two integers and y_zero is
// odd, the result is 1 above or below the reference's (round half to even
// of the scaled value, then + y_zero). Nothing else differs.
struct Int8ConvRun {
  const void* x = nullptr;
  int32_t x_zero = 0;
  const int8_t* w = nullptr;
  const int32_t* bias = nullptr;  // [M] or null
  int32_t y_zero = 0;
  void* y = nullptr;  // with setup.sum, holds the addend on entry
};

class DnnlInt8Conv {
 public:
  DnnlInt8Conv();
  ~DnnlInt8Conv();
  DnnlInt8Conv(const DnnlInt8Conv&) = delete;
  DnnlInt8Conv& operator=(const DnnlInt8Conv&) = delete;

  // Runs the convolution; false (nothing written) when oneDNN has no
  // optimized int8 kernel for it (it would run its slow reference one).
  bool forward(const ConvProblem& p, const Int8ConvSetup& setup, const Int8ConvRun& run, bool constant_weights);

  // The constant weights packed so far, for a plan file
  // (OpKernel::packed_constants), and packs from one to use instead of
  // packing where a primitive wants their layout.
  std::vector<PackedConstant> packed_weights() const;
  void adopt_packed_weights(std::vector<PackedConstant> packs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
