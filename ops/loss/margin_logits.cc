#include "ops/loss/margin_logits.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/loss/class_shards.h"
#include "ops/node_attributes.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kIndex = {DType::kInt32, DType::kInt64};
constexpr double kMinSine = 1e-6;

struct Margin {
  double scale, m1, m2, m3;
  explicit Margin(const Node& node)
      : scale(float_attr(node, "scale", 64.0)),
        m1(float_attr(node, "m1", 1.0)),
        m2(float_attr(node, "m2", 0.5)),
        m3(float_attr(node, "m3", 0.0)) {}
  bool plain_angle() const { return m1 == 1.0 && m2 == 0.0; }
  // Past pi the margin would turn the target logit back up (cos(m1 theta +
  // m2) grows again as theta nears pi), so training would push the
  // embedding away from its class: there the target is InsightFace's
  // fallback cos(theta) - m3 - m2 sin(m2), which still falls with theta.
  bool past_pi(double theta) const { return m2 > 0 && m1 * theta + m2 > std::numbers::pi; }
  double target(double cosine, double theta) const {
    return past_pi(theta) ? cosine - m3 - m2 * std::sin(m2) : std::cos(m1 * theta + m2) - m3;
  }
  // d target / d cosine.
  double derivative(double cosine, double theta) const {
    if (past_pi(theta)) return 1.0;
    return m1 * std::sin(m1 * theta + m2) / std::max(std::sqrt(1 - cosine * cosine), kMinSine);
  }
};

void check_cosine(const KernelContext& ctx, const Tensor& cosine) {
  if (cosine.sizes().size() != 2) ctx.fail("cosine must be [batch, classes], got " + cosine.type_string());
}

class MarginLogitsKernel final : public OpKernel {
 public:
  explicit MarginLogitsKernel(const Node& node) : margin_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& cosine = ctx.input(0);
    check_cosine(ctx, cosine);
    const int64_t rows = cosine.sizes()[0], columns = cosine.sizes()[1];
    const std::vector<int64_t> labels = shard_column_labels(ctx, ctx.input(1), rows, columns);
    Tensor& logits = ctx.allocate_output(0, cosine.dtype(), cosine.sizes(), KernelContext::Fill::kUninitialized);
    const Margin m = margin_;
    auto run = [&]<typename T>() {
      const T* c = cosine.data<T>();
      T* y = logits.data<T>();
      parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(columns, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          for (int64_t j = 0; j < columns; ++j) y[b * columns + j] = static_cast<T>(m.scale * static_cast<double>(c[b * columns + j]));
          const int64_t label = labels[static_cast<size_t>(b)];
          if (label < 0) continue;
          const double x = std::clamp(static_cast<double>(c[b * columns + label]), -1.0, 1.0);
          y[b * columns + label] = static_cast<T>(m.scale * m.target(x, std::acos(x)));
        }
      });
    };
    if (!dispatch_f32_f64(cosine.dtype(), run)) ctx.fail("supports f32 and f64, got " + cosine.type_string());
  }

 private:
  Margin margin_;
};

class MarginLogitsGradKernel final : public OpKernel {
 public:
  explicit MarginLogitsGradKernel(const Node& node) : margin_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& cosine = ctx.input(1);
    check_cosine(ctx, cosine);
    if (dy.sizes() != cosine.sizes() || dy.dtype() != cosine.dtype()) {
      ctx.fail("dY is " + dy.type_string() + " and the cosine " + cosine.type_string() + "; they must match");
    }
    const int64_t rows = cosine.sizes()[0], columns = cosine.sizes()[1];
    const std::vector<int64_t> labels = shard_column_labels(ctx, ctx.input(2), rows, columns);
    Tensor& dc = ctx.allocate_output(0, cosine.dtype(), cosine.sizes(), KernelContext::Fill::kUninitialized);
    const Margin m = margin_;
    auto run = [&]<typename T>() {
      const T* c = cosine.data<T>();
      const T* g = dy.data<T>();
      T* out = dc.data<T>();
      parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(columns, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          for (int64_t j = 0; j < columns; ++j) out[b * columns + j] = static_cast<T>(m.scale * static_cast<double>(g[b * columns + j]));
          const int64_t label = labels[static_cast<size_t>(b)];
          if (label < 0 || m.plain_angle()) continue;
          const double x = std::clamp(static_cast<double>(c[b * columns + label]), -1.0, 1.0);
          out[b * columns + label] =
              static_cast<T>(m.scale * static_cast<double>(g[b * columns + label]) * m.derivative(x, std::acos(x)));
        }
      });
    };
    if (!dispatch_f32_f64(cosine.dtype(), run)) ctx.fail("supports f32 and f64, got " + cosine.type_string());
  }

 private:
  Margin margin_;
};

