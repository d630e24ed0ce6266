#include "ops/nn/pool_schemas.h"

#include "core/error.h"
#include "core/graph.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/pool_problem.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kPoolTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
// MaxPool also takes 8-bit integers (ONNX opset 12), as quantized models have.
const std::vector<DType> kMaxPoolTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt8,    DType::kUInt8};

// [N, C, out...]: static where the input's spatial sizes are, fresh symbols otherwise.
Shape pooled_shape(InferenceContext& ctx, const Shape& x) {
  if (!x.has_rank()) return Shape::unknown_rank();
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5) ctx.fail("input " + x.to_string() + " must be [N, C, spatial...] with 1 to 3 spatial axes");
  std::vector<int64_t> sizes(static_cast<size_t>(rank), 1);
  bool spatial_static = true;
  for (int64_t i = 2; i < rank; ++i) {
    const Dim& dim = x[static_cast<size_t>(i)];
    spatial_static = spatial_static && dim.is_static();
    if (dim.is_static()) sizes[static_cast<size_t>(i)] = dim.size();
  }
  std::vector<Dim> dims = {x[0], x[1]};
  if (spatial_static) {
    ConvProblem p = pool_problem(ctx.node(), sizes);
    for (size_t i = 0; i < p.spatial_rank; ++i) dims.emplace_back(p.out[i]);
  } else {
    pool_problem(ctx.node(), std::vector<int64_t>(static_cast<size_t>(rank), 1 << 20));  // checks the attributes
    for (int64_t i = 2; i < rank; ++i) dims.push_back(symbolic_dim(ctx, static_cast<size_t>(i)));
  }
  return Shape(std::move(dims));
}

void infer_pool(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  Shape shape = pooled_shape(ctx, x->shape);
  ctx.set_output_type(0, {x->dtype, shape});
  if (ctx.num_outputs() > 1) ctx.set_output_type(1, {DType::kInt64, shape});
}

void infer_global_pool(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, *x);
    return;
  }
  if (x->shape.rank() < 3) ctx.fail("input " + x->shape.to_string() + " must be [N, C, spatial...]");
  std::vector<Dim> dims = {x->shape[0], x->shape[1]};
  dims.resize(static_cast<size_t>(x->shape.rank()), Dim(1));
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

OpSchema& window_attributes(OpSchema& schema) {
  return schema.required_attr("kernel_shape", AttrType::kInts)
      .attr("auto_pad", AttrType::kString, Attribute("NOTSET"))
      .attr("ceil_mode", AttrType::kInt, Attribute(int64_t{0}))
      .attr("dilations", AttrType::kInts)
      .attr("pads", AttrType::kInts)
      .attr("strides", AttrType::kInts);
}

GradientFn window_gradient(const char* backward_op) {
  return [backward_op](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    ctx.set_input_grad(0, ctx.emit(backward_op, {grad, ctx.node().input(0)}, 1, ctx.node().attributes())[0]);
  };
}

// Spatial axes [2, rank) of the forward input, for the reduce-style backward ops.
std::vector<int64_t> spatial_axes(GradientContext& ctx) {
  const Shape& shape = ctx.node().input(0)->shape();
  if (!shape.has_rank()) {
    throw Error(ErrorKind::kShape, ctx.node().op_type() + " '" + ctx.node().name() +
                                       "': the gradient needs the input's rank, which is unknown");
  }
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < shape.rank(); ++i) axes.push_back(i);
  return axes;
}

OpSchema pool_backward(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("dY", "T").input("X", "T").output("dX", "T").type_constraint("T", kPoolTypes);
  window_attributes(schema)
      .attr("count_include_pad", AttrType::kInt, Attribute(int64_t{0}))
      .attr("storage_order", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        if (const TensorType* x = ctx.input_type(1)) ctx.set_output_type(0, *x);
      })
      .doc(doc);
  return schema;
}

}  // namespace

void register_pool_schemas(OpRegistry& registry) {
  OpSchema max_pool("MaxPool");
  max_pool.input("X", "T").output("Y", "T").output("Indices", "I", Arity::kOptional)
      .type_constraint("T", kMaxPoolTypes)
      .type_constraint("I", {DType::kInt64});
  window_attributes(max_pool)
      .attr("storage_order", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_pool)
      .gradient(window_gradient("MaxPoolGrad"))
      .doc("maximum over each window, padding excluded; Indices are flat offsets into X "
           "(row-major, or column-major within a plane when storage_order=1)");
  registry.add(std::move(max_pool));

  OpSchema average_pool("AveragePool");
  average_pool.input("X", "T").output("Y", "T").type_constraint("T", kPoolTypes);
  window_attributes(average_pool)
      .attr("count_include_pad", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_pool)
      .gradient(window_gradient("AveragePoolGrad"))
      .doc("mean over each window; padding counts only when count_include_pad=1");
  registry.add(std::move(average_pool));

  // What the channels_last_layout pass makes of a MaxPool or AveragePool
  // inside a channels-last conv chain. Inference only.
  OpSchema channels_last_pool("ChannelsLastPool");
  channels_last_pool.input("X", "T").output("Y", "T").type_constraint(
      "T", {DType::kFloat32, DType::kBFloat16, DType::kInt8, DType::kUInt8});
  window_attributes(channels_last_pool)
      .attr("mode", AttrType::kString, Attribute("max"))
      .attr("count_include_pad", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        std::string mode = ctx.attr("mode").s();
        if (mode != "max" && mode != "average") ctx.fail("mode '" + mode + "' is not max or average");
        ctx.set_output_type(0, {x->dtype, channels_last_order(pooled_shape(ctx, channels_first_order(x->shape)))});
      })
      .doc("MaxPool (mode max) or AveragePool (mode average) of X [N, spatial..., C] (channels last), "
           "giving Y [N, spatial out..., C]; f32 and bf16 through oneDNN, and i8 and u8 for mode max");
  registry.add(std::move(channels_last_pool));

  registry.add(pool_backward("MaxPoolGrad", "gradient of MaxPool: dY goes to the first maximum of each window"));
  registry.add(pool_backward("AveragePoolGrad", "gradient of AveragePool: dY spread evenly over each window"));

  OpSchema global_average("GlobalAveragePool");
  global_average.input("X", "T").output("Y", "T").type_constraint("T", kPoolTypes)
      .infer(infer_global_pool)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("BroadcastReduced", {grad, ctx.node().input(0)}, 1,
                                       {{"axes", Attribute(spatial_axes(ctx))}, {"mean", Attribute(int64_t{1})}})[0]);
      })
      .doc("mean over all spatial axes: [N, C, ...] -> [N, C, 1, ...]");
  registry.add(std::move(global_average));

  OpSchema global_max("GlobalMaxPool");
  global_max.input("X", "T").output("Y", "T").type_constraint("T", kPoolTypes)
      .infer(infer_global_pool)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("ReduceExtremumGrad", {grad, ctx.node().input(0), ctx.node().output(0)}, 1,
                                       {{"axes", Attribute(spatial_axes(ctx))}})[0]);
      })
      .doc("maximum over all spatial axes: [N, C, ...] -> [N, C, 1, ...]");
  registry.add(std::move(global_max));
}

}  // namespace weir
