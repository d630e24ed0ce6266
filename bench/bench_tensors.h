// Seeded input tensors for the benchmarks: uniform in [-1, 1), f32 or bf16
// (the bf16 values are the f32 ones rounded), the same on every run.
#pragma once

#include <random>
#include <vector>

#include "core/half.h"
#include "core/tensor.h"

namespace weir::bench {

inline Tensor random_tensor(DType dtype, std::vector<int64_t> sizes) {
  Tensor f32(DType::kFloat32, sizes);
  std::mt19937 engine(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t i = 0; i < f32.num_elements(); ++i) f32.data<float>()[i] = uniform(engine);
  if (dtype == DType::kFloat32) return f32;
  Tensor out(dtype, sizes);
  for (int64_t i = 0; i < f32.num_elements(); ++i) out.data<BFloat16>()[i] = BFloat16(f32.data<float>()[i]);
  return out;
}

}  // namespace weir::bench