OpSchema& margin_attrs(OpSchema& schema) {
  return schema.attr("scale", AttrType::kFloat, Attribute(64.0))
      .attr("m1", AttrType::kFloat, Attribute(1.0))
      .attr("m2", AttrType::kFloat, Attribute(0.5))
      .attr("m3", AttrType::kFloat, Attribute(0.0));
}

void infer_margin(InferenceContext& ctx, size_t cosine_index, size_t labels_index) {
  const TensorType* cosine = ctx.input_type(cosine_index);
  const TensorType* labels = ctx.input_type(labels_index);
  if (cosine == nullptr) return;
  if (cosine->shape.has_rank() && cosine->shape.rank() != 2) {
    ctx.fail("cosine must be [batch, classes], got " + cosine->shape.to_string());
  }
  if (labels != nullptr && labels->shape.has_rank()) {
    if (labels->shape.rank() != 1) ctx.fail("labels must be [batch], got " + labels->shape.to_string());
    const Dim& rows = labels->shape[0];
    if (cosine->shape.has_rank() && rows.is_static() && cosine->shape[0].is_static() && rows.size() != cosine->shape[0].size()) {
      ctx.fail("labels " + labels->shape.to_string() + " do not match the cosine's rows " + cosine->shape.to_string());
    }
  }
  if (!(ctx.attr_float("scale") > 0)) ctx.fail("scale must be positive, got " + std::to_string(ctx.attr_float("scale")));
  ctx.set_output_type(0, *cosine);
}

}  // namespace

void register_margin_logits_schemas(OpRegistry& registry) {
  OpSchema forward("MarginLogits");
  margin_attrs(forward.input("cosine", "T").input("labels", "Tind").output("logits", "T")
                   .type_constraint("T", kFloating)
                   .type_constraint("Tind", kIndex))
      .traits(OpTrait::kFullPrecisionCompute)
      .infer([](InferenceContext& ctx) { infer_margin(ctx, 0, 1); })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::map<std::string, Attribute> attributes;
        for (const char* name : {"scale", "m1", "m2", "m3"}) {
          if (node.has_attr(name)) attributes.emplace(name, node.attr(name));
        }
        ctx.set_input_grad(0, ctx.emit("MarginLogitsGrad", {grad, node.input(0), node.input(1)}, 1, attributes)[0]);
      })
      .doc("s * cosine, the labelled column s * (cos(m1 * acos(cosine) + m2) - m3) (ArcFace m2, CosFace m3); "
           "label -1: no column of this shard");
  registry.add(std::move(forward));

  OpSchema backward("MarginLogitsGrad");
  margin_attrs(backward.input("dY", "T").input("cosine", "T").input("labels", "Tind").output("dCosine", "T")
                   .type_constraint("T", kFloating)
                   .type_constraint("Tind", kIndex))
      .infer([](InferenceContext& ctx) { infer_margin(ctx, 1, 2); })
      .doc("the gradient of MarginLogits with respect to the cosine");
  registry.add(std::move(backward));
}

void register_margin_logits_cpu_kernels(KernelRegistry& registry) {
  registry.add("MarginLogits", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<MarginLogitsKernel>(node); });
  registry.add("MarginLogitsGrad", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<MarginLogitsGradKernel>(node); });
}

}  // namespace weir
