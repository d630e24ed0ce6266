// Conv and ConvTranspose CPU kernels against a plain reference written from
// the ONNX definition (1-D, 2-D and 3-D; strides, dilations, asymmetric pads,
// auto_pad, groups, bias, empty batches), in f32 and bf16 through oneDNN, f16
// widened, and f64 through the direct loops; their gradient rules against
// finite differences; oneDNN's backward directions against the f64 ones;
// and the errors bad shapes get.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/nn/dnnl_conv.h"
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
  std::vector<int64_t> x, w;  // Conv: W [K, C/g, k...]; ConvTranspose: W [C, K/g, k...]
  std::map<std::string, Attribute> attrs;
};

int64_t attr_or(const std::map<std::string, Attribute>& attrs, const char* name, size_t i, int64_t fallback) {
  auto found = attrs.find(name);
  return found == attrs.end() ? fallback : found->second.ints()[i];
}

// Explicit pads only (the auto_pad cases give their pads by hand).
struct Geometry {
  size_t rank;
  int64_t group;
  std::vector<int64_t> stride, dilation, pad_begin, pad_end, output_padding;
};

Geometry geometry(const Case& c) {
  Geometry g;
  g.rank = c.x.size() - 2;
  g.group = c.attrs.count("group") ? c.attrs.at("group").i() : 1;
  for (size_t i = 0; i < g.rank; ++i) {
    g.stride.push_back(attr_or(c.attrs, "strides", i, 1));
    g.dilation.push_back(attr_or(c.attrs, "dilations", i, 1));
    g.pad_begin.push_back(attr_or(c.attrs, "pads", i, 0));
    g.pad_end.push_back(attr_or(c.attrs, "pads", g.rank + i, 0));
    g.output_padding.push_back(attr_or(c.attrs, "output_padding", i, 0));
  }
  return g;
}

// Row-major offset of `index` in `sizes`.
int64_t offset(const std::vector<int64_t>& sizes, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t i = 0; i < sizes.size(); ++i) flat = flat * sizes[i] + index[i];
  return flat;
}

// Visits every index of `sizes` in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& sizes, Fn&& fn) {
  if (count_of(sizes) == 0) return;
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    fn(index);
    size_t axis = sizes.size();
    while (axis > 0 && ++index[axis - 1] == sizes[axis - 1]) index[--axis] = 0;
    if (axis == 0) return;
  }
}

// y[n, k, o] = b[k] + sum over c in k's group and taps t of x[n, c, o*s - p + t*d] * w[k, c', t].
std::pair<std::vector<double>, std::vector<int64_t>> conv_reference(const Case& c, const std::vector<double>& x,
                                                                    const std::vector<double>& w,
                                                                    const std::vector<double>* b) {
  Geometry g = geometry(c);
  int64_t k_out = c.w[0], c_group = c.w[1], k_group = k_out / g.group;
  std::vector<int64_t> y_sizes = {c.x[0], k_out};
  for (size_t i = 0; i < g.rank; ++i) {
    int64_t extent = (c.w[2 + i] - 1) * g.dilation[i] + 1;
    y_sizes.push_back((c.x[2 + i] + g.pad_begin[i] + g.pad_end[i] - extent) / g.stride[i] + 1);
  }
  std::vector<double> y(static_cast<size_t>(count_of(y_sizes)));
  std::vector<int64_t> taps(c.w.begin() + 2, c.w.end());
  for_each_index(y_sizes, [&](const std::vector<int64_t>& yi) {
    int64_t n = yi[0], k = yi[1];
    double sum = b != nullptr ? (*b)[static_cast<size_t>(k)] : 0.0;
    for (int64_t cl = 0; cl < c_group; ++cl) {
      int64_t channel = (k / k_group) * c_group + cl;
      for_each_index(taps, [&](const std::vector<int64_t>& t) {
        std::vector<int64_t> xi = {n, channel};
        for (size_t i = 0; i < g.rank; ++i) {
          int64_t position = yi[2 + i] * g.stride[i] - g.pad_begin[i] + t[i] * g.dilation[i];
          if (position < 0 || position >= c.x[2 + i]) return;
          xi.push_back(position);
        }
        std::vector<int64_t> wi = {k, cl};
        wi.insert(wi.end(), t.begin(), t.end());
        sum += x[static_cast<size_t>(offset(c.x, xi))] * w[static_cast<size_t>(offset(c.w, wi))];
      });
    }
    y[static_cast<size_t>(offset(y_sizes, yi))] = sum;
  });
  return {y, y_sizes};
}

