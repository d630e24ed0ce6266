#include "ops/elementwise/activation_kernels.h"

#include <limits>
#include <memory>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/elementwise/activation_functions.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

template <typename Function>
class ActivationKernel final : public OpKernel {
 public:
  explicit ActivationKernel(const Node& node) : f_(node), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_activation_dtype(ctx, x, dtype_);
    Tensor& y = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(dtype_, [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[i] = store<T>(f_.value(load(in[i])));
        });
      }
    });
  }

 private:
  Function f_;
  DType dtype_;
};

// <Op>Grad(dY, X) = dY * f'(X).
template <typename Function>
class ActivationGradKernel final : public OpKernel {
 public:
  explicit ActivationGradKernel(const Node& node) : f_(node), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    check_activation_grad(ctx, dy, x, dtype_);
    Tensor& dx = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(dtype_, [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* g = dy.data<T>();
        const T* in = x.data<T>();
        T* out = dx.data<T>();
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[i] = store<T>(load(g[i]) * f_.derivative(load(in[i])));
        });
      }
    });
  }

 private:
  Function f_;
  DType dtype_;
};

// Reads Clip's optional scalar bounds (inputs 1 and 2 of Clip; 2 and 3 of ClipGrad).
template <typename C, typename T>
std::pair<C, C> clip_bounds(const KernelContext& ctx, size_t first) {
  C low = std::numeric_limits<C>::lowest(), high = std::numeric_limits<C>::max();
  if constexpr (std::is_floating_point_v<C>) {
    low = -std::numeric_limits<C>::infinity();
    high = std::numeric_limits<C>::infinity();
  }
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_input(first + k)) continue;
    const Tensor& bound = ctx.input(first + k);
    if (bound.num_elements() != 1 || bound.dtype() != ctx.input(0).dtype()) {
      ctx.fail(std::string(k == 0 ? "min" : "max") + " must be a scalar of the input's dtype, got " + bound.type_string());
    }
    (k == 0 ? low : high) = load(bound.data<T>()[0]);
  }
  return {low, high};
}

class ClipKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        using C = ComputeType<T>;
        // Plain variables, not a structured binding: lambdas capture those
        // only from C++20 compilers that implement P1091 (clang 16+).
        const auto bounds = clip_bounds<C, T>(ctx, 1);
        const C low = bounds.first, high = bounds.second;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            C v = load(in[i]);
            // NaN stays NaN: the comparisons are false for it.
            out[i] = store<T>(v < low ? low : (v > high ? high : v));
          }
        });
      }
    });
  }
};

// ClipGrad(dY, X, min, max) = dY where min <= X <= max, else 0.
class ClipGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    check_clip_grad(ctx, dy, x);
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        using C = ComputeType<T>;
        auto [low, high] = clip_bounds<C, T>(ctx, 2);
        const T* g = dy.data<T>();
        const T* in = x.data<T>();
        T* out = dx.data<T>();
        for (int64_t i = 0; i < x.num_elements(); ++i) {
          C v = load(in[i]);
          out[i] = v >= low && v <= high ? g[i] : store<T>(C(0));
        }
      }
    });
  }
};

// IsNaN (detect = kNaN) and IsInf (with detect_negative / detect_positive).
class FloatClassKernel final : public OpKernel {
 public:
  FloatClassKernel(const Node& node, bool nan)
      : nan_(nan),
        negative_(!node.has_attr("detect_negative") || node.attr("detect_negative").i() != 0),
        positive_(!node.has_attr("detect_positive") || node.attr("detect_positive").i() != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        bool* out = y.data<bool>();
        for (int64_t i = 0; i < x.num_elements(); ++i) {
          auto v = load(in[i]);
          out[i] = nan_ ? std::isnan(v) : (std::isinf(v) && ((v > 0 && positive_) || (v < 0 && negative_)));
        }
      } else {
        ctx.fail("needs a floating-point input, got " + x.type_string());
      }
    });
  }

 private:
  bool nan_, negative_, positive_;
};

template <typename Function>
void add_activation(KernelRegistry& registry, const std::string& name) {
  registry.add(name, DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<ActivationKernel<Function>>(node); });
  registry.add(name + "Grad", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<ActivationGradKernel<Function>>(node); });
}

}  // namespace

void check_activation_dtype(const KernelContext& ctx, const Tensor& t, DType dtype) {
  if (t.dtype() != dtype) {
    ctx.fail("input is " + t.type_string() + "; this kernel was built for " + std::string(dtype_name(dtype)));
  }
}

void check_activation_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x, DType dtype) {
  check_activation_dtype(ctx, dy, dtype);
  check_activation_dtype(ctx, x, dtype);
  if (dy.sizes() != x.sizes()) ctx.fail("dY " + dy.type_string() + " and X " + x.type_string() + " differ in shape");
}

void check_clip_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x) {
  if (dy.sizes() != x.sizes() || dy.dtype() != x.dtype()) {
    ctx.fail("dY " + dy.type_string() + " and X " + x.type_string() + " differ");
  }
}

void register_activation_cpu_kernels(KernelRegistry& registry) {
  add_activation<LeakyReluFunction>(registry, "LeakyRelu");
  add_activation<EluFunction>(registry, "Elu");
  add_activation<SeluFunction>(registry, "Selu");
  add_activation<GeluFunction>(registry, "Gelu");
  add_activation<ErfFunction>(registry, "Erf");
  add_activation<SoftplusFunction>(registry, "Softplus");
  add_activation<SoftsignFunction>(registry, "Softsign");
  add_activation<HardSigmoidFunction>(registry, "HardSigmoid");
  add_activation<HardSwishFunction>(registry, "HardSwish");
  add_activation<SinFunction>(registry, "Sin");
  add_activation<CosFunction>(registry, "Cos");
  add_activation<ReciprocalFunction>(registry, "Reciprocal");
  add_activation<TanFunction>(registry, "Tan");
  add_activation<AsinFunction>(registry, "Asin");
  add_activation<AcosFunction>(registry, "Acos");
  add_activation<AtanFunction>(registry, "Atan");
  add_activation<SinhFunction>(registry, "Sinh");
  add_activation<CoshFunction>(registry, "Cosh");
  add_activation<AsinhFunction>(registry, "Asinh");
  add_activation<AcoshFunction>(registry, "Acosh");
  add_activation<AtanhFunction>(registry, "Atanh");
  add_activation<ThresholdedReluFunction>(registry, "ThresholdedRelu");
  add_activation<ShrinkFunction>(registry, "Shrink");
  add_activation<CeluFunction>(registry, "Celu");
  for (const char* flat : {"Floor", "Ceil", "Round"}) {
    registry.add(flat, DeviceType::kCpu, kFloating, [flat](const Node& node) -> std::unique_ptr<OpKernel> {
      std::string op = flat;
      if (op == "Floor") return std::make_unique<ActivationKernel<FloorFunction>>(node);
      if (op == "Ceil") return std::make_unique<ActivationKernel<CeilFunction>>(node);
      return std::make_unique<ActivationKernel<RoundFunction>>(node);
    });
  }
  const std::vector<DType> numeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                      DType::kInt64};
  registry.add("Clip", DeviceType::kCpu, numeric, [](const Node&) { return std::make_unique<ClipKernel>(); });
  registry.add("ClipGrad", DeviceType::kCpu, kFloating, [](const Node&) { return std::make_unique<ClipGradKernel>(); });
  registry.add("IsNaN", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<FloatClassKernel>(node, true); });
  registry.add("IsInf", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<FloatClassKernel>(node, false); });
}

}  // namespace weir
