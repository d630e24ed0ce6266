#include "ops/optimizer/optimizer_kernels.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "ops/dtype_dispatch.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/scalar_input.h"
#include "ops/threading.h"

namespace weir {

namespace {

enum class Rule { kSgd, kMomentum, kAdagrad, kAdam, kAdamW, kLamb };

class UpdateKernel final : public OpKernel {
 public:
  UpdateKernel(const Node& node, Rule rule)
      : rule_(rule),
        weight_decay_(float_attr(node, "weight_decay", 0.0)),
        momentum_(float_attr(node, "momentum", 0.9)),
        nesterov_(node.has_attr("nesterov") && node.attr("nesterov").i() != 0),
        beta1_(float_attr(node, "beta1", 0.9)),
        beta2_(float_attr(node, "beta2", 0.999)),
        epsilon_(float_attr(node, "epsilon", rule == Rule::kLamb || rule == Rule::kAdagrad ? 1e-6 : 1e-8)) {}

  void compute(KernelContext& ctx) override {
    size_t num_state = rule_ == Rule::kSgd ? 0 : (rule_ == Rule::kMomentum || rule_ == Rule::kAdagrad ? 1 : 2);
    const Tensor& param = ctx.input(0);
    check_update_inputs(ctx, num_state);
    const size_t skip_index = update_skip_index(num_state);
    if (ctx.num_inputs() > skip_index) {
      const Tensor& skip = ctx.input(skip_index);
      check_skip_flag(ctx, skip);
      if (skip.data<bool>()[0]) {  // an overflowed step: everything stays as it was
        ctx.set_output(0, param);
        for (size_t i = 0; i < num_state && i + 1 < ctx.num_outputs(); ++i) ctx.set_output(1 + i, ctx.input(2 + i));
        return;
      }
    }
    double lr = scalar_input(ctx, 2 + num_state, "lr");
    double step = num_state == 2 ? scalar_input(ctx, 5, "step") : 1;
    if (num_state == 2 && step < 1) ctx.fail("step must be at least 1 (it counts from 1), got " + std::to_string(step));
    dispatch_dtype(param.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        T* p = param.data<T>();
        const T* g = ctx.input(1).data<T>();
        T* s0 = num_state > 0 ? ctx.input(2).data<T>() : nullptr;
        T* s1 = num_state > 1 ? ctx.input(3).data<T>() : nullptr;
        apply<T>(p, g, s0, s1, param.num_elements(), lr, step);
      } else {
        ctx.fail("parameters must be f32 or f64, got " + param.type_string());
      }
    });
    // Outputs alias the updated inputs.
    ctx.set_output(0, param);
    for (size_t i = 0; i < num_state && i + 1 < ctx.num_outputs(); ++i) ctx.set_output(1 + i, ctx.input(2 + i));
  }

