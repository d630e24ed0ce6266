// Seeded parameter initializers. Each draws from the generator it is given,
// so a model built twice from the same seed has the same parameters.
//
//   std::mt19937_64& rng = builder.rng();
//   weir::Tensor w = weir::init::kaiming_uniform({784, 256}, /*fan_in=*/784, rng);
//   weir::Tensor b = weir::init::zeros({256});
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor.h"

namespace weir::init {

Tensor zeros(const std::vector<int64_t>& sizes);
Tensor ones(const std::vector<int64_t>& sizes);
Tensor constant(const std::vector<int64_t>& sizes, float value);
// N(mean, stddev²).
Tensor normal(const std::vector<int64_t>& sizes, float mean, float stddev, std::mt19937_64& rng);
// U(-bound, bound).
Tensor uniform(const std::vector<int64_t>& sizes, float bound, std::mt19937_64& rng);
// Glorot & Bengio (2010): U(±sqrt(6 / (fan_in + fan_out))).
Tensor xavier_uniform(const std::vector<int64_t>& sizes, int64_t fan_in, int64_t fan_out, std::mt19937_64& rng);
// He et al. (2015) for ReLU nets: N(0, 2 / fan_in).
Tensor kaiming_normal(const std::vector<int64_t>& sizes, int64_t fan_in, std::mt19937_64& rng);
// U(±sqrt(6 / fan_in) * gain_scale); gain_scale = 1/sqrt(6) gives U(±1/sqrt(fan_in)),
// the default of common frameworks' linear and conv layers.
Tensor kaiming_uniform(const std::vector<int64_t>& sizes, int64_t fan_in, std::mt19937_64& rng,
                       double gain_scale = 0.40824829046386301637);

}  // namespace weir::init
