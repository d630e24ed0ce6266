// Compress (every axis, no axis, short conditions), NonZero and Unique
// (sorted and by first occurrence, with and without an axis, NaN, bool)
// against references written with explicit coordinates and linear searches;
// Compress's gradient against finite differences; the symbolic dims their
// data-dependent sizes get; malformed inputs and attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

std::vector<double> random_flags(int64_t count, uint32_t seed) {
  std::vector<double> flags = random_values(DType::kFloat64, count, seed, 0.0, 1.0);
  for (double& flag : flags) flag = flag < 0.5 ? 1.0 : 0.0;
  return flags;
}

Tensor bools(const std::vector<double>& flags) {
  return make_tensor(DType::kBool, flags, {static_cast<int64_t>(flags.size())});
}

TEST(CompressKernels, EveryAxisAndTheFlattenedInput) {
  const std::vector<int64_t> sizes = {3, 4, 5};
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool, DType::kFloat16}) {
    Tensor x = make_tensor(dtype, random_values(dtype, 60, 11), sizes);
    if (dtype == DType::kBool) x = make_tensor(dtype, random_flags(60, 12), sizes);
    std::vector<double> values = to_doubles(x);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t n = sizes[static_cast<size_t>(a)];
      for (int64_t length : {n, n - 1, int64_t{0}}) {
        std::vector<double> flags = random_flags(length, static_cast<uint32_t>(20 + length + a));
        std::vector<int64_t> kept;
        for (int64_t j = 0; j < length; ++j) {
          if (flags[static_cast<size_t>(j)] != 0) kept.push_back(j);
        }
        Tensor y = run_op("Compress", {x, bools(flags)}, {{"axis", Attribute(axis)}})[0];
        std::vector<int64_t> expected_sizes = sizes;
        expected_sizes[static_cast<size_t>(a)] = static_cast<int64_t>(kept.size());
        ASSERT_EQ(y.sizes(), expected_sizes);
        std::vector<double> got = to_doubles(y);
        for (int64_t flat = 0; flat < count_of(expected_sizes); ++flat) {
          std::vector<int64_t> index = unflatten(flat, expected_sizes);
          index[static_cast<size_t>(a)] = kept[static_cast<size_t>(index[static_cast<size_t>(a)])];
          ASSERT_EQ(got[static_cast<size_t>(flat)], values[static_cast<size_t>(flatten(index, sizes))])
              << dtype_name(dtype) << " axis " << axis << " length " << length;
        }
      }
    }
    // No axis: the flattened input.
    std::vector<double> flags = random_flags(45, 31);
    std::vector<double> expected;
    for (size_t j = 0; j < flags.size(); ++j) {
      if (flags[j] != 0) expected.push_back(values[j]);
    }
    Tensor y = run_op("Compress", {x, bools(flags)})[0];
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{static_cast<int64_t>(expected.size())}));
    EXPECT_EQ(to_doubles(y), expected);
  }
}

TEST(CompressKernels, RejectsBadConditionsAndAxes) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 6, 1), {2, 3});
  EXPECT_NE(error_of("Compress", {x, bools({0, 0, 0, 1})}, {{"axis", Attribute(int64_t{1})}})
                .find("selects index 3, but the axis has 3 entries"),
            std::string::npos);
  // Entries past the axis may be false.
  EXPECT_EQ(run_op("Compress", {x, bools({0, 1, 0, 0})}, {{"axis", Attribute(int64_t{1})}})[0].sizes(),
            (std::vector<int64_t>{2, 1}));
  EXPECT_NE(error_of("Compress", {x, bools({1})}, {{"axis", Attribute(int64_t{2})}}).find("axis 2 is out of range for rank 2"),
            std::string::npos);
  EXPECT_NE(error_of("Compress", {x, make_tensor(DType::kBool, {1, 0}, {1, 2})}).find("condition [1,2] must be 1-D"),
            std::string::npos);
  EXPECT_THROW(run_op("Compress", {x, make_tensor(DType::kInt64, {1, 0}, {2})}), Error);
}

TEST(CompressGradients, MatchFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 7), {2, 3, 4});
  check_gradient("Compress", {x, bools({1, 0, 1, 1})}, {0}, {{"axis", Attribute(int64_t{2})}});
  check_gradient("Compress", {x, bools({0, 1, 1})}, {0}, {{"axis", Attribute(int64_t{-2})}});
  check_gradient("Compress", {x, bools(random_flags(24, 3))}, {0});
}

