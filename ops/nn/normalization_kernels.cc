#include "ops/nn/normalization_kernels.h"

#include <cmath>
#include <memory>

#include "ops/dtype_dispatch.h"
#include "ops/nn/dnnl_layer_norm.h"
#include "ops/threading.h"

namespace weir {

NormPlan normalization_plan(const KernelContext& ctx, NormKind kind, const std::vector<int64_t>& sizes) {
  NormPlan p;
  int64_t total = 1;
  for (int64_t size : sizes) total *= size;
  if (kind == NormKind::kLayer) {
    int64_t rank = static_cast<int64_t>(sizes.size());
    int64_t axis = ctx.node().has_attr("axis") ? ctx.node().attr("axis").i() : -1;
    if (axis < -rank || axis >= rank) {
      ctx.fail("axis " + std::to_string(axis) + " is out of range for input " + format_sizes(sizes));
    }
    if (axis < 0) axis += rank;
    p.len = 1;
    for (int64_t i = axis; i < rank; ++i) p.len *= sizes[static_cast<size_t>(i)];
    p.groups = p.len == 0 ? 0 : total / p.len;
    p.per_element = true;
    p.channels = p.len;
    return p;
  }
  if (sizes.size() < 2 || (kind == NormKind::kInstance && sizes.size() < 3)) {
    ctx.fail("input has shape " + format_sizes(sizes) + "; expected [N, C, ...]");
  }
  int64_t n = sizes[0], c = sizes[1];
  int64_t plane = n * c == 0 ? 0 : total / (n * c);
  p.channels = c;
  p.len = plane;
  if (kind == NormKind::kBatch) {
    p.groups = c;
    p.rows = n;
    p.row_stride = c * plane;
  } else {
    p.groups = n * c;
  }
  return p;
}

void check_normalization_param(const KernelContext& ctx, const NormPlan& p, size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != p.num_params() || (!p.per_element && t.rank() != 1)) {
    ctx.fail(std::string(name) + " has shape " + format_sizes(t.sizes()) + "; expected " +
             std::to_string(p.num_params()) + (p.per_element ? " values, one per normalized element"
                                                            : " values, one per channel"));
  }
  if (t.dtype() != ctx.input(0).dtype()) {
    ctx.fail(std::string(name) + " is " + std::string(dtype_name(t.dtype())) + "; expected " +
             std::string(dtype_name(ctx.input(0).dtype())));
  }
}

namespace {

std::vector<double> to_double(const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.num_elements()));
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* data = t.data<T>();
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(load(data[i]));
    }
  });
  return values;
}

// Batch statistics of every group: mean and (biased) variance, two-pass.
template <typename T>
void group_stats(const NormPlan& p, const T* x, std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(static_cast<size_t>(p.groups), 0.0);
  var.assign(static_cast<size_t>(p.groups), 0.0);
  parallel_for(p.groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      double sum = 0;
      for (int64_t r = 0; r < p.rows; ++r) {
        const T* run = x + p.first(g) + r * p.row_stride;
        for (int64_t s = 0; s < p.len; ++s) sum += static_cast<double>(load(run[s]));
      }
      double m = p.count() > 0 ? sum / static_cast<double>(p.count()) : 0.0;
      double squares = 0;
      for (int64_t r = 0; r < p.rows; ++r) {
        const T* run = x + p.first(g) + r * p.row_stride;
        for (int64_t s = 0; s < p.len; ++s) {
          double d = static_cast<double>(load(run[s])) - m;
          squares += d * d;
        }
      }
      mean[static_cast<size_t>(g)] = m;
      var[static_cast<size_t>(g)] = p.count() > 0 ? squares / static_cast<double>(p.count()) : 0.0;
    }
  });
}

