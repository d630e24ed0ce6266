// NonMaxSuppression against a brute-force greedy reference (IoU from box
// corners) on random overlapping boxes with tied scores, every threshold and
// limit, both box formats; RoiAlign against a per-sample bilinear reference
// in both modes and coordinate transformations, and against the exact result
// on a linear image (bilinear interpolation reproduces it, so a bin's average
// is the image at the bin's centre); malformed inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "core/error.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::error_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

// Boxes as (ymin, xmin, ymax, xmax).
using Box = std::array<double, 4>;

double iou(const Box& a, const Box& b) {
  double inter_h = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  double inter_w = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  double intersection = inter_h * inter_w;
  if (area_a <= 0 || area_b <= 0 || intersection <= 0) return 0;
  return intersection / (area_a + area_b - intersection);
}

struct NmsCase {
  int64_t batches, classes, count;
  int64_t max_per_class;  // -1: input absent
  double iou_threshold;   // < 0: input absent
  double score_threshold;  // < -1: input absent
};

std::vector<int64_t> reference_nms(const std::vector<Box>& boxes, const std::vector<double>& scores, const NmsCase& c) {
  std::vector<int64_t> rows;
  int64_t limit = c.max_per_class < 0 ? 0 : c.max_per_class;
  double threshold = c.iou_threshold < 0 ? 0 : c.iou_threshold;
  for (int64_t b = 0; b < c.batches; ++b) {
    for (int64_t k = 0; k < c.classes; ++k) {
      auto score = [&](int64_t i) { return scores[static_cast<size_t>((b * c.classes + k) * c.count + i)]; };
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < c.count; ++i) {
        if (c.score_threshold >= -1 && score(i) <= c.score_threshold) continue;
        candidates.push_back(i);
      }
      std::sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) {
        return score(x) != score(y) ? score(x) > score(y) : x < y;
      });
      std::vector<int64_t> kept;
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) == limit) break;
        bool keep = true;
        for (int64_t j : kept) keep = keep && iou(boxes[static_cast<size_t>(b * c.count + i)], boxes[static_cast<size_t>(b * c.count + j)]) <= threshold;
        if (!keep) continue;
        kept.push_back(i);
        rows.insert(rows.end(), {b, k, i});
      }
    }
  }
  return rows;
}

