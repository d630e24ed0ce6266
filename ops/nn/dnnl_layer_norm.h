// LayerNormalization forward through oneDNN for f32, primitives cached per
// shape: 7x the f64-statistics loops on [128, 768] (bench/pool_norm_bench.cc).
//
//   DnnlLayerNorm norm;
//   norm.forward(rows, len, epsilon, x, scale, bias_or_null, y, mean_or_null, variance_or_null);
//
// x and y are [rows, len] f32 (the normalized axes flattened); scale and bias
// hold len values. Mean and variance (f32, one per row) are written when
// asked for.
#pragma once

#include <cstdint>
#include <memory>

namespace weir {

class DnnlLayerNorm {
 public:
  DnnlLayerNorm();
  ~DnnlLayerNorm();
  DnnlLayerNorm(const DnnlLayerNorm&) = delete;
  DnnlLayerNorm& operator=(const DnnlLayerNorm&) = delete;

  void forward(int64_t rows, int64_t len, float epsilon, const float* x, const float* scale, const float* bias, float* y,
               float* mean, float* variance);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