// y = (x - mean) * rstd * scale + bias for every group.
template <typename T>
void apply_norm(const NormPlan& p, const T* x, const std::vector<double>& mean, const std::vector<double>& rstd,
                const std::vector<double>& scale, const std::vector<double>& bias, T* y) {
  using C = ComputeType<T>;
  parallel_for(p.groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      auto m = static_cast<C>(mean[static_cast<size_t>(g)]);
      auto r = static_cast<C>(rstd[static_cast<size_t>(g)]);
      for (int64_t row = 0; row < p.rows; ++row) {
        int64_t offset = p.first(g) + row * p.row_stride;
        if (p.per_element) {
          for (int64_t s = 0; s < p.len; ++s) {
            auto k = static_cast<size_t>(s);
            y[offset + s] = store<T>((load(x[offset + s]) - m) * r * static_cast<C>(scale[k]) + static_cast<C>(bias[k]));
          }
        } else {
          auto k = static_cast<size_t>(p.param_of(g));
          C a = r * static_cast<C>(scale[k]);
          C b = static_cast<C>(bias[k]) - m * a;
          for (int64_t s = 0; s < p.len; ++s) y[offset + s] = store<T>(load(x[offset + s]) * a + b);
        }
      }
    }
  });
}

std::vector<double> reciprocal_std(const std::vector<double>& var, double epsilon) {
  std::vector<double> rstd(var.size());
  for (size_t i = 0; i < var.size(); ++i) rstd[i] = 1.0 / std::sqrt(var[i] + epsilon);
  return rstd;
}

double epsilon_of(const Node& node) { return node.has_attr("epsilon") ? node.attr("epsilon").f() : 1e-5; }
bool training_of(const Node& node) { return node.has_attr("training_mode") && node.attr("training_mode").i() != 0; }

template <typename T>
void write_values(Tensor& t, const std::vector<double>& values) {
  T* data = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
}