// Scatter form: every x[n, c, i] adds x * w[c, k', t] to y[n, k, i*s - p + t*d].
std::pair<std::vector<double>, std::vector<int64_t>> conv_transpose_reference(const Case& c,
                                                                              const std::vector<double>& x,
                                                                              const std::vector<double>& w,
                                                                              const std::vector<double>* b) {
  Geometry g = geometry(c);
  int64_t c_in = c.w[0], k_group = c.w[1], c_group = c_in / g.group;
  std::vector<int64_t> y_sizes = {c.x[0], k_group * g.group};
  for (size_t i = 0; i < g.rank; ++i) {
    int64_t extent = (c.w[2 + i] - 1) * g.dilation[i] + 1;
    y_sizes.push_back(g.stride[i] * (c.x[2 + i] - 1) + g.output_padding[i] + extent - g.pad_begin[i] - g.pad_end[i]);
  }
  std::vector<double> y(static_cast<size_t>(count_of(y_sizes)));
  for_each_index(y_sizes, [&](const std::vector<int64_t>& yi) {
    y[static_cast<size_t>(offset(y_sizes, yi))] = b != nullptr ? (*b)[static_cast<size_t>(yi[1])] : 0.0;
  });
  std::vector<int64_t> taps(c.w.begin() + 2, c.w.end());
  for_each_index(c.x, [&](const std::vector<int64_t>& xi) {
    int64_t n = xi[0], channel = xi[1];
    for (int64_t kl = 0; kl < k_group; ++kl) {
      int64_t k = (channel / c_group) * k_group + kl;
      for_each_index(taps, [&](const std::vector<int64_t>& t) {
        std::vector<int64_t> yi = {n, k};
        for (size_t i = 0; i < g.rank; ++i) {
          int64_t position = xi[2 + i] * g.stride[i] - g.pad_begin[i] + t[i] * g.dilation[i];
          if (position < 0 || position >= y_sizes[2 + i]) return;
          yi.push_back(position);
        }
        std::vector<int64_t> wi = {channel, kl};
        wi.insert(wi.end(), t.begin(), t.end());
        y[static_cast<size_t>(offset(y_sizes, yi))] +=
            x[static_cast<size_t>(offset(c.x, xi))] * w[static_cast<size_t>(offset(c.w, wi))];
      });
    }
  });
  return {y, y_sizes};
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-12;
    case DType::kFloat32: return 1e-5;
    case DType::kFloat16: return 2e-3;  // inputs rounded to 11 bits, f32 accumulation
    default: return 1e-2;               // bf16: 8 bits, and oneDNN may round partial sums
  }
}

// Compares with a bound scaled by sum |x||w| per element: rounding grows with it.
void expect_close(const std::vector<double>& got, const std::vector<double>& expected, DType dtype, double scale,
                  const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * scale) << what << " element " << i;
  }
}

std::vector<int64_t> ints(std::initializer_list<int64_t> values) { return values; }

const std::vector<Case> kConvCases = {
    {{2, 3, 9}, {4, 3, 3}, {}},
    {{1, 2, 7}, {2, 1, 2}, {{"group", Attribute(int64_t{2})}, {"strides", ints({2})}, {"pads", ints({1, 0})}}},
    {{2, 3, 7, 6}, {5, 3, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}},
    {{1, 4, 9, 8}, {6, 2, 3, 2},
     {{"group", Attribute(int64_t{2})}, {"strides", ints({2, 1})}, {"dilations", ints({2, 1})}, {"pads", ints({0, 1, 2, 0})}}},
    {{1, 4, 6, 6}, {4, 1, 3, 3}, {{"group", Attribute(int64_t{4})}, {"pads", ints({1, 1, 1, 1})}}},  // depthwise
    {{2, 2, 5, 4, 4}, {3, 2, 2, 3, 1}, {{"pads", ints({0, 1, 0, 1, 0, 0})}, {"strides", ints({1, 2, 1})}}},
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
    {{3, 16, 12, 12}, {32, 16, 1, 1}, {}},  // 1x1, large enough for oneDNN's blocked kernels
    {{0, 3, 5, 5}, {2, 3, 3, 3}, {}},       // empty batch
};