std::vector<int64_t> as_ints(const Tensor& t) {
  std::vector<int64_t> values(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
  return values;
}

TEST(NonMaxSuppressionKernels, GreedySelectionAgainstABruteForceReference) {
  const std::vector<NmsCase> cases = {
      {1, 1, 6, 3, 0.5, 0.0},  {2, 3, 25, 10, 0.3, -2},  {3, 2, 40, 100, 0.5, 0.3}, {1, 4, 30, 2, 0.0, -2},
      {2, 2, 20, 5, 1.0, 0.5}, {1, 1, 12, -1, 0.5, -2},  {2, 1, 16, 4, -1, -2},     {1, 2, 0, 3, 0.5, -2},
  };
  std::mt19937 engine(11);
  std::uniform_real_distribution<double> position(0, 10), extent(0.5, 4);
  std::uniform_int_distribution<int> score_step(0, 10);
  for (const NmsCase& c : cases) {
    SCOPED_TRACE(std::to_string(c.batches) + "x" + std::to_string(c.classes) + "x" + std::to_string(c.count) + " max " +
                 std::to_string(c.max_per_class) + " iou " + std::to_string(c.iou_threshold));
    std::vector<Box> boxes(static_cast<size_t>(c.batches * c.count));
    std::vector<double> corners, centers;
    for (Box& box : boxes) {
      double y = position(engine), x = position(engine), h = extent(engine), w = extent(engine);
      box = {y, x, y + h, x + w};
      // Corners in either order; centres as (x, y, w, h).
      bool flip = score_step(engine) % 2 == 0;
      corners.insert(corners.end(), flip ? std::initializer_list<double>{y + h, x + w, y, x} : std::initializer_list<double>{y, x, y + h, x + w});
      centers.insert(centers.end(), {x + w / 2, y + h / 2, w, h});
    }
    // Scores in tenths, so that ties are common.
    std::vector<double> scores(static_cast<size_t>(c.batches * c.classes * c.count));
    for (double& s : scores) s = score_step(engine) / 10.0;
    for (int64_t center_point : {0, 1}) {
      for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
        // The reference sees the boxes as the kernel does: rounded to the
        // tensor's type, and as corners.
        Tensor box_tensor = make_tensor(dtype, center_point ? centers : corners, {c.batches, c.count, 4});
        std::vector<double> stored = to_doubles(box_tensor);
        for (size_t i = 0; i < boxes.size(); ++i) {
          const double* r = &stored[i * 4];
          boxes[i] = center_point ? Box{r[1] - r[3] / 2, r[0] - r[2] / 2, r[1] + r[3] / 2, r[0] + r[2] / 2}
                                  : Box{std::min(r[0], r[2]), std::min(r[1], r[3]), std::max(r[0], r[2]), std::max(r[1], r[3])};
        }
        std::vector<int64_t> expected = reference_nms(boxes, scores, c);
        std::vector<Tensor> inputs = {box_tensor, make_tensor(dtype, scores, {c.batches, c.classes, c.count})};
        if (c.max_per_class >= 0 || c.iou_threshold >= 0 || c.score_threshold >= -1) {
          inputs.push_back(Tensor::from_vector<int64_t>({std::max<int64_t>(c.max_per_class, 0)}, {1}));
        }
        if (c.iou_threshold >= 0 || c.score_threshold >= -1) {
          inputs.push_back(Tensor::scalar<float>(static_cast<float>(std::max(c.iou_threshold, 0.0))));
        }
        if (c.score_threshold >= -1) inputs.push_back(Tensor::scalar<float>(static_cast<float>(c.score_threshold)));
        Tensor selected = run_op("NonMaxSuppression", inputs, {{"center_point_box", Attribute(center_point)}})[0];
        ASSERT_EQ(selected.dtype(), DType::kInt64);
        ASSERT_EQ(selected.sizes(), (std::vector<int64_t>{static_cast<int64_t>(expected.size() / 3), 3}));
        EXPECT_EQ(as_ints(selected), expected) << dtype_name(dtype) << " center_point_box " << center_point;
      }
    }
  }
}

