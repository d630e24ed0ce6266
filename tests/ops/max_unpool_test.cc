// MaxUnpool of MaxPool's output and indices (1 to 3 spatial axes, strides,
// overlapping windows, pads) against a reference that finds each window's
// maximum by explicit loops and puts it back; output_shape; coinciding
// indices; the gradient against finite differences; malformed inputs.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

using Sizes = std::vector<int64_t>;

Attribute ints(Sizes values) { return Attribute(std::move(values)); }

Tensor i64(const Sizes& values) { return Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}); }

struct PoolCase {
  Sizes x;  // the pooled input [N, C, spatial...]
  Sizes kernel, strides, pads;
};

// Each window's maximum of x at its place, zeros elsewhere.
std::vector<double> unpool_reference(const std::vector<double>& x, const PoolCase& c) {
  size_t spatial = c.kernel.size();
  Sizes in(c.x.begin() + 2, c.x.end()), out;
  for (size_t d = 0; d < spatial; ++d) out.push_back((in[d] + c.pads[d] + c.pads[spatial + d] - c.kernel[d]) / c.strides[d] + 1);
  std::vector<double> expected(x.size(), 0.0);
  int64_t planes = c.x[0] * c.x[1];
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t o = 0; o < count_of(out); ++o) {
      Sizes window = unflatten(o, out);
      int64_t best = -1;
      for (int64_t t = 0; t < count_of(c.kernel); ++t) {
        Sizes tap = unflatten(t, c.kernel), at(spatial);
        bool inside = true;
        for (size_t d = 0; d < spatial; ++d) {
          at[d] = window[d] * c.strides[d] - c.pads[d] + tap[d];
          inside = inside && at[d] >= 0 && at[d] < in[d];
        }
        if (!inside) continue;
        int64_t flat = plane * count_of(in) + flatten(at, in);
        if (best < 0 || x[static_cast<size_t>(flat)] > x[static_cast<size_t>(best)]) best = flat;
      }
      if (best >= 0) expected[static_cast<size_t>(best)] = x[static_cast<size_t>(best)];
    }
  }
  return expected;
}

std::map<std::string, Attribute> window_attributes(const PoolCase& c) {
  return {{"kernel_shape", ints(c.kernel)}, {"strides", ints(c.strides)}, {"pads", ints(c.pads)}};
}

// Shapes whose unpooled size is the pooled input's.
const std::vector<PoolCase> kCases = {
    {{2, 3, 6, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
    {{1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}},  // overlapping windows, pads
    {{2, 1, 7}, {3}, {2}, {0, 0}},
    {{1, 2, 4, 4, 4}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}},
    {{1, 1, 4, 6}, {2, 3}, {2, 3}, {0, 0, 0, 0}},
};

TEST(MaxUnpoolKernels, PutsMaxPoolResultsBack) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (const PoolCase& c : kCases) {
      Tensor x = make_tensor(dtype, random_values(DType::kFloat64, count_of(c.x), 17), c.x);
      std::vector<Tensor> pooled = run_op("MaxPool", {x}, window_attributes(c), 2);
      Tensor y = run_op("MaxUnpool", {pooled[0], pooled[1]}, window_attributes(c))[0];
      ASSERT_EQ(y.sizes(), c.x) << format_sizes(c.x);
      EXPECT_EQ(to_doubles(y), unpool_reference(to_doubles(x), c)) << dtype_name(dtype) << " " << format_sizes(c.x);
    }
  }
}

TEST(MaxUnpoolKernels, OutputShapeExtendsTheUnpooledTensor) {
  PoolCase c{{2, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}};
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 64, 5), c.x);
  std::vector<Tensor> pooled = run_op("MaxPool", {x}, window_attributes(c), 2);
  const Sizes big = {2, 2, 5, 7};
  Tensor y = run_op("MaxUnpool", {pooled[0], pooled[1], i64(big)}, window_attributes(c))[0];
  ASSERT_EQ(y.sizes(), big);
  std::vector<double> unpooled = unpool_reference(to_doubles(x), c), got = to_doubles(y);
  for (int64_t flat = 0; flat < count_of(big); ++flat) {
    Sizes index = unflatten(flat, big);
    double expected = index[2] < 4 && index[3] < 4 ? unpooled[static_cast<size_t>(flatten(index, c.x))] : 0.0;
    ASSERT_EQ(got[static_cast<size_t>(flat)], expected) << "element " << flat;
  }
  // Without strides and pads: strides 1, no padding, so [1, 1, 2] unpools to [1, 1, 3] with kernel 2.
  Tensor small = make_tensor(DType::kFloat32, {7, 8}, {1, 1, 2});
  EXPECT_EQ(to_doubles(run_op("MaxUnpool", {small, Tensor::from_vector<int64_t>({2, 1}, {1, 1, 2})}, {{"kernel_shape", ints({2})}})[0]),
            (std::vector<double>{0, 8, 7}));
}

TEST(MaxUnpoolKernels, LaterElementsWinCoincidingIndices) {
  Tensor x = make_tensor(DType::kFloat64, {1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor indices = Tensor::from_vector<int64_t>({3, 3, 0, 3}, {1, 1, 2, 2});
  std::map<std::string, Attribute> attributes = {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}};
  std::vector<double> got = to_doubles(run_op("MaxUnpool", {x, indices}, attributes)[0]);
  std::vector<double> expected(16, 0.0);
  expected[0] = 3;
  expected[3] = 4;
  EXPECT_EQ(got, expected);
  check_gradient("MaxUnpool", {x, indices}, {0}, attributes);
}

TEST(MaxUnpoolGradients, MatchFiniteDifferences) {
  for (const PoolCase& c : {kCases[0], kCases[1], kCases[2]}) {
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.x), 23), c.x);
    std::vector<Tensor> pooled = run_op("MaxPool", {x}, window_attributes(c), 2);
    check_gradient("MaxUnpool", {pooled[0], pooled[1]}, {0}, window_attributes(c));
    Sizes big = c.x;
    big.back() += 2;
    check_gradient("MaxUnpool", {pooled[0], pooled[1], i64(big)}, {0}, window_attributes(c));
  }
}

TEST(MaxUnpoolKernels, RejectsBadIndicesShapesAndAttributes) {
  Tensor x(DType::kFloat32, {1, 1, 2, 2});
  Tensor indices = Tensor::from_vector<int64_t>({0, 1, 2, 16}, {1, 1, 2, 2});
  std::map<std::string, Attribute> attributes = {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}};
  EXPECT_NE(error_of("MaxUnpool", {x, indices}, attributes).find("index 16 is outside the unpooled shape [1,1,4,4]"),
            std::string::npos);
  Tensor good = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {1, 1, 2, 2});
  EXPECT_NE(error_of("MaxUnpool", {x, good, i64({1, 1, 3, 4})}, attributes).find("output_shape [1,1,3,4] must be"),
            std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {x, good, i64({1, 2, 4, 4})}, attributes).find("must be X's N and C"), std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {x, Tensor::from_vector<int64_t>({0, 1}, {1, 1, 2})}, attributes).find("must have X's shape"),
            std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {x, good}, {{"kernel_shape", ints({2})}}).find("must have 2, 4 and 2 entries"),
            std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {x, good}, {{"kernel_shape", ints({2, 0})}}).find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {Tensor(DType::kFloat32, {2, 2}), Tensor::from_vector<int64_t>({0, 1, 2, 3}, {2, 2})},
                     {{"kernel_shape", ints({2})}})
                .find("must be [N, C, spatial...]"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