TEST(NonZeroKernels, CoordinatesInRowMajorOrder) {
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kBool, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{2, 3, 4}, {7}, {3, 0}, {}, {1, 5}}) {
      int64_t count = count_of(sizes);
      std::vector<double> values = random_flags(count, static_cast<uint32_t>(count + 3));
      for (size_t i = 0; i < values.size(); ++i) values[i] *= static_cast<double>(i % 3) - 1.5;  // mixed signs
      if (dtype == DType::kFloat32 && count > 2) values[1] = std::numeric_limits<double>::quiet_NaN();
      Tensor x = make_tensor(dtype, values, sizes);
      values = to_doubles(x);  // as stored: an integer type truncates 0.5 to 0
      std::vector<std::vector<int64_t>> expected;
      for (int64_t flat = 0; flat < count; ++flat) {
        double v = values[static_cast<size_t>(flat)];
        if (v != 0 || std::isnan(v)) expected.push_back(unflatten(flat, sizes));
      }
      Tensor y = run_op("NonZero", {x})[0];
      auto rank = static_cast<int64_t>(sizes.size());
      auto found = static_cast<int64_t>(expected.size());
      ASSERT_EQ(y.dtype(), DType::kInt64);
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{rank, found})) << dtype_name(dtype);
      const int64_t* got = y.data<int64_t>();
      for (int64_t k = 0; k < found; ++k) {
        for (int64_t a = 0; a < rank; ++a) {
          ASSERT_EQ(got[a * found + k], expected[static_cast<size_t>(k)][static_cast<size_t>(a)]);
        }
      }
    }
  }
}

// Unique's reference: slices by linear search in order of first occurrence,
// then (sorted) ordered by insertion sort on lexicographic comparison.
struct UniqueReference {
  std::vector<std::vector<double>> slices;  // Y's slices, in output order
  std::vector<int64_t> indices, inverse, counts;
};

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool lex_less(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (same(a[i], b[i])) continue;
    if (std::isnan(a[i])) return false;
    if (std::isnan(b[i])) return true;
    return a[i] < b[i];
  }
  return false;
}

UniqueReference unique_reference(const std::vector<double>& values, const std::vector<int64_t>& sizes, int64_t axis,
                                 bool sorted) {
  int64_t n = axis < 0 ? static_cast<int64_t>(values.size()) : sizes[static_cast<size_t>(axis)];
  // Slice j: every element whose axis coordinate is j, in row-major order.
  std::vector<std::vector<double>> all(static_cast<size_t>(n));
  for (int64_t flat = 0; flat < static_cast<int64_t>(values.size()); ++flat) {
    int64_t j = axis < 0 ? flat : unflatten(flat, sizes)[static_cast<size_t>(axis)];
    all[static_cast<size_t>(j)].push_back(values[static_cast<size_t>(flat)]);
  }
  UniqueReference r;
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    size_t g = 0;
    while (g < r.slices.size() &&
           !std::equal(r.slices[g].begin(), r.slices[g].end(), all[static_cast<size_t>(j)].begin(), same)) {
      ++g;
    }
    if (g == r.slices.size()) {
      r.slices.push_back(all[static_cast<size_t>(j)]);
      r.indices.push_back(j);
      r.counts.push_back(0);
    }
    ++r.counts[g];
    group_of[static_cast<size_t>(j)] = static_cast<int64_t>(g);
  }
  std::vector<size_t> order(r.slices.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  if (sorted) {
    for (size_t i = 1; i < order.size(); ++i) {
      for (size_t k = i; k > 0 && lex_less(r.slices[order[k]], r.slices[order[k - 1]]); --k) std::swap(order[k], order[k - 1]);
    }
  }
  UniqueReference out;
  std::vector<int64_t> place(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    out.slices.push_back(r.slices[order[p]]);
    out.indices.push_back(r.indices[order[p]]);
    out.counts.push_back(r.counts[order[p]]);
    place[order[p]] = static_cast<int64_t>(p);
  }
  for (int64_t g : group_of) out.inverse.push_back(place[static_cast<size_t>(g)]);
  return out;
}

std::vector<double> as_doubles(const Tensor& t) { return to_doubles(t); }

std::vector<int64_t> as_ints(const Tensor& t) { return {t.data<int64_t>(), t.data<int64_t>() + t.num_elements()}; }

