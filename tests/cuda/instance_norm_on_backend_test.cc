// InstanceNormalization and InstanceNormGrad on each accelerator against
// the CPU kernels: planes shorter than a warp, odd lengths, planes longer
// than the block, one and two spatial axes, many planes per channel (the
// per-channel gradient sums), empty batches and empty planes, with and
// without B; f32, f16 and bf16.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_outputs_same_as_cpu;
using testing::Tolerance;

const std::vector<std::vector<int64_t>> kShapes = {{2, 3, 5},  {1, 4, 1000}, {2, 2, 4099}, {3, 2, 4, 5}, {8, 16, 7, 7},
                                                   {1, 1, 1},  {40, 3, 9},   {0, 3, 4},    {2, 3, 0}};

Tensor random(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed, double low, double high) {
  return testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed, low, high), sizes);
}

// As for LayerNormalization (layer_norm_on_backend_test.cc): f32 statistics
// against the CPU's f64 on values near 1, and dScale/dB sums over up to 360
// elements near 10 in f32.
Tolerance y_tolerance(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{1e-5, 5e-6} : dtype == DType::kFloat16 ? Tolerance{2e-3, 2e-3} : Tolerance{1e-2, 1e-2};
}
std::vector<Tolerance> grad_tolerances(DType dtype) {
  if (dtype == DType::kFloat32) return {{1e-5, 5e-6}, {1e-5, 5e-5}, {1e-5, 5e-5}};
  return std::vector<Tolerance>(3, y_tolerance(dtype));
}

class InstanceNormOnBackend : public testing::OnBackend {};

TEST_P(InstanceNormOnBackend, MatchesTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : kShapes) {
      Tensor x = random(dtype, sizes, seed++, -2.0, 4.0);
      Tensor scale = random(dtype, {sizes[1]}, seed++, -1.5, 1.5);
      Tensor bias = random(dtype, {sizes[1]}, seed++, -1.0, 1.0);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes);
      expect_outputs_same_as_cpu(GetParam(), "InstanceNormalization", {x, scale, bias}, {}, {y_tolerance(dtype)}, label);
      expect_outputs_same_as_cpu(GetParam(), "InstanceNormalization", {x, scale, bias}, {{"epsilon", Attribute(1e-2)}},
                                 {y_tolerance(dtype)}, label + " epsilon 1e-2");
      Tensor dy = random(dtype, sizes, seed++, -1.0, 1.0);
      expect_outputs_same_as_cpu(GetParam(), "InstanceNormGrad", {dy, x, scale}, {}, grad_tolerances(dtype), label + " grad");
    }
  }
}

TEST_P(InstanceNormOnBackend, RejectsInputsWithoutSpatialAxes) {
  try {
    testing::run_node_on(GetParam(), "InstanceNormalization",
                         {random(DType::kFloat32, {2, 3}, 1, -1.0, 1.0), random(DType::kFloat32, {3}, 2, -1.0, 1.0),
                          random(DType::kFloat32, {3}, 3, -1.0, 1.0)});
    ADD_FAILURE() << "a [2, 3] input ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[N, C, spatial...]"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, InstanceNormOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