class NormKernel final : public OpKernel {
 public:
  NormKernel(const Node& node, NormKind kind)
      : kind_(kind), epsilon_(epsilon_of(node)), training_(training_of(node)),
        momentum_(node.has_attr("momentum") ? node.attr("momentum").f() : 0.9) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    NormPlan p = normalization_plan(ctx, kind_, x.sizes());
    check_normalization_param(ctx, p, 1, "scale");
    std::vector<double> scale = to_double(ctx.input(1));
    std::vector<double> bias(scale.size(), 0.0);
    if (ctx.has_input(2)) {
      check_normalization_param(ctx, p, 2, "B");
      bias = to_double(ctx.input(2));
    }
    std::vector<double> mean, var;
    bool batch_stats = kind_ != NormKind::kBatch || training_;
    if (!batch_stats) {
      check_normalization_param(ctx, p, 3, "input_mean");
      check_normalization_param(ctx, p, 4, "input_var");
      mean = to_double(ctx.input(3));
      var = to_double(ctx.input(4));
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (layer_norm_through_dnnl(ctx, p)) return;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        if (batch_stats) group_stats(p, x.data<T>(), mean, var);
        std::vector<double> rstd = reciprocal_std(var, epsilon_);
        apply_norm(p, x.data<T>(), mean, rstd, scale, bias, y.data<T>());
        write_statistics<T>(ctx, mean, var, rstd);
      }
    });
  }

 private:
  // f32 LayerNormalization with parameters of the normalized size runs
  // oneDNN's kernel (its statistics are f32, not the loops' f64). Returns
  // false where it does not apply.
  bool layer_norm_through_dnnl(KernelContext& ctx, const NormPlan& p) {
    const Tensor& x = ctx.input(0);
    auto f32_params = [&](size_t index) {
      return ctx.input(index).dtype() == DType::kFloat32 && ctx.input(index).num_elements() == p.len;
    };
    if (kind_ != NormKind::kLayer || x.dtype() != DType::kFloat32 || p.groups * p.len == 0 || !f32_params(1) ||
        (ctx.has_input(2) && !f32_params(2))) {
      return false;
    }
    std::vector<float> mean, variance;
    bool statistics = ctx.num_outputs() > 1;
    if (statistics) {
      mean.resize(static_cast<size_t>(p.groups));
      variance.resize(mean.size());
    }
    dnnl_layer_norm_.forward(p.groups, p.len, static_cast<float>(epsilon_), x.data<float>(), ctx.input(1).data<float>(),
                             ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr, ctx.output(0).data<float>(),
                             statistics ? mean.data() : nullptr, statistics ? variance.data() : nullptr);
    if (statistics) {
      std::vector<double> mean64(mean.begin(), mean.end()), var64(variance.begin(), variance.end());
      write_statistics<float>(ctx, mean64, var64, reciprocal_std(var64, epsilon_));
    }
    return true;
  }

  template <typename T>
  void write_statistics(KernelContext& ctx, const std::vector<double>& mean, const std::vector<double>& var,
                        const std::vector<double>& rstd) {
    if (kind_ == NormKind::kBatch) {
      // running = running * momentum + batch * (1 - momentum); outside training, the inputs pass through.
      for (size_t out = 1; out < ctx.num_outputs() && out < 3; ++out) {
        const Tensor& running = ctx.input(out + 2);
        std::vector<double> values = to_double(running);
        const std::vector<double>& batch = out == 1 ? mean : var;
        if (training_) {
          for (size_t i = 0; i < values.size(); ++i) values[i] = values[i] * momentum_ + batch[i] * (1 - momentum_);
        }
        Tensor& t = ctx.allocate_output(out, running.dtype(), running.sizes(), KernelContext::Fill::kUninitialized);
        write_values<T>(t, values);
      }
      return;
    }
    if (kind_ != NormKind::kLayer || ctx.num_outputs() < 2) return;
    // Mean and InvStdDev: X's leading axes, then 1s; f32 (f64 for f64 input).
    const Tensor& x = ctx.input(0);
    int64_t rank = x.rank();
    int64_t axis = ctx.node().has_attr("axis") ? ctx.node().attr("axis").i() : -1;
    if (axis < 0) axis += rank;
    std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().begin() + axis);
    sizes.resize(static_cast<size_t>(rank), 1);
    DType stat_type = x.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    for (size_t out = 1; out < ctx.num_outputs() && out < 3; ++out) {
      Tensor& t = ctx.allocate_output(out, stat_type, sizes, KernelContext::Fill::kUninitialized);
      const std::vector<double>& values = out == 1 ? mean : rstd;
      if (stat_type == DType::kFloat64) {
        write_values<double>(t, values);
      } else {
        write_values<float>(t, values);
      }
    }
  }

  NormKind kind_;
  double epsilon_;
  bool training_;
  double momentum_;
  DnnlLayerNorm dnnl_layer_norm_;
};

