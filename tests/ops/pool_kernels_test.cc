// Pooling CPU kernels against a reference written from the ONNX definition
// (1-D, 2-D, 3-D; strides, pads, dilations, ceil_mode, count_include_pad,
// auto_pad, Indices with both storage orders), global pools, their gradient
// rules against finite differences, and the errors bad attributes get.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

struct Case {
  std::vector<int64_t> x;
  std::map<std::string, Attribute> attrs;  // kernel_shape always; pads explicit
};

std::vector<int64_t> attr_ints(const Case& c, const char* name, size_t count, int64_t fallback) {
  auto found = c.attrs.find(name);
  return found == c.attrs.end() ? std::vector<int64_t>(count, fallback) : found->second.ints();
}

struct Reference {
  std::vector<int64_t> sizes;
  std::vector<double> max, average, average_with_pad;
  std::vector<int64_t> argmax;  // flat row-major offset into x
};

// Walks windows by explicit N-D coordinates.
Reference reference(const Case& c, const std::vector<double>& x) {
  size_t rank = c.x.size() - 2;
  std::vector<int64_t> kernel = c.attrs.at("kernel_shape").ints();
  std::vector<int64_t> strides = attr_ints(c, "strides", rank, 1), dilations = attr_ints(c, "dilations", rank, 1);
  std::vector<int64_t> pads = attr_ints(c, "pads", 2 * rank, 0);
  bool ceil_mode = c.attrs.count("ceil_mode") && c.attrs.at("ceil_mode").i() != 0;
  Reference r;
  r.sizes = {c.x[0], c.x[1]};
  for (size_t i = 0; i < rank; ++i) {
    int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    double exact = static_cast<double>(c.x[2 + i] + pads[i] + pads[rank + i] - extent) / static_cast<double>(strides[i]);
    int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
    if (ceil_mode && (out - 1) * strides[i] >= c.x[2 + i] + pads[i]) --out;
    r.sizes.push_back(out);
  }
  int64_t total = count_of(r.sizes);
  std::vector<int64_t> index(r.sizes.size());
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (size_t a = r.sizes.size(); a-- > 0;) {
      index[a] = rest % r.sizes[a];
      rest /= r.sizes[a];
    }
    double best = -INFINITY, sum = 0;
    int64_t best_at = -1, inside = 0, padded = 0;
    int64_t taps = count_of(kernel);
    for (int64_t t = 0; t < taps; ++t) {
      int64_t t_rest = t, offset = index[0] * c.x[1] + index[1];
      bool in_input = true, in_padded = true;
      std::vector<int64_t> position(rank);
      for (size_t a = rank; a-- > 0;) {
        int64_t k = t_rest % kernel[a];
        t_rest /= kernel[a];
        position[a] = index[2 + a] * strides[a] - pads[a] + k * dilations[a];
        if (position[a] < 0 || position[a] >= c.x[2 + a]) in_input = false;
        if (position[a] >= c.x[2 + a] + pads[rank + a]) in_padded = false;
      }
      if (in_padded) ++padded;
      if (!in_input) continue;
      for (size_t a = 0; a < rank; ++a) offset = offset * c.x[2 + a] + position[a];
      double v = x[static_cast<size_t>(offset)];
      ++inside;
      sum += v;
      if (v > best) {
        best = v;
        best_at = offset;
      }
    }
    r.max.push_back(best);
    r.argmax.push_back(best_at);
    r.average.push_back(sum / static_cast<double>(inside));
    r.average_with_pad.push_back(sum / static_cast<double>(padded));
  }
  return r;
}

std::vector<int64_t> ints(std::initializer_list<int64_t> values) { return values; }

const std::vector<Case> kCases = {
    {{2, 3, 9}, {{"kernel_shape", ints({3})}, {"strides", ints({2})}}},
    {{1, 2, 7}, {{"kernel_shape", ints({2})}, {"pads", ints({1, 1})}, {"ceil_mode", Attribute(int64_t{1})}, {"strides", ints({2})}}},
    {{2, 3, 6, 5}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}},
    {{1, 2, 7, 7}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}},
    {{1, 1, 8, 9}, {{"kernel_shape", ints({3, 2})}, {"strides", ints({3, 2})}, {"pads", ints({0, 1, 2, 1})},
                    {"ceil_mode", Attribute(int64_t{1})}}},
    {{1, 2, 9, 9}, {{"kernel_shape", ints({2, 3})}, {"dilations", ints({2, 2})}, {"pads", ints({1, 0, 1, 2})}}},
    {{1, 2, 4, 5, 6}, {{"kernel_shape", ints({2, 3, 2})}, {"strides", ints({1, 2, 2})}, {"pads", ints({0, 1, 0, 1, 1, 0})}}},
    {{0, 3, 4, 4}, {{"kernel_shape", ints({2, 2})}}},
};

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-14;
    case DType::kFloat32: return 1e-6;
    case DType::kFloat16: return 1e-3;
    default: return 8e-3;
  }
}

