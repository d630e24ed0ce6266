// Shape, Reshape and Transpose CPU kernels against simple references, their
// errors, and the gradient rules of Reshape, Transpose, MatMul and Gemm
// against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

Tensor random_f64(const std::vector<int64_t>& sizes, uint32_t seed) {
  return make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed, -2, 2), sizes);
}

Tensor shape_tensor(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
}

TEST(TensorKernels, ShapeReportsSizes) {
  EXPECT_EQ(to_doubles(run_op("Shape", {Tensor(DType::kBool, {4, 0, 7})})[0]), (std::vector<double>{4, 0, 7}));
  EXPECT_EQ(run_op("Shape", {Tensor::scalar<float>(1)})[0].sizes(), (std::vector<int64_t>{0}));
  // start/end (opset 15): negative from the back, clamped, empty when start >= end.
  Tensor x(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_EQ(to_doubles(run_op("Shape", {x}, {{"start", Attribute(1)}})[0]), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(to_doubles(run_op("Shape", {x}, {{"start", Attribute(-3)}, {"end", Attribute(-1)}})[0]), (std::vector<double>{3, 4}));
  EXPECT_EQ(to_doubles(run_op("Shape", {x}, {{"start", Attribute(-9)}, {"end", Attribute(10)}})[0]), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(run_op("Shape", {x}, {{"start", Attribute(3)}, {"end", Attribute(1)}})[0].sizes(), (std::vector<int64_t>{0}));
}

TEST(TensorKernels, ReshapeIsAViewAndResolvesZeroAndMinusOne) {
  Tensor x = random_f64({2, 3, 4}, 1);
  Tensor y = run_op("Reshape", {x, shape_tensor({0, -1})})[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
  EXPECT_EQ(run_op("Reshape", {x, shape_tensor({-1})})[0].sizes(), (std::vector<int64_t>{24}));
  EXPECT_EQ(run_op("Reshape", {Tensor(DType::kFloat32, {0, 3}), shape_tensor({3, 0})}, {{"allowzero", Attribute(1)}})[0].sizes(),
            (std::vector<int64_t>{3, 0}));
  for (const std::vector<int64_t>& bad : std::vector<std::vector<int64_t>>{{5, -1}, {-1, -1}, {7}, {-2, 12}}) {
    try {
      run_op("Reshape", {x, shape_tensor(bad)});
      FAIL() << "accepted a bad shape";
    } catch (const Error& e) {
      EXPECT_EQ(e.node(), "op") << e.what();
    }
  }
}

TEST(TensorKernels, TransposeMatchesIndexReferenceForEveryPermutation) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt8, DType::kFloat64, DType::kBool}) {
    const std::vector<int64_t> sizes = {2, 3, 1, 5};
    Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), 3), sizes);
    std::vector<double> in = to_doubles(x);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      Tensor y = run_op("Transpose", {x}, {{"perm", Attribute(perm)}})[0];
      std::vector<double> out = to_doubles(y);
      std::vector<int64_t> out_sizes(4);
      for (size_t i = 0; i < 4; ++i) out_sizes[i] = sizes[static_cast<size_t>(perm[i])];
      ASSERT_EQ(y.sizes(), out_sizes);
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        // Output coordinates -> input coordinates -> input offset.
        std::vector<int64_t> coordinate(4), source(4);
        int64_t rest = flat;
        for (size_t axis = 4; axis-- > 0;) {
          coordinate[axis] = rest % out_sizes[axis];
          rest /= out_sizes[axis];
        }
        for (size_t i = 0; i < 4; ++i) source[static_cast<size_t>(perm[i])] = coordinate[i];
        int64_t offset = ((source[0] * 3 + source[1]) * 1 + source[2]) * 5 + source[3];
        ASSERT_EQ(out[static_cast<size_t>(flat)], in[static_cast<size_t>(offset)]) << dtype_name(dtype);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // The default reverses the axes.
  EXPECT_EQ(run_op("Transpose", {Tensor(DType::kFloat32, {2, 3, 4})})[0].sizes(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_THROW(run_op("Transpose", {Tensor(DType::kFloat32, {2, 3})}, {{"perm", Attribute(std::vector<int64_t>{0, 0})}}), Error);
}

// NCHW -> NHWC with 1-5 channels (an image going into a channels-last
// conv): the path that interleaves up to 4 rows at once, over rows long
// enough to split into several tiles with a ragged last one.
TEST(TensorKernels, TransposeToChannelsLastWithFewChannelsMatchesTheReference) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (int64_t channels = 1; channels <= 5; ++channels) {
      const std::vector<int64_t> sizes = {2, channels, 3, 700};
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), static_cast<uint32_t>(40 + channels)), sizes);
      Tensor y = run_op("Transpose", {x}, {{"perm", Attribute(std::vector<int64_t>{0, 2, 3, 1})}})[0];
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 700, channels}));
      std::vector<double> in = to_doubles(x), out = to_doubles(y);
      for (int64_t n = 0; n < 2; ++n) {
        for (int64_t h = 0; h < 3; ++h) {
          for (int64_t w = 0; w < 700; ++w) {
            for (int64_t c = 0; c < channels; ++c) {
              ASSERT_EQ(out[static_cast<size_t>(((n * 3 + h) * 700 + w) * channels + c)],
                        in[static_cast<size_t>(((n * channels + c) * 3 + h) * 700 + w)])
                  << dtype_name(dtype) << " C=" << channels << " at " << n << "," << h << "," << w << "," << c;
            }
          }
        }
      }
    }
  }
}

