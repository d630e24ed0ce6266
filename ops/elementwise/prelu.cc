#include "ops/elementwise/prelu.h"

#include <type_traits>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/gradient_util.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

// ONNX's PRelu types that Weir has.
const std::vector<DType> kPReluTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                        DType::kInt32,   DType::kInt64,   DType::kUInt32,  DType::kUInt64};

// Unidirectional broadcasting: slope's shape broadcasts to X's, and X's stays.
bool slope_fits(const Shape& x, const Shape& slope) {
  if (slope.rank() > x.rank()) return false;
  for (int64_t i = 1; i <= slope.rank(); ++i) {
    const Dim& s = slope[static_cast<size_t>(slope.rank() - i)];
    const Dim& d = x[static_cast<size_t>(x.rank() - i)];
    if (s.is_static() && s.size() != 1 && d.is_static() && s.size() != d.size()) return false;
  }
  return true;
}

void infer_prelu(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  const TensorType* slope = ctx.input_type(1);
  if (x == nullptr) return;
  if (slope != nullptr && x->shape.has_rank() && slope->shape.has_rank() && !slope_fits(x->shape, slope->shape)) {
    ctx.fail("slope " + slope->shape.to_string() + " does not broadcast unidirectionally to X " + x->shape.to_string());
  }
  infer_same_as_input(ctx);
}

// Calls fn(out_offset, slope_offset, slope_stride, count) over runs of X's
// elements, split across threads.
template <typename Fn>
void for_each_run(const Tensor& x, const Tensor& slope, Fn&& fn) {
  BroadcastPlan plan(x.sizes(), x.sizes(), slope.sizes());
  const int64_t stride = plan.inner_stride_b();
  parallel_for(plan.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    plan.for_each_in(begin, end, [&](int64_t offset, int64_t, int64_t slope_offset, int64_t count) {
      fn(offset, slope_offset, stride, count);
    });
  });
}

class PReluKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    check_prelu_slope(ctx, x, slope);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool has no PRelu");
      } else {
        const T* xs = x.data<T>();
        const T* slopes = slope.data<T>();
        T* out = y.data<T>();
        for_each_run(x, slope, [&](int64_t offset, int64_t slope_offset, int64_t stride, int64_t count) {
          for (int64_t i = 0; i < count; ++i) {
            const T value = xs[offset + i];
            if constexpr (std::is_unsigned_v<T>) {
              out[offset + i] = value;  // never negative
            } else if constexpr (std::is_integral_v<T>) {
              // Integers wrap, as Mul's do.
              T s = slopes[slope_offset + i * stride];
              out[offset + i] = value < 0 ? static_cast<T>(static_cast<uint64_t>(s) * static_cast<uint64_t>(value)) : value;
            } else {
              ComputeType<T> v = load(value);
              out[offset + i] = v < 0 ? store<T>(load(slopes[slope_offset + i * stride]) * v) : value;
            }
          }
        });
      }
    });
  }
};

// dX = dY where X >= 0, else dY * slope; dSlope = dY * X where X < 0, else 0
// (of X's shape: the rule sums it to slope's).
class PReluGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& slope = ctx.input(2);
    check_prelu_grad(ctx, dy, x, slope);
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dslope = ctx.allocate_output(1, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* grads = dy.data<T>();
        const T* xs = x.data<T>();
        const T* slopes = slope.data<T>();
        T* dxs = dx.data<T>();
        T* dslopes = dslope.data<T>();
        for_each_run(x, slope, [&](int64_t offset, int64_t slope_offset, int64_t stride, int64_t count) {
          for (int64_t i = 0; i < count; ++i) {
            ComputeType<T> g = load(grads[offset + i]), v = load(xs[offset + i]);
            bool negative = v < 0;
            dxs[offset + i] = negative ? store<T>(g * load(slopes[slope_offset + i * stride])) : grads[offset + i];
            dslopes[offset + i] = store<T>(negative ? g * v : ComputeType<T>(0));
          }
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }
};

}  // namespace

void check_prelu_slope(const KernelContext& ctx, const Tensor& x, const Tensor& slope) {
  auto broadcast = broadcast_sizes(x.sizes(), slope.sizes());
  if (slope.dtype() != x.dtype() || !broadcast || *broadcast != x.sizes()) {
    ctx.fail("slope " + slope.type_string() + " does not broadcast unidirectionally to X " + x.type_string());
  }
}

void check_prelu_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& slope) {
  check_prelu_slope(ctx, x, slope);
  if (dy.sizes() != x.sizes() || dy.dtype() != x.dtype()) {
    ctx.fail("dY " + dy.type_string() + " does not match X " + x.type_string());
  }
}

void register_prelu_schema(OpRegistry& registry) {
  OpSchema prelu("PRelu");
  prelu.input("X", "T")
      .input("slope", "T")
      .output("Y", "T")
      .type_constraint("T", kPReluTypes)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_prelu)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> grads = ctx.emit("PReluGrad", {grad, node.input(0), node.input(1)}, 2);
        ctx.set_input_grad(0, grads[0]);
        const Shape& slope = node.input(1)->shape();
        bool same_shape = slope.has_rank() && slope == node.input(0)->shape();
        ctx.set_input_grad(1, sum_to_input_shape(ctx, grads[1], 1, /*broadcast=*/!same_shape));
      })
      .doc("X where X >= 0, else slope * X; slope broadcasts unidirectionally to X");
  registry.add(std::move(prelu));

  OpSchema grad("PReluGrad");
  grad.input("dY", "T")
      .input("X", "T")
      .input("slope", "T")
      .output("dX", "T")
      .output("dSlope", "T")
      .type_constraint("T", kFloatDTypes)
      .infer([](InferenceContext& ctx) {
        const TensorType* dy = ctx.input_type(0);
        const TensorType* x = ctx.input_type(1);
        if (dy == nullptr || x == nullptr) return;
        ctx.set_output_type(0, TensorType{dy->dtype, x->shape});
        ctx.set_output_type(1, TensorType{dy->dtype, x->shape});
      })
      .doc("The gradient of PRelu: dX = dY where X >= 0, else dY * slope; dSlope = dY * X where X < 0, else 0, "
           "of X's shape (not summed to slope's)");
  registry.add(std::move(grad));
}

void register_prelu_cpu_kernel(KernelRegistry& registry) {
  registry.add("PRelu", DeviceType::kCpu, kPReluTypes, [](const Node&) { return std::make_unique<PReluKernel>(); });
  registry.add("PReluGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node&) { return std::make_unique<PReluGradKernel>(); });
}

}  // namespace weir