TEST(ConvKernels, ConvMatchesTheReference) {
  uint32_t seed = 10;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16}) {
    for (const Case& c : kConvCases) {
      for (bool with_bias : {false, true}) {
        std::vector<double> x = random_values(dtype, count_of(c.x), seed++, -1, 1);
        std::vector<double> w = random_values(dtype, count_of(c.w), seed++, -1, 1);
        std::vector<double> b = random_values(dtype, c.w[0], seed++, -1, 1);
        std::vector<Tensor> inputs = {make_tensor(dtype, x, c.x), make_tensor(dtype, w, c.w)};
        if (with_bias) inputs.push_back(make_tensor(dtype, b, {c.w[0]}));
        // The reference reads the values as the dtype holds them.
        x = to_doubles(inputs[0]);
        w = to_doubles(inputs[1]);
        if (with_bias) b = to_doubles(inputs[2]);
        auto [expected, sizes] = conv_reference(c, x, w, with_bias ? &b : nullptr);
        Tensor y = run_op("Conv", inputs, c.attrs)[0];
        ASSERT_EQ(y.sizes(), sizes) << "Conv " << format_sizes(c.x) << " * " << format_sizes(c.w);
        double scale = 1.0 + static_cast<double>(count_of(c.w) / c.w[0]);
        expect_close(to_doubles(y), expected, dtype, scale,
                     "Conv " + std::string(dtype_name(dtype)) + " " + format_sizes(c.x) + " * " + format_sizes(c.w));
      }
    }
  }
}

const std::vector<Case> kTransposeCases = {
    {{2, 3, 5}, {3, 2, 3}, {}},
    {{1, 2, 4, 3}, {2, 3, 3, 3}, {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 1})}}},
    {{1, 4, 3, 3}, {4, 1, 2, 2},
     {{"group", Attribute(int64_t{2})}, {"strides", ints({2, 3})}, {"output_padding", ints({1, 2})}}},
    {{1, 2, 3, 4}, {2, 2, 2, 3}, {{"dilations", ints({2, 1})}, {"strides", ints({1, 2})}, {"output_padding", ints({0, 1})}}},
    {{1, 2, 2, 3, 2}, {2, 1, 2, 2, 2}, {{"strides", ints({2, 1, 2})}}},
    {{2, 16, 6, 6}, {16, 8, 3, 3}, {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}}},
};

TEST(ConvKernels, ConvTransposeMatchesTheReference) {
  uint32_t seed = 500;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16}) {
    for (const Case& c : kTransposeCases) {
      for (bool with_bias : {false, true}) {
        int64_t group = c.attrs.count("group") ? c.attrs.at("group").i() : 1;
        int64_t k_out = c.w[1] * group;
        std::vector<Tensor> inputs = {make_tensor(dtype, random_values(dtype, count_of(c.x), seed++, -1, 1), c.x),
                                      make_tensor(dtype, random_values(dtype, count_of(c.w), seed++, -1, 1), c.w)};
        if (with_bias) inputs.push_back(make_tensor(dtype, random_values(dtype, k_out, seed++, -1, 1), {k_out}));
        std::vector<double> b = with_bias ? to_doubles(inputs[2]) : std::vector<double>{};
        auto [expected, sizes] = conv_transpose_reference(c, to_doubles(inputs[0]), to_doubles(inputs[1]),
                                                          with_bias ? &b : nullptr);
        Tensor y = run_op("ConvTranspose", inputs, c.attrs)[0];
        ASSERT_EQ(y.sizes(), sizes) << "ConvTranspose " << format_sizes(c.x) << " * " << format_sizes(c.w);
        double scale = 1.0 + static_cast<double>(count_of(c.w) / c.w[1]);
        expect_close(to_doubles(y), expected, dtype, scale,
                     "ConvTranspose " + std::string(dtype_name(dtype)) + " " + format_sizes(c.x));
      }
    }
  }
}

TEST(ConvKernels, AutoPadMatchesExplicitPads) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 2 * 7 * 8, 31), {1, 2, 7, 8});
  Tensor w = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 3 * 2 * 4 * 3, 32), {3, 2, 4, 3});
  auto same = [&](const char* mode, std::vector<int64_t> pads) {
    std::vector<double> a = to_doubles(run_op("Conv", {x, w}, {{"auto_pad", Attribute(mode)}, {"strides", ints({2, 2})}})[0]);
    std::vector<double> b = to_doubles(run_op("Conv", {x, w}, {{"pads", Attribute(pads)}, {"strides", ints({2, 2})}})[0]);
    EXPECT_EQ(a, b) << mode;
  };
  // Height 7, stride 2 -> 4 rows need (4-1)*2 + 4 - 7 = 3 pad rows; width 8 -> 4 columns need 1.
  same("SAME_UPPER", {1, 0, 2, 1});
  same("SAME_LOWER", {2, 1, 1, 0});
  same("VALID", {0, 0, 0, 0});
  Tensor w_t = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 2 * 3 * 4 * 3, 33), {2, 3, 4, 3});
  Tensor y = run_op("ConvTranspose", {x, w_t}, {{"auto_pad", Attribute("SAME_UPPER")}, {"strides", ints({2, 2})}})[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 3, 14, 16}));
  y = run_op("ConvTranspose", {x, w_t}, {{"output_shape", ints({15, 17})}, {"strides", ints({2, 2})}})[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 3, 15, 17}));
}