TEST(PoolKernels, MaxAndAveragePoolMatchTheReference) {
  uint32_t seed = 3;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : kCases) {
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(c.x), seed++), c.x);
      Reference r = reference(c, to_doubles(x));
      std::vector<Tensor> max = run_op("MaxPool", {x}, c.attrs, 2);
      ASSERT_EQ(max[0].sizes(), r.sizes) << format_sizes(c.x);
      EXPECT_EQ(to_doubles(max[0]), r.max) << "MaxPool " << format_sizes(c.x);
      std::vector<double> indices = to_doubles(max[1]);
      for (size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(indices[i], static_cast<double>(r.argmax[i]));
      // Without Indices, f32 and bf16 take oneDNN's pooling where it applies.
      EXPECT_EQ(to_doubles(run_op("MaxPool", {x}, c.attrs)[0]), r.max) << "MaxPool without indices " << format_sizes(c.x);
      for (bool include_pad : {false, true}) {
        std::map<std::string, Attribute> attrs = c.attrs;
        attrs["count_include_pad"] = Attribute(int64_t{include_pad ? 1 : 0});
        std::vector<double> got = to_doubles(run_op("AveragePool", {x}, attrs)[0]);
        const std::vector<double>& expected = include_pad ? r.average_with_pad : r.average;
        ASSERT_EQ(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * 4) << "AveragePool " << format_sizes(c.x) << " " << i;
        }
      }
    }
  }
}

// MaxPool on 8-bit integers (quantized models): the same reference, exact.
TEST(PoolKernels, MaxPoolOfEightBitIntegers) {
  uint32_t seed = 40;
  for (DType dtype : {DType::kUInt8, DType::kInt8}) {
    for (const Case& c : kCases) {
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(c.x), seed++), c.x);
      Reference r = reference(c, to_doubles(x));
      std::vector<Tensor> max = run_op("MaxPool", {x}, c.attrs, 2);
      ASSERT_EQ(max[0].dtype(), dtype);
      EXPECT_EQ(to_doubles(max[0]), r.max) << dtype_name(dtype) << " " << format_sizes(c.x);
      EXPECT_EQ(to_doubles(run_op("MaxPool", {x}, c.attrs)[0]), r.max) << dtype_name(dtype) << " " << format_sizes(c.x);
    }
  }
  EXPECT_THROW(run_op("AveragePool", {make_tensor(DType::kUInt8, {1, 2, 3, 4}, {1, 1, 2, 2})},
                      {{"kernel_shape", ints({2, 2})}}),
               Error);
}

