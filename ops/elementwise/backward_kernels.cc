#include "ops/elementwise/backward_kernels.h"

#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/half_bits.h"
#include "ops/threading.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

struct ReluGradOp {  // second input: the forward input X
  template <typename C> static C apply(C dy, C x) { return x > C(0) ? dy : C(0); }
};
struct SigmoidGradOp {  // second input: the forward output Y
  template <typename C> static C apply(C dy, C y) { return dy * y * (C(1) - y); }
};
struct TanhGradOp {  // second input: the forward output Y
  template <typename C> static C apply(C dy, C y) { return dy * (C(1) - y * y); }
};

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

void check_same_type(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) {
    ctx.fail("inputs must have the same type, got " + a.type_string() + " and " + b.type_string());
  }
}

template <typename Op>
class ActivationGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& saved = ctx.input(1);
    check_same_type(ctx, dy, saved);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* g = dy.data<T>();
        const T* s = saved.data<T>();
        T* out = dx.data<T>();
        parallel_for(dy.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          if constexpr (std::is_same_v<Op, ReluGradOp> && sizeof(T) == 2) {
            // bf16/f16: dY or zero, selected without rounding back.
            const auto* grad_bits = reinterpret_cast<const uint16_t*>(g);
            const auto* saved_bits = reinterpret_cast<const uint16_t*>(s);
            auto* result = reinterpret_cast<uint16_t*>(out);
            for (int64_t i = begin; i < end; ++i) result[i] = static_cast<uint16_t>(grad_bits[i] & positive_mask<T>(saved_bits[i]));
          } else {
            for (int64_t i = begin; i < end; ++i) out[i] = store<T>(Op::apply(load(g[i]), load(s[i])));
          }
        });
      } else {
        ctx.fail("needs a floating-point type, got " + dy.type_string());
      }
    });
  }
};

class SumToShapeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t>& target = ctx.input(1).sizes();
    check_sum_to_shape(ctx, x, ctx.input(1));
    Tensor& out = ctx.allocate_output(0, kernel_output_dtype(ctx, x.dtype()), target);
    BroadcastPlan plan(x.sizes(), x.sizes(), target);
    // Accumulate in double: a gradient summed over a large batch loses
    // digits in f32, and f16/bf16 would lose almost everything.
    std::vector<double> sums(static_cast<size_t>(out.num_elements()), 0.0);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        const int64_t stride = plan.inner_stride_b();
        plan.for_each([&](int64_t, int64_t x_offset, int64_t sum_offset, int64_t count) {
          for (int64_t i = 0; i < count; ++i) sums[static_cast<size_t>(sum_offset + i * stride)] += load(in[x_offset + i]);
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
    dispatch_dtype(out.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        T* result = out.data<T>();
        for (size_t i = 0; i < sums.size(); ++i) result[i] = store<T>(static_cast<ComputeType<T>>(sums[i]));
      }
    });
  }
};

}  // namespace

void check_sum_to_shape(const KernelContext& ctx, const Tensor& x, const Tensor& ref) {
  auto broadcast = broadcast_sizes(x.sizes(), ref.sizes());
  if (!broadcast || *broadcast != x.sizes()) {
    ctx.fail("cannot sum " + x.type_string() + " to shape " + ref.shape().to_string() +
             ": that shape does not broadcast to the input's");
  }
}

void register_elementwise_backward_cpu_kernels(KernelRegistry& registry) {
  registry.add("ReluGrad", DeviceType::kCpu, kFloating,
               [](const Node&) { return std::make_unique<ActivationGradKernel<ReluGradOp>>(); });
  registry.add("SigmoidGrad", DeviceType::kCpu, kFloating,
               [](const Node&) { return std::make_unique<ActivationGradKernel<SigmoidGradOp>>(); });
  registry.add("TanhGrad", DeviceType::kCpu, kFloating,
               [](const Node&) { return std::make_unique<ActivationGradKernel<TanhGradOp>>(); });
  registry.add("SumToShape", DeviceType::kCpu, kFloating,
               [](const Node&) { return std::make_unique<SumToShapeKernel>(); });
}

}  // namespace weir
