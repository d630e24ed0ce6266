// The comparison and logic ops on each accelerator against the CPU kernels:
// Equal, Less, Greater, LessOrEqual, GreaterOrEqual on f32, f16, bf16,
// int32 and int64 (Equal on bool too) with many ties, NaN and signed zeros;
// And, Or, Xor, Not on bools; Where with X and Y of 1-, 2-, 4- and 8-byte
// types; all with NumPy broadcasting (scalars, rows, columns, 4-D with
// size-1 axes, empty). Bool results and selected elements are exact.
#include <random>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class LogicOnBackend : public testing::OnBackend {};

// Small integers (many ties), as `dtype`; bools where dtype is kBool.
Tensor small_integers(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> value(dtype == DType::kBool ? 0 : -3, dtype == DType::kBool ? 1 : 3);
  std::vector<double> values(static_cast<size_t>(testing::count_of(sizes)));
  for (double& v : values) v = value(engine);
  return testing::make_tensor(dtype, values, sizes);
}

struct BroadcastCase {
  std::vector<int64_t> a, b;
};

const std::vector<BroadcastCase> kCases = {
    {{7, 13}, {7, 13}}, {{4, 5, 6}, {6}}, {{4, 5, 6}, {4, 5, 1}}, {{}, {3, 3}},
    {{2, 1, 4, 1}, {1, 3, 1, 5}}, {{300, 1000}, {1000}}, {{0, 4}, {4}},
};

TEST_P(LogicOnBackend, ComparisonsBroadcastLikeTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    for (const BroadcastCase& c : kCases) {
      Tensor a = small_integers(dtype, c.a, seed++), b = small_integers(dtype, c.b, seed++);
      for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
        expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{}, std::string(dtype_name(dtype)));
      }
    }
  }
  // NaN compares false (Equal to itself too); -0 equals +0.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor a = testing::make_tensor(dtype, {nan, 0.0, -0.0, 1.0, nan}, {5});
    Tensor b = testing::make_tensor(dtype, {nan, -0.0, 0.0, nan, 1.0}, {5});
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{}, "NaN and zeros");
    }
  }
}

TEST_P(LogicOnBackend, LogicOpsOnBools) {
  uint32_t seed = 100;
  for (const BroadcastCase& c : kCases) {
    Tensor a = small_integers(DType::kBool, c.a, seed++), b = small_integers(DType::kBool, c.b, seed++);
    for (const char* op : {"And", "Or", "Xor", "Equal"}) expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{});
    expect_same_as_cpu(GetParam(), "Not", {a}, {}, Tolerance{});
  }
}

TEST_P(LogicOnBackend, WhereSelectsElementsOfAnySize) {
  struct Case {
    std::vector<int64_t> condition, x, y;
  };
  const std::vector<Case> cases = {
      {{7, 13}, {7, 13}, {7, 13}},
      {{4, 5, 6}, {6}, {}},                     // X a row, Y a scalar
      {{4, 5, 1}, {4, 5, 6}, {1, 5, 6}},        // the condition a column
      {{}, {3, 3}, {3, 3}},                     // one condition for all
      {{2, 1, 4, 1}, {1, 3, 1, 5}, {2, 3, 1, 1}},  // 4-D, size-1 axes everywhere
      {{300, 1000}, {1000}, {300, 1}},
      {{0, 4}, {4}, {1}},
  };
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                      DType::kUInt8, DType::kBool}) {
    for (const Case& c : cases) {
      Tensor condition = small_integers(DType::kBool, c.condition, seed++);
      Tensor x = dtype == DType::kBool ? small_integers(dtype, c.x, seed++) : testing::random_tensor(dtype, c.x, seed++);
      Tensor y = dtype == DType::kBool ? small_integers(dtype, c.y, seed++) : testing::random_tensor(dtype, c.y, seed++);
      expect_same_as_cpu(GetParam(), "Where", {condition, x, y}, {}, Tolerance{}, std::string(dtype_name(dtype)));
    }
  }
}

TEST_P(LogicOnBackend, RefusesWhatTheCpuRefuses) {
  Tensor a = testing::random_tensor(DType::kFloat32, {4, 5}, 1), b = testing::random_tensor(DType::kFloat32, {3}, 2);
  std::string message = testing::error_of([&] { testing::run_node_on(GetParam(), "Less", {a, b}); });
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;
  Tensor condition = small_integers(DType::kBool, {4, 5}, 3);
  message = testing::error_of([&] { testing::run_node_on(GetParam(), "Where", {condition, a, b}); });
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Cuda, LogicOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
