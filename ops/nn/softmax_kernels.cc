#include "ops/nn/softmax_kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/nn/dnnl_softmax.h"

namespace weir {

namespace {

int64_t axis_of(const Node& node) { return node.has_attr("axis") ? node.attr("axis").i() : -1; }

template <bool kLog>
class SoftmaxKernel final : public OpKernel {
 public:
  explicit SoftmaxKernel(const Node& node) : axis_(axis_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    AxisSplit split = split_at(ctx, x.sizes(), axis_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (DnnlSoftmax::supports(x.dtype(), split)) {
      dnnl_.forward(x.dtype(), split, kLog, x.raw_data(), y.raw_data());
      return;
    }
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        using C = ComputeType<T>;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        for_each_line(split, [&](int64_t base, int64_t stride) {
          C max = -std::numeric_limits<C>::infinity();
          for (int64_t j = 0; j < split.n; ++j) max = std::max(max, load(in[base + j * stride]));
          C sum = 0;
          for (int64_t j = 0; j < split.n; ++j) sum += std::exp(load(in[base + j * stride]) - max);
          if constexpr (kLog) {
            C log_sum = std::log(sum);
            for (int64_t j = 0; j < split.n; ++j) out[base + j * stride] = store<T>(load(in[base + j * stride]) - max - log_sum);
          } else {
            for (int64_t j = 0; j < split.n; ++j) out[base + j * stride] = store<T>(std::exp(load(in[base + j * stride]) - max) / sum);
          }
        });
      } else {
        ctx.fail("needs a floating-point input, got " + x.type_string());
      }
    });
  }

 private:
  int64_t axis_;
  DnnlSoftmax dnnl_;
};

// SoftmaxGrad: dX = Y (dY - sum(dY Y)); LogSoftmaxGrad: dX = dY - exp(Y) sum(dY).
template <bool kLog>
class SoftmaxGradKernel final : public OpKernel {
 public:
  explicit SoftmaxGradKernel(const Node& node) : axis_(axis_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    AxisSplit split = softmax_grad_split(ctx, dy, y, axis_);
    Tensor& dx = ctx.allocate_output(0, y.dtype(), y.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(y.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        using C = ComputeType<T>;
        const T* g = dy.data<T>();
        const T* out = y.data<T>();
        T* result = dx.data<T>();
        for_each_line(split, [&](int64_t base, int64_t stride) {
          C dot = 0;
          for (int64_t j = 0; j < split.n; ++j) {
            int64_t at = base + j * stride;
            dot += kLog ? load(g[at]) : load(g[at]) * load(out[at]);
          }
          for (int64_t j = 0; j < split.n; ++j) {
            int64_t at = base + j * stride;
            C value = kLog ? load(g[at]) - std::exp(load(out[at])) * dot : load(out[at]) * (load(g[at]) - dot);
            result[at] = store<T>(value);
          }
        });
      } else {
        ctx.fail("needs a floating-point input, got " + y.type_string());
      }
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

AxisSplit softmax_grad_split(const KernelContext& ctx, const Tensor& dy, const Tensor& y, int64_t axis) {
  if (dy.dtype() != y.dtype() || dy.sizes() != y.sizes()) {
    ctx.fail("dY " + dy.type_string() + " and Y " + y.type_string() + " must have the same type");
  }
  return split_at(ctx, y.sizes(), axis);
}

void register_softmax_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> floating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  registry.add("Softmax", DeviceType::kCpu, floating, [](const Node& n) { return std::make_unique<SoftmaxKernel<false>>(n); });
  registry.add("LogSoftmax", DeviceType::kCpu, floating, [](const Node& n) { return std::make_unique<SoftmaxKernel<true>>(n); });
  registry.add("SoftmaxGrad", DeviceType::kCpu, floating,
               [](const Node& n) { return std::make_unique<SoftmaxGradKernel<false>>(n); });
  registry.add("LogSoftmaxGrad", DeviceType::kCpu, floating,
               [](const Node& n) { return std::make_unique<SoftmaxGradKernel<true>>(n); });
}

}  // namespace weir