// ChannelsLastPool on the same data transposed to [N, spatial..., C], for
// every case oneDNN has a window for (the others are refused by name; i8
// and u8 take only the maximum).
TEST(PoolKernels, ChannelsLastPoolMatchesTheReference) {
  uint32_t seed = 40;
  int compared = 0, integer_compared = 0;
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kUInt8, DType::kInt8}) {
    for (const Case& c : kCases) {
      if (c.x[0] == 0) continue;
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(c.x), seed++), c.x);
      Reference r = reference(c, to_doubles(x));
      std::vector<int64_t> to_last = {0}, to_first = {0, static_cast<int64_t>(c.x.size()) - 1};
      for (size_t a = 2; a < c.x.size(); ++a) to_last.push_back(static_cast<int64_t>(a));
      to_last.push_back(1);
      for (size_t a = 1; a + 1 < c.x.size(); ++a) to_first.push_back(static_cast<int64_t>(a));
      Tensor x_last = run_op("Transpose", {x}, {{"perm", Attribute(to_last)}})[0];
      for (const char* mode : {"max", "average"}) {
        for (bool include_pad : {false, true}) {
          if (std::string(mode) == "max" && include_pad) continue;
          std::map<std::string, Attribute> attrs = c.attrs;
          attrs["mode"] = Attribute(mode);
          attrs["count_include_pad"] = Attribute(int64_t{include_pad ? 1 : 0});
          std::vector<Tensor> y;
          try {
            y = run_op("ChannelsLastPool", {x_last}, attrs);
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("oneDNN has no pooling"), std::string::npos) << e.what();
            continue;
          }
          Tensor y_first = run_op("Transpose", {y[0]}, {{"perm", Attribute(to_first)}})[0];
          ASSERT_EQ(y_first.sizes(), r.sizes) << format_sizes(c.x);
          std::vector<double> got = to_doubles(y_first);
          const std::vector<double>& expected = std::string(mode) == "max" ? r.max : include_pad ? r.average_with_pad : r.average;
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * 4) << mode << " " << format_sizes(c.x) << " " << i;
          }
          if (dtype == DType::kUInt8 || dtype == DType::kInt8) {
            EXPECT_EQ(std::string(mode), "max");
            EXPECT_EQ(got, expected) << "integer maxima are exact";
            ++integer_compared;
          }
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 20) << "most cases have a oneDNN window";
  EXPECT_GE(integer_compared, 8) << "i8 and u8 max pools run on oneDNN";
}

TEST(PoolKernels, ColumnMajorIndicesAndAutoPad) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 2 * 5 * 4, 8), {1, 2, 5, 4});
  std::map<std::string, Attribute> attrs = {{"kernel_shape", ints({2, 2})}};
  std::vector<double> row = to_doubles(run_op("MaxPool", {x}, attrs, 2)[1]);
  attrs["storage_order"] = Attribute(int64_t{1});
  std::vector<double> column = to_doubles(run_op("MaxPool", {x}, attrs, 2)[1]);
  for (size_t i = 0; i < row.size(); ++i) {
    auto flat = static_cast<int64_t>(row[i]);
    int64_t plane = flat / 20, h = flat % 20 / 4, w = flat % 4;
    EXPECT_EQ(static_cast<int64_t>(column[i]), plane * 20 + w * 5 + h);
  }
  // SAME_UPPER with stride 2 on 5x4: output 3x2, pads (1 at the end of H, 0 on W).
  std::vector<double> same = to_doubles(run_op("MaxPool", {x}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})},
                                                                {"auto_pad", Attribute("SAME_UPPER")}})[0]);
  std::vector<double> explicit_pads = to_doubles(run_op("MaxPool", {x}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})},
                                                                         {"pads", ints({0, 0, 1, 0})}})[0]);
  EXPECT_EQ(same, explicit_pads);
  EXPECT_EQ(same.size(), 2u * 3 * 2);
}

TEST(PoolKernels, GlobalPoolsReduceEverySpatialAxis) {
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{2, 3, 5}, {1, 4, 3, 6}, {2, 2, 2, 3, 2}}) {
    std::vector<double> x = random_values(DType::kFloat64, count_of(sizes), 5);
    Tensor t = make_tensor(DType::kFloat64, x, sizes);
    Tensor average = run_op("GlobalAveragePool", {t})[0];
    Tensor max = run_op("GlobalMaxPool", {t})[0];
    std::vector<int64_t> expected_sizes(sizes.size(), 1);
    expected_sizes[0] = sizes[0];
    expected_sizes[1] = sizes[1];
    EXPECT_EQ(average.sizes(), expected_sizes);
    int64_t planes = sizes[0] * sizes[1], plane = count_of(sizes) / planes;
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0, best = -INFINITY;
      for (int64_t i = 0; i < plane; ++i) {
        sum += x[static_cast<size_t>(p * plane + i)];
        best = std::max(best, x[static_cast<size_t>(p * plane + i)]);
      }
      EXPECT_NEAR(to_doubles(average)[static_cast<size_t>(p)], sum / static_cast<double>(plane), 1e-12);
      EXPECT_EQ(to_doubles(max)[static_cast<size_t>(p)], best);
    }
  }
}

