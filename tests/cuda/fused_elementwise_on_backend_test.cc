// FusedElementwise on each accelerator against the CPU kernel: programs as
// the elementwise_fusion pass writes them ("Op a [b]" over registers, inputs
// first), f32 and f64, with inputs of the output's shape and one-element
// inputs read for every element; chains, trees that reuse registers, every
// op a program may use, edge values, and the programs the GPU refuses.
//
// Tolerances: steps of +, -, *, /, sqrt, max, min, floor, ceil, abs, neg,
// relu and reciprocal are correctly rounded on both sides and intermediate
// results stay in the compute type (f32 or f64) on both: programs of those
// match bit for bit. Exp, Log, Tanh, Erf, Sigmoid differ by a few ulps
// between the device's math library and glibc, and later steps carry that
// on: 1e-5 relative for f32, 1e-12 for f64. Where later steps cancel (the
// every-op program's sum of -sqrt(...) + 1/y + floor + ceil, the gelu-like
// erf(x s) + s for s < 1) an ulp of exp or erf becomes a large relative
// error on a result near 0: in f32 up to ~1.5e-5 absolute (values up to 6
// times a sqrt up to 20), hence 1e-4 absolute there.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;
using testing::uniform;

class FusedElementwiseOnBackend : public testing::OnBackend {};

std::map<std::string, Attribute> program(std::vector<std::string> lines) {
  return {{"program", Attribute(std::move(lines))}};
}

Tolerance library_tolerance(DType dtype) { return dtype == DType::kFloat32 ? Tolerance{1e-5, 1e-4} : Tolerance{1e-12, 1e-300}; }

TEST_P(FusedElementwiseOnBackend, ArithmeticProgramsMatchTheCpuBitForBit) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{1}, {7, 13}, {2, 3, 8, 8}, {300, 1000}, {0, 4}}) {
      Tensor x = uniform(dtype, sizes, seed++, -3.0, 3.0);
      Tensor y = uniform(dtype, sizes, seed++, -3.0, 3.0);
      Tensor z = uniform(dtype, sizes, seed++, 0.5, 2.0);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes);
      // A chain: relu(x + y) * y.
      expect_same_as_cpu(GetParam(), "FusedElementwise", {x, y}, program({"Add 0 1", "Relu 2", "Mul 3 1"}), Tolerance{}, label);
      // A tree reading registers more than once: (x - y) / z + max(x, -y) * min(z, |x|).
      expect_same_as_cpu(GetParam(), "FusedElementwise", {x, y, z},
                         program({"Sub 0 1", "Div 3 2", "Neg 1", "Max 0 5", "Abs 0", "Min 2 7", "Mul 6 8", "Add 4 9"}),
                         Tolerance{}, label);
      // sqrt, reciprocal, floor, ceil: 1/sqrt(z) + floor(x) - ceil(y).
      expect_same_as_cpu(GetParam(), "FusedElementwise", {x, y, z},
                         program({"Sqrt 2", "Reciprocal 3", "Floor 0", "Ceil 1", "Add 4 5", "Sub 7 6"}), Tolerance{}, label);
      // One step, and a step reading only inputs.
      expect_same_as_cpu(GetParam(), "FusedElementwise", {x}, program({"Neg 0"}), Tolerance{}, label);
    }
  }
}

TEST_P(FusedElementwiseOnBackend, OneElementInputsAreReadForEveryElement) {
  // The input standardization that fusion makes of LeNet's and ResNet's
  // preprocessing: (x - mean) * (1 / std), mean and std one element each.
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = uniform(dtype, {2, 3, 32, 32}, seed++, 0.0, 1.0);
    Tensor mean = uniform(dtype, {1}, seed++, 0.2, 0.6);
    Tensor std = uniform(dtype, {}, seed++, 0.1, 0.5);  // rank 0: one element too
    expect_same_as_cpu(GetParam(), "FusedElementwise", {x, mean, std}, program({"Sub 0 1", "Reciprocal 2", "Mul 3 4"}),
                       Tolerance{}, "standardization");
    // The scalar first: its shape is not the output's.
    expect_same_as_cpu(GetParam(), "FusedElementwise", {mean, x, std}, program({"Sub 1 0", "Div 3 2", "Relu 4"}),
                       Tolerance{}, "scalar first");
    // Every input one element: the output has input 0's shape.
    expect_same_as_cpu(GetParam(), "FusedElementwise", {std, mean}, program({"Mul 0 1", "Add 2 0"}), Tolerance{}, "all scalars");
    expect_same_as_cpu(GetParam(), "FusedElementwise", {mean, std}, program({"Mul 0 1", "Add 2 0"}), Tolerance{}, "all scalars, rank 1 first");
  }
}

