// LayerNormalization and LayerNormGrad on each accelerator against the CPU
// kernels: rows shorter than a warp, odd lengths, rows longer than the
// block, several normalized axes (axis 0, negative axes), with and without
// B, with and without the Mean and InvStdDev outputs, many rows (the
// backward pass's column sums in several chunks); f32, f16 and bf16.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_outputs_same_as_cpu;
using testing::Tolerance;

struct Case {
  std::vector<int64_t> sizes;
  int64_t axis;
};

const std::vector<Case> kCases = {
    {{5, 17}, -1},  {{3, 1000}, -1}, {{2, 4099}, 1}, {{1, 1}, -1},  {{64, 10}, -1}, {{4, 7}, -1},
    {{2, 3, 4}, 1}, {{6, 5, 7}, 0},  {{4, 33, 3}, -2}, {{300, 24}, 1}, {{0, 5}, -1},
};

// The normalized axes [axis, rank): the shape of Scale and B.
std::vector<int64_t> normalized_sizes(const Case& c) {
  int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.sizes.size()) : c.axis;
  return std::vector<int64_t>(c.sizes.begin() + axis, c.sizes.end());
}

Tensor random(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed, double low, double high) {
  return testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed, low, high), sizes);
}

// Y's error is that of f32 statistics (the CPU's are oneDNN's f32 for f32
// input, f64 otherwise) times |x - mean| * rstd * |scale| <= ~3 here: a few
// f32 ulps of values near 1, so an absolute bound besides the relative one.
Tolerance y_tolerance(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{1e-5, 5e-6} : dtype == DType::kFloat16 ? Tolerance{2e-3, 2e-3} : Tolerance{1e-2, 1e-2};
}
// Mean and InvStdDev are f32 for every input type: f32 sums against the CPU's.
const Tolerance kStatistics{1e-5, 1e-6};

class LayerNormOnBackend : public testing::OnBackend {};

TEST_P(LayerNormOnBackend, MatchesTheCpuWithAndWithoutBias) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : kCases) {
      // Off-centre inputs, so subtracting the mean matters.
      Tensor x = random(dtype, c.sizes, seed++, -2.0, 4.0);
      Tensor scale = random(dtype, normalized_sizes(c), seed++, -1.5, 1.5);
      Tensor bias = random(dtype, normalized_sizes(c), seed++, -1.0, 1.0);
      const std::map<std::string, Attribute> axis = {{"axis", Attribute(c.axis)}};
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(c.sizes) + " axis " + std::to_string(c.axis);
      expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {x, scale, bias}, axis, {y_tolerance(dtype)}, label + " with B");
      expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {x, scale}, axis, {y_tolerance(dtype)}, label + " without B");
      expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {x, scale, bias}, axis,
                                 {y_tolerance(dtype), kStatistics, kStatistics}, label + " with Mean and InvStdDev");
      expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {x, scale}, axis, {y_tolerance(dtype), kStatistics},
                                 label + " with Mean only");
    }
  }
}

TEST_P(LayerNormOnBackend, TakesTheDefaultAxisAndEpsilon) {
  Tensor x = random(DType::kFloat32, {3, 4, 50}, 11, -1.0, 1.0);
  Tensor scale = random(DType::kFloat32, {50}, 12, 0.5, 1.5);
  expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {x, scale}, {}, {y_tolerance(DType::kFloat32), kStatistics, kStatistics});
  // A large epsilon against a small variance: epsilon must enter 1 / sqrt(variance + epsilon).
  Tensor narrow = random(DType::kFloat32, {6, 40}, 13, -0.01, 0.01);
  Tensor narrow_scale = random(DType::kFloat32, {40}, 14, 0.5, 1.5);
  expect_outputs_same_as_cpu(GetParam(), "LayerNormalization", {narrow, narrow_scale}, {{"epsilon", Attribute(1e-3)}},
                             {y_tolerance(DType::kFloat32), kStatistics, kStatistics}, "epsilon 1e-3");
}

TEST_P(LayerNormOnBackend, RejectsParametersOfTheWrongSize) {
  Tensor x = random(DType::kFloat32, {4, 6}, 21, -1.0, 1.0);
  Tensor scale = random(DType::kFloat32, {5}, 22, -1.0, 1.0);
  try {
    testing::run_node_on(GetParam(), "LayerNormalization", {x, scale}, {});
    ADD_FAILURE() << "a scale of 5 values for rows of 6 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 6 values, one per normalized element"), std::string::npos) << e.what();
  }
}

// dX's error: f32 statistics and row sums against the CPU's f64, values
// near 1 (absolute bound). dScale and dB add up to 300 rows of f32 terms
// (sums near 10): an absolute bound of a few hundred f32 ulps of 10.
std::vector<Tolerance> grad_tolerances(DType dtype) {
  if (dtype == DType::kFloat32) return {{1e-5, 5e-6}, {1e-5, 5e-5}, {1e-5, 5e-5}};
  if (dtype == DType::kFloat16) return {{2e-3, 2e-3}, {2e-3, 2e-3}, {2e-3, 2e-3}};
  return {{1e-2, 1e-2}, {1e-2, 1e-2}, {1e-2, 1e-2}};
}

TEST_P(LayerNormOnBackend, GradMatchesTheCpu) {
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : kCases) {
      Tensor dy = random(dtype, c.sizes, seed++, -1.0, 1.0);
      Tensor x = random(dtype, c.sizes, seed++, -2.0, 4.0);
      Tensor scale = random(dtype, normalized_sizes(c), seed++, -1.5, 1.5);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(c.sizes) + " axis " + std::to_string(c.axis);
      expect_outputs_same_as_cpu(GetParam(), "LayerNormGrad", {dy, x, scale}, {{"axis", Attribute(c.axis)}},
                                 grad_tolerances(dtype), label);
    }
  }
  Tensor dy = random(DType::kFloat32, {5, 30}, 7, -1.0, 1.0);
  Tensor x = random(DType::kFloat32, {5, 30}, 8, -0.02, 0.02);
  Tensor scale = random(DType::kFloat32, {30}, 9, -1.5, 1.5);
  expect_outputs_same_as_cpu(GetParam(), "LayerNormGrad", {dy, x, scale}, {{"epsilon", Attribute(1e-3)}},
                             grad_tolerances(DType::kFloat32), "epsilon 1e-3");
}

INSTANTIATE_TEST_SUITE_P(Cuda, LayerNormOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
