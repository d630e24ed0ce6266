#include "ops/reduce/reduce_schemas.h"

#include "core/error.h"
#include "ops/reduce/reduce_axes.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                     DType::kInt32,   DType::kInt64};

void infer_reduce(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (!input->shape.has_rank()) {
    ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
    return;
  }
  ReduceAxes axes = ReduceAxes::of(ctx.node());
  AxesArgument given = axes_argument(ctx, 1);
  if (given.source == AxesArgument::Source::kRunTime) {
    // Which axes go is known only when the node runs: with keepdims the rank
    // stays, every size may change; without it even the rank is unknown.
    if (!axes.keepdims) {
      ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
      return;
    }
    std::vector<Dim> dims;
    for (int64_t i = 0; i < input->shape.rank(); ++i) {
      const Dim& dim = input->shape[static_cast<size_t>(i)];
      dims.push_back(dim.is_static() && dim.size() == 1 ? Dim(1) : symbolic_dim(ctx, static_cast<size_t>(i)));
    }
    ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
    return;
  }
  axes.axes = given.values;
  std::vector<bool> reduced = axes.resolve(input->shape.rank(), [&](const std::string& message) { ctx.fail(message); });
  std::vector<Dim> dims;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) {
      dims.push_back(input->shape[i]);
    } else if (axes.keepdims) {
      dims.push_back(Dim(1));
    }
  }
  ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
}

std::map<std::string, Attribute> reduce_attributes(const Node& node) {
  std::map<std::string, Attribute> attributes;
  for (const char* name : {"axes", "keepdims", "noop_with_empty_axes"}) {
    if (node.has_attr(name)) attributes.emplace(name, node.attr(name));
  }
  return attributes;
}

// dY broadcast back over the reduced axes to X's shape (divided by the
// number of reduced elements when `mean`).
Value* broadcast_back(GradientContext& ctx, Value* value, bool mean = false) {
  std::map<std::string, Attribute> attributes = reduce_attributes(ctx.node());
  attributes.emplace("mean", Attribute(mean ? 1 : 0));
  return ctx.emit("BroadcastReduced", {value, ctx.node().input(0)}, 1, std::move(attributes))[0];
}

// The attributes every Reduce* op and its backward ops read (ReduceAxes::of).
OpSchema& with_reduce_attributes(OpSchema& schema) {
  return schema.attr("axes", AttrType::kInts)
      .attr("keepdims", AttrType::kInt, Attribute(1))
      .attr("noop_with_empty_axes", AttrType::kInt, Attribute(0));
}

OpSchema reduction(const char* name, const std::vector<DType>& types, GradientFn gradient, const char* doc) {
  OpSchema schema(name);
  schema.input("data", "T")
      .input("axes", "A", Arity::kOptional)
      .output("reduced", "T")
      .type_constraint("T", types)
      .type_constraint("A", {DType::kInt64})
      .infer(infer_reduce)
      .doc(doc);
  with_reduce_attributes(schema);
  if (gradient) schema.gradient(std::move(gradient));
  schema.add_traits(OpTrait::kFullPrecisionCompute);
  return schema;
}

GradientFn with_grad(std::function<Value*(GradientContext&, Value*)> rule) {
  return [rule](GradientContext& ctx) {
    const Node& node = ctx.node();
    if (node.num_inputs() > 1 && node.input(1) != nullptr) {
      // The backward ops take their axes as attributes.
      throw Error(ErrorKind::kUnsupported, node.op_type() + " '" + node.name() +
                                               "': the gradient needs the axes as an attribute, not input 'axes'")
          .with_node(node.name());
    }
    if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, rule(ctx, grad));
  };
}

}  // namespace

