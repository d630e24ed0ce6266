#include "ops/elementwise/unary_kernels.h"

#include <cmath>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/elementwise/half_bits.h"
#include "ops/elementwise/scalar_ops.h"
#include "ops/threading.h"

namespace weir {

namespace {

using elementwise::AbsOp;
using elementwise::ExpOp;
using elementwise::LogOp;
using elementwise::NegOp;
using elementwise::ReluOp;
using elementwise::SigmoidOp;
using elementwise::SignOp;
using elementwise::SqrtOp;
using elementwise::TanhOp;

template <typename Op>
class UnaryKernel final : public OpKernel {
 public:
  explicit UnaryKernel(const Node& node) : dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != dtype_) {
      ctx.fail("input is " + std::string(dtype_name(x.dtype())) + "; this kernel was built for " +
               std::string(dtype_name(dtype_)));
    }
    Tensor& y = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(dtype_, [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool is not an arithmetic type");
      } else {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        if constexpr (std::is_same_v<Op, ReluOp> && sizeof(T) == 2 && std::is_floating_point_v<ComputeType<T>>) {
          // bf16/f16 Relu selects the input or zero: no rounding back needed.
          const auto* bits = reinterpret_cast<const uint16_t*>(in);
          auto* result = reinterpret_cast<uint16_t*>(out);
          parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) result[i] = static_cast<uint16_t>(bits[i] & positive_mask<T>(bits[i]));
          });
          return;
        }
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[i] = store<T>(Op::apply(load(in[i])));
        });
      }
    });
  }

 private:
  DType dtype_;
};

template <typename Op>
KernelFactory factory() {
  return [](const Node& node) { return std::make_unique<UnaryKernel<Op>>(node); };
}

}  // namespace

void register_unary_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> floating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  const std::vector<DType> numeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                      DType::kInt64};
  registry.add("Neg", DeviceType::kCpu, numeric, factory<NegOp>());
  registry.add("Relu", DeviceType::kCpu, numeric, factory<ReluOp>());
  registry.add("Sigmoid", DeviceType::kCpu, floating, factory<SigmoidOp>());
  registry.add("Tanh", DeviceType::kCpu, floating, factory<TanhOp>());
  registry.add("Exp", DeviceType::kCpu, floating, factory<ExpOp>());
  registry.add("Log", DeviceType::kCpu, floating, factory<LogOp>());
  registry.add("Sqrt", DeviceType::kCpu, floating, factory<SqrtOp>());
  registry.add("Abs", DeviceType::kCpu, numeric, factory<AbsOp>());
  registry.add("Sign", DeviceType::kCpu, numeric, factory<SignOp>());
}

}  // namespace weir
