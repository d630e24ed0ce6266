#include "ops/elementwise/elementwise_schemas.h"

#include "core/graph.h"
#include "ops/gradient_util.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

// The unary arithmetic ops' types: ONNX's Neg, Sign and Relu take no
// unsigned type but u8 (kept for models that have always run).
const std::vector<DType> kUnaryNumeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                          DType::kInt64};
const std::vector<DType> kFloatingTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

void infer_broadcast(InferenceContext& ctx) {
  const TensorType* a = ctx.input_type(0);
  const TensorType* b = ctx.input_type(1);
  if (a == nullptr || b == nullptr) return;
  ctx.set_output_type(0, TensorType{a->dtype, broadcast_shapes(a->shape, b->shape, ctx)});
}

// The gradient flowing into input `index`: `grad` summed over the axes along
// which that input was broadcast. When input and output shapes are equal
// (same sizes or same symbols) nothing was broadcast.
Value* sum_to_input(GradientContext& ctx, Value* grad, size_t index) {
  const Value* input = ctx.node().input(index);
  bool same_shape = input->shape().has_rank() && input->shape() == ctx.node().output(0)->shape();
  return sum_to_input_shape(ctx, grad, index, /*broadcast=*/!same_shape);
}

void add_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  ctx.set_input_grad(0, sum_to_input(ctx, grad, 0));
  ctx.set_input_grad(1, sum_to_input(ctx, grad, 1));
}

void sub_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  ctx.set_input_grad(0, sum_to_input(ctx, grad, 0));
  ctx.set_input_grad(1, sum_to_input(ctx, ctx.emit("Neg", {grad})[0], 1));
}

void mul_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* a = ctx.node().input(0);
  Value* b = ctx.node().input(1);
  ctx.set_input_grad(0, sum_to_input(ctx, ctx.emit("Mul", {grad, b})[0], 0));
  ctx.set_input_grad(1, sum_to_input(ctx, ctx.emit("Mul", {grad, a})[0], 1));
}

// d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b, reusing the forward output a/b.
void div_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* b = ctx.node().input(1);
  Value* quotient = ctx.node().output(0);
  ctx.set_input_grad(0, sum_to_input(ctx, ctx.emit("Div", {grad, b})[0], 0));
  Value* scaled = ctx.emit("Mul", {grad, quotient})[0];
  Value* over_b = ctx.emit("Div", {scaled, b})[0];
  ctx.set_input_grad(1, sum_to_input(ctx, ctx.emit("Neg", {over_b})[0], 1));
}

// d(a^b)/da = b * a^(b-1); d(a^b)/db = a^b * log(a), reusing the output.
void pow_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* a = ctx.node().input(0);
  Value* b = ctx.node().input(1);
  Value* one = scalar_constant(ctx.graph(), b->dtype(), 1.0, "pow_grad_one");
  Value* lowered = ctx.emit("Pow", {a, ctx.emit("Sub", {b, one})[0]})[0];
  ctx.set_input_grad(0, sum_to_input(ctx, ctx.emit("Mul", {grad, ctx.emit("Mul", {b, lowered})[0]})[0], 0));
  Value* d_exponent = ctx.emit("Mul", {ctx.node().output(0), ctx.emit("Log", {a})[0]})[0];
  ctx.set_input_grad(1, sum_to_input(ctx, ctx.emit("Mul", {grad, d_exponent})[0], 1));
}

// Mod: y = a - b * q with q the rounded quotient (truncated for fmod=1,
// floored for fmod=0), piecewise constant, so dy/da = 1 and dy/db = -q,
// where q = (a - y) / b recovers it from the forward output.
void mod_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* a = ctx.node().input(0);
  Value* b = ctx.node().input(1);
  Value* quotient = ctx.emit("Div", {ctx.emit("Sub", {a, ctx.node().output(0)})[0], b})[0];
  ctx.set_input_grad(0, sum_to_input(ctx, grad, 0));
  ctx.set_input_grad(1, sum_to_input(ctx, ctx.emit("Neg", {ctx.emit("Mul", {grad, quotient})[0]})[0], 1));
}

