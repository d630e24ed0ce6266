#include "frontend/nn/init.h"

#include <algorithm>
#include <cmath>

namespace weir::init {

namespace {

// Draws with a fixed recipe (53-bit uniforms, Box-Muller) rather than
// std::*_distribution, whose output the C++ standard leaves to the library:
// the same seed then gives the same model on every toolchain.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

Tensor zeros(const std::vector<int64_t>& sizes) { return Tensor(DType::kFloat32, sizes); }

Tensor constant(const std::vector<int64_t>& sizes, float value) {
  Tensor t(DType::kFloat32, sizes);
  std::fill_n(t.data<float>(), t.num_elements(), value);
  return t;
}

Tensor ones(const std::vector<int64_t>& sizes) { return constant(sizes, 1.0f); }

Tensor normal(const std::vector<int64_t>& sizes, float mean, float stddev, std::mt19937_64& rng) {
  Tensor t = Tensor::uninitialized(DType::kFloat32, sizes);
  float* p = t.data<float>();
  int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = 1.0 - uniform01(rng);  // (0, 1]
    double u2 = uniform01(rng);
    double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<float>(mean + stddev * r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) p[i + 1] = static_cast<float>(mean + stddev * r * std::sin(2 * M_PI * u2));
  }
  return t;
}

Tensor uniform(const std::vector<int64_t>& sizes, float bound, std::mt19937_64& rng) {
  Tensor t = Tensor::uninitialized(DType::kFloat32, sizes);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<float>((2 * uniform01(rng) - 1) * bound);
  return t;
}

Tensor xavier_uniform(const std::vector<int64_t>& sizes, int64_t fan_in, int64_t fan_out, std::mt19937_64& rng) {
  return uniform(sizes, static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out))), rng);
}

Tensor kaiming_normal(const std::vector<int64_t>& sizes, int64_t fan_in, std::mt19937_64& rng) {
  return normal(sizes, 0.0f, static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_in))), rng);
}

Tensor kaiming_uniform(const std::vector<int64_t>& sizes, int64_t fan_in, std::mt19937_64& rng, double gain_scale) {
  return uniform(sizes, static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in)) * gain_scale), rng);
}

}  // namespace weir::init
