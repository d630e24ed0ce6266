// MaxPool (with Indices, both storage orders), AveragePool (with and
// without count_include_pad), their gradients, GlobalAveragePool and
// GlobalMaxPool on each accelerator against the CPU kernels, over the
// windows of pool_test_cases.h and NaN inputs; f32, f16 and bf16 (whose
// rounded random inputs hold ties within windows, which the maximum and its
// gradient break alike: the first maximal tap in window order).
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/cuda/pool_test_cases.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_outputs_same_as_cpu;
using testing::expect_same_as_cpu;
using testing::ints;
using testing::Tolerance;
using testing::uniform;

using Attributes = std::map<std::string, Attribute>;

using testing::PoolCase;
using testing::pool_cases;

class PoolOnBackend : public testing::OnBackend {};

TEST_P(PoolOnBackend, MaxPoolAndIndicesMatchTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const PoolCase& c : pool_cases()) {
      Tensor x = uniform(dtype, c.x, seed++);
      // The maximum is one of the inputs: bit for bit.
      expect_same_as_cpu(GetParam(), "MaxPool", {x}, c.attributes, Tolerance{}, c.label);
      for (int64_t order : {0, 1}) {
        Attributes attributes = c.attributes;
        attributes["storage_order"] = Attribute(order);
        expect_outputs_same_as_cpu(GetParam(), "MaxPool", {x}, attributes, 2, Tolerance{},
                                   c.label + ", storage_order " + std::to_string(order));
      }
    }
  }
}

TEST_P(PoolOnBackend, AveragePoolMatchesTheCpu) {
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tolerance tolerance = dtype == DType::kFloat32   ? Tolerance{1e-5, 1e-6}
                                : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4}
                                                           : Tolerance{1e-2, 1e-3};
    for (const PoolCase& c : pool_cases()) {
      Tensor x = uniform(dtype, c.x, seed++);
      for (int64_t include_pad : {0, 1}) {
        Attributes attributes = c.attributes;
        attributes["count_include_pad"] = Attribute(include_pad);
        expect_same_as_cpu(GetParam(), "AveragePool", {x}, attributes, tolerance,
                           c.label + ", count_include_pad " + std::to_string(include_pad));
      }
    }
  }
}

TEST_P(PoolOnBackend, GradientsMatchTheCpu) {
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // Both sum each input's shares in ascending window order, as f32.
    const Tolerance tolerance = dtype == DType::kFloat32   ? Tolerance{1e-6, 1e-7}
                                : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4}
                                                           : Tolerance{1e-2, 1e-3};
    for (const PoolCase& c : pool_cases()) {
      Tensor x = uniform(dtype, c.x, seed);
      Tensor y = testing::run_op("MaxPool", {x}, c.attributes)[0];
      Tensor dy = uniform(dtype, y.sizes(), seed + 1);
      seed += 2;
      expect_same_as_cpu(GetParam(), "MaxPoolGrad", {dy, x}, c.attributes, tolerance, c.label);
      for (int64_t include_pad : {0, 1}) {
        Attributes attributes = c.attributes;
        attributes["count_include_pad"] = Attribute(include_pad);
        expect_same_as_cpu(GetParam(), "AveragePoolGrad", {dy, x}, attributes, tolerance,
                           c.label + ", count_include_pad " + std::to_string(include_pad));
      }
    }
  }
}

TEST_P(PoolOnBackend, MaximaPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> values = testing::random_values(DType::kFloat32, 2 * 16, 7, -1.0, 1.0);
  values[5] = nan;
  values[16 + 10] = nan;
  values[16 + 15] = nan;
  Tensor x = testing::make_tensor(DType::kFloat32, values, {1, 2, 4, 4});
  Attributes attributes = {{"kernel_shape", ints({2, 2})}};
  expect_outputs_same_as_cpu(GetParam(), "MaxPool", {x}, attributes, 2, Tolerance{}, "NaN");
  Tensor dy = uniform(DType::kFloat32, {1, 2, 3, 3}, 8);
  expect_same_as_cpu(GetParam(), "MaxPoolGrad", {dy, x}, attributes, Tolerance{1e-6, 1e-7}, "NaN");
  expect_same_as_cpu(GetParam(), "GlobalMaxPool", {x}, {}, Tolerance{}, "NaN");
}

TEST_P(PoolOnBackend, GlobalPoolsMatchTheCpu) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 7, 9}, {1, 5, 1, 1}, {3, 4, 100, 70}, {2, 3, 5}, {1, 2, 3, 4, 5},
                                                    {0, 3, 4, 4}};
  uint32_t seed = 300;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tolerance tolerance = dtype == DType::kFloat32   ? Tolerance{1e-5, 1e-6}
                                : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4}
                                                           : Tolerance{1e-2, 1e-3};
    for (const std::vector<int64_t>& sizes : shapes) {
      Tensor x = uniform(dtype, sizes, seed++);
      expect_same_as_cpu(GetParam(), "GlobalAveragePool", {x}, {}, tolerance);
      expect_same_as_cpu(GetParam(), "GlobalMaxPool", {x}, {}, Tolerance{});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, PoolOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