// Max / Min: each input gets dY where it equals the result (ties: every tied
// input gets it), summed to its shape.
void extremum_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* y = ctx.node().output(0);
  Value* zero = scalar_constant(ctx.graph(), y->dtype(), 0.0, "extremum_grad_zero");
  for (size_t i = 0; i < ctx.node().num_inputs(); ++i) {
    Value* chosen = ctx.emit("Equal", {ctx.node().input(i), y})[0];
    ctx.set_input_grad(i, sum_to_input(ctx, ctx.emit("Where", {chosen, grad, zero})[0], i));
  }
}

// Sum / Mean: every input gets dY (Mean: dY / n), summed to its shape.
void sum_gradient(GradientContext& ctx, bool mean) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  size_t count = ctx.node().num_inputs();
  if (mean) grad = ctx.emit("Div", {grad, scalar_constant(ctx.graph(), grad->dtype(), static_cast<double>(count), "mean_grad_count")})[0];
  for (size_t i = 0; i < count; ++i) ctx.set_input_grad(i, sum_to_input(ctx, grad, i));
}

void infer_variadic_broadcast(InferenceContext& ctx) {
  const TensorType* first = ctx.input_type(0);
  if (first == nullptr) return;
  Shape shape = first->shape;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TensorType* next = ctx.input_type(i);
    if (next == nullptr) return;
    shape = broadcast_shapes(shape, next->shape, ctx);
  }
  ctx.set_output_type(0, TensorType{first->dtype, shape});
}

OpSchema variadic(const char* name, const std::vector<DType>& types, GradientFn gradient, const char* doc) {
  OpSchema schema(name);
  schema.input("data", "T", Arity::kVariadic)
      .output("result", "T")
      .type_constraint("T", types)
      .traits(OpTrait::kElementwise | OpTrait::kCommutative)
      .infer(infer_variadic_broadcast)
      .gradient(std::move(gradient))
      .doc(doc);
  return schema;
}

// Unary rules that emit one backward op reading the output gradient and
// either the forward input (`use_output` false) or the forward output.
GradientFn activation_gradient(const char* backward_op, bool use_output) {
  return [backward_op, use_output](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    Value* saved = use_output ? ctx.node().output(0) : ctx.node().input(0);
    ctx.set_input_grad(0, ctx.emit(backward_op, {grad, saved})[0]);
  };
}

OpSchema binary(const char* name, OpTrait extra_traits, const char* doc) {
  OpSchema schema(name);
  schema.input("A", "T")
      .input("B", "T")
      .output("C", "T")
      .type_constraint("T", kNumericDTypes)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable | extra_traits)
      .infer(infer_broadcast)
      .doc(doc);
  return schema;
}

OpSchema unary(const char* name, const std::vector<DType>& types, GradientFn gradient, const char* doc) {
  OpSchema schema(name);
  schema.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", types)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .gradient(std::move(gradient))
      .doc(doc);
  return schema;
}

}  // namespace

