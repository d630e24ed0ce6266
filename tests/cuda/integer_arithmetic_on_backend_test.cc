// Add, Sub, Mul, Div and Mod (both fmod settings) of i32 and i64 on each
// accelerator against the CPU kernels, bit for bit: random values of both
// signs with NumPy broadcasting, the wrapping edges (the type's min and
// max, min / -1, x % -1, products that overflow), the gradient-merge
// phase Mod(step, k), and a zero divisor, which fails as on the CPU naming
// the divisor element.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class IntegerArithmeticOnBackend : public testing::OnBackend {};

// Values in [-bound, bound] of `dtype` (i32 or i64), none zero when `nonzero`.
Tensor integers(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed, int64_t bound, bool nonzero = false) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int64_t> pick(-bound, bound);
  Tensor t(dtype, sizes);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t v = pick(engine);
    if (nonzero && v == 0) v = 1;
    if (dtype == DType::kInt64) {
      t.data<int64_t>()[i] = v;
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
  }
  return t;
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kShapes = {
    {{7, 13}, {7, 13}}, {{4, 5, 6}, {6}}, {{4, 1, 6}, {1, 5, 1}}, {{}, {3, 3}}, {{300, 1000}, {1000}}, {{0, 4}, {4}}};

TEST_P(IntegerArithmeticOnBackend, BroadcastLikeTheCpuBitForBit) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kInt32, DType::kInt64}) {
    for (const auto& [a_sizes, b_sizes] : kShapes) {
      Tensor a = integers(dtype, a_sizes, seed++, 1000);
      Tensor b = integers(dtype, b_sizes, seed++, 50, /*nonzero=*/true);
      for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod"}) expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{});
      expect_same_as_cpu(GetParam(), "Mod", {a, b}, {{"fmod", Attribute(int64_t{1})}}, Tolerance{});
    }
  }
}

TEST_P(IntegerArithmeticOnBackend, WrappingEdgesMatchTheCpu) {
  const int64_t min64 = std::numeric_limits<int64_t>::min(), max64 = std::numeric_limits<int64_t>::max();
  const int64_t min32 = std::numeric_limits<int32_t>::min(), max32 = std::numeric_limits<int32_t>::max();
  for (DType dtype : {DType::kInt32, DType::kInt64}) {
    const int64_t low = dtype == DType::kInt64 ? min64 : min32, high = dtype == DType::kInt64 ? max64 : max32;
    const std::vector<int64_t> values = {low, low + 1, high, high - 1, -7, -1, 1, 7, 3, -3, 1 << 20};
    const int64_t n = static_cast<int64_t>(values.size());
    Tensor column(dtype, {n, 1}), row(dtype, {1, n});
    for (int64_t i = 0; i < n; ++i) {
      if (dtype == DType::kInt64) {
        column.data<int64_t>()[i] = row.data<int64_t>()[i] = values[static_cast<size_t>(i)];
      } else {
        column.data<int32_t>()[i] = row.data<int32_t>()[i] = static_cast<int32_t>(values[static_cast<size_t>(i)]);
      }
    }
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod"}) {
      expect_same_as_cpu(GetParam(), op, {column, row}, {}, Tolerance{}, "edges");
    }
    expect_same_as_cpu(GetParam(), "Mod", {column, row}, {{"fmod", Attribute(int64_t{1})}}, Tolerance{}, "edges");
  }
}

// Gradient merge's apply flag: Mod(step, k) of an i64 step.
TEST_P(IntegerArithmeticOnBackend, StepModuloKMatchesTheCpu) {
  for (int64_t step = 1; step <= 9; ++step) {
    expect_same_as_cpu(GetParam(), "Mod", {Tensor::scalar<int64_t>(step), Tensor::scalar<int64_t>(4)}, {}, Tolerance{});
  }
}

TEST_P(IntegerArithmeticOnBackend, AZeroDivisorFailsAsOnTheCpu) {
  for (const char* op : {"Div", "Mod"}) {
    Tensor a = Tensor::from_vector<int64_t>({5, 6, 7, 8}, {4});
    Tensor b = Tensor::from_vector<int64_t>({2, 3, 0, 0}, {4});
    const std::string cpu = testing::without_location(testing::error_on(Device::cpu(), op, {a, b}, {}));
    ASSERT_NE(cpu.find("integer division by zero (divisor element 2)"), std::string::npos) << cpu;
    EXPECT_EQ(testing::without_location(testing::error_on(GetParam(), op, {a, b}, {})), cpu) << op;
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, IntegerArithmeticOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
