// GridSample against a reference written from PyTorch's definition (pixel
// coordinates, padding by clamping or mirroring with a period, the Keys cubic
// kernel as a function of distance) for every mode, padding mode and
// align_corners on random images and grids reaching past the border; the
// identity grid reproduces the image; GridSampleGrad (dX and dGrid) against
// finite differences; malformed inputs.
#include <gtest/gtest.h>

#include <algorithm>
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

struct Sampling {
  std::string mode = "bilinear", padding = "zeros";
  bool align = false;
};

std::map<std::string, Attribute> attributes_of(const Sampling& s) {
  return {{"mode", Attribute(s.mode)}, {"padding_mode", Attribute(s.padding)}, {"align_corners", Attribute(int64_t{s.align})}};
}

// x mirrored into [low, high] with period 2 (high - low).
double mirror(double x, double low, double high) {
  if (low == high) return low;
  double period = 2 * (high - low), y = std::fmod(x - low, period);
  if (y < 0) y += period;
  return y <= high - low ? low + y : low + period - y;
}

// The Keys cubic convolution kernel (a = -0.75) at distance d.
double keys(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

double reference_sample(const std::vector<double>& plane, int64_t h, int64_t w, double gx, double gy, const Sampling& s) {
  auto pixel_coordinate = [&](double g, int64_t size) {
    auto n = static_cast<double>(size);
    return s.align ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  };
  auto pad = [&](double x, int64_t size) {
    auto last = static_cast<double>(size - 1);
    if (s.padding == "border") return std::clamp(x, 0.0, last);
    if (s.padding == "reflection") {
      x = s.align ? mirror(x, 0, last) : mirror(x, -0.5, last + 0.5);
      return std::clamp(x, 0.0, last);
    }
    return x;
  };
  auto pixel = [&](double y, double x) {
    if (y < 0 || y > static_cast<double>(h - 1) || x < 0 || x > static_cast<double>(w - 1)) return 0.0;
    return plane[static_cast<size_t>(static_cast<int64_t>(y) * w + static_cast<int64_t>(x))];
  };
  double x = pixel_coordinate(gx, w), y = pixel_coordinate(gy, h);
  if (s.mode == "bicubic") {
    double x0 = std::floor(x), y0 = std::floor(y), sum = 0;
    for (double ty = y0 - 1; ty <= y0 + 2; ++ty) {
      for (double tx = x0 - 1; tx <= x0 + 2; ++tx) sum += keys(y - ty) * keys(x - tx) * pixel(pad(ty, h), pad(tx, w));
    }
    return sum;
  }
  x = pad(x, w);
  y = pad(y, h);
  if (s.mode == "nearest") return pixel(std::nearbyint(y), std::nearbyint(x));
  double x0 = std::floor(x), y0 = std::floor(y), fx = x - x0, fy = y - y0;
  return (1 - fy) * ((1 - fx) * pixel(y0, x0) + fx * pixel(y0, x0 + 1)) + fy * ((1 - fx) * pixel(y0 + 1, x0) + fx * pixel(y0 + 1, x0 + 1));
}

std::vector<Sampling> every_sampling() {
  std::vector<Sampling> all;
  for (std::string mode : {"bilinear", "nearest", "bicubic"}) {
    for (std::string padding : {"zeros", "border", "reflection"}) {
      for (bool align : {false, true}) all.push_back({mode, padding, align});
    }
  }
  return all;
}

std::string describe(const Sampling& s) { return s.mode + " " + s.padding + (s.align ? " align_corners" : ""); }

TEST(GridSampleKernels, EveryModeAndPaddingAgainstTheDefinition) {
  struct Sizes {
    int64_t n, c, h, w, out_h, out_w;
  };
  for (const Sizes& z : {Sizes{2, 3, 5, 7, 4, 6}, Sizes{1, 2, 1, 4, 3, 3}, Sizes{1, 1, 6, 1, 2, 5}}) {
    std::vector<double> x = random_values(DType::kFloat64, z.n * z.c * z.h * z.w, 1);
    // Grid points reach well past [-1, 1], for the padding modes.
    std::vector<double> grid = random_values(DType::kFloat64, z.n * z.out_h * z.out_w * 2, 2, -2.5, 2.5);
    for (const Sampling& s : every_sampling()) {
      SCOPED_TRACE(describe(s) + " on " + std::to_string(z.h) + "x" + std::to_string(z.w));
      Tensor y = run_op("GridSample", {make_tensor(DType::kFloat64, x, {z.n, z.c, z.h, z.w}),
                                       make_tensor(DType::kFloat64, grid, {z.n, z.out_h, z.out_w, 2})}, attributes_of(s))[0];
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{z.n, z.c, z.out_h, z.out_w}));
      std::vector<double> got = to_doubles(y);
      for (int64_t n = 0; n < z.n; ++n) {
        for (int64_t c = 0; c < z.c; ++c) {
          std::vector<double> plane(x.begin() + (n * z.c + c) * z.h * z.w, x.begin() + (n * z.c + c + 1) * z.h * z.w);
          for (int64_t l = 0; l < z.out_h * z.out_w; ++l) {
            auto g = static_cast<size_t>((n * z.out_h * z.out_w + l) * 2);
            double expected = reference_sample(plane, z.h, z.w, grid[g], grid[g + 1], s);
            ASSERT_NEAR(got[static_cast<size_t>((n * z.c + c) * z.out_h * z.out_w + l)], expected, 1e-12)
                << "n " << n << " c " << c << " location " << l << " at (" << grid[g] << ", " << grid[g + 1] << ")";
          }
        }
      }
    }
  }
}