TEST_P(FusedElementwiseOnBackend, LibraryFunctionsMatchTheCpuToAFewUlps) {
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = uniform(dtype, {5, 301}, seed++, -6.0, 6.0);
    Tensor y = uniform(dtype, {5, 301}, seed++, 0.1, 4.0);
    Tensor s = uniform(dtype, {1}, seed++, 0.5, 1.5);
    // Every op a program may use, mixed with binary steps and a scalar input.
    expect_same_as_cpu(GetParam(), "FusedElementwise", {x, y, s},
                       program({"Exp 0", "Log 1", "Tanh 0", "Sigmoid 0", "Erf 0", "Mul 3 2", "Add 8 4", "Sub 9 5",
                                "Div 10 6", "Max 11 7", "Min 12 3", "Abs 13", "Sqrt 14", "Neg 15", "Reciprocal 1",
                                "Floor 0", "Ceil 0", "Relu 0", "Add 16 17", "Add 21 18", "Add 22 19", "Mul 23 20"}),
                       library_tolerance(dtype), std::string(dtype_name(dtype)) + " every op");
    // A GELU-like chain over x and a scalar, as BERT's fused graphs hold.
    expect_same_as_cpu(GetParam(), "FusedElementwise", {x, s},
                       program({"Mul 0 1", "Erf 2", "Add 3 1", "Mul 0 4", "Mul 5 1"}), library_tolerance(dtype),
                       std::string(dtype_name(dtype)) + " gelu-like");
  }
}

TEST_P(FusedElementwiseOnBackend, EdgeValuesGoTheCpusWay) {
  // NaN through Max and Min (from either side), Relu of NaN and -0, Log and
  // Sqrt of negatives, Exp overflowing, 1/0, Abs of -0.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> a = {0.0, -0.0, -1.0, 1.0, nan, 2.0, inf, -inf, 100.0, 1000.0, -1e-300, 0.5};
  std::vector<double> b = {-0.0, 0.0, nan, -1.0, 1.0, nan, -inf, inf, -100.0, 0.0, 1e-300, -0.5};
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = testing::make_tensor(dtype, a, {static_cast<int64_t>(a.size())});
    Tensor y = testing::make_tensor(dtype, b, {static_cast<int64_t>(b.size())});
    for (const std::vector<std::string>& lines :
         std::vector<std::vector<std::string>>{{"Max 0 1"}, {"Min 0 1"}, {"Max 1 0"}, {"Min 1 0"}, {"Relu 0"}, {"Abs 0"},
                                               {"Log 0"}, {"Sqrt 0"}, {"Reciprocal 0"}, {"Exp 0"}, {"Div 0 1"},
                                               {"Sigmoid 0"}, {"Tanh 1"}, {"Floor 0", "Ceil 2"}}) {
      expect_same_as_cpu(GetParam(), "FusedElementwise", {x, y}, program(lines), library_tolerance(dtype),
                         std::string(dtype_name(dtype)) + " " + lines[0]);
    }
  }
}

TEST_P(FusedElementwiseOnBackend, RefusesInputsOfOtherShapesLikeTheCpu) {
  Tensor x = uniform(DType::kFloat32, {4, 5}, 1, -1.0, 1.0), row = uniform(DType::kFloat32, {5}, 2, -1.0, 1.0);
  std::string message =
      testing::error_of([&] { testing::run_node_on(GetParam(), "FusedElementwise", {x, row}, program({"Add 0 1"})); });
  EXPECT_NE(message.find("or one element"), std::string::npos) << message;
}

TEST_P(FusedElementwiseOnBackend, ProgramsLongerThanTheKernelTakesAreRefusedNamingTheNode) {
  if (GetParam().type == DeviceType::kCpu) GTEST_SKIP() << "the CPU kernel takes programs of any length";
  Tensor x = uniform(DType::kFloat32, {8}, 1, -1.0, 1.0);
  std::vector<std::string> lines;
  for (int i = 0; i < 65; ++i) lines.push_back("Neg " + std::to_string(i));
  std::string message =
      testing::error_of([&] { testing::run_node_on(GetParam(), "FusedElementwise", {x}, program(lines)); });
  EXPECT_NE(message.find("FusedElementwise 'op': the CUDA kernel takes at most 16 inputs and 64 steps"), std::string::npos)
      << message;
  // 64 steps still run, and match.
  lines.pop_back();
  expect_same_as_cpu(GetParam(), "FusedElementwise", {x}, program(lines), Tolerance{}, "64 steps");
}

INSTANTIATE_TEST_SUITE_P(Cuda, FusedElementwiseOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
