#include "ops/nn/conv_schemas.h"


#include "core/graph.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_problem.h"
#include "ops/shape_inference.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

const std::vector<DType> kConvTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

// Output type of Conv / ConvTranspose with input `x` and weight `w`. Static
// spatial sizes give static output sizes; anything symbolic gives fresh symbols.
TensorType conv_output_type(InferenceContext& ctx, ConvKind kind, const TensorType& x, const TensorType& w) {
  if (!x.shape.has_rank() || !w.shape.has_rank()) return {x.dtype, Shape::unknown_rank()};
  int64_t rank = x.shape.rank();
  if (rank < 3 || rank > 5 || w.shape.rank() != rank) {
    ctx.fail("input " + x.shape.to_string() + " and weight " + w.shape.to_string() +
             " must both be [N, C, spatial...] with 1 to 3 spatial axes");
  }
  const Node& node = ctx.node();
  int64_t group = ctx.has_attr("group") ? ctx.attr_int("group") : 1;
  auto fresh = [&](int64_t axis) { return Dim::symbol(node.name() + ":" + std::to_string(axis)); };
  std::vector<Dim> dims(static_cast<size_t>(rank));
  dims[0] = x.shape[0];
  if (w.shape.is_static()) {
    std::vector<int64_t> ws = w.shape.sizes();
    dims[1] = Dim(kind == ConvKind::kForward ? ws[0] : ws[1] * group);
    bool spatial_static = true;
    for (int64_t i = 2; i < rank; ++i) spatial_static = spatial_static && x.shape[static_cast<size_t>(i)].is_static();
    // Channel and spatial checks need sizes: stand in for a symbolic batch or channel.
    std::vector<int64_t> xs(static_cast<size_t>(rank), 1);
    xs[1] = x.shape[1].is_static() ? x.shape[1].size() : (kind == ConvKind::kForward ? ws[1] * group : ws[0]);
    for (int64_t i = 2; i < rank; ++i) {
      xs[static_cast<size_t>(i)] = spatial_static ? x.shape[static_cast<size_t>(i)].size() : 1 + ws[static_cast<size_t>(i)];
    }
    ConvProblem p = conv_problem(node, kind, xs, ws);
    for (int64_t i = 2; i < rank; ++i) {
      auto axis = static_cast<size_t>(i - 2);
      int64_t size = kind == ConvKind::kForward ? p.out[axis] : p.in[axis];
      dims[static_cast<size_t>(i)] = spatial_static ? Dim(size) : fresh(i);
    }
  } else {
    for (int64_t i = 1; i < rank; ++i) dims[static_cast<size_t>(i)] = fresh(i);
  }
  return {x.dtype, Shape(std::move(dims))};
}

void check_bias(InferenceContext& ctx, const TensorType& y) {
  const TensorType* bias = ctx.input_type(2);
  if (bias == nullptr || !bias->shape.has_rank()) return;
  if (bias->shape.rank() != 1 || (bias->shape[0].is_static() && y.shape.has_rank() && y.shape[1].is_static() &&
                                  bias->shape[0].size() != y.shape[1].size())) {
    ctx.fail("bias " + bias->shape.to_string() + " must be 1-D with one value per output channel (" +
             (y.shape.has_rank() ? y.shape[1].to_string() : std::string("?")) + ")");
  }
}

ShapeInferenceFn infer_conv(ConvKind kind) {
  return [kind](InferenceContext& ctx) {
    const TensorType* x = ctx.input_type(0);
    const TensorType* w = ctx.input_type(1);
    if (x == nullptr || w == nullptr) return;
    TensorType y = conv_output_type(ctx, kind, *x, *w);
    check_bias(ctx, y);
    ctx.set_output_type(0, std::move(y));
  };
}

std::map<std::string, Attribute> backward_attributes(const Node& node, bool transposed) {
  std::map<std::string, Attribute> attributes = node.attributes();
  attributes["transposed"] = Attribute(int64_t{transposed ? 1 : 0});
  return attributes;
}

GradientFn conv_gradient(bool transposed) {
  return [transposed](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    const Node& node = ctx.node();
    Value* x = node.input(0);
    Value* w = node.input(1);
    ctx.set_input_grad(0, ctx.emit("ConvGradData", {grad, w, x}, 1, backward_attributes(node, transposed))[0]);
    ctx.set_input_grad(1, ctx.emit("ConvGradWeight", {grad, x, w}, 1, backward_attributes(node, transposed))[0]);
    if (node.num_inputs() > 2 && node.input(2) != nullptr) ctx.set_input_grad(2, ctx.emit("ConvGradBias", {grad})[0]);
  };
}

OpSchema& conv_attributes(OpSchema& schema) {
  return schema.attr("auto_pad", AttrType::kString, Attribute("NOTSET"))
      .attr("dilations", AttrType::kInts)
      .attr("group", AttrType::kInt, Attribute(int64_t{1}))
      .attr("kernel_shape", AttrType::kInts)
      .attr("pads", AttrType::kInts)
      .attr("strides", AttrType::kInts);
}

OpSchema conv(const char* name, ConvKind kind, const char* doc) {
  OpSchema schema(name);
  schema.input("X", "T").input("W", "T").input("B", "T", Arity::kOptional).output("Y", "T").type_constraint("T", kConvTypes);
  conv_attributes(schema);
  if (kind == ConvKind::kTranspose) {
    schema.attr("output_padding", AttrType::kInts).attr("output_shape", AttrType::kInts);
  }
  schema.infer(infer_conv(kind)).gradient(conv_gradient(kind == ConvKind::kTranspose)).doc(doc);
  return schema;
}