TEST(PoolGradients, MatchFiniteDifferences) {
  uint32_t seed = 60;
  for (size_t i : {0, 1, 3, 4, 5, 6}) {
    const Case& c = kCases[i];
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.x), seed++), c.x);
    check_gradient("MaxPool", {x}, {0}, c.attrs);
    check_gradient("AveragePool", {x}, {0}, c.attrs);
    std::map<std::string, Attribute> attrs = c.attrs;
    attrs["count_include_pad"] = Attribute(int64_t{1});
    check_gradient("AveragePool", {x}, {0}, attrs);
  }
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 2 * 3 * 4 * 5, 70), {2, 3, 4, 5});
  check_gradient("GlobalAveragePool", {x}, {0});
  check_gradient("GlobalMaxPool", {x}, {0});
}

TEST(PoolErrors, BadAttributesAreNamed) {
  Tensor x(DType::kFloat32, {1, 2, 4, 4});
  EXPECT_NE(error_of("MaxPool", {x}, {}).find("kernel_shape"), std::string::npos);
  EXPECT_NE(error_of("MaxPool", {x}, {{"kernel_shape", ints({2})}}).find("one entry per spatial axis"), std::string::npos);
  EXPECT_NE(error_of("AveragePool", {x}, {{"kernel_shape", ints({5, 5})}}).find("does not fit"), std::string::npos);
  EXPECT_NE(error_of("MaxPool", {Tensor(DType::kFloat32, {4, 4})}, {{"kernel_shape", ints({2})}}).find("[N, C, spatial...]"),
            std::string::npos);
}


// Non-overlapping windows (stride = kernel) take a fast path (SSE for f32
// and bf16 2x2, in blocks of 4 outputs, a ragged row end as one overlapping
// block, rows under 4 outputs scalar). Checked against the first-maximum
// rule on odd sizes (rows and columns no window covers), output rows of 7,
// 6 and 3, values with many ties, and a NaN in one plane.
TEST(PoolGradients, NonOverlappingMaxPoolGradMatchesTheFirstMaxRule) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 9, 13}, {1, 5, 6, 15}, {2, 3, 4, 6}};
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat64}) {
    for (int64_t k : {2, 3}) {
     for (const std::vector<int64_t>& sizes : shapes) {
      const int64_t H = sizes[2], W = sizes[3], OH = H / k, OW = W / k, planes = sizes[0] * sizes[1];
      std::vector<double> x = random_values(DType::kFloat64, count_of(sizes), 80 + static_cast<uint32_t>(k));
      for (double& v : x) v = std::round(v);  // few distinct values: many ties
      x[static_cast<size_t>(4 * H * W + 1 * W + 2)] = std::nan("");  // plane 4, inside window (0, 0) for k 3
      std::vector<double> dy = random_values(DType::kFloat64, planes * OH * OW, 90);
      std::map<std::string, Attribute> attrs = {{"kernel_shape", Attribute(std::vector<int64_t>{k, k})},
                                                {"strides", Attribute(std::vector<int64_t>{k, k})}};
      Tensor got = run_op("MaxPoolGrad", {make_tensor(dtype, dy, {sizes[0], sizes[1], OH, OW}), make_tensor(dtype, x, sizes)},
                          attrs)[0];
      std::vector<double> expected(x.size(), 0.0);
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t best = -1;
            for (int64_t kh = 0; kh < k; ++kh) {
              for (int64_t kw = 0; kw < k; ++kw) {
                int64_t at = p * H * W + (oh * k + kh) * W + ow * k + kw;
                double v = x[static_cast<size_t>(at)], b = best < 0 ? 0 : x[static_cast<size_t>(best)];
                if (best < 0 || v > b || (std::isnan(v) && !std::isnan(b))) best = at;
              }
            }
            expected[static_cast<size_t>(best)] += dy[static_cast<size_t>((p * OH + oh) * OW + ow)];
          }
        }
      }
      std::vector<double> values = to_doubles(got);
      ASSERT_EQ(values.size(), expected.size());
      for (size_t i = 0; i < values.size(); ++i) {
        // bf16 holds dY to 8 significant bits; the rounded integers of X exactly.
        double tol = dtype == DType::kFloat64 ? 1e-12 : (dtype == DType::kFloat32 ? 1e-6 : 8e-3) * (1 + std::abs(expected[i]));
        ASSERT_NEAR(values[i], expected[i], tol) << dtype_name(dtype) << " k " << k << " W " << W << " element " << i;
      }
     }
    }
  }
}

}  // namespace
}  // namespace weir
