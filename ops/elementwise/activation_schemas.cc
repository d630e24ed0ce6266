#include "ops/elementwise/activation_schemas.h"

#include "core/graph.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                     DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                     DType::kInt64};

struct AttrSpec {
  const char* name;
  AttrType type;
  Attribute default_value;
};

OpSchema unary(const std::string& name, const std::vector<AttrSpec>& attrs, const std::string& doc) {
  OpSchema schema(name);
  schema.input("X", "T").output("Y", "T").type_constraint("T", kFloating)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .doc(doc);
  for (const AttrSpec& attr : attrs) schema.attr(attr.name, attr.type, attr.default_value);
  return schema;
}

// f(X) with rule dX = <name>Grad(dY, X), the backward op carrying f's attributes.
void add_activation(OpRegistry& registry, const std::string& name, const std::vector<AttrSpec>& attrs,
                    const std::string& doc) {
  std::string backward = name + "Grad";
  registry.add(unary(name, attrs, doc).gradient([backward](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    ctx.set_input_grad(0, ctx.emit(backward, {grad, ctx.node().input(0)}, 1, ctx.node().attributes())[0]);
  }));
  OpSchema grad(backward);
  grad.input("dY", "T").input("X", "T").output("dX", "T").type_constraint("T", kFloating)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .doc("dY * " + name + "'(X): the gradient of " + name);
  for (const AttrSpec& attr : attrs) grad.attr(attr.name, attr.type, attr.default_value);
  registry.add(std::move(grad));
}

}  // namespace

void register_activation_schemas(OpRegistry& registry) {
  add_activation(registry, "LeakyRelu", {{"alpha", AttrType::kFloat, Attribute(0.01)}}, "X if X >= 0, else alpha * X");
  add_activation(registry, "Elu", {{"alpha", AttrType::kFloat, Attribute(1.0)}}, "X if X > 0, else alpha * (e^X - 1)");
  add_activation(registry, "Selu",
                 {{"alpha", AttrType::kFloat, Attribute(1.67326319217681884765625)},
                  {"gamma", AttrType::kFloat, Attribute(1.05070102214813232421875)}},
                 "gamma * (X if X > 0, else alpha * (e^X - 1))");
  add_activation(registry, "Gelu", {{"approximate", AttrType::kString, Attribute("none")}},
                 "X * Phi(X) (approximate='none'), or its tanh approximation (approximate='tanh')");
  add_activation(registry, "Erf", {}, "the Gauss error function");
  add_activation(registry, "Softplus", {}, "log(1 + e^X), computed without overflow");
  add_activation(registry, "Softsign", {}, "X / (1 + |X|)");
  add_activation(registry, "HardSigmoid",
                 {{"alpha", AttrType::kFloat, Attribute(0.2)}, {"beta", AttrType::kFloat, Attribute(0.5)}},
                 "max(0, min(1, alpha * X + beta))");
  add_activation(registry, "HardSwish", {}, "X * max(0, min(1, X / 6 + 1/2))");
  add_activation(registry, "Sin", {}, "sin(X)");
  add_activation(registry, "Cos", {}, "cos(X)");
  add_activation(registry, "Reciprocal", {}, "1 / X");
  add_activation(registry, "Tan", {}, "tan(X)");
  add_activation(registry, "Asin", {}, "arcsin(X), NaN outside [-1, 1]");
  add_activation(registry, "Acos", {}, "arccos(X), NaN outside [-1, 1]");
  add_activation(registry, "Atan", {}, "arctan(X)");
  add_activation(registry, "Sinh", {}, "sinh(X)");
  add_activation(registry, "Cosh", {}, "cosh(X)");
  add_activation(registry, "Asinh", {}, "arsinh(X)");
  add_activation(registry, "Acosh", {}, "arcosh(X), NaN below 1");
  add_activation(registry, "Atanh", {}, "artanh(X), NaN outside [-1, 1]");
  add_activation(registry, "ThresholdedRelu", {{"alpha", AttrType::kFloat, Attribute(1.0)}}, "X if X > alpha, else 0");
  add_activation(registry, "Shrink", {{"bias", AttrType::kFloat, Attribute(0.0)}, {"lambd", AttrType::kFloat, Attribute(0.5)}},
                 "X - bias if X > lambd, X + bias if X < -lambd, else 0");
  add_activation(registry, "Celu", {{"alpha", AttrType::kFloat, Attribute(1.0)}},
                 "max(0, X) + min(0, alpha * (e^(X / alpha) - 1))");
  // Flat almost everywhere: the rules give no gradient.
  registry.add(unary("Floor", {}, "largest integer <= X").gradient([](GradientContext&) {}));
  registry.add(unary("Ceil", {}, "smallest integer >= X").gradient([](GradientContext&) {}));
  registry.add(unary("Round", {}, "X rounded to the nearest integer, halves to even").gradient([](GradientContext&) {}));

  for (const char* name : {"IsNaN", "IsInf"}) {
    OpSchema schema(name);
    schema.input("X", "T").output("Y", "B").type_constraint("T", kFloating).type_constraint("B", {DType::kBool})
        .traits(OpTrait::kElementwise)
        .infer([](InferenceContext& ctx) {
          if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, {DType::kBool, x->shape});
        });
    if (std::string(name) == "IsInf") {
      schema.attr("detect_negative", AttrType::kInt, Attribute(int64_t{1}))
          .attr("detect_positive", AttrType::kInt, Attribute(int64_t{1}))
          .doc("true where X is infinite (of the signs asked for)");
    } else {
      schema.doc("true where X is NaN");
    }
    registry.add(std::move(schema));
  }

  auto scalar_bound = [](InferenceContext& ctx, size_t index, const char* name) {
    const TensorType* bound = ctx.input_type(index);
    if (bound != nullptr && bound->shape.is_static() && bound->shape.num_elements() != 1) {
      ctx.fail(std::string(name) + " must be a scalar, got " + bound->shape.to_string());
    }
  };
  OpSchema clip("Clip");
  clip.input("input", "T").input("min", "T", Arity::kOptional).input("max", "T", Arity::kOptional).output("output", "T")
      .type_constraint("T", kNumeric)
      .traits(OpTrait::kElementwise)
      .infer([scalar_bound](InferenceContext& ctx) {
        scalar_bound(ctx, 1, "min");
        scalar_bound(ctx, 2, "max");
        infer_same_as_input(ctx);
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad, node.input(0)};
        for (size_t i = 1; i < 3; ++i) inputs.push_back(i < node.num_inputs() ? node.input(i) : nullptr);
        ctx.set_input_grad(0, ctx.emit("ClipGrad", inputs)[0]);
      })
      .doc("X limited to [min, max] (absent bounds do not limit); NaN stays NaN");
  registry.add(std::move(clip));
  OpSchema clip_grad("ClipGrad");
  clip_grad.input("dY", "T").input("X", "T").input("min", "T", Arity::kOptional).input("max", "T", Arity::kOptional)
      .output("dX", "T").type_constraint("T", kFloating)
      .infer(infer_same_as_input)
      .doc("dY where min <= X <= max, else 0: the gradient of Clip");
  registry.add(std::move(clip_grad));
}

}  // namespace weir
