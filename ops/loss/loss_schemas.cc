#include "ops/loss/loss_schemas.h"

#include "core/graph.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
const std::vector<DType> kIndex = {DType::kInt32, DType::kInt64};

std::string reduction_of(const InferenceContext& ctx) {
  std::string reduction = ctx.attr("reduction").s();
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    ctx.fail("reduction must be none, sum or mean, got '" + reduction + "'");
  }
  return reduction;
}

// scores [N, C, D...] and labels [N, D...]: the loss is labels-shaped for
// reduction none, a scalar otherwise.
void infer_class_loss(InferenceContext& ctx) {
  const TensorType* scores = ctx.input_type(0);
  const TensorType* labels = ctx.input_type(1);
  if (scores == nullptr || labels == nullptr) return;
  std::string reduction = reduction_of(ctx);
  if (scores->shape.has_rank() && labels->shape.has_rank()) {
    if (scores->shape.rank() < 2) ctx.fail("scores must be [N, C, ...], got " + scores->shape.to_string());
    bool match = labels->shape.rank() == scores->shape.rank() - 1;
    for (int64_t axis = 0; match && axis < labels->shape.rank(); ++axis) {
      const Dim& label_dim = labels->shape[static_cast<size_t>(axis)];
      const Dim& score_dim = scores->shape[static_cast<size_t>(axis == 0 ? 0 : axis + 1)];
      match = !(label_dim.is_static() && score_dim.is_static() && label_dim.size() != score_dim.size());
    }
    if (!match) {
      ctx.fail("labels " + labels->shape.to_string() + " do not match scores " + scores->shape.to_string() +
               " without its class axis");
    }
  }
  ctx.set_output_type(0, TensorType{scores->dtype, reduction == "none" ? labels->shape : Shape{}});
  if (ctx.num_outputs() > 1) ctx.set_output_type(1, *scores);
}

OpSchema class_loss(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("scores", "T")
      .input("labels", "Tind")
      .input("weights", "T", Arity::kOptional)
      .type_constraint("T", kFloating)
      .type_constraint("Tind", kIndex)
      .attr("ignore_index", AttrType::kInt)
      .attr("reduction", AttrType::kString, Attribute("mean"))
      .infer(infer_class_loss)
      .doc(doc);
  schema.add_traits(OpTrait::kFullPrecisionCompute);
  return schema;
}

std::map<std::string, Attribute> loss_attributes(const Node& node) {
  std::map<std::string, Attribute> attributes;
  for (const char* name : {"ignore_index", "reduction"}) {
    if (node.has_attr(name)) attributes.emplace(name, node.attr(name));
  }
  return attributes;
}

std::vector<Value*> label_inputs(const Node& node, Value* first, Value* second) {
  std::vector<Value*> inputs = {first, second, node.input(1)};
  if (node.num_inputs() > 2 && node.input(2) != nullptr) inputs.push_back(node.input(2));
  return inputs;
}

// dScores from dLoss (and from dLogProb when the log_prob output is used).
void softmax_cross_entropy_gradient(GradientContext& ctx) {
  const Node& node = ctx.node();
  Value* grad = ctx.output_grad(0);
  Value* log_prob_grad = node.num_outputs() > 1 ? ctx.output_grad(1) : nullptr;
  if (grad == nullptr && log_prob_grad == nullptr) return;
  Value* log_prob = node.num_outputs() > 1
                        ? node.output(1)
                        : ctx.emit("LogSoftmax", {node.input(0)}, 1, {{"axis", Attribute(1)}})[0];
  Value* total = nullptr;
  if (grad != nullptr) {
    total = ctx.emit("SoftmaxCrossEntropyLossGrad", label_inputs(node, grad, log_prob), 1, loss_attributes(node))[0];
  }
  if (log_prob_grad != nullptr) {
    Value* through = ctx.emit("LogSoftmaxGrad", {log_prob_grad, log_prob}, 1, {{"axis", Attribute(1)}})[0];
    total = total == nullptr ? through : ctx.emit("Add", {total, through})[0];
  }
  ctx.set_input_grad(0, total);
}

