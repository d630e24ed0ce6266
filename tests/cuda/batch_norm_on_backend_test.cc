// BatchNormalization (inference; training_mode with the running mean and
// var it gives) and BatchNormGrad (both modes) on each accelerator against
// the CPU kernels, every output compared: 2-D to 5-D inputs, batch 1 with
// one element per channel (a zero variance), odd sizes, a custom momentum
// and epsilon; f32, f16 and bf16.
#include <map>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_outputs_same_as_cpu;
using testing::Tolerance;
using testing::uniform;

using Attributes = std::map<std::string, Attribute>;

// The statistics and gradient sums are f64 on both devices and the
// per-element arithmetic rounds alike: f32 results agree to an ulp or two.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return {2e-3, 1e-3};
    case DType::kBFloat16: return {1e-2, 1e-2};
    default: return {1e-5, 1e-6};
  }
}

// The last three span several of the GPU's chunks per channel (about 64K
// elements of whole planes each): 20 planes of 3600 in chunks of 18 (the
// last one short), and planes of 2^16 and more, one plane a chunk.
const std::vector<std::vector<int64_t>>& shapes() {
  static const std::vector<std::vector<int64_t>> shapes = {
      {2, 3, 5, 7},   {4, 16, 9, 9}, {3, 5},       {2, 4, 3, 2, 3},     {1, 7, 1, 1},
      {8, 6, 14, 14}, {5, 3, 11},    {20, 3, 60, 60}, {3, 2, 256, 256}, {2, 2, 300, 300}};
  return shapes;
}

class BatchNormOnBackend : public testing::OnBackend {};

TEST_P(BatchNormOnBackend, ForwardMatchesTheCpuInBothModes) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : shapes()) {
      const int64_t channels = sizes[1];
      // Off-centre inputs, so the mean matters.
      Tensor x = uniform(dtype, sizes, seed, -1.0, 3.0);
      Tensor scale = uniform(dtype, {channels}, seed + 1, 0.5, 1.5), bias = uniform(dtype, {channels}, seed + 2);
      Tensor mean = uniform(dtype, {channels}, seed + 3), var = uniform(dtype, {channels}, seed + 4, 0.5, 2.0);
      seed += 5;
      const std::string label = format_sizes(sizes);
      expect_outputs_same_as_cpu(GetParam(), "BatchNormalization", {x, scale, bias, mean, var}, {}, 1,
                                 tolerance_for(dtype), label + " inference");
      expect_outputs_same_as_cpu(GetParam(), "BatchNormalization", {x, scale, bias, mean, var}, {}, 3,
                                 tolerance_for(dtype), label + " inference, statistics passed through");
      expect_outputs_same_as_cpu(GetParam(), "BatchNormalization", {x, scale, bias, mean, var},
                                 {{"training_mode", Attribute(int64_t{1})}}, 3, tolerance_for(dtype), label + " training");
      expect_outputs_same_as_cpu(GetParam(), "BatchNormalization", {x, scale, bias, mean, var},
                                 {{"training_mode", Attribute(int64_t{1})},
                                  {"momentum", Attribute(0.7)},
                                  {"epsilon", Attribute(1e-3)}},
                                 3, tolerance_for(dtype), label + " training, momentum 0.7, epsilon 1e-3");
    }
  }
}

TEST_P(BatchNormOnBackend, GradientMatchesTheCpuInBothModes) {
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : shapes()) {
      const int64_t channels = sizes[1];
      Tensor dy = uniform(dtype, sizes, seed), x = uniform(dtype, sizes, seed + 1, -1.0, 3.0);
      Tensor scale = uniform(dtype, {channels}, seed + 2, 0.5, 1.5);
      Tensor mean = uniform(dtype, {channels}, seed + 3), var = uniform(dtype, {channels}, seed + 4, 0.5, 2.0);
      seed += 5;
      // dScale and dB sum over every element of a channel: an absolute bound that grows with the count.
      // dX is per element (f64 on both devices, rounded once): the forward's bound.
      Tolerance tolerance = tolerance_for(dtype);
      tolerance.absolute *= static_cast<double>(testing::count_of(sizes) / channels);
      const std::vector<Tolerance> tolerances = {tolerance_for(dtype), tolerance, tolerance};
      const std::string label = format_sizes(sizes);
      expect_outputs_same_as_cpu(GetParam(), "BatchNormGrad", {dy, x, scale, mean, var}, {}, tolerances,
                                 label + " inference");
      expect_outputs_same_as_cpu(GetParam(), "BatchNormGrad", {dy, x, scale, mean, var},
                                 {{"training_mode", Attribute(int64_t{1})}, {"epsilon", Attribute(1e-3)}}, tolerances,
                                 label + " training");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, BatchNormOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