void register_elementwise_schemas(OpRegistry& registry) {
  registry.add(binary("Add", OpTrait::kCommutative, "A + B, with NumPy broadcasting").gradient(add_gradient));
  registry.add(binary("Sub", OpTrait::kNone, "A - B, with NumPy broadcasting").gradient(sub_gradient));
  registry.add(binary("Mul", OpTrait::kCommutative, "A * B, with NumPy broadcasting").gradient(mul_gradient));
  registry.add(binary("Div", OpTrait::kNone, "A / B, with NumPy broadcasting; integer division truncates")
                   .gradient(div_gradient));
  registry.add(std::move(binary("Pow", OpTrait::kNone, "A^B, with NumPy broadcasting; integers by repeated squaring")
                   .gradient(pow_gradient).add_traits(OpTrait::kFullPrecisionCompute)));
  registry.add(binary("Mod", OpTrait::kNone,
                      "remainder of A / B: with the divisor's sign (fmod=0, integers only) or the dividend's "
                      "(fmod=1); integer % 0 is an error")
                   .attr("fmod", AttrType::kInt, Attribute(int64_t{0}))
                   .gradient(mod_gradient));
  OpSchema bit_shift = binary("BitShift", OpTrait::kNone,
                              "A shifted by B bits (direction LEFT or RIGHT) on unsigned integers; a shift by the "
                              "type's width or more gives 0");
  bit_shift.type_constraint("T", {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64})
      .required_attr("direction", AttrType::kString)
      .infer([](InferenceContext& ctx) {
        const std::string& direction = ctx.node().attr("direction").s();
        if (direction != "LEFT" && direction != "RIGHT") {
          ctx.fail("direction is '" + direction + "'; expected LEFT or RIGHT");
        }
        infer_broadcast(ctx);
      });
  registry.add(std::move(bit_shift));
  registry.add(variadic("Max", kNumericDTypes, extremum_gradient,
                        "elementwise maximum of all inputs, broadcast together; NaN propagates"));
  registry.add(variadic("Min", kNumericDTypes, extremum_gradient,
                        "elementwise minimum of all inputs, broadcast together; NaN propagates"));
  registry.add(variadic("Sum", kNumericDTypes, [](GradientContext& ctx) { sum_gradient(ctx, false); },
                        "elementwise sum of all inputs, broadcast together"));
  registry.add(variadic("Mean", kFloatDTypes, [](GradientContext& ctx) { sum_gradient(ctx, true); },
                        "elementwise mean of all inputs, broadcast together"));
  registry.add(unary("Neg", kUnaryNumeric,
                     [](GradientContext& ctx) {
                       if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, ctx.emit("Neg", {grad})[0]);
                     },
                     "-X; integers wrap around"));
  registry.add(unary("Relu", kUnaryNumeric, activation_gradient("ReluGrad", /*use_output=*/false), "max(X, 0)"));
  registry.add(unary("Sigmoid", kFloatingTypes, activation_gradient("SigmoidGrad", /*use_output=*/true),
                     "1 / (1 + exp(-X))"));
  registry.add(unary("Tanh", kFloatingTypes, activation_gradient("TanhGrad", /*use_output=*/true), "tanh(X)"));
  registry.add(std::move(unary("Exp", kFloatingTypes,
                     [](GradientContext& ctx) {  // d exp(x) = exp(x): reuse the output
                       if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, ctx.emit("Mul", {grad, ctx.node().output(0)})[0]);
                     },
                     "e^X").add_traits(OpTrait::kFullPrecisionCompute)));
  registry.add(std::move(unary("Log", kFloatingTypes,
                     [](GradientContext& ctx) {  // d log(x) = 1 / x
                       if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, ctx.emit("Div", {grad, ctx.node().input(0)})[0]);
                     },
                     "natural logarithm of X").add_traits(OpTrait::kFullPrecisionCompute)));
  registry.add(unary("Sqrt", kFloatingTypes,
                     [](GradientContext& ctx) {  // d sqrt(x) = 1 / (2 sqrt(x)): reuse the output
                       Value* grad = ctx.output_grad(0);
                       if (grad == nullptr) return;
                       Value* y = ctx.node().output(0);
                       ctx.set_input_grad(0, ctx.emit("Div", {grad, ctx.emit("Add", {y, y})[0]})[0]);
                     },
                     "square root of X"));
  registry.add(unary("Abs", kUnaryNumeric,
                     [](GradientContext& ctx) {  // d |x| = sign(x), taken as 0 at 0
                       Value* grad = ctx.output_grad(0);
                       if (grad == nullptr) return;
                       ctx.set_input_grad(0, ctx.emit("Mul", {grad, ctx.emit("Sign", {ctx.node().input(0)})[0]})[0]);
                     },
                     "|X|; the integer minimum stays itself"));
  // Sign is flat almost everywhere: its rule contributes no gradient.
  registry.add(unary("Sign", kUnaryNumeric, [](GradientContext&) {}, "-1, 0 or 1 by the sign of X; NaN stays NaN"));
  OpSchema identity("Identity");
  identity.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", {kAllDTypes, kAllDTypes + std::size(kAllDTypes)})
      .traits(OpTrait::kViewOfInput)
      .infer(infer_same_as_input)
      .gradient([](GradientContext& ctx) { ctx.set_input_grad(0, ctx.output_grad(0)); })
      .doc("Y = X");
  registry.add(std::move(identity));
  register_elementwise_backward_schemas(registry);
}

}  // namespace weir