// (dY, X, scale[, mean, var]) -> (dX, dScale, dB).
class NormGradKernel final : public OpKernel {
 public:
  NormGradKernel(const Node& node, NormKind kind)
      : kind_(kind), epsilon_(epsilon_of(node)), training_(training_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.sizes() != x.sizes()) {
      ctx.fail("dY has shape " + format_sizes(dy.sizes()) + " but X has " + format_sizes(x.sizes()));
    }
    NormPlan p = normalization_plan(ctx, kind_, x.sizes());
    std::vector<double> scale = to_double(ctx.input(2));
    if (static_cast<int64_t>(scale.size()) != p.num_params()) {
      ctx.fail("scale has " + std::to_string(scale.size()) + " values; expected " + std::to_string(p.num_params()));
    }
    bool batch_stats = kind_ != NormKind::kBatch || training_;
    std::vector<double> mean, var;
    if (!batch_stats) {
      mean = to_double(ctx.input(3));
      var = to_double(ctx.input(4));
    }
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dscale = ctx.allocate_output(1, ctx.input(2).dtype(), ctx.input(2).sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dbias = ctx.allocate_output(2, ctx.input(2).dtype(), ctx.input(2).sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        if (batch_stats) group_stats(p, x.data<T>(), mean, var);
        std::vector<double> rstd = reciprocal_std(var, epsilon_);
        backward<T>(p, dy.data<T>(), x.data<T>(), mean, rstd, scale, batch_stats, dx.data<T>(), dscale, dbias);
      }
    });
  }

 private:
  // Per group: dxhat = dy * scale; with batch statistics
  // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), else dx = rstd * dxhat.
  // dScale = sum(dy * xhat) and dB = sum(dy) over the elements each parameter touches,
  // from per-group partials reduced in group order.
  template <typename T>
  void backward(const NormPlan& p, const T* dy, const T* x, const std::vector<double>& mean,
                const std::vector<double>& rstd, const std::vector<double>& scale, bool batch_stats, T* dx,
                Tensor& dscale, Tensor& dbias) {
    int64_t width = p.per_element ? p.len : 1;
    std::vector<double> partial_scale(static_cast<size_t>(p.groups * width)), partial_bias(partial_scale.size());
    parallel_for(p.groups, 1, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        double m = mean[static_cast<size_t>(g)], r = rstd[static_cast<size_t>(g)];
        double sum_dxhat = 0, sum_dxhat_xhat = 0;
        double* ps = partial_scale.data() + g * width;
        double* pb = partial_bias.data() + g * width;
        for (int64_t row = 0; row < p.rows; ++row) {
          int64_t offset = p.first(g) + row * p.row_stride;
          for (int64_t s = 0; s < p.len; ++s) {
            double xhat = (static_cast<double>(load(x[offset + s])) - m) * r;
            double grad = static_cast<double>(load(dy[offset + s]));
            int64_t k = p.per_element ? s : p.param_of(g);
            double dxhat = grad * scale[static_cast<size_t>(k)];
            sum_dxhat += dxhat;
            sum_dxhat_xhat += dxhat * xhat;
            ps[p.per_element ? s : 0] += grad * xhat;
            pb[p.per_element ? s : 0] += grad;
          }
        }
        double n = static_cast<double>(p.count());
        double mean_dxhat = batch_stats && n > 0 ? sum_dxhat / n : 0.0;
        double mean_dxhat_xhat = batch_stats && n > 0 ? sum_dxhat_xhat / n : 0.0;
        for (int64_t row = 0; row < p.rows; ++row) {
          int64_t offset = p.first(g) + row * p.row_stride;
          for (int64_t s = 0; s < p.len; ++s) {
            double xhat = (static_cast<double>(load(x[offset + s])) - m) * r;
            int64_t k = p.per_element ? s : p.param_of(g);
            double dxhat = static_cast<double>(load(dy[offset + s])) * scale[static_cast<size_t>(k)];
            dx[offset + s] = store<T>(static_cast<ComputeType<T>>(r * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat)));
          }
        }
      }
    });
    std::vector<double> total_scale(static_cast<size_t>(p.num_params())), total_bias(total_scale.size());
    for (int64_t g = 0; g < p.groups; ++g) {
      for (int64_t s = 0; s < width; ++s) {
        auto k = static_cast<size_t>(p.per_element ? s : p.param_of(g));
        total_scale[k] += partial_scale[static_cast<size_t>(g * width + s)];
        total_bias[k] += partial_bias[static_cast<size_t>(g * width + s)];
      }
    }
    dispatch_dtype(dscale.dtype(), [&]<typename P>() {
      if constexpr (!std::is_same_v<P, bool>) {
        write_values<P>(dscale, total_scale);
        write_values<P>(dbias, total_bias);
      }
    });
  }

  NormKind kind_;
  double epsilon_;
  bool training_;
};

}  // namespace

void register_normalization_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  auto add = [&](const char* op, const char* grad_op, NormKind kind) {
    registry.add(op, DeviceType::kCpu, types, [kind](const Node& node) { return std::make_unique<NormKernel>(node, kind); });
    registry.add(grad_op, DeviceType::kCpu, types,
                 [kind](const Node& node) { return std::make_unique<NormGradKernel>(node, kind); });
  };
  add("BatchNormalization", "BatchNormGrad", NormKind::kBatch);
  add("LayerNormalization", "LayerNormGrad", NormKind::kLayer);
  add("InstanceNormalization", "InstanceNormGrad", NormKind::kInstance);
}

}  // namespace weir
