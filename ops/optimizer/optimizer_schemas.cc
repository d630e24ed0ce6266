#include "ops/optimizer/optimizer_schemas.h"

#include "core/graph.h"

namespace weir {

namespace {

const std::vector<DType> kParamTypes = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kScalarTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

// Every state input must have the parameter's type; outputs alias inputs 0, 2, 3.
void infer_update(InferenceContext& ctx, size_t num_state, bool has_step) {
  const TensorType* param = ctx.input_type(0);
  if (param == nullptr) return;
  for (size_t i = 1; i < 2 + num_state; ++i) {
    const TensorType* other = ctx.input_type(i);
    if (other != nullptr && other->shape.is_static() && param->shape.is_static() && other->shape != param->shape) {
      ctx.fail("input " + std::to_string(i) + " has shape " + other->shape.to_string() + "; the parameter has " +
               param->shape.to_string());
    }
  }
  size_t lr_index = 2 + num_state;
  for (size_t i = lr_index; i < lr_index + (has_step ? 2 : 1); ++i) {
    const TensorType* scalar = ctx.input_type(i);
    if (scalar != nullptr && scalar->shape.is_static() && scalar->shape.num_elements() != 1) {
      ctx.fail(std::string(i == lr_index ? "lr" : "step") + " must be a scalar, got " + scalar->shape.to_string());
    }
  }
  ctx.set_output_type(0, *param);
  for (size_t i = 0; i < num_state && i + 1 < ctx.num_outputs(); ++i) {
    if (const TensorType* state = ctx.input_type(2 + i)) ctx.set_output_type(1 + i, *state);
  }
}

OpSchema update(const char* name, std::vector<const char*> state, bool has_step, const char* doc) {
  OpSchema schema(name);
  schema.input("param", "T").input("grad", "T");
  for (const char* s : state) schema.input(s, "T");
  schema.input("lr", "S");
  if (has_step) schema.input("step", "I");
  // Dynamic loss scaling's overflow flag: when true the update is skipped
  // and the parameter and its state stay as they are.
  schema.input("skip", "B", Arity::kOptional);
  schema.output("param_out", "T");
  for (const char* s : state) schema.output(std::string(s) + "_out", "T");
  schema.type_constraint("T", kParamTypes).type_constraint("S", kScalarTypes);
  if (has_step) schema.type_constraint("I", {DType::kInt64, DType::kInt32});
  schema.type_constraint("B", {DType::kBool});
  schema.attr("weight_decay", AttrType::kFloat, Attribute(0.0))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful | OpTrait::kInplaceable)
      .infer([n = state.size(), has_step](InferenceContext& ctx) { infer_update(ctx, n, has_step); })
      .doc(doc);
  return schema;
}

}  // namespace

void register_optimizer_schemas(OpRegistry& registry) {
  registry.add(update("SGD", {}, false, "param -= lr * (grad + weight_decay * param), in place"));
  registry.add(update("Momentum", {"velocity"}, false,
                      "velocity = momentum * velocity + g; param -= lr * (nesterov ? g + momentum * velocity : "
                      "velocity), g = grad + weight_decay * param; in place")
                   .attr("momentum", AttrType::kFloat, Attribute(0.9))
                   .attr("nesterov", AttrType::kInt, Attribute(int64_t{0})));
  registry.add(update("Adagrad", {"accumulator"}, false,
                      "accumulator += g * g; param -= lr * g / (sqrt(accumulator) + epsilon), g = grad + "
                      "weight_decay * param; in place")
                   .attr("epsilon", AttrType::kFloat, Attribute(1e-6)));
  for (const char* name : {"Adam", "AdamW", "LAMB"}) {
    std::string op = name;
    const char* doc = op == "Adam" ? "Adam with bias correction at the 1-based step; weight_decay is L2 (added to grad); in place"
                      : op == "AdamW" ? "Adam with decoupled weight decay: param -= lr * (update + weight_decay * param); in place"
                                      : "LAMB: the AdamW update scaled by the trust ratio ||param|| / ||update||; in place";
    registry.add(update(name, {"m", "v"}, true, doc)
                     .attr("beta1", AttrType::kFloat, Attribute(0.9))
                     .attr("beta2", AttrType::kFloat, Attribute(0.999))
                     .attr("epsilon", AttrType::kFloat, Attribute(op == "LAMB" ? 1e-6 : 1e-8)));
  }

  OpSchema assign("Assign");
  assign.input("target", "T").input("value", "T").output("target_out", "T")
      .type_constraint("T", kScalarTypes)
      .traits(OpTrait::kSideEffects | OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        const TensorType* target = ctx.input_type(0);
        const TensorType* value = ctx.input_type(1);
        if (target == nullptr) return;
        if (value != nullptr && value->shape.is_static() && target->shape.is_static() && value->shape != target->shape) {
          ctx.fail("value has shape " + value->shape.to_string() + "; the target has " + target->shape.to_string());
        }
        ctx.set_output_type(0, *target);
      })
      .doc("copies value into target (a persistent value) in place, e.g. BatchNormalization's running statistics; "
           "the output aliases target");
  registry.add(std::move(assign));

  OpSchema clip("ClipByGlobalNorm");
  clip.input("grads", "T", Arity::kVariadic)
      .output("clipped", "T", Arity::kVariadic)
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .required_attr("max_norm", AttrType::kFloat)
      .infer([](InferenceContext& ctx) {
        // Outputs: one per gradient, then the global norm (a scalar of their type).
        size_t n = ctx.num_outputs();
        if (n != ctx.num_inputs() + 1) {
          ctx.fail("has " + std::to_string(n) + " outputs; expected one per gradient (" +
                   std::to_string(ctx.num_inputs()) + ") plus the norm");
        }
        for (size_t i = 0; i < ctx.num_inputs(); ++i) {
          if (const TensorType* grad = ctx.input_type(i)) ctx.set_output_type(i, *grad);
        }
        const TensorType* first = ctx.input_type(0);
        ctx.set_output_type(n - 1, {first != nullptr ? first->dtype : DType::kUndefined, Shape{}});
      })
      .doc("the global L2 norm of all grads; each is scaled by max_norm / norm when norm > max_norm. "
           "Outputs the clipped grads and the norm");
  registry.add(std::move(clip));
}

}  // namespace weir
