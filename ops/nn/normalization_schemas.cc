#include "ops/nn/normalization_schemas.h"

#include "core/graph.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kNormTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

// Checks that `param` is [C] for the channel axis 1 of `x`.
void check_channel_param(InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* x = ctx.input_type(0);
  const TensorType* param = ctx.input_type(index);
  if (x == nullptr || param == nullptr || !x->shape.has_rank() || !param->shape.has_rank()) return;
  if (x->shape.rank() < 2) ctx.fail("input " + x->shape.to_string() + " has no channel axis");
  const Dim& channels = x->shape[1];
  if (param->shape.rank() != 1 ||
      (channels.is_static() && param->shape[0].is_static() && param->shape[0].size() != channels.size())) {
    ctx.fail(std::string(name) + " has shape " + param->shape.to_string() + "; expected [" + channels.to_string() +
             "], one value per channel of the input " + x->shape.to_string());
  }
}

void infer_batch_norm(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) check_channel_param(ctx, i, names[i]);
  ctx.set_output_type(0, *x);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (const TensorType* stat = ctx.input_type(i + 2)) ctx.set_output_type(i, *stat);
  }
}

void infer_instance_norm(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (x->shape.has_rank() && x->shape.rank() < 3) ctx.fail("input " + x->shape.to_string() + " must be [N, C, spatial...]");
  check_channel_param(ctx, 1, "scale");
  check_channel_param(ctx, 2, "B");
  ctx.set_output_type(0, *x);
}

void infer_layer_norm(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  ctx.set_output_type(0, *x);
  if (!x->shape.has_rank()) return;
  int64_t axis = normalize_axis(ctx.attr_int("axis"), x->shape.rank(), ctx);
  DType stat_type = x->dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  std::vector<Dim> dims(x->shape.dims().begin(), x->shape.dims().begin() + axis);
  dims.resize(static_cast<size_t>(x->shape.rank()), Dim(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output_type(i, {stat_type, Shape(dims)});
}

// The three gradients of a normalization: one backward op with three outputs.
GradientFn norm_gradient(const char* backward_op, std::vector<size_t> extra_inputs) {
  return [backward_op, extra_inputs](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    const Node& node = ctx.node();
    std::vector<Value*> inputs = {grad, node.input(0), node.input(1)};
    for (size_t index : extra_inputs) inputs.push_back(index < node.num_inputs() ? node.input(index) : nullptr);
    std::vector<Value*> grads = ctx.emit(backward_op, inputs, 3, node.attributes());
    ctx.set_input_grad(0, grads[0]);
    ctx.set_input_grad(1, grads[1]);
    if (node.num_inputs() > 2 && node.input(2) != nullptr) ctx.set_input_grad(2, grads[2]);
  };
}

void infer_norm_grad(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(1);
  const TensorType* scale = ctx.input_type(2);
  if (x != nullptr) ctx.set_output_type(0, *x);
  if (scale != nullptr) {
    ctx.set_output_type(1, *scale);
    ctx.set_output_type(2, *scale);
  }
}

}  // namespace

void register_normalization_schemas(OpRegistry& registry) {
  OpSchema batch_norm("BatchNormalization");
  batch_norm.input("X", "T").input("scale", "T").input("B", "T").input("input_mean", "T").input("input_var", "T")
      .output("Y", "T").output("running_mean", "T", Arity::kOptional).output("running_var", "T", Arity::kOptional)
      .type_constraint("T", kNormTypes)
      .attr("epsilon", AttrType::kFloat, Attribute(1e-5))
      .attr("momentum", AttrType::kFloat, Attribute(0.9))
      .attr("training_mode", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_batch_norm)
      .gradient(norm_gradient("BatchNormGrad", {3, 4}))
      .add_traits(OpTrait::kFullPrecisionCompute)
      .doc("per-channel (axis 1) normalization: with the given mean/var, or in training_mode with the batch's "
           "statistics (biased variance), also giving running = running * momentum + batch * (1 - momentum)");
  registry.add(std::move(batch_norm));

  OpSchema layer_norm("LayerNormalization");
  layer_norm.input("X", "T").input("Scale", "T").input("B", "T", Arity::kOptional)
      .output("Y", "T").output("Mean", "U", Arity::kOptional).output("InvStdDev", "U", Arity::kOptional)
      .type_constraint("T", kNormTypes)
      .type_constraint("U", {DType::kFloat32, DType::kFloat64})
      .attr("axis", AttrType::kInt, Attribute(int64_t{-1}))
      .attr("epsilon", AttrType::kFloat, Attribute(1e-5))
      .attr("stash_type", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_layer_norm)
      .gradient(norm_gradient("LayerNormGrad", {}))
      .add_traits(OpTrait::kFullPrecisionCompute)
      .doc("normalizes over axes [axis, rank), then Scale and B (broadcast over those axes); Mean and InvStdDev "
           "are f32 (f64 for f64 input)");
  registry.add(std::move(layer_norm));

  OpSchema instance_norm("InstanceNormalization");
  instance_norm.input("input", "T").input("scale", "T").input("B", "T").output("output", "T")
      .type_constraint("T", kNormTypes)
      .attr("epsilon", AttrType::kFloat, Attribute(1e-5))
      .infer(infer_instance_norm)
      .gradient(norm_gradient("InstanceNormGrad", {}))
      .add_traits(OpTrait::kFullPrecisionCompute)
      .doc("normalizes each (N, C) plane over its spatial axes, then per-channel scale and B");
  registry.add(std::move(instance_norm));

  auto backward = [](const char* name, std::vector<std::pair<const char*, Arity>> extra, const char* doc) {
    OpSchema schema(name);
    schema.input("dY", "T").input("X", "T").input("scale", "T");
    for (auto& [input, arity] : extra) schema.input(input, "T", arity);
    schema.output("dX", "T").output("dScale", "T").output("dB", "T").type_constraint("T", kNormTypes)
        .attr("epsilon", AttrType::kFloat, Attribute(1e-5))
        .attr("momentum", AttrType::kFloat, Attribute(0.9))
        .attr("training_mode", AttrType::kInt, Attribute(int64_t{0}))
        .attr("axis", AttrType::kInt, Attribute(int64_t{-1}))
        .attr("stash_type", AttrType::kInt, Attribute(int64_t{1}))
        .infer(infer_norm_grad)
        .doc(doc);
    return schema;
  };
  registry.add(backward("BatchNormGrad", {{"mean", Arity::kSingle}, {"var", Arity::kSingle}},
                        "gradients of BatchNormalization; training_mode recomputes the batch statistics from X"));
  registry.add(backward("LayerNormGrad", {}, "gradients of LayerNormalization, statistics recomputed from X"));
  registry.add(backward("InstanceNormGrad", {}, "gradients of InstanceNormalization, statistics recomputed from X"));
}

}  // namespace weir
