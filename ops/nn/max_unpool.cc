#include "ops/nn/max_unpool.h"

#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

// kernel_shape, pads and strides checked against `spatial` axes, with
// defaults filled in (pads 0, strides 1).
struct UnpoolAttributes {
  std::vector<int64_t> kernel, pads, strides;
};

template <typename Fail>
UnpoolAttributes unpool_attributes(const Node& node, size_t spatial, Fail&& fail) {
  UnpoolAttributes a;
  if (!node.has_attr("kernel_shape")) fail("needs the kernel_shape attribute");
  a.kernel = node.attr("kernel_shape").ints();
  a.pads = node.has_attr("pads") ? node.attr("pads").ints() : std::vector<int64_t>(2 * spatial, 0);
  a.strides = node.has_attr("strides") ? node.attr("strides").ints() : std::vector<int64_t>(spatial, 1);
  if (a.kernel.size() != spatial || a.pads.size() != 2 * spatial || a.strides.size() != spatial) {
    fail("kernel_shape " + format_sizes(a.kernel) + ", pads " + format_sizes(a.pads) + " and strides " +
         format_sizes(a.strides) + " must have " + std::to_string(spatial) + ", " + std::to_string(2 * spatial) +
         " and " + std::to_string(spatial) + " entries for " + std::to_string(spatial) + " spatial axes");
  }
  for (size_t d = 0; d < spatial; ++d) {
    if (a.kernel[d] < 1 || a.strides[d] < 1 || a.pads[d] < 0 || a.pads[spatial + d] < 0) {
      fail("kernel_shape " + format_sizes(a.kernel) + " and strides " + format_sizes(a.strides) +
           " must be positive, pads " + format_sizes(a.pads) + " not negative");
    }
  }
  return a;
}

// Unpooled spatial size of axis d from the pooled size `in`.
int64_t unpooled_size(const UnpoolAttributes& a, size_t d, int64_t in) {
  size_t spatial = a.kernel.size();
  return (in - 1) * a.strides[d] - a.pads[d] - a.pads[spatial + d] + a.kernel[d];
}

// Where each element of X lands in the output, and the output's sizes.
struct UnpoolPlan {
  std::vector<int64_t> out_sizes;
  std::vector<int64_t> positions;  // flat output position of X element i
};

UnpoolPlan unpool_plan(const KernelContext& ctx, const Tensor& x, const Tensor& indices, const Tensor* output_shape) {
  if (x.rank() < 3) ctx.fail("X " + x.type_string() + " must be [N, C, spatial...]");
  if (indices.sizes() != x.sizes()) ctx.fail("I " + indices.type_string() + " must have X's shape " + x.type_string());
  auto spatial = static_cast<size_t>(x.rank() - 2);
  UnpoolAttributes a = unpool_attributes(ctx.node(), spatial, [&](const std::string& m) { ctx.fail(m); });
  std::vector<int64_t> unpooled = {x.sizes()[0], x.sizes()[1]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t size = unpooled_size(a, d, x.sizes()[d + 2]);
    if (size < 0) ctx.fail("X " + x.type_string() + " unpools to a negative size on spatial axis " + std::to_string(d));
    unpooled.push_back(size);
  }
  UnpoolPlan plan;
  plan.out_sizes = unpooled;
  if (output_shape != nullptr) {
    plan.out_sizes = index_values(ctx, *output_shape, "output_shape");
    bool fits = plan.out_sizes.size() == unpooled.size() && plan.out_sizes[0] == unpooled[0] && plan.out_sizes[1] == unpooled[1];
    for (size_t d = 2; fits && d < unpooled.size(); ++d) fits = plan.out_sizes[d] >= unpooled[d];
    if (!fits) {
      ctx.fail("output_shape " + format_sizes(plan.out_sizes) + " must be X's N and C and spatial sizes at least the unpooled " +
               format_sizes(unpooled));
    }
  }
  int64_t total = 1;
  for (int64_t size : unpooled) total *= size;
  std::vector<int64_t> index = index_values(ctx, indices, "I");
  plan.positions.resize(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t rest = index[i];
    if (rest < 0 || rest >= total) {
      ctx.fail("index " + std::to_string(rest) + " is outside the unpooled shape " + format_sizes(unpooled));
    }
    // Coordinates in the unpooled shape, the same coordinates in the output.
    int64_t position = 0, stride = 1;
    for (size_t axis = unpooled.size(); axis-- > 0;) {
      position += (rest % unpooled[axis]) * stride;
      rest /= unpooled[axis];
      stride *= plan.out_sizes[axis];
    }
    plan.positions[i] = position;
  }
  return plan;
}

