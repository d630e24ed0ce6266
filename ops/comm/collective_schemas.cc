#include "ops/comm/collective_schemas.h"

#include "core/collective_group.h"
#include "core/communicator.h"
#include "core/error.h"
#include "ops/dtype_sets.h"
#include "core/graph.h"

namespace weir {

namespace {

constexpr OpTrait kCommunicates = OpTrait::kCollective | OpTrait::kSideEffects;

OpSchema& collective_attrs(OpSchema& schema) {
  return schema.attr("group", AttrType::kInts, Attribute(std::vector<int64_t>{}))
      .attr("group_size", AttrType::kInt, Attribute(int64_t{0}))
      .attr("tag", AttrType::kString, Attribute(std::string()));
}

// The optional `skip` input (a bool scalar) of AllReduce, AllGather and
// ReduceScatter: when true the collective does not communicate and its
// output is its input (AllReduce) or zeros (the others). Every rank must
// compute the same flag; gradient merge (passes/training/gradient_merge.h)
// derives it from the step number so ranks communicate once per k steps.
OpSchema& skippable(OpSchema& schema) {
  return schema.input("skip", "B", Arity::kOptional).type_constraint("B", {DType::kBool});
}

// The group size for inference (core/collective_group.h), which AllGather
// and ReduceScatter need because their output shape depends on it.
int64_t group_size_for_shape(InferenceContext& ctx) {
  const int64_t size = collective_group_size(ctx.node());
  if (size == 0) ctx.fail("needs the 'group' attribute (the ranks taking part) to infer its output shape");
  return size;
}

void check_reduction(InferenceContext& ctx) {
  try {
    parse_reduce_op(ctx.attr("reduction").s());
  } catch (const Error& error) {
    ctx.fail(error.message());
  }
}

// A Dim scaled by `factor` (multiply) or divided by it; symbolic dims stay symbolic.
Dim scale_dim(InferenceContext& ctx, const Dim& dim, int64_t factor, bool multiply) {
  if (dim.is_symbolic()) return Dim::symbol(dim.symbol_name() + (multiply ? "*" : "/") + std::to_string(factor));
  if (!multiply && dim.size() % factor != 0) {
    ctx.fail("axis 0 of size " + std::to_string(dim.size()) + " does not divide by the group size " +
             std::to_string(factor));
  }
  return multiply ? Dim(dim.size() * factor) : Dim(dim.size() / factor);
}

void infer_scaled_axis0(InferenceContext& ctx, bool multiply) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  int64_t size = group_size_for_shape(ctx);
  TensorType out = *x;
  if (out.shape.has_rank()) {
    if (out.shape.rank() == 0) ctx.fail("needs an input of rank 1 or more, got a scalar");
    out.shape[0] = scale_dim(ctx, out.shape[0], size, multiply);
  }
  ctx.set_output_type(0, out);
}

// The attributes of a collective's gradient (its group, a tag of its own);
// refused for a collective that skips on some steps.
std::map<std::string, Attribute> differentiable_collective(const Node& node) {
  if (node.num_inputs() > 1 && node.input(1) != nullptr) {
    throw Error(ErrorKind::kUnsupported, node.op_type() + " '" + node.name() +
                                             "' has a skip input; a collective that skips has no gradient")
        .with_node(node.name());
  }
  std::map<std::string, Attribute> attrs = node.attributes();
  const std::string tag = node.has_attr("tag") ? node.attr("tag").s() : "";
  attrs["tag"] = Attribute(tag + "/grad");
  return attrs;
}

}  // namespace

