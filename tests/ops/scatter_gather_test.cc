// GatherElements, ScatterElements, GatherND and ScatterND against references
// written from the ONNX definitions with explicit coordinates, on random data
// and indices (negative ones included), every scatter reduction, batched
// GatherND; gradient rules against finite differences; bad indices.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

// Random indices in [-limit, limit).
std::vector<int64_t> random_indices(int64_t count, int64_t limit, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> distribution(-limit, limit - 1);
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t& value : values) value = distribution(engine);
  return values;
}

Tensor i64(const std::vector<int64_t>& values, std::vector<int64_t> sizes) { return Tensor::from_vector<int64_t>(values, std::move(sizes)); }

int64_t wrap(int64_t index, int64_t limit) { return index < 0 ? index + limit : index; }

TEST(ScatterGatherKernels, GatherElementsOnEveryAxis) {
  const std::vector<int64_t> data_sizes = {3, 4, 2};
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    Tensor data = random_tensor(dtype, data_sizes, 1);
    std::vector<double> values = to_doubles(data);
    for (int64_t axis : {0, 1, -1}) {
      auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      std::vector<int64_t> index_sizes = {2, 3, 2};
      index_sizes[a] = 5;  // longer than the data along the axis: repeats
      std::vector<int64_t> indices = random_indices(count_of(index_sizes), data_sizes[a], 2 + a);
      Tensor out = run_op("GatherElements", {data, i64(indices, index_sizes)}, {{"axis", Attribute(axis)}})[0];
      ASSERT_EQ(out.sizes(), index_sizes);
      std::vector<double> got = to_doubles(out);
      for (int64_t flat = 0; flat < count_of(index_sizes); ++flat) {
        std::vector<int64_t> index = unflatten(flat, index_sizes);
        index[a] = wrap(indices[static_cast<size_t>(flat)], data_sizes[a]);
        ASSERT_EQ(got[static_cast<size_t>(flat)], values[static_cast<size_t>(flatten(index, data_sizes))]);
      }
    }
  }
}

TEST(ScatterGatherKernels, ScatterElementsEveryReduction) {
  const std::vector<int64_t> data_sizes = {4, 3};
  Tensor data = random_tensor(DType::kFloat32, data_sizes, 3);
  const std::vector<int64_t> index_sizes = {3, 3};
  std::vector<int64_t> indices = random_indices(9, 4, 4);  // repeats along axis 0 are likely
  Tensor updates = random_tensor(DType::kFloat32, index_sizes, 5);
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    std::vector<double> expected = to_doubles(data), u = to_doubles(updates);
    for (int64_t flat = 0; flat < 9; ++flat) {
      std::vector<int64_t> index = unflatten(flat, index_sizes);
      index[0] = wrap(indices[static_cast<size_t>(flat)], 4);
      double& target = expected[static_cast<size_t>(flatten(index, data_sizes))];
      double v = u[static_cast<size_t>(flat)];
      std::string r = reduction;
      target = r == "none" ? v : r == "add" ? target + v : r == "mul" ? target * v : r == "max" ? std::max(target, v) : std::min(target, v);
    }
    Tensor out = run_op("ScatterElements", {data, i64(indices, index_sizes), updates},
                        {{"reduction", Attribute(std::string(reduction))}})[0];
    std::vector<double> got = to_doubles(out);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << reduction << " element " << i;
  }
}

TEST(ScatterGatherKernels, GatherNDWithAndWithoutBatchDims) {
  Tensor data = random_tensor(DType::kFloat32, {2, 3, 4}, 6);
  std::vector<double> values = to_doubles(data);
  // batch_dims 0, tuples of 2: slices of 4.
  Tensor out = run_op("GatherND", {data, i64({1, -1, 0, 2, -2, 0}, {3, 2})})[0];
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 4}));
  std::vector<double> got = to_doubles(out);
  const std::vector<std::pair<int64_t, int64_t>> tuples = {{1, 2}, {0, 2}, {0, 0}};
  for (size_t t = 0; t < 3; ++t) {
    for (int64_t e = 0; e < 4; ++e) {
      ASSERT_EQ(got[t * 4 + static_cast<size_t>(e)], values[static_cast<size_t>(flatten({tuples[t].first, tuples[t].second, e}, {2, 3, 4}))]);
    }
  }
  // batch_dims 1, tuples of 2 (full coordinates): one element each.
  Tensor batched = run_op("GatherND", {data, i64({0, 3, 2, 1, 1, 0, -1, -1}, {2, 2, 2})}, {{"batch_dims", Attribute(int64_t{1})}})[0];
  ASSERT_EQ(batched.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(to_doubles(batched), (std::vector<double>{values[static_cast<size_t>(flatten({0, 0, 3}, {2, 3, 4}))],
                                                       values[static_cast<size_t>(flatten({0, 2, 1}, {2, 3, 4}))],
                                                       values[static_cast<size_t>(flatten({1, 1, 0}, {2, 3, 4}))],
                                                       values[static_cast<size_t>(flatten({1, 2, 3}, {2, 3, 4}))]}));
}