TEST(ConvGradients, ConvMatchesFiniteDifferences) {
  uint32_t seed = 900;
  for (const Case& c : {kConvCases[1], kConvCases[2], kConvCases[3], kConvCases[5]}) {
    std::vector<Tensor> inputs = {
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.x), seed++, -1, 1), c.x),
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.w), seed++, -1, 1), c.w),
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, c.w[0], seed++, -1, 1), {c.w[0]})};
    check_gradient("Conv", inputs, {0, 1, 2}, c.attrs);
  }
}

TEST(ConvGradients, ConvTransposeMatchesFiniteDifferences) {
  uint32_t seed = 950;
  for (const Case& c : {kTransposeCases[1], kTransposeCases[2], kTransposeCases[3]}) {
    int64_t group = c.attrs.count("group") ? c.attrs.at("group").i() : 1;
    std::vector<Tensor> inputs = {
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.x), seed++, -1, 1), c.x),
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(c.w), seed++, -1, 1), c.w),
        make_tensor(DType::kFloat64, random_values(DType::kFloat64, c.w[1] * group, seed++, -1, 1), {c.w[1] * group})};
    check_gradient("ConvTranspose", inputs, {0, 1, 2}, c.attrs);
  }
}

// oneDNN's backward directions (f32, bf16) against the f64 direct loops,
// which the finite-difference tests above pin down.
// oneDNN's Winograd primitive (3x3, stride 1, f32) and the direct one
// against the direct loops in f64, channels-first and channels-last, with a
// bias, Relu, and a residual addend both in place and apart.
TEST(ConvKernels, WinogradMatchesTheDirectLoops) {
  using Winograd = ConvForwardOptions::Winograd;
  ConvProblem p;
  p.batch = 1, p.in_channels = 32, p.out_channels = 48, p.spatial_rank = 2;
  p.in = {13, 11, 1}, p.out = {13, 11, 1}, p.kernel = {3, 3, 1}, p.pads_begin = {1, 1, 0}, p.pads_end = {1, 1, 0};
  const int64_t in_count = count_of(p.in_sizes()), out_count = count_of(p.out_sizes());
  std::vector<double> x = random_values(DType::kFloat64, in_count, 500, -1, 1);
  std::vector<double> w = random_values(DType::kFloat64, count_of(p.weight_sizes()), 501, -0.3, 0.3);
  std::vector<double> bias = random_values(DType::kFloat64, p.out_channels, 502, -1, 1);
  std::vector<double> z = random_values(DType::kFloat64, out_count, 503, -1, 1);
  std::vector<double> expected(static_cast<size_t>(out_count));
  conv_forward_direct<double>(p, x.data(), w.data(), bias.data(), expected.data());
  for (bool last : {false, true}) {
    // Channels-last copies: [H, W, C] from [C, H, W].
    auto to_layout = [&](const std::vector<double>& v, int64_t channels) {
      std::vector<float> out(v.size());
      const int64_t plane = static_cast<int64_t>(v.size()) / channels;
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < plane; ++i) out[static_cast<size_t>(last ? i * channels + c : c * plane + i)] = static_cast<float>(v[static_cast<size_t>(c * plane + i)]);
      }
      return out;
    };
    std::vector<float> fx = to_layout(x, p.in_channels), fz = to_layout(z, p.out_channels);
    std::vector<float> fw(w.begin(), w.end()), fb(bias.begin(), bias.end());
    for (Winograd choice : {Winograd::kAlways, Winograd::kNever}) {
      for (int addend : {0, 1, 2}) {  // none, apart, in place
        SCOPED_TRACE(std::string(last ? "NHWC" : "NCHW") + (choice == Winograd::kAlways ? " winograd" : " direct") + " addend " + std::to_string(addend));
        ConvForwardOptions options;
        options.winograd = choice;
        options.channels_last = last;
        options.constant_weights = true;
        options.sum = addend != 0;
        options.activation.kind = FusedActivation::Kind::kRelu;
        DnnlConv conv;
        for (int call = 0; call < 2; ++call) {
          std::vector<float> y = addend == 2 ? fz : std::vector<float>(static_cast<size_t>(out_count), 7.0f);
          conv.forward(DType::kFloat32, p, fx.data(), fw.data(), fb.data(), y.data(), options,
                       addend == 1 ? fz.data() : addend == 2 ? y.data() : nullptr);
          std::vector<double> want(expected.size());
          for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, expected[i] + (addend != 0 ? z[i] : 0.0));
          std::vector<float> wanted = to_layout(want, p.out_channels);
          double worst = 0;
          for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - wanted[i]));
          EXPECT_LT(worst, 2e-5) << "call " << call;
        }
      }
    }
  }
}