TEST(GridSampleKernels, TheIdentityGridReproducesTheImage) {
  const int64_t h = 4, w = 6;
  std::vector<double> x = random_values(DType::kFloat64, 2 * h * w, 9);
  for (bool align : {false, true}) {
    std::vector<double> grid;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        auto normalized = [&](int64_t p, int64_t size) {
          return align ? -1 + 2 * static_cast<double>(p) / static_cast<double>(size - 1)
                       : (2 * static_cast<double>(p) + 1) / static_cast<double>(size) - 1;
        };
        grid.insert(grid.end(), {normalized(j, w), normalized(i, h)});
      }
    }
    for (std::string mode : {"bilinear", "nearest", "bicubic"}) {
      std::vector<double> got = to_doubles(run_op("GridSample", {make_tensor(DType::kFloat64, x, {1, 2, h, w}),
                                                                 make_tensor(DType::kFloat64, grid, {1, h, w, 2})},
                                                  attributes_of({mode, "zeros", align}))[0]);
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], x[i], 1e-12) << mode << (align ? " align_corners" : "") << " element " << i;
    }
  }
}

TEST(GridSampleKernels, LowPrecisionTypesAndSpecialCoordinates) {
  std::vector<double> x = random_values(DType::kFloat64, 2 * 3 * 4, 4);
  std::vector<double> grid = random_values(DType::kFloat64, 2 * 3 * 2, 5, -1.2, 1.2);
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    Tensor xt = make_tensor(dtype, x, {1, 2, 3, 4}), gt = make_tensor(dtype, grid, {1, 2, 3, 2});
    std::vector<double> expected = to_doubles(run_op("GridSample", {make_tensor(DType::kFloat64, to_doubles(xt), {1, 2, 3, 4}),
                                                                    make_tensor(DType::kFloat64, to_doubles(gt), {1, 2, 3, 2})})[0]);
    Tensor y = run_op("GridSample", {xt, gt})[0];
    ASSERT_EQ(y.dtype(), dtype);
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], dtype == DType::kFloat32 ? 1e-6 : 1e-2);
  }
  // Nearest rounds halves to even; a non-finite coordinate reads 0; far
  // outside, border reads the edge.
  Tensor row = make_tensor(DType::kFloat64, {10, 20, 30, 40}, {1, 1, 1, 4});
  // Pixel x = ((g + 1) * 4 - 1) / 2: g = -0.25 is x = 1, g = -0.5 is 0.5, g = 0 is 1.5.
  std::vector<double> nearest = to_doubles(run_op("GridSample", {row, make_tensor(DType::kFloat64, {-0.5, 0, 0, 0, -0.25, 0}, {1, 1, 3, 2})},
                                                  attributes_of({"nearest", "zeros", false}))[0]);
  EXPECT_EQ(nearest, (std::vector<double>{10, 30, 20}));
  std::vector<double> special = to_doubles(run_op("GridSample", {row, make_tensor(DType::kFloat64, {NAN, 0, INFINITY, 0, 1e300, 0}, {1, 1, 3, 2})},
                                                  attributes_of({"bilinear", "zeros", false}))[0]);
  EXPECT_EQ(special, (std::vector<double>{0, 0, 0}));
  std::vector<double> border = to_doubles(run_op("GridSample", {row, make_tensor(DType::kFloat64, {-50, 0, 1e10, 0}, {1, 1, 2, 2})},
                                                 attributes_of({"bilinear", "border", true}))[0]);
  EXPECT_EQ(border, (std::vector<double>{10, 40}));
}

TEST(GridSampleGradients, InputAndGridAgainstFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 2 * 2 * 4 * 5, 21), {2, 2, 4, 5});
  Tensor grid = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 2 * 3 * 2 * 2, 22, -1.4, 1.4), {2, 3, 2, 2});
  for (const Sampling& s : every_sampling()) {
    SCOPED_TRACE(describe(s));
    check_gradient("GridSample", {x, grid}, {0, 1}, attributes_of(s));
  }
}

TEST(GridSampleKernels, RejectsMalformedInput) {
  Tensor x(DType::kFloat32, {1, 2, 3, 4});
  Tensor grid(DType::kFloat32, {1, 5, 6, 2});
  EXPECT_NE(error_of("GridSample", {Tensor(DType::kFloat32, {1, 2, 3, 4, 5}), Tensor(DType::kFloat32, {1, 5, 6, 7, 3})})
                .find("only 4-D input is supported"),
            std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, Tensor(DType::kFloat32, {1, 5, 6, 3})}).find("must be [N, Ho, Wo, 2]"), std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, Tensor(DType::kFloat32, {2, 5, 6, 2})}).find("must be [N, Ho, Wo, 2]"), std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, grid}, {{"mode", Attribute("linear")}}).find("mode 'linear' is not one of bilinear, nearest, bicubic"),
            std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, grid}, {{"padding_mode", Attribute("wrap")}}).find("padding_mode 'wrap' is not one of"),
            std::string::npos);
  EXPECT_NE(error_of("GridSample", {Tensor(DType::kInt32, {1, 2, 3, 4}), grid}).find("i32"), std::string::npos);
}

}  // namespace
}  // namespace weir