TEST(TensorKernels, FlattenSqueezeUnsqueezeAreViewsWithTheInferredShape) {
  Tensor x = random_f64({2, 3, 4}, 8);
  struct Case {
    const char* op;
    std::map<std::string, Attribute> attributes;
    std::vector<int64_t> expected;
  };
  const std::vector<Case> cases = {
      {"Flatten", {}, {2, 12}},
      {"Flatten", {{"axis", Attribute(0)}}, {1, 24}},
      {"Flatten", {{"axis", Attribute(3)}}, {24, 1}},
      {"Flatten", {{"axis", Attribute(-1)}}, {6, 4}},
      {"Unsqueeze", {{"axes", Attribute(std::vector<int64_t>{0, -1})}}, {1, 2, 3, 4, 1}},
      {"Unsqueeze", {{"axes", Attribute(std::vector<int64_t>{2})}}, {2, 3, 1, 4}},
  };
  for (const Case& c : cases) {
    Tensor y = run_op(c.op, {x}, c.attributes)[0];  // the evaluator also checks y against the inferred type
    EXPECT_EQ(y.sizes(), c.expected) << c.op;
    EXPECT_EQ(y.raw_data(), x.raw_data()) << c.op;
  }
  Tensor ones = random_f64({1, 3, 1, 2}, 9);
  EXPECT_EQ(run_op("Squeeze", {ones})[0].sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(run_op("Squeeze", {ones}, {{"axes", Attribute(std::vector<int64_t>{-2})}})[0].sizes(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(run_op("Flatten", {Tensor(DType::kFloat32, {0, 3, 2})}, {{"axis", Attribute(2)}})[0].sizes(), (std::vector<int64_t>{0, 2}));
  EXPECT_THROW(run_op("Squeeze", {ones}, {{"axes", Attribute(std::vector<int64_t>{1})}}), Error);  // size 3
  EXPECT_THROW(run_op("Unsqueeze", {x}, {{"axes", Attribute(std::vector<int64_t>{1, 1})}}), Error);
  EXPECT_THROW(run_op("Flatten", {x}, {{"axis", Attribute(4)}}), Error);
}

TEST(TensorGradients, ReshapeAndTranspose) {
  check_gradient("Reshape", {random_f64({2, 3, 4}, 5), shape_tensor({4, -1})}, {0});
  check_gradient("Transpose", {random_f64({2, 3, 4}, 6)}, {0}, {{"perm", Attribute(std::vector<int64_t>{1, 2, 0})}});
  check_gradient("Transpose", {random_f64({3, 5}, 7)}, {0});
  check_gradient("Flatten", {random_f64({2, 3, 4}, 8)}, {0}, {{"axis", Attribute(2)}});
  check_gradient("Squeeze", {random_f64({1, 3, 1}, 9)}, {0});
  check_gradient("Unsqueeze", {random_f64({3, 2}, 10)}, {0}, {{"axes", Attribute(std::vector<int64_t>{1})}});
}

TEST(LinalgGradients, MatMulIncludingBroadcastBatches) {
  check_gradient("MatMul", {random_f64({2, 3}, 10), random_f64({3, 4}, 11)}, {0, 1});
  check_gradient("MatMul", {random_f64({5, 2, 3}, 12), random_f64({3, 4}, 13)}, {0, 1});
  check_gradient("MatMul", {random_f64({4, 2, 3}, 14), random_f64({4, 3, 5}, 15)}, {0, 1});
  check_gradient("MatMul", {random_f64({2, 1, 2, 3}, 16), random_f64({3, 3, 4}, 17)}, {0, 1});
}

TEST(LinalgGradients, MatMulWithVectorOperands) {
  check_gradient("MatMul", {random_f64({3}, 18), random_f64({3, 4}, 19)}, {0, 1});
  check_gradient("MatMul", {random_f64({2, 4, 3}, 20), random_f64({3}, 21)}, {0, 1});
  check_gradient("MatMul", {random_f64({3}, 22), random_f64({2, 3, 5}, 23)}, {0, 1});
  check_gradient("MatMul", {random_f64({4}, 24), random_f64({4}, 25)}, {0, 1});
}

TEST(LinalgGradients, GemmWithEveryTransposeAndC) {
  uint32_t seed = 30;
  for (int64_t trans_a = 0; trans_a < 2; ++trans_a) {
    for (int64_t trans_b = 0; trans_b < 2; ++trans_b) {
      std::vector<int64_t> a = trans_a ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      std::vector<int64_t> b = trans_b ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5};
      std::map<std::string, Attribute> attributes = {{"alpha", Attribute(0.5)}, {"beta", Attribute(-2.0)},
                                                     {"transA", Attribute(trans_a)}, {"transB", Attribute(trans_b)}};
      check_gradient("Gemm", {random_f64(a, seed++), random_f64(b, seed++), random_f64({5}, seed++)}, {0, 1, 2}, attributes);
      check_gradient("Gemm", {random_f64(a, seed++), random_f64(b, seed++), random_f64({3, 5}, seed++)}, {0, 1, 2}, attributes);
      check_gradient("Gemm", {random_f64(a, seed++), random_f64(b, seed++)}, {0, 1}, attributes);
    }
  }
}

}  // namespace
}  // namespace weir