// A backward op: inputs named by `inputs`, output typed like input `like`.
// `widening`: the gradient is a sum over the batch, which output_dtype may
// ask for in f32 (ops/wide_output.h).
OpSchema conv_backward(const char* name, std::vector<const char*> inputs, size_t like, bool widening, const char* doc) {
  OpSchema schema(name);
  for (const char* input : inputs) schema.input(input, "T");
  schema.output("grad", widening ? "" : "T").type_constraint("T", kConvTypes);
  conv_attributes(schema);
  schema.attr("output_padding", AttrType::kInts)
      .attr("output_shape", AttrType::kInts)
      .attr("transposed", AttrType::kInt, Attribute(int64_t{0}))
      .infer([like, widening](InferenceContext& ctx) {
        const TensorType* type = ctx.input_type(like);
        if (type == nullptr) return;
        const TensorType* dy = ctx.input_type(0);
        DType dtype = widening && dy != nullptr ? inferred_output_dtype(ctx, dy->dtype) : type->dtype;
        ctx.set_output_type(0, {dtype, type->shape});
      })
      .doc(doc);
  if (widening) schema.attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}));
  return schema;
}

}  // namespace

void register_conv_schemas(OpRegistry& registry) {
  registry.add(std::move(conv("Conv", ConvKind::kForward,
                              "N-D convolution (1 to 3 spatial axes) of X [N, C, ...] with W [K, C/group, k...], plus B [K]")
                             .add_traits(OpTrait::kLowPrecisionCompute)));
  // What conv_activation_fusion and the layout pass make: Conv then an
  // activation in one kernel (a oneDNN post-op), on channels-first or
  // channels-last data. Inference only: no gradient rule.
  OpSchema fused = conv("FusedConv", ConvKind::kForward,
                        "activation(Conv(X, W, B) + Z): Conv, an optional addend Z shaped like Y (a residual), then "
                        "an activation (attributes activation, activation_alpha, activation_beta: see "
                        "FusedActivation), in one pass over the output; layout NCHW or NHWC (channels last: X "
                        "[N, spatial..., C], Y [N, spatial..., K])");
  fused.input("Z", "T", Arity::kOptional)
      .inplace_input(3)  // the sum post-op adds Y onto Z where it lies
      .add_traits(OpTrait::kLowPrecisionCompute)
      .gradient(GradientFn())
      .attr("activation", AttrType::kString, Attribute("None"))
      .attr("activation_alpha", AttrType::kFloat, Attribute(0.0))
      .attr("activation_beta", AttrType::kFloat, Attribute(0.0))
      .attr("layout", AttrType::kString, Attribute("NCHW"))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        const TensorType* w = ctx.input_type(1);
        if (x == nullptr || w == nullptr) return;
        FusedActivation::from_node(ctx.node());  // rejects an unknown activation at verification
        bool last = conv_layout_is_channels_last(ctx.node());
        TensorType y = conv_output_type(ctx, ConvKind::kForward, last ? TensorType{x->dtype, channels_first_order(x->shape)} : *x, *w);
        check_bias(ctx, y);
        if (last) y.shape = channels_last_order(y.shape);
        const TensorType* z = ctx.input_type(3);
        bool z_fits = z == nullptr || !z->shape.has_rank() || !y.shape.has_rank() || z->shape.rank() == y.shape.rank();
        for (int64_t i = 0; z_fits && z != nullptr && z->shape.has_rank() && i < z->shape.rank(); ++i) {
          const Dim &a = z->shape[static_cast<size_t>(i)], &b = y.shape[static_cast<size_t>(i)];
          z_fits = !(a.is_static() && b.is_static() && a.size() != b.size());
        }
        if (!z_fits) {
          ctx.fail("the addend Z " + z->shape.to_string() + " must have the output's shape " + y.shape.to_string());
        }
        ctx.set_output_type(0, y);
      });
  registry.add(std::move(fused));
  registry.add(std::move(conv("ConvTranspose", ConvKind::kTranspose,
                              "transposed convolution of X [N, C, ...] with W [C, K/group, k...], plus B [K]")
                             .add_traits(OpTrait::kLowPrecisionCompute)));
  registry.add(conv_backward("ConvGradData", {"dY", "W", "X"}, 2, /*widening=*/false,
                             "gradient of Conv (or ConvTranspose when transposed=1) with respect to X"));
  registry.add(conv_backward("ConvGradWeight", {"dY", "X", "W"}, 2, /*widening=*/true,
                             "gradient of Conv (or ConvTranspose when transposed=1) with respect to W; "
                             "output_dtype f32 sums bf16/f16 into f32"));
  OpSchema bias("ConvGradBias");
  bias.input("dY", "T")
      .output("dB", "")
      .type_constraint("T", kConvTypes)
      .attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* dy = ctx.input_type(0);
        if (dy == nullptr) return;
        if (!dy->shape.has_rank()) {
          ctx.set_output_type(0, {inferred_output_dtype(ctx, dy->dtype), Shape{symbolic_dim(ctx, 0)}});
          return;
        }
        if (dy->shape.rank() < 2) ctx.fail("dY " + dy->shape.to_string() + " has no channel axis");
        ctx.set_output_type(0, {inferred_output_dtype(ctx, dy->dtype), Shape{dy->shape[1]}});
      })
      .doc("sum of dY over every axis but the channel axis 1: the gradient of a convolution's bias; "
           "output_dtype f32 sums bf16/f16 into f32");
  registry.add(std::move(bias));
}

}  // namespace weir
