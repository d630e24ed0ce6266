#include "ops/nn/non_max_suppression.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

// A box as its corners, lowest first.
struct Corners {
  double y_min, x_min, y_max, x_max;
  double area() const { return (y_max - y_min) * (x_max - x_min); }
};

Corners corners_of(const double* box, bool center_point) {
  if (center_point) {
    double half_width = box[2] / 2, half_height = box[3] / 2;
    return {box[1] - half_height, box[0] - half_width, box[1] + half_height, box[0] + half_width};
  }
  return {std::min(box[0], box[2]), std::min(box[1], box[3]), std::max(box[0], box[2]), std::max(box[1], box[3])};
}

// True when a and b overlap by more than `threshold` of their union.
bool overlaps_too_much(const Corners& a, const Corners& b, double threshold) {
  double height = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  double width = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (height <= 0 || width <= 0) return false;
  double intersection = height * width, area_a = a.area(), area_b = b.area();
  if (area_a <= 0 || area_b <= 0) return false;
  double union_area = area_a + area_b - intersection;
  if (union_area <= 0) return false;
  return intersection / union_area > threshold;
}

class NonMaxSuppressionKernel final : public OpKernel {
 public:
  explicit NonMaxSuppressionKernel(const Node& node) : center_point_(int_attr(node, "center_point_box", 0)) {
    if (center_point_ != 0 && center_point_ != 1) {
      throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': center_point_box must be 0 or 1, got " +
                                                   std::to_string(center_point_)).with_node(node.name());
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& boxes_tensor = ctx.input(0);
    const Tensor& scores_tensor = ctx.input(1);
    const std::vector<int64_t>& box_sizes = boxes_tensor.sizes();
    const std::vector<int64_t>& score_sizes = scores_tensor.sizes();
    if (box_sizes.size() != 3 || box_sizes[2] != 4) ctx.fail("boxes " + boxes_tensor.type_string() + " must be [batches, boxes, 4]");
    if (score_sizes.size() != 3 || score_sizes[0] != box_sizes[0] || score_sizes[2] != box_sizes[1]) {
      ctx.fail("scores " + scores_tensor.type_string() + " must be [batches, classes, boxes] for boxes " + boxes_tensor.type_string());
    }
    int64_t max_per_class = 0;
    if (ctx.has_input(2)) {
      std::vector<int64_t> values = index_values(ctx, ctx.input(2), "max_output_boxes_per_class");
      if (values.size() != 1) ctx.fail("max_output_boxes_per_class must be a scalar, got " + ctx.input(2).type_string());
      max_per_class = values[0];
    }
    double iou_threshold = 0;
    if (ctx.has_input(3)) iou_threshold = scalar(ctx, 3, "iou_threshold");
    if (!(iou_threshold >= 0 && iou_threshold <= 1)) ctx.fail("iou_threshold must lie in [0, 1], got " + std::to_string(iou_threshold));
    std::optional<double> score_threshold;
    if (ctx.has_input(4)) score_threshold = scalar(ctx, 4, "score_threshold");

    const int64_t batches = box_sizes[0], count = box_sizes[1], classes = score_sizes[1];
    std::vector<double> box_values = float_values(ctx, boxes_tensor, "boxes");
    std::vector<double> scores = float_values(ctx, scores_tensor, "scores");
    std::vector<Corners> corners(static_cast<size_t>(batches * count));
    for (size_t b = 0; b < corners.size(); ++b) corners[b] = corners_of(&box_values[b * 4], center_point_ == 1);

    std::vector<std::array<int64_t, 3>> selected;
    std::vector<int64_t> order, kept;
    for (int64_t batch = 0; batch < batches && max_per_class > 0; ++batch) {
      for (int64_t c = 0; c < classes; ++c) {
        // data() + offset: with no boxes the vector is empty and [] would bind a null reference.
        const double* score = scores.data() + (batch * classes + c) * count;
        order.clear();
        for (int64_t i = 0; i < count; ++i) {
          if (std::isnan(score[i]) || (score_threshold && !(score[i] > *score_threshold))) continue;
          order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          const Corners& box = corners[static_cast<size_t>(batch * count + i)];
          bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
            return overlaps_too_much(box, corners[static_cast<size_t>(batch * count + k)], iou_threshold);
          });
          if (suppressed) continue;
          kept.push_back(i);
          selected.push_back({batch, c, i});
        }
      }
    }
    Tensor& out = ctx.allocate_output(0, DType::kInt64, {static_cast<int64_t>(selected.size()), 3}, KernelContext::Fill::kUninitialized);
    int64_t* data = out.data<int64_t>();
    for (size_t r = 0; r < selected.size(); ++r) std::copy(selected[r].begin(), selected[r].end(), data + r * 3);
  }

 private:
  static double scalar(const KernelContext& ctx, size_t index, const char* what) {
    std::vector<double> values = float_values(ctx, ctx.input(index), what);
    if (values.size() != 1) ctx.fail(std::string(what) + " must be a scalar, got " + ctx.input(index).type_string());
    return values[0];
  }

  int64_t center_point_;
};