const Tensor* optional_input(const KernelContext& ctx, size_t index) {
  return ctx.has_input(index) ? &ctx.input(index) : nullptr;
}

class MaxUnpoolKernel final : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    UnpoolPlan plan = unpool_plan(ctx, x, ctx.input(1), optional_input(ctx, 2));
    Tensor& y = ctx.allocate_output(0, x.dtype(), plan.out_sizes, KernelContext::Fill::kZeros);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (size_t i = 0; i < plan.positions.size(); ++i) out[plan.positions[i]] = in[i];
    });
  }
};

// MaxUnpoolGrad(dY, X, I, output_shape?): dX[i] = dY[position of i], unless a later element took that position.
class MaxUnpoolGradKernel final : public OpKernel {
 public:
  explicit MaxUnpoolGradKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    UnpoolPlan plan = unpool_plan(ctx, x, ctx.input(2), optional_input(ctx, 3));
    if (dy.sizes() != plan.out_sizes) ctx.fail("dY " + dy.type_string() + " must be the unpooled " + format_sizes(plan.out_sizes));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.sizes(), KernelContext::Fill::kZeros);
    std::vector<bool> taken(static_cast<size_t>(dy.num_elements()), false);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      const T* grad = dy.data<T>();
      T* out = dx.data<T>();
      for (size_t i = plan.positions.size(); i-- > 0;) {
        auto position = static_cast<size_t>(plan.positions[i]);
        if (taken[position]) continue;
        taken[position] = true;
        out[i] = grad[position];
      }
    });
  }
};

void infer_max_unpool(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    return;
  }
  if (x->shape.rank() < 3) ctx.fail("X " + x->shape.to_string() + " must be [N, C, spatial...]");
  auto spatial = static_cast<size_t>(x->shape.rank() - 2);
  UnpoolAttributes a = unpool_attributes(ctx.node(), spatial, [&](const std::string& m) { ctx.fail(m); });
  std::vector<Dim> dims = {x->shape[0], x->shape[1]};
  if (ctx.num_inputs() > 2 && ctx.input_type(2) != nullptr) {
    std::optional<std::vector<int64_t>> sizes = constant_ints(ctx, 2);
    if (sizes && sizes->size() == spatial + 2) {
      for (size_t d = 0; d < spatial; ++d) dims.emplace_back((*sizes)[d + 2]);
    } else {
      for (size_t d = 0; d < spatial; ++d) dims.push_back(symbolic_dim(ctx, d + 2));
    }
  } else {
    for (size_t d = 0; d < spatial; ++d) {
      const Dim& in = x->shape[d + 2];
      if (!in.is_static()) {
        dims.push_back(symbolic_dim(ctx, d + 2));
        continue;
      }
      int64_t size = unpooled_size(a, d, in.size());
      if (size < 0) ctx.fail("X " + x->shape.to_string() + " unpools to a negative size on spatial axis " + std::to_string(d));
      dims.emplace_back(size);
    }
  }
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

}  // namespace

void register_max_unpool_schemas(OpRegistry& registry) {
  OpSchema unpool("MaxUnpool");
  unpool.input("X", "T1").input("I", "T2").input("output_shape", "T2", Arity::kOptional).output("output", "T1")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", {DType::kInt64})
      .required_attr("kernel_shape", AttrType::kInts)
      .attr("pads", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .infer(infer_max_unpool)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad, node.input(0), node.input(1)};
        if (node.num_inputs() > 2 && node.input(2) != nullptr) inputs.push_back(node.input(2));
        ctx.set_input_grad(0, ctx.emit("MaxUnpoolGrad", inputs, 1, node.attributes())[0]);
      })
      .doc("X written at its MaxPool indices into zeros of the unpooled shape (or at the start of output_shape)");
  registry.add(std::move(unpool));

  OpSchema unpool_grad("MaxUnpoolGrad");
  unpool_grad.input("dY", "T1").input("X", "T1").input("I", "T2").input("output_shape", "T2", Arity::kOptional)
      .output("dX", "T1")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", {DType::kInt64})
      .required_attr("kernel_shape", AttrType::kInts)
      .attr("pads", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .infer(infer_gradient_like_input_1)
      .doc("MaxUnpool's backward: dY at each X element's output position (0 where a later element overwrote it)");
  registry.add(std::move(unpool_grad));
}

void register_max_unpool_cpu_kernels(KernelRegistry& registry) {
  registry.add("MaxUnpool", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<MaxUnpoolKernel>(node); });
  registry.add("MaxUnpoolGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<MaxUnpoolGradKernel>(node); });
}

}  // namespace weir