TEST(UniqueKernels, SortedAndFirstOccurrenceWithAndWithoutAxis) {
  const std::vector<int64_t> sizes = {3, 4, 2};
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool, DType::kFloat64}) {
    // Few distinct values, so that slices repeat.
    std::vector<double> values = random_values(DType::kFloat64, 24, 5, 0.0, 1.0);
    for (double& v : values) v = dtype == DType::kBool ? (v < 0.5 ? 1 : 0) : std::floor(v * 3) - 1;
    if (dtype == DType::kFloat64) values[3] = values[9] = std::numeric_limits<double>::quiet_NaN();
    Tensor x = make_tensor(dtype, values, sizes);
    for (int64_t axis : {-5, 0, 1, 2, -1}) {  // -5: no axis
      for (int64_t sorted : {0, 1}) {
        std::map<std::string, Attribute> attributes = {{"sorted", Attribute(sorted)}};
        if (axis != -5) attributes["axis"] = Attribute(axis);
        int64_t a = axis == -5 ? -1 : (axis < 0 ? axis + 3 : axis);
        std::vector<Tensor> got = run_op("Unique", {x}, attributes, 4);
        UniqueReference expected = unique_reference(values, sizes, a, sorted != 0);
        auto groups = static_cast<int64_t>(expected.slices.size());
        std::vector<int64_t> y_sizes = {groups};
        if (a >= 0) {
          y_sizes = sizes;
          y_sizes[static_cast<size_t>(a)] = groups;
        }
        ASSERT_EQ(got[0].sizes(), y_sizes) << dtype_name(dtype) << " axis " << axis << " sorted " << sorted;
        std::vector<double> y = as_doubles(got[0]);
        for (int64_t flat = 0; flat < count_of(y_sizes); ++flat) {
          // Element k of slice g, both read off Y's coordinates.
          std::vector<int64_t> index = unflatten(flat, y_sizes);
          int64_t g = a < 0 ? flat : index[static_cast<size_t>(a)];
          int64_t k = 0;
          if (a >= 0) {
            std::vector<int64_t> rest = index, rest_sizes = y_sizes;
            rest.erase(rest.begin() + a);
            rest_sizes.erase(rest_sizes.begin() + a);
            k = flatten(rest, rest_sizes);
          }
          ASSERT_TRUE(same(y[static_cast<size_t>(flat)], expected.slices[static_cast<size_t>(g)][static_cast<size_t>(k)]))
              << dtype_name(dtype) << " axis " << axis << " sorted " << sorted << " element " << flat;
        }
        EXPECT_EQ(as_ints(got[1]), expected.indices) << dtype_name(dtype) << " axis " << axis << " sorted " << sorted;
        EXPECT_EQ(as_ints(got[2]), expected.inverse) << dtype_name(dtype) << " axis " << axis << " sorted " << sorted;
        EXPECT_EQ(as_ints(got[3]), expected.counts) << dtype_name(dtype) << " axis " << axis << " sorted " << sorted;
      }
    }
  }
}

TEST(UniqueKernels, FewerOutputsAndBadAxes) {
  Tensor x = make_tensor(DType::kInt32, {3, 1, 3, 2}, {4});
  std::vector<Tensor> got = run_op("Unique", {x}, {}, 2);
  EXPECT_EQ(to_doubles(got[0]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(as_ints(got[1]), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_NE(error_of("Unique", {x}, {{"axis", Attribute(int64_t{1})}}).find("axis 1 is out of range for rank 1"),
            std::string::npos);
  EXPECT_NE(error_of("Unique", {Tensor::scalar<float>(1.0f)}, {{"axis", Attribute(int64_t{0})}}).find("out of range"),
            std::string::npos);
}

// The data-dependent sizes are symbols unless the deciding input is a constant.
TEST(SelectionInference, DataDependentSizesAreSymbolic) {
  Graph g("selection");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2, Dim::symbol("N"), 4}});
  Value* condition = g.add_input("condition", {DType::kBool, Shape{5}});
  Value* constant_condition = g.add_constant("kept", make_tensor(DType::kBool, {1, 0, 1, 1}, {4}));
  Node* compress = g.add_node("Compress", {x, condition}, 1, {{"axis", Attribute(int64_t{-1})}}, "compress");
  Node* known = g.add_node("Compress", {x, constant_condition}, 1, {{"axis", Attribute(int64_t{2})}}, "known");
  Node* flat = g.add_node("Compress", {x, condition}, 1, {}, "flat");
  Node* nonzero = g.add_node("NonZero", {x}, 1, {}, "nonzero");
  Node* unique = g.add_node("Unique", {x}, 4, {{"axis", Attribute(int64_t{0})}}, "unique");
  Node* unique_flat = g.add_node("Unique", {constant_condition}, 3, {}, "unique_flat");
  infer_graph_types(g, default_op_registry());
  EXPECT_EQ(compress->output(0)->shape(), (Shape{2, Dim::symbol("N"), Dim::symbol("compress:2")}));
  EXPECT_EQ(known->output(0)->shape(), (Shape{2, Dim::symbol("N"), 3}));
  EXPECT_EQ(flat->output(0)->shape(), (Shape{Dim::symbol("flat:0")}));
  EXPECT_EQ(nonzero->output(0)->type(), (TensorType{DType::kInt64, Shape{3, Dim::symbol("nonzero:1")}}));
  Dim groups = Dim::symbol("unique:0");
  EXPECT_EQ(unique->output(0)->shape(), (Shape{groups, Dim::symbol("N"), 4}));
  EXPECT_EQ(unique->output(1)->type(), (TensorType{DType::kInt64, Shape{groups}}));
  EXPECT_EQ(unique->output(2)->shape(), (Shape{2}));
  EXPECT_EQ(unique->output(3)->shape(), (Shape{groups}));
  EXPECT_EQ(unique_flat->output(2)->shape(), (Shape{4}));
}

}  // namespace
}  // namespace weir