void infer_non_max_suppression(InferenceContext& ctx) {
  int64_t center_point = ctx.attr_int("center_point_box");
  if (center_point != 0 && center_point != 1) ctx.fail("center_point_box must be 0 or 1, got " + std::to_string(center_point));
  const TensorType* boxes = ctx.input_type(0);
  const TensorType* scores = ctx.input_type(1);
  if (boxes != nullptr && boxes->shape.has_rank()) {
    const Shape& s = boxes->shape;
    if (s.rank() != 3 || (s[2].is_static() && s[2].size() != 4)) ctx.fail("boxes " + boxes->to_string() + " must be [batches, boxes, 4]");
  }
  if (scores != nullptr && scores->shape.has_rank()) {
    const Shape& s = scores->shape;
    if (s.rank() != 3) ctx.fail("scores " + scores->to_string() + " must be [batches, classes, boxes]");
    if (boxes != nullptr && boxes->shape.has_rank()) {
      const Shape& b = boxes->shape;
      bool batches_differ = s[0].is_static() && b[0].is_static() && s[0].size() != b[0].size();
      bool counts_differ = s[2].is_static() && b[1].is_static() && s[2].size() != b[1].size();
      if (batches_differ || counts_differ) {
        ctx.fail("scores " + scores->to_string() + " must be [batches, classes, boxes] for boxes " + boxes->to_string());
      }
    }
  }
  check_scalar_input(ctx, 2, "max_output_boxes_per_class");
  check_scalar_input(ctx, 3, "iou_threshold");
  check_scalar_input(ctx, 4, "score_threshold");
  ctx.set_output_type(0, {DType::kInt64, Shape{symbolic_dim(ctx, 0), Dim(3)}});
}

}  // namespace

void register_non_max_suppression_schema(OpRegistry& registry) {
  OpSchema schema("NonMaxSuppression");
  schema.input("boxes", "T").input("scores", "T").input("max_output_boxes_per_class", "I", Arity::kOptional)
      .input("iou_threshold", "F", Arity::kOptional).input("score_threshold", "F", Arity::kOptional)
      .output("selected_indices", "O")
      .type_constraint("T", kFloatDTypes).type_constraint("F", kFloatDTypes).type_constraint("I", {DType::kInt64})
      .type_constraint("O", {DType::kInt64})
      .attr("center_point_box", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_non_max_suppression)
      .doc("(batch, class, box) of the boxes greedy non-maximum suppression keeps per batch and class, by descending "
           "score, dropping those overlapping a kept box by more than iou_threshold");
  registry.add(std::move(schema));
}

void register_non_max_suppression_cpu_kernel(KernelRegistry& registry) {
  registry.add("NonMaxSuppression", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<NonMaxSuppressionKernel>(node); });
}

}  // namespace weir