void nll_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  const Node& node = ctx.node();
  ctx.set_input_grad(0, ctx.emit("NegativeLogLikelihoodLossGrad", label_inputs(node, grad, node.input(0)), 1,
                                 loss_attributes(node))[0]);
}

}  // namespace

void register_loss_schemas(OpRegistry& registry) {
  OpSchema sce = class_loss("SoftmaxCrossEntropyLoss",
                            "-weights[label] * log_softmax(scores, axis 1)[label] per position; "
                            "mean divides by the sum of the weights of the positions not ignored");
  sce.output("output", "T").output("log_prob", "T", Arity::kOptional).gradient(softmax_cross_entropy_gradient);
  registry.add(std::move(sce));

  OpSchema nll = class_loss("NegativeLogLikelihoodLoss",
                            "-weights[label] * input[label] per position, input holding log-probabilities");
  nll.output("loss", "T").gradient(nll_gradient);
  registry.add(std::move(nll));

  // Backward ops: inputs (dLoss, log_prob or input, labels[, weights]).
  for (const char* name : {"SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLossGrad"}) {
    OpSchema backward(name);
    backward.input("dY", "T")
        .input("reference", "T")
        .input("labels", "Tind")
        .input("weights", "T", Arity::kOptional)
        .output("dX", "T")
        .type_constraint("T", kFloating)
        .type_constraint("Tind", kIndex)
        .attr("ignore_index", AttrType::kInt)
        .attr("reduction", AttrType::kString, Attribute("mean"))
        .infer([](InferenceContext& ctx) {
          if (const TensorType* reference = ctx.input_type(1)) ctx.set_output_type(0, *reference);
        })
        .doc("Gradient of the loss of the same name with respect to its first input; `reference` is "
             "log_prob (cross entropy) or the input itself (negative log-likelihood)");
    registry.add(std::move(backward));
  }

  OpSchema mse("MeanSquaredError");
  mse.input("prediction", "T")
      .input("target", "T")
      .output("loss", "T")
      .type_constraint("T", kFloating)
      .attr("reduction", AttrType::kString, Attribute("mean"))
      .infer([](InferenceContext& ctx) {
        const TensorType* prediction = ctx.input_type(0);
        const TensorType* target = ctx.input_type(1);
        if (prediction == nullptr || target == nullptr) return;
        std::string reduction = reduction_of(ctx);
        if (prediction->shape.has_rank() && target->shape.has_rank() &&
            broadcast_shapes(prediction->shape, target->shape, ctx).rank() != prediction->shape.rank()) {
          ctx.fail("target " + target->shape.to_string() + " must broadcast to prediction " + prediction->shape.to_string());
        }
        ctx.set_output_type(0, TensorType{prediction->dtype, reduction == "none" ? prediction->shape : Shape{}});
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::map<std::string, Attribute> attributes;
        if (node.has_attr("reduction")) attributes.emplace("reduction", node.attr("reduction"));
        Value* d_prediction = ctx.emit("MeanSquaredErrorGrad", {grad, node.input(0), node.input(1)}, 1, attributes)[0];
        ctx.set_input_grad(0, d_prediction);
        // The target was broadcast to the prediction: sum its gradient back.
        Value* negated = ctx.emit("Neg", {d_prediction})[0];
        bool same = node.input(1)->shape().has_rank() && node.input(1)->shape() == node.input(0)->shape();
        ctx.set_input_grad(1, same ? negated : ctx.emit("SumToShape", {negated, node.input(1)})[0]);
      })
      .doc("(prediction - target)^2, target broadcast to the prediction; reduced by mean (default), sum or none");
  mse.add_traits(OpTrait::kFullPrecisionCompute);
  registry.add(std::move(mse));

  OpSchema mse_grad("MeanSquaredErrorGrad");
  mse_grad.input("dY", "T")
      .input("prediction", "T")
      .input("target", "T")
      .output("dPrediction", "T")
      .type_constraint("T", kFloating)
      .attr("reduction", AttrType::kString, Attribute("mean"))
      .infer([](InferenceContext& ctx) {
        if (const TensorType* prediction = ctx.input_type(1)) ctx.set_output_type(0, *prediction);
      })
      .doc("2 (prediction - target) dY, divided by the element count for mean");
  registry.add(std::move(mse_grad));
}

}  // namespace weir
