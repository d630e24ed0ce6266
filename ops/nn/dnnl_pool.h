// MaxPool and AveragePool forward through oneDNN, with primitives cached per
// problem, on the plain [N, C, spatial...] layout (oneDNN has fast plain-layout
// pooling: 35x the direct loops for a 3x3/2 max pool on the ResNet stem,
// bench/pool_norm_bench.cc).
//
//   DnnlPool pool;
//   if (DnnlPool::supports(dtype, problem, include_pad)) pool.forward(dtype, problem, max, include_pad, x, y);
//
// f32 and bf16, and i8 and u8 for the maximum (quantized models). Not for
// the Indices output of MaxPool, nor for
// count_include_pad when ceil_mode adds windows past the end pads (ONNX does
// not count those taps; oneDNN would).
#pragma once

#include <memory>

#include "core/dtype.h"
#include "ops/nn/conv_problem.h"

namespace weir {

class DnnlPool {
 public:
  DnnlPool();
  ~DnnlPool();
  DnnlPool(const DnnlPool&) = delete;
  DnnlPool& operator=(const DnnlPool&) = delete;

  static bool supports(DType dtype, const ConvProblem& p, bool max, bool include_pad);
  // channels_last: in and out are [N, spatial..., C] in memory (ChannelsLastPool).
  void forward(DType dtype, const ConvProblem& p, bool max, bool include_pad, const void* in, void* out,
               bool channels_last = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