void register_collective_schemas(OpRegistry& registry) {
  OpSchema all_reduce("AllReduce");
  collective_attrs(skippable(all_reduce.input("X", "T")).output("Y", "T").type_constraint("T", kNumericDTypes))
      .attr("reduction", AttrType::kString, Attribute(std::string("sum")))
      .traits(kCommunicates)
      .infer([](InferenceContext& ctx) {
        check_reduction(ctx);
        if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, *x);
      })
      .gradient([](GradientContext& ctx) {
        // y_r = sum_s x_s on every rank, so dL/dx_s = sum_r dL/dy_r: the
        // gradient of a sum (or average) all-reduce is the same all-reduce.
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::string reduction = node.has_attr("reduction") ? node.attr("reduction").s() : "sum";
        if (reduction != "sum" && reduction != "avg") {
          throw Error(ErrorKind::kUnsupported, "AllReduce '" + node.name() + "': no gradient for reduction '" +
                                                   reduction + "'")
              .with_node(node.name());
        }
        std::map<std::string, Attribute> attrs = node.attributes();
        std::string tag = node.has_attr("tag") ? node.attr("tag").s() : "";
        attrs["tag"] = Attribute(tag + "/grad");
        ctx.set_input_grad(0, ctx.emit("AllReduce", {grad}, 1, attrs)[0]);
      })
      .doc("every rank's output is the elementwise reduction (sum, avg, max, min) of all ranks' inputs; with skip "
           "true, the input itself and no communication");
  registry.add(std::move(all_reduce));

  OpSchema broadcast("Broadcast");
  collective_attrs(broadcast.input("X", "T").output("Y", "T").type_constraint("T", kAnyDTypes))
      .attr("root", AttrType::kInt, Attribute(int64_t{0}))
      .traits(kCommunicates)
      .infer([](InferenceContext& ctx) {
        if (ctx.attr_int("root") < 0) ctx.fail("root must be a rank, got " + std::to_string(ctx.attr_int("root")));
        if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, *x);
      })
      .doc("every rank's output is the root rank's input");
  registry.add(std::move(broadcast));

  OpSchema all_gather("AllGather");
  collective_attrs(skippable(all_gather.input("X", "T")).output("Y", "T").type_constraint("T", kAnyDTypes))
      .traits(kCommunicates)
      .infer([](InferenceContext& ctx) { infer_scaled_axis0(ctx, /*multiply=*/true); })
      .gradient([](GradientContext& ctx) {
        // y = [x_0; x_1; ...] on every rank, so dL/dx_s = sum_r (dL/dy_r)'s
        // block s: a sum reduce-scatter of the output's gradient.
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        std::map<std::string, Attribute> attrs = differentiable_collective(ctx.node());
        attrs["reduction"] = Attribute(std::string("sum"));
        ctx.set_input_grad(0, ctx.emit("ReduceScatter", {grad}, 1, attrs)[0]);
      })
      .doc("the ranks' inputs concatenated along axis 0 in rank order; with skip true, zeros and no communication; "
           "gradient: a sum ReduceScatter");
  registry.add(std::move(all_gather));

  OpSchema reduce_scatter("ReduceScatter");
  collective_attrs(skippable(reduce_scatter.input("X", "T")).output("Y", "T").type_constraint("T", kNumericDTypes))
      .attr("reduction", AttrType::kString, Attribute(std::string("sum")))
      .traits(kCommunicates)
      .infer([](InferenceContext& ctx) {
        check_reduction(ctx);
        infer_scaled_axis0(ctx, /*multiply=*/false);
      })
      .gradient([](GradientContext& ctx) {
        // y_r = (sum_s x_s)'s block r, so dL/dx_s = [dL/dy_0; dL/dy_1; ...]:
        // an AllGather of the output's gradient (for the sum).
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        const std::string reduction = node.has_attr("reduction") ? node.attr("reduction").s() : "sum";
        if (reduction != "sum") {
          throw Error(ErrorKind::kUnsupported, "ReduceScatter '" + node.name() + "': no gradient for reduction '" +
                                                   reduction + "' (sum has one)")
              .with_node(node.name());
        }
        std::map<std::string, Attribute> attrs = differentiable_collective(node);
        attrs.erase("reduction");
        ctx.set_input_grad(0, ctx.emit("AllGather", {grad}, 1, attrs)[0]);
      })
      .doc("the reduction over ranks, split along axis 0 into one part per rank; rank r gets part r; with skip true, "
           "zeros and no communication");
  registry.add(std::move(reduce_scatter));

  OpSchema send("Send");
  collective_attrs(send.input("X", "T").type_constraint("T", kAnyDTypes))
      .required_attr("peer", AttrType::kInt)
      .traits(kCommunicates)
      .doc("hands X to rank `peer`, which runs the matching Recv; returns when it has the data");
  registry.add(std::move(send));

  OpSchema recv("Recv");
  collective_attrs(recv.output("Y", "T").type_constraint("T", kAnyDTypes))
      .required_attr("peer", AttrType::kInt)
      .required_attr("dtype", AttrType::kInt)
      .required_attr("shape", AttrType::kInts)
      .traits(kCommunicates)
      .infer([](InferenceContext& ctx) {
        DType dtype = static_cast<DType>(ctx.attr_int("dtype"));
        if (!is_valid_dtype(static_cast<int32_t>(ctx.attr_int("dtype"))) || dtype == DType::kUndefined) {
          ctx.fail("dtype " + std::to_string(ctx.attr_int("dtype")) + " is not a Weir dtype");
        }
        for (int64_t d : ctx.attr_ints("shape")) {
          if (d < 0) ctx.fail("shape has a negative dim " + std::to_string(d));
        }
        ctx.set_output_type(0, {dtype, Shape::from_sizes(ctx.attr_ints("shape"))});
      })
      .doc("receives the tensor that rank `peer` sends with the matching Send (same tag); dtype and shape "
           "are attributes");
  registry.add(std::move(recv));

  OpSchema barrier("Barrier");
  collective_attrs(barrier)
      .traits(kCommunicates)
      .doc("returns when every rank of the group has reached it; order it with control inputs");
  registry.add(std::move(barrier));
}

}  // namespace weir