 private:
  template <typename T>
  void apply(T* p, const T* g, T* s0, T* s1, int64_t n, double lr, double step) const {
    const double wd = weight_decay_, mu = momentum_, b1 = beta1_, b2 = beta2_, eps = epsilon_;
    switch (rule_) {
      case Rule::kSgd:
        parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) p[i] -= static_cast<T>(lr * (g[i] + wd * p[i]));
        });
        return;
      case Rule::kMomentum:
        parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            double grad = g[i] + wd * p[i];
            double v = mu * s0[i] + grad;
            s0[i] = static_cast<T>(v);
            p[i] -= static_cast<T>(lr * (nesterov_ ? grad + mu * v : v));
          }
        });
        return;
      case Rule::kAdagrad:
        // Duchi et al.'s diagonal rule as Paddle writes it: the accumulator
        // holds the sum of squared gradients, epsilon outside the root.
        parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            double grad = g[i] + wd * p[i];
            double sum = s0[i] + grad * grad;
            s0[i] = static_cast<T>(sum);
            p[i] -= static_cast<T>(lr * grad / (std::sqrt(sum) + eps));
          }
        });
        return;
      default: break;
    }
    // The Adam family: moments, bias correction, then the rule's step.
    const double c1 = 1 - std::pow(b1, step), c2 = 1 - std::pow(b2, step);
    const bool l2 = rule_ == Rule::kAdam;
    auto moment_update = [&](int64_t i) {
      double grad = g[i] + (l2 ? wd * p[i] : 0.0);
      double m = b1 * s0[i] + (1 - b1) * grad;
      double v = b2 * s1[i] + (1 - b2) * grad * grad;
      s0[i] = static_cast<T>(m);
      s1[i] = static_cast<T>(v);
      double update = (m / c1) / (std::sqrt(v / c2) + eps);
      return l2 ? update : update + wd * p[i];
    };
    if (rule_ != Rule::kLamb) {
      // In the parameter's own precision with the bias corrections folded
      // into constants: a loop without double divisions or square roots,
      // which the compiler vectorizes (this is a quarter of a LeNet step).
      const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2), one_b1 = static_cast<T>(1 - b1),
              one_b2 = static_cast<T>(1 - b2), teps = static_cast<T>(eps), twd = static_cast<T>(wd);
      const T step_size = static_cast<T>(lr / c1), inv_sqrt_c2 = static_cast<T>(1 / std::sqrt(c2)),
              decoupled = static_cast<T>(l2 ? 0.0 : lr * wd), coupled = l2 ? twd : T(0);
      parallel_for(n, kElementwiseGrain, [=](int64_t begin, int64_t end) {
        // Locals and restrict pointers (compute() checked the buffers are
        // distinct): nothing the loop stores can alias what it reads, so it
        // vectorizes instead of reloading every constant per element.
        T* __restrict pp = p;
        const T* __restrict gg = g;
        T* __restrict mm = s0;
        T* __restrict vv = s1;
        const T k_b1 = tb1, k_b2 = tb2, k_1b1 = one_b1, k_1b2 = one_b2, k_eps = teps, k_step = step_size,
                k_c2 = inv_sqrt_c2, k_dec = decoupled, k_cpl = coupled;
        for (int64_t i = begin; i < end; ++i) {
          T grad = gg[i] + k_cpl * pp[i];
          T m = k_b1 * mm[i] + k_1b1 * grad;
          T v = k_b2 * vv[i] + k_1b2 * grad * grad;
          mm[i] = m;
          vv[i] = v;
          pp[i] -= k_step * m / (std::sqrt(v) * k_c2 + k_eps) + k_dec * pp[i];
        }
      });
      return;
    }
    // LAMB needs both norms before any parameter moves: keep the updates.
    std::vector<double> updates(static_cast<size_t>(n));
    double param_norm = 0, update_norm = 0;
    for (int64_t i = 0; i < n; ++i) {
      updates[static_cast<size_t>(i)] = moment_update(i);
      param_norm += static_cast<double>(p[i]) * static_cast<double>(p[i]);
      update_norm += updates[static_cast<size_t>(i)] * updates[static_cast<size_t>(i)];
    }
    param_norm = std::sqrt(param_norm);
    update_norm = std::sqrt(update_norm);
    double trust = param_norm > 0 && update_norm > 0 ? param_norm / update_norm : 1.0;
    for (int64_t i = 0; i < n; ++i) p[i] -= static_cast<T>(lr * trust * updates[static_cast<size_t>(i)]);
  }

  Rule rule_;
  double weight_decay_, momentum_;
  bool nesterov_;
  double beta1_, beta2_, epsilon_;
};

class ClipByGlobalNormKernel final : public OpKernel {
 public:
  explicit ClipByGlobalNormKernel(const Node& node) : max_norm_(node.attr("max_norm").f()) {}

