// Resize against a port of the ONNX reference algorithm (recursive over
// axes, neighbours chosen by distance from an edge-padded line, as
// onnx/backend/test/case/node/resize.py does) for every mode, coordinate
// transformation and nearest rounding, with scales and with sizes; ResizeGrad
// against finite differences; malformed inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

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

struct Params {
  std::string mode = "nearest", transform = "half_pixel", nearest = "round_prefer_floor";
  double a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::vector<double> roi;  // starts then ends, for tf_crop_and_resize
};

std::vector<double> coefficients(const Params& p, double ratio) {
  if (p.mode == "linear") return {1 - ratio, ratio};
  if (p.mode == "cubic") {
    double a = p.a, s = 1 - ratio;
    return {((a * (ratio + 1) - 5 * a) * (ratio + 1) + 8 * a) * (ratio + 1) - 4 * a, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
            ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
  }
  if (ratio == std::floor(ratio)) return {0, 1};
  if (p.nearest == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
  if (p.nearest == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
  if (p.nearest == "floor") return {1, 0};
  return {0, 1};
}

struct Reference {
  const std::vector<double>& data;
  const std::vector<int64_t>& sizes;
  const std::vector<double>& scales;
  const Params& p;

  double value(std::vector<int64_t>& prefix, const std::vector<int64_t>& out, size_t level) const {
    size_t rank = sizes.size();
    if (level == rank) {
      int64_t flat = 0;
      for (size_t a = 0; a < rank; ++a) flat = flat * sizes[a] + prefix[a];
      return data[static_cast<size_t>(flat)];
    }
    int64_t in = sizes[level];
    double scale = scales[level], width = scale * static_cast<double>(in), x = static_cast<double>(out[level]), source = 0;
    if (p.transform == "align_corners") source = width == 1 ? 0 : x * (static_cast<double>(in) - 1) / (width - 1);
    else if (p.transform == "asymmetric") source = x / scale;
    else if (p.transform == "pytorch_half_pixel") source = width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    else if (p.transform == "tf_half_pixel_for_nn") source = (x + 0.5) / scale;
    else if (p.transform == "half_pixel") source = (x + 0.5) / scale - 0.5;
    else {
      double start = p.roi[level], end = p.roi[level + rank];
      source = width == 1 ? (end - start) * (static_cast<double>(in) - 1) / 2 : x * (end - start) * (static_cast<double>(in) - 1) / (width - 1);
      source += start * (static_cast<double>(in) - 1);
      if (source < 0 || source > static_cast<double>(in) - 1) return p.extrapolation;
    }
    double floor = std::floor(source);
    double ratio = source == floor ? 1 : source - floor;
    std::vector<double> c = coefficients(p, ratio);
    auto n = static_cast<int64_t>(c.size());
    // The n indexes of the edge-padded line nearest to source (ties: the smaller).
    int64_t pad = (n + 1) / 2;
    std::vector<int64_t> candidates(static_cast<size_t>(in + 2 * pad));
    std::iota(candidates.begin(), candidates.end(), 0);
    double centre = source + static_cast<double>(pad);
    std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t i, int64_t j) {
      return std::fabs(centre - static_cast<double>(i)) < std::fabs(centre - static_cast<double>(j));
    });
    candidates.resize(static_cast<size_t>(n));
    std::sort(candidates.begin(), candidates.end());
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        int64_t index = candidates[static_cast<size_t>(t)] - pad;
        if (index < 0 || index >= in) c[static_cast<size_t>(t)] = 0;
        sum += c[static_cast<size_t>(t)];
      }
      for (double& w : c) w /= sum;
    }
    double result = 0;
    for (int64_t t = 0; t < n; ++t) {
      prefix[level] = std::clamp<int64_t>(candidates[static_cast<size_t>(t)] - pad, 0, in - 1);
      result += c[static_cast<size_t>(t)] * value(prefix, out, level + 1);
    }
    return result;
  }
};

std::vector<double> reference_resize(const std::vector<double>& data, const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& out_sizes, const std::vector<double>& scales, const Params& p) {
  Reference reference{data, sizes, scales, p};
  std::vector<double> out(static_cast<size_t>(count_of(out_sizes)));
  for (int64_t flat = 0; flat < count_of(out_sizes); ++flat) {
    std::vector<int64_t> coordinate(out_sizes.size());
    int64_t rest = flat;
    for (size_t a = out_sizes.size(); a-- > 0;) {
      coordinate[a] = rest % out_sizes[a];
      rest /= out_sizes[a];
    }
    std::vector<int64_t> prefix(sizes.size());
    out[static_cast<size_t>(flat)] = reference.value(prefix, coordinate, 0);
  }
  return out;
}

std::map<std::string, Attribute> attributes_of(const Params& p) {
  return {{"mode", Attribute(p.mode)},
          {"coordinate_transformation_mode", Attribute(p.transform)},
          {"nearest_mode", Attribute(p.nearest)},
          {"cubic_coeff_a", Attribute(p.a)},
          {"exclude_outside", Attribute(int64_t{p.exclude_outside})},
          {"extrapolation_value", Attribute(p.extrapolation)}};
}

Tensor f32(const std::vector<double>& values) {
  return make_tensor(DType::kFloat32, values, {static_cast<int64_t>(values.size())});
}

