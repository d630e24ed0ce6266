// Softmax and LogSoftmax forward through oneDNN, primitives cached per shape.
// oneDNN's vectorized exp makes it 17x the scalar loops on BERT's attention
// scores ([1536, 128] f32, bench/pool_norm_bench.cc).
//
//   DnnlSoftmax softmax;
//   if (DnnlSoftmax::supports(dtype, split)) softmax.forward(dtype, split, /*log=*/false, x, y);
//
// The tensor is viewed as [outer, n, inner] around the axis (axis_lines.h).
// f32 and bf16, non-empty.
#pragma once

#include <memory>

#include "core/dtype.h"
#include "ops/axis_lines.h"

namespace weir {

class DnnlSoftmax {
 public:
  DnnlSoftmax();
  ~DnnlSoftmax();
  DnnlSoftmax(const DnnlSoftmax&) = delete;
  DnnlSoftmax& operator=(const DnnlSoftmax&) = delete;

  static bool supports(DType dtype, const AxisSplit& split) {
    return (dtype == DType::kFloat32 || dtype == DType::kBFloat16) && split.outer * split.n * split.inner > 0;
  }
  void forward(DType dtype, const AxisSplit& split, bool log, const void* in, void* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