void register_reduce_schemas(OpRegistry& registry) {
  registry.add(reduction("ReduceSum", kNumeric, with_grad([](GradientContext& ctx, Value* dy) { return broadcast_back(ctx, dy); }),
                         "Sum over `axes`"));
  registry.add(reduction("ReduceMean", kNumeric,
                         with_grad([](GradientContext& ctx, Value* dy) { return broadcast_back(ctx, dy, /*mean=*/true); }),
                         "Mean over `axes` (NaN over an empty set)"));
  registry.add(reduction("ReduceSumSquare", kNumeric,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           Value* x = ctx.node().input(0);
                           Value* twice_x = ctx.emit("Add", {x, x})[0];
                           return ctx.emit("Mul", {broadcast_back(ctx, dy), twice_x})[0];
                         }),
                         "Sum of squares over `axes`"));
  registry.add(reduction("ReduceL2", kFloating,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           // d sqrt(sum x^2) = x / y
                           Value* scaled = ctx.emit("Div", {dy, ctx.node().output(0)})[0];
                           return ctx.emit("Mul", {broadcast_back(ctx, scaled), ctx.node().input(0)})[0];
                         }),
                         "Euclidean norm over `axes`"));
  registry.add(reduction("ReduceLogSum", kFloating,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           // d log sum(x) = 1 / sum(x) = 1 / exp(y)
                           Value* scaled = ctx.emit("Div", {dy, ctx.emit("Exp", {ctx.node().output(0)})[0]})[0];
                           return broadcast_back(ctx, scaled);
                         }),
                         "log(sum(x)) over `axes`"));
  registry.add(reduction("ReduceLogSumExp", kFloating,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           // d log sum exp(x) = exp(x - y)
                           Value* y = broadcast_back(ctx, ctx.node().output(0));
                           Value* weights = ctx.emit("Exp", {ctx.emit("Sub", {ctx.node().input(0), y})[0]})[0];
                           return ctx.emit("Mul", {broadcast_back(ctx, dy), weights})[0];
                         }),
                         "log(sum(exp(x))) over `axes`, computed stably"));
  auto extremum_gradient = with_grad([](GradientContext& ctx, Value* dy) {
    return ctx.emit("ReduceExtremumGrad", {dy, ctx.node().input(0), ctx.node().output(0)}, 1,
                    reduce_attributes(ctx.node()))[0];
  });
  registry.add(reduction("ReduceMax", kNumeric, extremum_gradient, "Maximum over `axes`; NaN propagates"));
  registry.add(reduction("ReduceMin", kNumeric, extremum_gradient, "Minimum over `axes`; NaN propagates"));
  registry.add(reduction("ReduceProd", kNumeric,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           return ctx.emit("ReduceProdGrad", {dy, ctx.node().input(0)}, 1, reduce_attributes(ctx.node()))[0];
                         }),
                         "Product over `axes`"));
  registry.add(reduction("ReduceL1", kNumeric,
                         with_grad([](GradientContext& ctx, Value* dy) {
                           // d sum |x| = sign(x) (0 at 0, as Abs's rule)
                           return ctx.emit("Mul", {broadcast_back(ctx, dy), ctx.emit("Sign", {ctx.node().input(0)})[0]})[0];
                         }),
                         "Sum of absolute values over `axes`"));

  OpSchema broadcast("BroadcastReduced");
  broadcast.input("dY", "T")
      .input("X", "")
      .output("dX", "T")
      .type_constraint("T", kNumeric)
      .attr("mean", AttrType::kInt, Attribute(0))
      .infer(infer_gradient_like_input_1)
      .doc("dY, the gradient of a reduction of X with these attributes, broadcast back to X's shape; "
           "divided by the count of reduced elements when `mean`");
  registry.add(std::move(with_reduce_attributes(broadcast)));

  OpSchema extremum("ReduceExtremumGrad");
  extremum.input("dY", "T")
      .input("X", "T")
      .input("Y", "T")
      .output("dX", "T")
      .type_constraint("T", kNumeric)
      .infer(infer_gradient_like_input_1)
      .doc("Gradient of ReduceMax/ReduceMin: dY where X equals the reduced value Y, else 0 (every tie gets dY)");
  registry.add(std::move(with_reduce_attributes(extremum)));

  OpSchema product("ReduceProdGrad");
  product.input("dY", "T")
      .input("X", "T")
      .output("dX", "T")
      .type_constraint("T", kNumeric)
      .infer(infer_gradient_like_input_1)
      .doc("Gradient of ReduceProd: dY times the product of the other elements of each reduced set "
           "(exact when X holds zeros)");
  registry.add(std::move(with_reduce_attributes(product)));
}

}  // namespace weir
