// Wide outputs (ops/wide_output.h): Gemm, ConvGradWeight, ConvGradBias and
// SumToShape with output_dtype f32 on bf16 and f16 inputs write the f32
// result of the same inputs widened — to f32 rounding, where the narrow
// output is off by up to a bf16/f16 ulp; and a dtype they cannot write, or a
// Gemm with C, is refused naming the node.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/wide_output.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

const Attribute kF32(static_cast<int64_t>(DType::kFloat32));

// A random `dtype` tensor and its exact f32 copy.
std::pair<Tensor, Tensor> random_pair(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed) {
  Tensor narrow = make_tensor(dtype, random_values(dtype, testing::count_of(sizes), seed), sizes);
  return {narrow, make_tensor(DType::kFloat32, to_doubles(narrow), sizes)};
}

// `op` on the narrow inputs with output_dtype f32 against `op` on their f32
// copies: within a few f32 ulps of the largest magnitude, and closer than the
// narrow output comes.
void expect_wide_matches_f32(const std::string& op, DType dtype, const std::vector<std::vector<int64_t>>& shapes,
                             std::map<std::string, Attribute> attributes = {}) {
  std::vector<Tensor> narrow_inputs, f32_inputs;
  uint32_t seed = 7;
  for (const auto& sizes : shapes) {
    auto [narrow, wide] = random_pair(dtype, sizes, seed++);
    narrow_inputs.push_back(narrow);
    f32_inputs.push_back(wide);
  }
  std::vector<double> expected = to_doubles(run_op(op, f32_inputs, attributes)[0]);
  std::vector<double> rounded = to_doubles(run_op(op, narrow_inputs, attributes)[0]);
  attributes[kOutputDtypeAttr] = kF32;
  Tensor out = run_op(op, narrow_inputs, attributes)[0];
  ASSERT_EQ(out.dtype(), DType::kFloat32) << op;
  std::vector<double> got = to_doubles(out);
  ASSERT_EQ(got.size(), expected.size());
  double largest = 0, wide_error = 0, narrow_error = 0;
  for (double v : expected) largest = std::max(largest, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    wide_error = std::max(wide_error, std::fabs(got[i] - expected[i]));
    narrow_error = std::max(narrow_error, std::fabs(rounded[i] - expected[i]));
  }
  EXPECT_LE(wide_error, 1e-5 * largest) << op << " " << dtype_name(dtype);
  EXPECT_LT(wide_error, narrow_error) << op << " " << dtype_name(dtype) << ": the narrow output is as close";
}

TEST(WideOutput, GemmWritesF32FromBf16AndF16) {
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    expect_wide_matches_f32("Gemm", dtype, {{64, 48}, {64, 40}}, {{"transA", Attribute(int64_t{1})}});
    expect_wide_matches_f32("Gemm", dtype, {{48, 64}, {40, 64}}, {{"transB", Attribute(int64_t{1})}});
  }
}

TEST(WideOutput, GemmWithAnEmptyInnerDimensionWritesZeros) {
  Tensor out = run_op("Gemm", {Tensor(DType::kBFloat16, {0, 3}), Tensor(DType::kBFloat16, {0, 2})},
                      {{"transA", Attribute(int64_t{1})}, {kOutputDtypeAttr, kF32}})[0];
  ASSERT_EQ(out.dtype(), DType::kFloat32);
  for (double v : to_doubles(out)) EXPECT_EQ(v, 0.0);
}

TEST(WideOutput, ConvGradientsWriteF32FromBf16AndF16) {
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    // ConvGradWeight(dY, X, W): a 3x3 conv of X [4, 3, 8, 8] into 5 channels.
    expect_wide_matches_f32("ConvGradWeight", dtype, {{4, 5, 6, 6}, {4, 3, 8, 8}, {5, 3, 3, 3}});
    expect_wide_matches_f32("ConvGradBias", dtype, {{4, 5, 6, 6}});
  }
}

TEST(WideOutput, SumToShapeWritesF32FromBf16AndF16) {
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    expect_wide_matches_f32("SumToShape", dtype, {{64, 10}, {10}});
  }
}

TEST(WideOutput, RefusesWhatItCannotWriteNamingTheNode) {
  Tensor a(DType::kFloat32, {2, 2});
  std::string message = testing::error_of("Gemm", {a, a}, {{kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kBFloat16))}});
  EXPECT_NE(message.find("'op'"), std::string::npos) << message;
  EXPECT_NE(message.find("output_dtype bf16"), std::string::npos) << message;
  EXPECT_NE(message.find("from f32 inputs"), std::string::npos) << message;
  message = testing::error_of("SumToShape", {Tensor(DType::kBFloat16, {2, 2}), Tensor(DType::kBFloat16, {2})},
                              {{kOutputDtypeAttr, Attribute(int64_t{99})}});
  EXPECT_NE(message.find("code 99"), std::string::npos) << message;
  Tensor b(DType::kBFloat16, {2, 2});
  message = testing::error_of("Gemm", {b, b, b}, {{kOutputDtypeAttr, kF32}});
  EXPECT_NE(message.find("takes no C"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
