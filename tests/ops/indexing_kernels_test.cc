// Concat, Split, Slice, Gather, Expand, Tile, ConstantOfShape, Range, Size,
// Constant and ZerosLike against references by index arithmetic on random
// inputs (negative axes and indices, empty pieces, every ONNX Slice clamp),
// gradient rules against finite differences, and errors for bad indices.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::broadcast_offset;
using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

Tensor i64(std::vector<int64_t> values) {
  auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>(values, {n});
}

// Element at multi-index `index` of a row-major tensor of `sizes`.
double at(const std::vector<double>& values, const std::vector<int64_t>& sizes, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t a = 0; a < sizes.size(); ++a) flat = flat * sizes[a] + index[a];
  return values[static_cast<size_t>(flat)];
}

TEST(IndexingKernels, ConcatAndSplitRoundTrip) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool, DType::kBFloat16}) {
    Tensor a = random_tensor(dtype, {2, 3, 4}, 1), b = random_tensor(dtype, {2, 0, 4}, 2), c = random_tensor(dtype, {2, 2, 4}, 3);
    Tensor joined = run_op("Concat", {a, b, c}, {{"axis", Attribute(int64_t{-2})}})[0];
    ASSERT_EQ(joined.sizes(), (std::vector<int64_t>{2, 5, 4}));
    std::vector<double> va = to_doubles(a), vc = to_doubles(c), vj = to_doubles(joined);
    for (int64_t flat = 0; flat < joined.num_elements(); ++flat) {
      std::vector<int64_t> index = unflatten(flat, joined.sizes());
      double expected = index[1] < 3 ? at(va, a.sizes(), index) : at(vc, c.sizes(), {index[0], index[1] - 3, index[2]});
      ASSERT_EQ(vj[static_cast<size_t>(flat)], expected) << dtype_name(dtype);
    }
    std::vector<Tensor> parts = run_op("Split", {joined, i64({3, 0, 2})}, {{"axis", Attribute(int64_t{1})}}, 3);
    EXPECT_EQ(to_doubles(parts[0]), va);
    EXPECT_EQ(parts[1].sizes(), (std::vector<int64_t>{2, 0, 4}));
    EXPECT_EQ(to_doubles(parts[2]), vc);
  }
  // Equal parts, the last smaller.
  std::vector<Tensor> parts = run_op("Split", {random_tensor(DType::kFloat32, {7}, 4)}, {}, 3);
  EXPECT_EQ(parts[0].sizes()[0], 3);
  EXPECT_EQ(parts[2].sizes()[0], 1);
}

TEST(IndexingKernels, SliceFollowsOnnxClamping) {
  Tensor x = random_tensor(DType::kFloat32, {5, 6}, 5);
  std::vector<double> v = to_doubles(x);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  for (const Case& c : std::vector<Case>{{{1, 0}, {3, 6}, {0, 1}, {1, 2}},
                                         {{-1}, {small}, {1}, {-1}},
                                         {{4, -2}, {1, big}, {0, 1}, {-2, 1}},
                                         {{10}, {20}, {0}, {1}},
                                         {{0}, {big}, {-1}, {3}}}) {
    Tensor y = run_op("Slice", {x, i64(c.starts), i64(c.ends), i64(c.axes), i64(c.steps)})[0];
    // Reference: walk each axis by hand with Python slice semantics.
    std::vector<std::vector<int64_t>> picks(2);
    for (size_t a = 0; a < 2; ++a) {
      int64_t dim = x.sizes()[a];
      int64_t start = 0, end = dim, step = 1;
      for (size_t i = 0; i < c.axes.size(); ++i) {
        if ((c.axes[i] + 2) % 2 != static_cast<int64_t>(a)) continue;
        step = c.steps[i];
        auto fix = [&](int64_t value) {
          if (value < 0) value = value < -dim ? (step > 0 ? 0 : -1) : value + dim;
          return step > 0 ? std::min(value, dim) : std::min(value, dim - 1);
        };
        start = fix(c.starts[i]);
        end = fix(c.ends[i]);
      }
      for (int64_t k = start; step > 0 ? k < end : k > end; k += step) picks[a].push_back(k);
    }
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{static_cast<int64_t>(picks[0].size()), static_cast<int64_t>(picks[1].size())}));
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < picks[0].size(); ++i) {
      for (size_t j = 0; j < picks[1].size(); ++j) {
        EXPECT_EQ(got[i * picks[1].size() + j], v[static_cast<size_t>(picks[0][i] * 6 + picks[1][j])]);
      }
    }
  }
}

