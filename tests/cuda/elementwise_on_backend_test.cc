// The elementwise ops on each accelerator against the CPU kernels: Add, Sub,
// Mul, Div with NumPy broadcasting (same shapes, rows, columns, scalars,
// both sides broadcast, odd sizes, a grid larger than one wave), and Neg,
// Relu, Sigmoid, Tanh, Exp; f32, f16 and bf16.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::random_tensor;
using testing::Tolerance;

class ElementwiseOnBackend : public testing::OnBackend {};

struct BroadcastCase {
  std::vector<int64_t> a, b;
};

const std::vector<BroadcastCase> kBroadcastCases = {
    {{7, 13}, {7, 13}},          // same shape, odd sizes
    {{4, 5, 6}, {6}},            // a row
    {{4, 5, 6}, {4, 5, 1}},      // a column
    {{4, 1, 6}, {1, 5, 1}},      // both sides broadcast
    {{}, {3, 3}},                // a scalar first
    {{2, 3, 4, 5}, {3, 1, 5}},   // rank 4 against rank 3
    {{1031}, {1}},               // odd length, one-element operand
    {{2, 1, 3, 1, 2, 1, 3}, {1, 2, 1, 3, 1, 2, 1}},  // many alternating axes
    {{300, 1000}, {1000}},       // more elements than one wave of blocks
    {{0, 4}, {4}},               // empty
};

TEST_P(ElementwiseOnBackend, BinaryOpsBroadcastLikeTheCpuBitForBit) {
  // +, -, *, / are correctly rounded on both sides, f16/bf16 computed in f32
  // and rounded once: the results are identical.
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const BroadcastCase& shapes : kBroadcastCases) {
      Tensor a = random_tensor(dtype, shapes.a, seed++);
      Tensor b = random_tensor(dtype, shapes.b, seed++);
      for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
        expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{});
      }
    }
  }
}

TEST_P(ElementwiseOnBackend, UnaryOpsMatchTheCpu) {
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // expf and tanhf differ from the host's by a few ulps in f32, which can
    // move a 16-bit result by one of its own ulps.
    const Tolerance transcendental = dtype == DType::kFloat32   ? Tolerance{1e-6, 1e-7}
                                     : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-5}
                                                                : Tolerance{1e-2, 1e-5};
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{1}, {7, 13}, {3, 5, 1031}, {0, 3}}) {
      // Wide enough for Exp to overflow f16 and for Sigmoid's and Tanh's saturation.
      Tensor x = testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed++, -12.0, 12.0), sizes);
      expect_same_as_cpu(GetParam(), "Neg", {x}, {}, Tolerance{});
      expect_same_as_cpu(GetParam(), "Relu", {x}, {}, Tolerance{});
      for (const char* op : {"Sigmoid", "Tanh", "Exp"}) expect_same_as_cpu(GetParam(), op, {x}, {}, transcendental);
    }
  }
}

TEST_P(ElementwiseOnBackend, ReluOfNanAndSignedZeroIsPositiveZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({nan, -0.0f, 0.0f, -1.0f, 2.5f, std::numeric_limits<float>::infinity()}, {6});
  expect_same_as_cpu(GetParam(), "Relu", {x}, {}, Tolerance{});
}

INSTANTIATE_TEST_SUITE_P(Cuda, ElementwiseOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
