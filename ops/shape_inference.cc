#include "ops/shape_inference.h"

#include <algorithm>

#include "core/graph.h"

namespace weir {

Shape broadcast_shapes(const Shape& a, const Shape& b, const InferenceContext& ctx) {
  if (!a.has_rank() || !b.has_rank()) return Shape::unknown_rank();
  size_t rank = std::max(a.dims().size(), b.dims().size());
  std::vector<Dim> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; a missing leading dim acts as 1.
    size_t from_end = rank - 1 - i;
    Dim da = from_end < a.dims().size() ? a.dims()[a.dims().size() - 1 - from_end] : Dim(1);
    Dim db = from_end < b.dims().size() ? b.dims()[b.dims().size() - 1 - from_end] : Dim(1);
    if (da.is_static() && db.is_static()) {
      if (da.size() != db.size() && da.size() != 1 && db.size() != 1) {
        ctx.fail("cannot broadcast " + a.to_string() + " with " + b.to_string() + ": axis " +
                 std::to_string(i) + " has sizes " + std::to_string(da.size()) + " and " +
                 std::to_string(db.size()));
      }
      dims[i] = Dim(da.size() == 1 ? db.size() : da.size());
    } else if (da.is_static()) {
      dims[i] = da.size() == 1 ? db : da;  // symbol vs n>1: it must be n at run time
    } else if (db.is_static()) {
      dims[i] = db.size() == 1 ? da : db;
    } else {
      dims[i] = da;  // two symbols: equal, or one of them is 1; keep the first
    }
  }
  return Shape(std::move(dims));
}

void infer_same_as_input(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input != nullptr) ctx.set_output_type(0, *input);
}

int64_t normalize_axis(int64_t axis, int64_t rank, const InferenceContext& ctx) {
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

void infer_gradient_like_input_1(InferenceContext& ctx) {
  const TensorType* dy = ctx.input_type(0);
  const TensorType* x = ctx.input_type(1);
  if (dy != nullptr && x != nullptr) ctx.set_output_type(0, {dy->dtype, x->shape});
}

std::optional<std::vector<int64_t>> constant_ints(const InferenceContext& ctx, size_t index) {
  const Tensor* t = ctx.input_constant(index);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> values;
  if (t->dtype() == DType::kInt64) values.assign(t->data<int64_t>(), t->data<int64_t>() + t->num_elements());
  else if (t->dtype() == DType::kInt32) values.assign(t->data<int32_t>(), t->data<int32_t>() + t->num_elements());
  else return std::nullopt;
  return values;
}

AxesArgument axes_argument(const InferenceContext& ctx, size_t index) {
  AxesArgument result;
  if (index < ctx.num_inputs() && ctx.input_type(index) != nullptr) {
    if (ctx.has_attr("axes")) ctx.fail("axes are given both as an attribute and as input " + std::to_string(index));
    std::optional<std::vector<int64_t>> values = constant_ints(ctx, index);
    if (!values) {
      result.source = AxesArgument::Source::kRunTime;
      return result;
    }
    result.source = AxesArgument::Source::kKnown;
    result.values = std::move(*values);
  } else if (ctx.has_attr("axes")) {
    result.source = AxesArgument::Source::kKnown;
    result.values = ctx.attr_ints("axes");
  }
  return result;
}

Dim symbolic_dim(const InferenceContext& ctx, size_t axis) {
  return Dim::symbol(ctx.node().name() + ":" + std::to_string(axis));
}

void check_scalar_input(const InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* t = ctx.input_type(index);
  if (t != nullptr && t->shape.is_static() && t->shape.num_elements() != 1) {
    ctx.fail(std::string(name) + " must be a scalar, got " + t->to_string());
  }
}

}  // namespace weir