TEST(IndexingKernels, GatherWithNegativeIndicesOnEveryAxis) {
  Tensor data = random_tensor(DType::kFloat32, {3, 4, 2}, 6);
  std::vector<double> v = to_doubles(data);
  Tensor indices = Tensor::from_vector<int64_t>({0, -1, 1, 1}, {2, 2});
  for (int64_t axis : {0, 1, -1}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Tensor y = run_op("Gather", {data, indices}, {{"axis", Attribute(axis)}})[0];
    std::vector<double> got = to_doubles(y);
    for (int64_t flat = 0; flat < y.num_elements(); ++flat) {
      std::vector<int64_t> out = unflatten(flat, y.sizes());
      int64_t pick = indices.data<int64_t>()[out[static_cast<size_t>(a)] * 2 + out[static_cast<size_t>(a) + 1]];
      if (pick < 0) pick += data.sizes()[static_cast<size_t>(a)];
      std::vector<int64_t> in(out.begin(), out.begin() + a);
      in.push_back(pick);
      in.insert(in.end(), out.begin() + a + 2, out.end());
      ASSERT_EQ(got[static_cast<size_t>(flat)], at(v, data.sizes(), in)) << "axis " << axis;
    }
  }
  EXPECT_THROW(run_op("Gather", {data, i64({3})}), Error);
}

TEST(IndexingKernels, ExpandTileAndGenerators) {
  Tensor x = random_tensor(DType::kFloat32, {3, 1}, 7);
  Tensor y = run_op("Expand", {x, i64({2, 1, 4})})[0];
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> vx = to_doubles(x), vy = to_doubles(y);
  for (int64_t i = 0; i < y.num_elements(); ++i) EXPECT_EQ(vy[static_cast<size_t>(i)], vx[static_cast<size_t>(broadcast_offset(i, y.sizes(), {3, 1}))]);
  EXPECT_THROW(run_op("Expand", {x, i64({2, 2})}), Error);

  Tensor t = run_op("Tile", {Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}), i64({2, 3})})[0];
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{4, 6}));
  std::vector<double> vt = to_doubles(t);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(vt[static_cast<size_t>(i * 6 + j)], (i % 2) * 2 + (j % 2) + 1);
  }

  Tensor filled = run_op("ConstantOfShape", {i64({2, 3})}, {{"value", Attribute(Tensor::from_vector<int32_t>({7}, {1}))}})[0];
  EXPECT_EQ(filled.dtype(), DType::kInt32);
  EXPECT_EQ(to_doubles(filled), std::vector<double>(6, 7));
  EXPECT_EQ(to_doubles(run_op("ConstantOfShape", {i64({2})})[0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(to_doubles(run_op("Range", {Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(2), Tensor::scalar<int64_t>(-3)})[0]),
            (std::vector<double>{10, 7, 4}));
  EXPECT_EQ(run_op("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0.25f)})[0].num_elements(), 4);
  EXPECT_EQ(to_doubles(run_op("Size", {x})[0]), (std::vector<double>{3}));
  EXPECT_EQ(to_doubles(run_op("ZerosLike", {x})[0]), std::vector<double>(3, 0));
}

TEST(IndexingGradients, MatchFiniteDifferences) {
  auto f64 = [](std::vector<int64_t> sizes, uint32_t seed) { return random_tensor(DType::kFloat64, sizes, seed); };
  check_gradient("Concat", {f64({2, 3}, 1), f64({2, 1}, 2), f64({2, 2}, 3)}, {0, 1, 2}, {{"axis", Attribute(int64_t{1})}});
  check_gradient("Slice", {f64({4, 5}, 4), i64({3, 0}), i64({0, 5}), i64({0, 1}), i64({-1, 2})}, {0});
  // Repeated indices accumulate.
  check_gradient("Gather", {f64({4, 3}, 5), Tensor::from_vector<int64_t>({1, -1, 1}, {3})}, {0});
  check_gradient("Gather", {f64({2, 4, 3}, 6), Tensor::from_vector<int64_t>({0, 2, 2, 3}, {2, 2})}, {0},
                 {{"axis", Attribute(int64_t{1})}});
  check_gradient("Expand", {f64({3, 1}, 7), i64({2, 3, 4})}, {0});
  check_gradient("Tile", {f64({2, 3}, 8), i64({3, 2})}, {0});
  check_gradient("Tile", {f64({1, 2, 2}, 9), i64({2, 1, 3})}, {0});
}

TEST(IndexingGradients, SplitGradientConcatenatesAndFillsAbsentParts) {
  Graph g("split");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{5}});
  Node* split = g.add_node("Split", {x, g.add_constant("parts", i64({2, 3}))}, 2, {}, "split");
  infer_graph_types(g, default_op_registry());
  Value* dy = g.add_input("dy", split->output(1)->type());
  GradientContext ctx(g, *split, {nullptr, dy});
  default_op_registry().get("Split").gradient_rule()(ctx);
  g.add_output(ctx.input_grads()[0]);
  infer_graph_types(g, default_op_registry());
  std::vector<Tensor> out = evaluate_graph(g, {{"x", Tensor(DType::kFloat32, {5})},
                                               {"dy", Tensor::from_vector<float>({1, 2, 3}, {3})}});
  EXPECT_EQ(to_doubles(out[0]), (std::vector<double>{0, 0, 1, 2, 3}));
}

}  // namespace
}  // namespace weir
