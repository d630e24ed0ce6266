#include "ops/elementwise/unary_kernels.h"

#include <cmath>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/threading.h"

namespace weir {

namespace {

struct NegOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_integral_v<C>) {
      using Wide = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
      return static_cast<C>(Wide(0) - static_cast<Wide>(x));  // wraps, as integer Sub does
    } else {
      return -x;
    }
  }
};
struct ReluOp {
  template <typename C> static C apply(C x) { return x > C(0) ? x : C(0); }
};
struct SigmoidOp {
  template <typename C> static C apply(C x) {
    // Two branches so exp() never overflows: for x < 0 use e^x / (1 + e^x).
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  }
};
struct TanhOp {
  template <typename C> static C apply(C x) { return std::tanh(x); }
};
struct ExpOp {
  template <typename C> static C apply(C x) { return std::exp(x); }
};
struct LogOp {
  template <typename C> static C apply(C x) { return std::log(x); }
};
struct SqrtOp {
  template <typename C> static C apply(C x) { return std::sqrt(x); }
};
struct AbsOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? NegOp::apply(x) : x;  // integer minimum wraps to itself, as in NumPy
  }
};
struct SignOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? C(1) : (x < C(0) ? C(0) - C(1) : C(0));
  }
};

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
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[i] = store<T>(Op::apply(load(in[i])));
        });
      }
    });
  }

 private:
  DType dtype_;
};

// Identity shares the input's storage: the output is a view, no copy.
class IdentityKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override { ctx.set_output(0, ctx.input(0)); }
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
  registry.add("Identity", DeviceType::kCpu, {std::begin(kAllDTypes), std::end(kAllDTypes)},
               [](const Node&) { return std::make_unique<IdentityKernel>(); });
}

}  // namespace weir