TEST(NonMaxSuppressionKernels, IdenticalBoxesLimitsAndEmptyResults) {
  std::vector<double> same;
  for (int i = 0; i < 5; ++i) same.insert(same.end(), {0, 0, 1, 1});
  Tensor boxes = make_tensor(DType::kFloat32, same, {1, 5, 4});
  Tensor scores = make_tensor(DType::kFloat32, {0.5, 0.9, 0.9, 0.1, 0.7}, {1, 1, 5});
  Tensor limit = Tensor::scalar<int64_t>(5);
  // Identical boxes overlap completely: only the best (the first of the tied) stays.
  EXPECT_EQ(as_ints(run_op("NonMaxSuppression", {boxes, scores, limit, Tensor::scalar<float>(0.5f)})[0]), (std::vector<int64_t>{0, 0, 1}));
  // An IoU of exactly 1 is not above a threshold of 1: all stay, by score.
  EXPECT_EQ(as_ints(run_op("NonMaxSuppression", {boxes, scores, limit, Tensor::scalar<float>(1.0f)})[0]),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 0, 4, 0, 0, 0, 0, 0, 3}));
  // No limit input, or a limit of 0: nothing.
  EXPECT_EQ(run_op("NonMaxSuppression", {boxes, scores})[0].sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(run_op("NonMaxSuppression", {boxes, scores, Tensor::scalar<int64_t>(0)})[0].sizes(), (std::vector<int64_t>{0, 3}));
  // The score threshold is strict, and NaN scores never count.
  Tensor nan_scores = make_tensor(DType::kFloat32, {0.5, std::nan(""), 0.2, 0.1, 0.7}, {1, 1, 5});
  EXPECT_EQ(as_ints(run_op("NonMaxSuppression", {boxes, nan_scores, limit, Tensor::scalar<float>(1.0f), Tensor::scalar<float>(0.2f)})[0]),
            (std::vector<int64_t>{0, 0, 4, 0, 0, 0}));
  // Boxes of no area overlap nothing.
  Tensor flat = make_tensor(DType::kFloat32, {0, 0, 0, 1, 0, 0, 0, 1}, {1, 2, 4});
  EXPECT_EQ(as_ints(run_op("NonMaxSuppression", {flat, make_tensor(DType::kFloat32, {0.9, 0.8}, {1, 1, 2}), limit})[0]),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
}

TEST(NonMaxSuppressionKernels, RejectsMalformedInput) {
  Tensor boxes(DType::kFloat32, {1, 3, 4});
  Tensor scores(DType::kFloat32, {1, 2, 3});
  Tensor limit = Tensor::scalar<int64_t>(2);
  EXPECT_NE(error_of("NonMaxSuppression", {Tensor(DType::kFloat32, {1, 3, 5}), scores}).find("must be [batches, boxes, 4]"), std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {boxes, Tensor(DType::kFloat32, {1, 2, 4})}).find("must be [batches, classes, boxes]"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {boxes, Tensor(DType::kFloat32, {2, 2, 3})}).find("must be [batches, classes, boxes]"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {boxes, scores, Tensor::from_vector<int64_t>({1, 2}, {2})}).find("must be a scalar"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {boxes, scores, limit, Tensor::scalar<float>(1.5f)}).find("iou_threshold must lie in [0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {boxes, scores}, {{"center_point_box", Attribute(int64_t{2})}}).find("center_point_box must be 0 or 1"),
            std::string::npos);
}

struct RoiCase {
  std::string mode = "avg", transform = "half_pixel";
  int64_t out_h = 3, out_w = 2, sampling_ratio = 2;
  double scale = 1.0;
};

// The bilinear value of plane [h, w] at (y, x), as RoiAlign reads it: nothing
// more than a pixel outside, clamped to the edge pixels within one. In max
// mode each corner's weighted value separately.
std::array<double, 4> corner_terms(const std::vector<double>& plane, int64_t h, int64_t w, double y, double x) {
  if (y < -1 || y > static_cast<double>(h) || x < -1 || x > static_cast<double>(w)) return {0, 0, 0, 0};
  y = std::clamp(y, 0.0, static_cast<double>(h - 1));
  x = std::clamp(x, 0.0, static_cast<double>(w - 1));
  auto y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  double fy = y - static_cast<double>(y0), fx = x - static_cast<double>(x0);
  auto at = [&](int64_t yy, int64_t xx) { return plane[static_cast<size_t>(yy * w + xx)]; };
  return {(1 - fy) * (1 - fx) * at(y0, x0), (1 - fy) * fx * at(y0, x1), fy * (1 - fx) * at(y1, x0), fy * fx * at(y1, x1)};
}

std::vector<double> reference_roi_align(const std::vector<double>& x, const std::vector<int64_t>& sizes, const std::vector<double>& rois,
                                        const std::vector<int64_t>& batch, const RoiCase& c) {
  int64_t channels = sizes[1], h = sizes[2], w = sizes[3];
  std::vector<double> out;
  for (size_t r = 0; r < batch.size(); ++r) {
    double shift = c.transform == "half_pixel" ? 0.5 : 0.0;
    double x1 = rois[r * 4] * c.scale - shift, y1 = rois[r * 4 + 1] * c.scale - shift;
    double x2 = rois[r * 4 + 2] * c.scale - shift, y2 = rois[r * 4 + 3] * c.scale - shift;
    double roi_h = y2 - y1, roi_w = x2 - x1;
    if (c.transform != "half_pixel") {
      roi_h = std::max(roi_h, 1.0);
      roi_w = std::max(roi_w, 1.0);
    }
    double bin_h = roi_h / static_cast<double>(c.out_h), bin_w = roi_w / static_cast<double>(c.out_w);
    // A reversed roi's bins have a negative size, and no samples.
    int64_t grid_h = c.sampling_ratio > 0 ? c.sampling_ratio : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_h)));
    int64_t grid_w = c.sampling_ratio > 0 ? c.sampling_ratio : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_w)));
    for (int64_t ch = 0; ch < channels; ++ch) {
      std::vector<double> plane(x.begin() + (batch[r] * channels + ch) * h * w, x.begin() + (batch[r] * channels + ch + 1) * h * w);
      for (int64_t ph = 0; ph < c.out_h; ++ph) {
        for (int64_t pw = 0; pw < c.out_w; ++pw) {
          double sum = 0, largest = -INFINITY;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double yy = y1 + bin_h * (static_cast<double>(ph) + (static_cast<double>(iy) + 0.5) / static_cast<double>(grid_h));
              double xx = x1 + bin_w * (static_cast<double>(pw) + (static_cast<double>(ix) + 0.5) / static_cast<double>(grid_w));
              std::array<double, 4> terms = corner_terms(plane, h, w, yy, xx);
              sum += terms[0] + terms[1] + terms[2] + terms[3];
              largest = std::max(largest, *std::max_element(terms.begin(), terms.end()));
            }
          }
          if (c.mode == "max") out.push_back(grid_h * grid_w == 0 ? 0 : largest);
          else out.push_back(sum / static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1)));
        }
      }
    }
  }
  return out;
}