TEST(ConvGradients, OneDnnBackwardMatchesTheDirectLoops) {
  uint32_t seed = 1200;
  for (bool transposed : {false, true}) {
    const std::vector<Case>& cases = transposed ? kTransposeCases : kConvCases;
    for (const Case& c : cases) {
      std::map<std::string, Attribute> attrs = c.attrs;
      attrs["transposed"] = Attribute(int64_t{transposed ? 1 : 0});
      std::vector<double> x = random_values(DType::kFloat64, count_of(c.x), seed++, -1, 1);
      std::vector<double> w = random_values(DType::kFloat64, count_of(c.w), seed++, -1, 1);
      Tensor y64 = run_op(transposed ? "ConvTranspose" : "Conv",
                          {make_tensor(DType::kFloat64, x, c.x), make_tensor(DType::kFloat64, w, c.w)}, c.attrs)[0];
      std::vector<double> dy = random_values(DType::kFloat64, y64.num_elements(), seed++, -1, 1);
      for (DType dtype : {DType::kFloat64, DType::kFloat32, DType::kBFloat16}) {
        Tensor tx = make_tensor(dtype, x, c.x), tw = make_tensor(dtype, w, c.w), tdy = make_tensor(dtype, dy, y64.sizes());
        Tensor dx = run_op("ConvGradData", {tdy, tw, tx}, attrs)[0];
        Tensor dw = run_op("ConvGradWeight", {tdy, tx, tw}, attrs)[0];
        if (dtype == DType::kFloat64) continue;
        // The f64 reference on the same (rounded) values.
        Tensor rx = make_tensor(DType::kFloat64, to_doubles(tx), c.x), rw = make_tensor(DType::kFloat64, to_doubles(tw), c.w);
        Tensor rdy = make_tensor(DType::kFloat64, to_doubles(tdy), y64.sizes());
        std::vector<double> ex = to_doubles(run_op("ConvGradData", {rdy, rw, rx}, attrs)[0]);
        std::vector<double> ew = to_doubles(run_op("ConvGradWeight", {rdy, rx, rw}, attrs)[0]);
        double scale = 1.0 + static_cast<double>(y64.num_elements());
        expect_close(to_doubles(dx), ex, dtype, std::sqrt(scale) * 4, "ConvGradData " + format_sizes(c.x));
        expect_close(to_doubles(dw), ew, dtype, std::sqrt(scale) * 4, "ConvGradWeight " + format_sizes(c.x));
      }
    }
  }
}

TEST(ConvGradients, BiasGradientSumsAllButTheChannelAxis) {
  std::vector<double> dy = random_values(DType::kFloat32, 2 * 3 * 4 * 5, 77);
  std::vector<double> db = to_doubles(run_op("ConvGradBias", {make_tensor(DType::kFloat32, dy, {2, 3, 4, 5})})[0]);
  ASSERT_EQ(db.size(), 3u);
  for (int64_t k = 0; k < 3; ++k) {
    double sum = 0;
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t i = 0; i < 20; ++i) sum += dy[static_cast<size_t>((n * 3 + k) * 20 + i)];
    }
    EXPECT_NEAR(db[static_cast<size_t>(k)], sum, 1e-4);
  }
}

TEST(ConvErrors, BadShapesNameTheNodeAndTheMismatch) {
  Tensor x(DType::kFloat32, {1, 3, 8, 8});
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 4, 3, 3})})
                .find("Conv 'op': input channels 3 do not match weight channels 4 (groups=1)"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 1, 3, 3})}, {{"group", Attribute(int64_t{3})}}).find("output channels 2 are not divisible by group 3"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 9, 9})}).find("does not fit"), std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 3})}).find("must both be [N, C, spatial...]"), std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 3, 3}), Tensor(DType::kFloat32, {3})}).find("bias"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 3, 3})}, {{"strides", ints({1})}}).find("strides [1] has 1 entries"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 3, 3})}, {{"auto_pad", Attribute("SAME")}}).find("auto_pad 'SAME'"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, Tensor(DType::kFloat32, {2, 3, 3, 3})}, {{"pads", ints({1, 1, -1, 0})}}).find("must not be negative"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