  void compute(KernelContext& ctx) override {
    if (ctx.num_outputs() != ctx.num_inputs() + 1) {
      ctx.fail("needs one output per gradient plus the norm");
    }
    double squares = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& grad = ctx.input(i);
      dispatch_dtype(grad.dtype(), [&]<typename T>() {
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          const T* data = grad.data<T>();
          for (int64_t k = 0; k < grad.num_elements(); ++k) {
            double v = static_cast<double>(load(data[k]));
            squares += v * v;
          }
        } else {
          ctx.fail("gradient " + std::to_string(i) + " is " + grad.type_string() + "; expected a float type");
        }
      });
    }
    double norm = std::sqrt(squares);
    double scale = norm > max_norm_ ? max_norm_ / norm : 1.0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& grad = ctx.input(i);
      if (scale == 1.0) {
        ctx.set_output(i, grad);
        continue;
      }
      Tensor& out = ctx.allocate_output(i, grad.dtype(), grad.sizes(), KernelContext::Fill::kUninitialized);
      dispatch_dtype(grad.dtype(), [&]<typename T>() {
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          const T* in = grad.data<T>();
          T* o = out.data<T>();
          for (int64_t k = 0; k < grad.num_elements(); ++k) o[k] = store<T>(static_cast<ComputeType<T>>(load(in[k]) * scale));
        }
      });
    }
    // The norm has the gradients' type (the schema's outputs share T).
    Tensor& norm_out = ctx.allocate_output(ctx.num_inputs(), ctx.input(0).dtype(), {});
    dispatch_dtype(norm_out.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) norm_out.data<T>()[0] = store<T>(static_cast<ComputeType<T>>(norm));
    });
  }

 private:
  double max_norm_;
};

}  // namespace

// Assign(target, value): target's memory gets value's bytes.
class AssignKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& target = ctx.input(0);
    const Tensor& value = ctx.input(1);
    check_assign(ctx, target, value);
    if (target.raw_data() != value.raw_data()) std::memcpy(target.raw_data(), value.raw_data(), value.nbytes());
    ctx.set_output(0, target);
  }
};

void check_update_inputs(const KernelContext& ctx, size_t num_state) {
  const Tensor& param = ctx.input(0);
  for (size_t i = 1; i < 2 + num_state; ++i) {
    const Tensor& other = ctx.input(i);
    if (other.dtype() != param.dtype() || other.sizes() != param.sizes()) {
      ctx.fail("input " + std::to_string(i) + " is " + other.type_string() + "; the parameter is " + param.type_string());
    }
  }
  for (size_t i = 0; i < 2 + num_state; ++i) {
    for (size_t j = i + 1; j < 2 + num_state; ++j) {
      const char* a = static_cast<const char*>(ctx.input(i).raw_data());
      const char* b = static_cast<const char*>(ctx.input(j).raw_data());
      if (a < b + ctx.input(j).nbytes() && b < a + ctx.input(i).nbytes()) {
        ctx.fail("inputs " + std::to_string(i) + " and " + std::to_string(j) + " share memory; the parameter, its "
                 "gradient and its state must be distinct tensors");
      }
    }
  }
}

size_t update_skip_index(size_t num_state) { return 3 + num_state + (num_state == 2 ? 1 : 0); }

void check_skip_flag(const KernelContext& ctx, const Tensor& flag) {
  if (flag.dtype() != DType::kBool || flag.num_elements() != 1) ctx.fail("skip must be a bool scalar, got " + flag.type_string());
}

void check_assign(const KernelContext& ctx, const Tensor& target, const Tensor& value) {
  if (target.dtype() != value.dtype() || target.sizes() != value.sizes()) {
    ctx.fail("value " + value.type_string() + " does not match the target " + target.type_string());
  }
}

void register_optimizer_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64};
  auto add = [&](const char* op, Rule rule) {
    registry.add(op, DeviceType::kCpu, types, [rule](const Node& node) { return std::make_unique<UpdateKernel>(node, rule); });
  };
  add("SGD", Rule::kSgd);
  add("Momentum", Rule::kMomentum);
  add("Adagrad", Rule::kAdagrad);
  add("Adam", Rule::kAdam);
  add("AdamW", Rule::kAdamW);
  add("LAMB", Rule::kLamb);
  registry.add("Assign", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16},
               [](const Node&) { return std::make_unique<AssignKernel>(); });
  registry.add("ClipByGlobalNorm", DeviceType::kCpu,
               {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16},
               [](const Node& node) { return std::make_unique<ClipByGlobalNormKernel>(node); });
}

}  // namespace weir