std::map<std::string, Attribute> roi_attributes(const RoiCase& c) {
  return {{"mode", Attribute(c.mode)},
          {"coordinate_transformation_mode", Attribute(c.transform)},
          {"output_height", Attribute(c.out_h)},
          {"output_width", Attribute(c.out_w)},
          {"sampling_ratio", Attribute(c.sampling_ratio)},
          {"spatial_scale", Attribute(c.scale)}};
}

TEST(RoiAlignKernels, BothModesAndTransformsAgainstAReference) {
  const std::vector<int64_t> sizes = {2, 3, 9, 11};
  std::vector<double> x = random_values(DType::kFloat64, count_of(sizes), 3);
  // Rois inside, crossing the border, far outside, degenerate, reversed.
  const std::vector<double> rois = {1, 1, 6, 7, -2, 3, 4, 12, 0, 0, 10, 8, 20, 20, 25, 30, 3, 3, 3, 3, 5, 6, 2, 1, 0.5, 7.25, 9.5, 8.5};
  const std::vector<int64_t> batch = {0, 1, 1, 0, 1, 0, 1};
  std::vector<RoiCase> cases;
  for (std::string mode : {"avg", "max"}) {
    for (std::string transform : {"half_pixel", "output_half_pixel"}) {
      cases.push_back({mode, transform, 3, 2, 2, 1.0});
      cases.push_back({mode, transform, 2, 4, 0, 1.0});
      cases.push_back({mode, transform, 1, 1, 3, 0.5});
      cases.push_back({mode, transform, 5, 5, 0, 2.0});
    }
  }
  for (const RoiCase& c : cases) {
    SCOPED_TRACE(c.mode + " " + c.transform + " " + std::to_string(c.out_h) + "x" + std::to_string(c.out_w) + " ratio " +
                 std::to_string(c.sampling_ratio) + " scale " + std::to_string(c.scale));
    Tensor y = run_op("RoiAlign", {make_tensor(DType::kFloat64, x, sizes), make_tensor(DType::kFloat64, rois, {7, 4}),
                                   Tensor::from_vector<int64_t>(batch, {7})}, roi_attributes(c))[0];
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{7, 3, c.out_h, c.out_w}));
    std::vector<double> expected = reference_roi_align(x, sizes, rois, batch, c);
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-12) << "element " << i;
  }
  // f32 within rounding of the f64 result.
  RoiCase c;
  std::vector<double> f64 = to_doubles(run_op("RoiAlign", {make_tensor(DType::kFloat64, x, sizes), make_tensor(DType::kFloat64, rois, {7, 4}),
                                                           Tensor::from_vector<int64_t>(batch, {7})}, roi_attributes(c))[0]);
  std::vector<double> f32 = to_doubles(run_op("RoiAlign", {make_tensor(DType::kFloat32, x, sizes), make_tensor(DType::kFloat32, rois, {7, 4}),
                                                           Tensor::from_vector<int64_t>(batch, {7})}, roi_attributes(c))[0]);
  for (size_t i = 0; i < f64.size(); ++i) ASSERT_NEAR(f32[i], f64[i], 1e-5);
}