TEST(ScatterGatherKernels, ScatterNDSlicesAndReductions) {
  Tensor data = random_tensor(DType::kInt32, {4, 2}, 7);
  Tensor updates = random_tensor(DType::kInt32, {3, 2}, 8);
  std::vector<double> d = to_doubles(data), u = to_doubles(updates);
  Tensor indices = i64({2, -4, 2}, {3, 1});  // rows 2, 0, 2
  std::vector<double> none = d, add = d;
  for (int64_t e = 0; e < 2; ++e) {
    none[static_cast<size_t>(4 + e)] = u[static_cast<size_t>(4 + e)];
    none[static_cast<size_t>(e)] = u[static_cast<size_t>(2 + e)];
    add[static_cast<size_t>(4 + e)] += u[static_cast<size_t>(e)] + u[static_cast<size_t>(4 + e)];
    add[static_cast<size_t>(e)] += u[static_cast<size_t>(2 + e)];
  }
  EXPECT_EQ(to_doubles(run_op("ScatterND", {data, indices, updates})[0]), none);
  EXPECT_EQ(to_doubles(run_op("ScatterND", {data, indices, updates}, {{"reduction", Attribute(std::string("add"))}})[0]), add);
}

TEST(ScatterGatherKernels, BadIndicesNameTheNode) {
  Tensor data = random_tensor(DType::kFloat32, {3, 2}, 9);
  EXPECT_NE(error_of("GatherElements", {data, i64({3, 0}, {1, 2})}).find("index 3 is out of range"), std::string::npos);
  EXPECT_NE(error_of("GatherElements", {data, i64({0}, {1})}).find("rank"), std::string::npos);
  EXPECT_NE(error_of("GatherND", {data, i64({0, 0, 0}, {1, 3})}).find("do not fit"), std::string::npos);
  EXPECT_NE(error_of("ScatterND", {data, i64({1}, {1, 1}), random_tensor(DType::kFloat32, {3}, 1)}).find("updates"),
            std::string::npos);
  EXPECT_NE(error_of("ScatterElements", {data, i64({0, 0}, {1, 2}), random_tensor(DType::kFloat32, {1, 2}, 1)},
                     {{"reduction", Attribute(std::string("sum"))}}).find("reduction 'sum'"),
            std::string::npos);
  EXPECT_NE(error_of("GatherND", {data, i64({-4}, {1, 1})}).find("'op'"), std::string::npos);
}

TEST(ScatterGatherGradients, MatchFiniteDifferences) {
  auto f64 = [](std::vector<int64_t> sizes, uint32_t seed) { return random_tensor(DType::kFloat64, sizes, seed); };
  // Repeated indices accumulate.
  check_gradient("GatherElements", {f64({3, 4}, 1), i64({0, 2, 2, -1, 1, 0, 0, 0}, {2, 4})}, {0});
  check_gradient("GatherElements", {f64({3, 4}, 2), i64({3, 3, 0, 1, 2, -4}, {3, 2})}, {0}, {{"axis", Attribute(int64_t{1})}});
  // none: distinct targets, so no update is overwritten; add: repeats allowed.
  check_gradient("ScatterElements", {f64({3, 4}, 3), i64({2, 0, 1, 1, 2, 0}, {2, 3}), f64({2, 3}, 4)}, {0, 2});
  check_gradient("ScatterElements", {f64({3, 4}, 5), i64({2, 2, 1, 2, 2, 0}, {2, 3}), f64({2, 3}, 6)}, {0, 2},
                 {{"reduction", Attribute(std::string("add"))}});
  check_gradient("GatherND", {f64({3, 4}, 7), i64({1, 1, 1}, {3, 1})}, {0});
  check_gradient("GatherND", {f64({2, 3, 2}, 8), i64({2, 0, 2, 2}, {2, 2, 1})}, {0}, {{"batch_dims", Attribute(int64_t{1})}});
  check_gradient("ScatterND", {f64({4, 2}, 9), i64({3, 0}, {2, 1}), f64({2, 2}, 10)}, {0, 2});
  check_gradient("ScatterND", {f64({4, 2}, 11), i64({3, 1, -1, 1}, {2, 2}), f64({2}, 12)}, {0, 2},
                 {{"reduction", Attribute(std::string("add"))}});
}

}  // namespace
}  // namespace weir