TEST(ResizeKernels, EveryModeAndTransformMatchesTheOnnxReference) {
  const std::vector<int64_t> sizes = {1, 2, 4, 5};
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, count_of(sizes), 1), sizes);
  std::vector<double> data = to_doubles(x);
  const std::vector<std::vector<double>> scale_sets = {{1, 1, 2, 1.5}, {1, 1, 0.6, 0.8}, {1, 2, 1.75, 0.5}};
  const std::vector<std::vector<int64_t>> size_sets = {{1, 2, 7, 3}, {1, 1, 2, 9}};
  int cases = 0;
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* transform : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                  "tf_crop_and_resize"}) {
      for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
        if (std::string(mode) != "nearest" && std::string(nearest) != "round_prefer_floor") continue;
        for (bool exclude : {false, true}) {
          if (exclude && std::string(mode) != "cubic") continue;
          Params p{mode, transform, nearest, -0.5, exclude, 10.0, {0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2}};
          for (double& value : p.roi) value = static_cast<float>(value);  // as the f32 roi tensor holds it
          std::map<std::string, Attribute> attributes = attributes_of(p);
          Tensor roi = f32(p.roi);
          for (const std::vector<double>& scales : scale_sets) {
            std::vector<int64_t> out_sizes;
            for (size_t a = 0; a < 4; ++a) out_sizes.push_back(static_cast<int64_t>(std::floor(static_cast<float>(scales[a]) * static_cast<double>(sizes[a]))));
            std::vector<double> f32_scales;
            for (double s : scales) f32_scales.push_back(static_cast<float>(s));
            Tensor y = run_op("Resize", {x, roi, f32(scales)}, attributes)[0];
            ASSERT_EQ(y.sizes(), out_sizes);
            std::vector<double> expected = reference_resize(data, sizes, out_sizes, f32_scales, p), got = to_doubles(y);
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_NEAR(got[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << mode << " " << transform << " " << nearest
                                                                                     << " exclude " << exclude << " element " << i;
            }
            ++cases;
          }
          for (const std::vector<int64_t>& out_sizes : size_sets) {
            std::vector<double> scales;
            for (size_t a = 0; a < 4; ++a) scales.push_back(static_cast<double>(out_sizes[a]) / static_cast<double>(sizes[a]));
            Tensor y = run_op("Resize", {x, roi, Tensor(), Tensor::from_vector<int64_t>(out_sizes, {4})}, attributes)[0];
            ASSERT_EQ(y.sizes(), out_sizes);
            std::vector<double> expected = reference_resize(data, sizes, out_sizes, scales, p), got = to_doubles(y);
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_NEAR(got[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << mode << " " << transform << " sizes";
            }
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 7 * 6 * 5);  // (nearest x4 roundings, linear, cubic x2 exclude) x 6 transforms x 5 size settings
}

TEST(ResizeKernels, IntegerImagesAndIdentity) {
  Tensor x = make_tensor(DType::kUInt8, random_values(DType::kUInt8, 12, 2), {1, 1, 3, 4});
  Tensor same = run_op("Resize", {x, Tensor(), f32({1, 1, 1, 1})}, {{"mode", Attribute(std::string("linear"))}})[0];
  EXPECT_EQ(to_doubles(same), to_doubles(x));
  Tensor doubled = run_op("Resize", {x, Tensor(), f32({1, 1, 2, 2})})[0];
  std::vector<double> v = to_doubles(x), d = to_doubles(doubled);
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 8; ++c) ASSERT_EQ(d[static_cast<size_t>(r * 8 + c)], v[static_cast<size_t>((r / 2) * 4 + c / 2)]);
  }
}

TEST(ResizeKernels, MalformedInputsNameTheProblem) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 6, 3), {2, 3});
  EXPECT_NE(error_of("Resize", {x, Tensor(), f32({2})}).find("scales has 1 entries"), std::string::npos);
  EXPECT_NE(error_of("Resize", {x, Tensor(), f32({2, -1})}).find("must be positive"), std::string::npos);
  EXPECT_NE(error_of("Resize", {x}).find("needs non-empty scales or sizes"), std::string::npos);
  EXPECT_NE(error_of("Resize", {x, Tensor(), f32({1, 2})}, {{"mode", Attribute(std::string("area"))}}).find("mode 'area'"),
            std::string::npos);
  EXPECT_NE(error_of("Resize", {x, f32({0, 1}), f32({1, 2})},
                     {{"coordinate_transformation_mode", Attribute(std::string("tf_crop_and_resize"))}}).find("roi with 4"),
            std::string::npos);
}

TEST(ResizeGradients, MatchFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 4), {1, 2, 3, 4});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* transform : {"half_pixel", "align_corners", "tf_crop_and_resize"}) {
      Params p{mode, transform, "round_prefer_floor", -0.75, false, 0.5, {0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1}};
      check_gradient("Resize", {x, f32(p.roi), f32({1, 1, 1.5, 0.75})}, {0}, attributes_of(p));
      check_gradient("Resize", {x, f32(p.roi), Tensor::from_vector<float>({}, {0}), Tensor::from_vector<int64_t>({1, 2, 5, 7}, {4})},
                     {0}, attributes_of(p));
    }
  }
}

}  // namespace
}  // namespace weir