TEST(RoiAlignKernels, AveragesOfALinearImageAreItsValuesAtBinCentres) {
  const int64_t h = 12, w = 16;
  std::vector<double> image(static_cast<size_t>(h * w));
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) image[static_cast<size_t>(y * w + x)] = 0.75 * static_cast<double>(y) - 0.5 * static_cast<double>(x) + 2;
  }
  // Rois well inside, so no sample is clamped.
  const std::vector<double> rois = {2, 3, 9, 8, 4.5, 1.5, 13.25, 10.75};
  for (int64_t ratio : {0, 1, 2, 3}) {
    for (std::string transform : {"half_pixel", "output_half_pixel"}) {
      RoiCase c{"avg", transform, 4, 3, ratio, 1.0};
      std::vector<double> got = to_doubles(run_op("RoiAlign", {make_tensor(DType::kFloat64, image, {1, 1, h, w}),
                                                               make_tensor(DType::kFloat64, rois, {2, 4}),
                                                               Tensor::from_vector<int64_t>({0, 0}, {2})}, roi_attributes(c))[0]);
      for (int64_t r = 0; r < 2; ++r) {
        double shift = transform == "half_pixel" ? 0.5 : 0.0;
        double x1 = rois[static_cast<size_t>(r * 4)] - shift, y1 = rois[static_cast<size_t>(r * 4 + 1)] - shift;
        double bin_w = (rois[static_cast<size_t>(r * 4 + 2)] - shift - x1) / 3, bin_h = (rois[static_cast<size_t>(r * 4 + 3)] - shift - y1) / 4;
        for (int64_t ph = 0; ph < 4; ++ph) {
          for (int64_t pw = 0; pw < 3; ++pw) {
            double cy = y1 + (static_cast<double>(ph) + 0.5) * bin_h, cx = x1 + (static_cast<double>(pw) + 0.5) * bin_w;
            ASSERT_NEAR(got[static_cast<size_t>((r * 4 + ph) * 3 + pw)], 0.75 * cy - 0.5 * cx + 2, 1e-12)
                << transform << " ratio " << ratio << " roi " << r << " bin " << ph << "," << pw;
          }
        }
      }
    }
  }
}

TEST(RoiAlignKernels, RejectsMalformedInput) {
  Tensor x(DType::kFloat32, {2, 1, 4, 4});
  Tensor rois = Tensor::from_vector<float>({0, 0, 2, 2}, {1, 4});
  Tensor batch = Tensor::from_vector<int64_t>({0}, {1});
  EXPECT_NE(error_of("RoiAlign", {x, rois, Tensor::from_vector<int64_t>({2}, {1})}).find("batch_indices[0] = 2 is outside [0, 2)"),
            std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, Tensor(DType::kFloat32, {1, 5}), batch}).find("must be [num_rois, 4]"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, Tensor::from_vector<int64_t>({0, 0}, {2})}).find("must be [1], one per roi"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {Tensor(DType::kFloat32, {1, 4, 4}), rois, batch}).find("must be [N, C, H, W]"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, batch}, {{"mode", Attribute("sum")}}).find("mode 'sum' is not one of avg, max"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, batch}, {{"coordinate_transformation_mode", Attribute("asymmetric")}}).find("'asymmetric'"),
            std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, batch}, {{"output_height", Attribute(int64_t{0})}}).find("must be at least 1"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, batch}, {{"sampling_ratio", Attribute(int64_t{-1})}}).find("must not be negative"),
            std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, Tensor::from_vector<float>({0, 0, NAN, 2}, {1, 4}), batch}).find("non-finite"), std::string::npos);
}

}  // namespace
}  // namespace weir
