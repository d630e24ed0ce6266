#include "ops/nn/conv_kernels.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>

#include "core/half.h"
#include "ops/cast/cast.h"
#include "ops/dtype_dispatch.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/dnnl_conv.h"
#include "ops/threading.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

Tensor widen(const Tensor& t) {
  Tensor wide = Tensor::uninitialized(DType::kFloat32, t.sizes());
  cast_elements(t.dtype(), t.raw_data(), DType::kFloat32, wide.raw_data(), t.num_elements());
  return wide;
}

// Applies `activation` to every element of `y`, in place.
void apply_activation(Tensor& y, const FusedActivation& activation) {
  if (activation.none()) return;
  dispatch_dtype(y.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* v = y.data<T>();
      for (int64_t i = 0; i < y.num_elements(); ++i) v[i] = store<T>(activation.apply(load(v[i])));
    }
  });
}

// Runs one direction of `p`: forward (a = in, b = weight), backward data
// (a = d_out, b = weight) or backward weights (a = d_out, b = in), writing
// `out`. `options` (forward only): the fused activation, channels-last data
// (oneDNN dtypes only: callers check) and constant weights.
// `addend` (options.sum): added before the activation. `out` has a's dtype,
// or f32 for backward weights from bf16/f16 (a wide output).
void run_direction(DnnlConv& dnnl, ConvDirection direction, const ConvProblem& p, const Tensor& a, const Tensor& b,
                   const Tensor* bias, Tensor& out, const ConvForwardOptions& options = {},
                   const Tensor* addend = nullptr) {
  DType dtype = a.dtype();
  if (out.dtype() != dtype && direction != ConvDirection::kBackwardWeights) {
    throw Error(ErrorKind::kInternal, "only a convolution's weight gradient may be wider than its inputs");
  }
  if (DnnlConv::supports(dtype)) {
    const void* bias_data = bias != nullptr ? bias->raw_data() : nullptr;
    switch (direction) {
      case ConvDirection::kForward:
        dnnl.forward(dtype, p, a.raw_data(), b.raw_data(), bias_data, out.raw_data(), options,
                     addend != nullptr ? addend->raw_data() : nullptr);
        return;
      case ConvDirection::kBackwardData: dnnl.backward_data(dtype, p, a.raw_data(), b.raw_data(), out.raw_data()); return;
      case ConvDirection::kBackwardWeights:
        dnnl.backward_weights(dtype, p, a.raw_data(), b.raw_data(), out.raw_data(), out.dtype());
        return;
    }
  }
  if (dtype == DType::kFloat16) {
    Tensor wide_bias = bias != nullptr ? widen(*bias) : Tensor();
    const bool narrow = out.dtype() == DType::kFloat16;
    Tensor wide_out = narrow ? Tensor::uninitialized(DType::kFloat32, out.sizes()) : out;
    Tensor wide_addend = addend != nullptr ? widen(*addend) : Tensor();
    run_direction(dnnl, direction, p, widen(a), widen(b), bias != nullptr ? &wide_bias : nullptr, wide_out, options,
                  addend != nullptr ? &wide_addend : nullptr);
    if (narrow) cast_elements(DType::kFloat32, wide_out.raw_data(), DType::kFloat16, out.raw_data(), out.num_elements());
    return;
  }
  if (options.channels_last) throw Error(ErrorKind::kInternal, "channels-last convolution needs f32, bf16 or f16");
  dispatch_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      switch (direction) {
        case ConvDirection::kForward:
          conv_forward_direct<T>(p, a.data<T>(), b.data<T>(), bias != nullptr ? bias->data<T>() : nullptr, out.data<T>());
          if (addend != nullptr) {
            T* y = out.data<T>();
            const T* z = addend->data<T>();
            for (int64_t i = 0; i < out.num_elements(); ++i) y[i] += z[i];
          }
          apply_activation(out, options.activation);
          return;
        case ConvDirection::kBackwardData: conv_backward_data_direct<T>(p, a.data<T>(), b.data<T>(), out.data<T>()); return;
        case ConvDirection::kBackwardWeights:
          conv_backward_weights_direct<T>(p, a.data<T>(), b.data<T>(), out.data<T>());
          return;
      }
    }
    throw Error(ErrorKind::kInternal, "no convolution for " + std::string(dtype_name(dtype)));
  });
}

// Adds bias[k] to every element of channel k of `y` [N, K, ...], or of `y`
// [N, ..., K] when channels_last.
void add_channel_bias(Tensor& y, const Tensor& bias, bool channels_last = false) {
  if (channels_last) {
    int64_t channels = y.sizes().back(), rows = channels == 0 ? 0 : y.num_elements() / channels;
    dispatch_dtype(y.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* data = y.data<T>();
        const T* b = bias.data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = 0; k < channels; ++k) data[r * channels + k] = store<T>(load(data[r * channels + k]) + load(b[k]));
        }
      }
    });
    return;
  }
  int64_t batch = y.sizes()[0], channels = y.sizes()[1];
  int64_t plane = channels == 0 || batch == 0 ? 0 : y.num_elements() / (batch * channels);
  dispatch_dtype(y.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* data = y.data<T>();
      const T* b = bias.data<T>();
      parallel_for(batch * channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t job = begin; job < end; ++job) {
          auto value = load(b[job % channels]);
          T* row = data + job * plane;
          for (int64_t i = 0; i < plane; ++i) row[i] = store<T>(load(row[i]) + value);
        }
      });
    }
  });
}

// Conv (kForward), ConvTranspose (kTranspose) and FusedConv (kForward with
// an activation, and channels-first or channels-last data).
class ConvKernel final : public OpKernel {
 public:
  ConvKernel(const Node& node, ConvKind kind, bool fused = false) : kind_(kind) {
    if (fused) {
      options_.activation = FusedActivation::from_node(node);
      options_.channels_last = conv_layout_is_channels_last(node);
      options_.sum = node.num_inputs() > 3 && node.input(3) != nullptr;
    }
    options_.constant_weights = node.num_inputs() > 1 && node.input(1) != nullptr && node.input(1)->is_constant();
    if (options_.constant_weights && kind == ConvKind::kForward) options_.winograd = ConvForwardOptions::Winograd::kAuto;
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    check_conv_inputs_dtype(ctx, x.dtype());
    const bool last = options_.channels_last;
    if (last && !DnnlConv::supports(x.dtype()) && x.dtype() != DType::kFloat16) {
      ctx.fail("layout NHWC needs f32, bf16 or f16 data, not " + std::string(dtype_name(x.dtype())));
    }
    const ConvProblem p = problem_for(ctx, x.sizes(), w.sizes());
    bool forward = kind_ == ConvKind::kForward;
    const ConvOutput output = conv_output(ctx, p, forward, last);
    const std::vector<int64_t>& y_sizes = output.sizes;
    const bool empty = output.empty;
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* addend = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_sizes,
                                    empty ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (empty) {
      if (bias != nullptr && y.num_elements() > 0) add_channel_bias(y, *bias, last);
      if (addend != nullptr && y.num_elements() > 0) {
        dispatch_dtype(y.dtype(), [&]<typename T>() {
          if constexpr (!std::is_same_v<T, bool>) {
            for (int64_t i = 0; i < y.num_elements(); ++i) y.data<T>()[i] = store<T>(load(y.data<T>()[i]) + load(addend->data<T>()[i]));
          }
        });
      }
      if (y.num_elements() > 0) apply_activation(y, options_.activation);
      return;
    }
    if (forward) {
      run_direction(dnnl_, ConvDirection::kForward, p, x, w, bias, y, options_, addend);
    } else {
      run_direction(dnnl_, ConvDirection::kBackwardData, p, x, w, nullptr, y);
      if (bias != nullptr) add_channel_bias(y, *bias);
    }
  }

  std::vector<PackedConstant> packed_constants() const override { return dnnl_.packed_weights(); }
  void adopt_packed_constants(std::vector<PackedConstant> packs) override {
    dnnl_.adopt_packed_weights(std::move(packs));
  }

 private:
  // The problem for these input shapes: derived from the node's attributes
  // once per shape, not on every run (a small conv's whole run is a few us).
  // Concurrent runs of one plan share this kernel, hence the lock.
  ConvProblem problem_for(const KernelContext& ctx, const std::vector<int64_t>& x_sizes,
                          const std::vector<int64_t>& w_sizes) {
    std::lock_guard<std::mutex> lock(problem_mutex_);
    if (!problem_ || x_sizes != problem_x_sizes_ || w_sizes != problem_w_sizes_) {
      problem_ = conv_problem(ctx.node(), kind_, options_.channels_last ? channels_first_order(x_sizes) : x_sizes,
                              w_sizes);
      problem_x_sizes_ = x_sizes;
      problem_w_sizes_ = w_sizes;
    }
    return *problem_;
  }

  ConvKind kind_;
  ConvForwardOptions options_;
  DnnlConv dnnl_;
  std::mutex problem_mutex_;
  std::optional<ConvProblem> problem_;
  std::vector<int64_t> problem_x_sizes_, problem_w_sizes_;
};

// ConvGradData(dY, W, X) -> dX and ConvGradWeight(dY, X, W) -> dW: one
// kernel, since both read the same problem and check dY the same way.
class ConvGradKernel final : public OpKernel {
 public:
  ConvGradKernel(const Node& node, bool weight) : weight_(weight), transposed_(conv_grad_transposed(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(weight_ ? 1 : 2);
    const Tensor& w = ctx.input(weight_ ? 2 : 1);
    check_conv_inputs_dtype(ctx, dy.dtype());
    ConvProblem p = conv_problem(ctx.node(), transposed_ ? ConvKind::kTranspose : ConvKind::kForward, x.sizes(), w.sizes());
    const bool empty = check_conv_grad(ctx, p, transposed_, dy, x, w);
    DType grad_dtype = weight_ ? kernel_output_dtype(ctx, dy.dtype()) : dy.dtype();
    Tensor& grad = ctx.allocate_output(0, grad_dtype, weight_ ? w.sizes() : x.sizes(),
                                       empty ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (empty) return;
    if (weight_) {
      // For ConvTranspose the problem's output is X and its input is dY's side.
      run_direction(dnnl_, ConvDirection::kBackwardWeights, p, transposed_ ? x : dy, transposed_ ? dy : x, nullptr, grad);
    } else {
      // Conv's data gradient is its backward-data direction; ConvTranspose's is a forward conv.
      run_direction(dnnl_, transposed_ ? ConvDirection::kForward : ConvDirection::kBackwardData, p, dy, w, nullptr, grad);
    }
  }

 private:
  bool weight_;
  bool transposed_;
  DnnlConv dnnl_;
};

// ConvGradBias(dY) -> dB: sums over the batch and spatial axes.
class ConvGradBiasKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const ConvBiasGradShape shape = conv_bias_grad_shape(ctx, dy);
    const int64_t batch = shape.batch, channels = shape.channels, plane = shape.plane;
    Tensor& db = ctx.allocate_output(0, kernel_output_dtype(ctx, dy.dtype()), {channels},
                                     KernelContext::Fill::kUninitialized);
    const bool wide = db.dtype() != dy.dtype();
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
        const T* in = dy.data<T>();
        T* out = wide ? nullptr : db.data<T>();
        float* wide_out = wide ? db.data<float>() : nullptr;
        parallel_for(channels, 1, [&](int64_t begin, int64_t end) {
          // Eight running sums: independent additions the compiler turns
          // into one vector add per eight elements (a single sum is a serial
          // chain, since floating-point addition may not be reordered).
          constexpr int kLanes = 8;
          for (int64_t k = begin; k < end; ++k) {
            C lanes[kLanes] = {};
            for (int64_t n = 0; n < batch; ++n) {
              const T* row = in + (n * channels + k) * plane;
              int64_t i = 0;
              for (; i + kLanes <= plane; i += kLanes) {
                for (int j = 0; j < kLanes; ++j) lanes[j] += static_cast<C>(load(row[i + j]));
              }
              for (; i < plane; ++i) lanes[0] += static_cast<C>(load(row[i]));
            }
            C sum = 0;
            for (C lane : lanes) sum += lane;
            if (wide) {
              wide_out[k] = static_cast<float>(sum);
            } else {
              out[k] = store<T>(static_cast<ComputeType<T>>(sum));
            }
          }
        });
      }
    });
  }
};

}  // namespace

void check_conv_inputs_dtype(const KernelContext& ctx, DType dtype) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != dtype) {
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.input(i).dtype())) + "; expected " +
               std::string(dtype_name(dtype)));
    }
  }
}

bool has_zero_size(const std::vector<int64_t>& sizes) {
  for (int64_t size : sizes) {
    if (size == 0) return true;
  }
  return false;
}

bool conv_grad_transposed(const Node& node) { return node.has_attr("transposed") && node.attr("transposed").i() != 0; }

ConvOutput conv_output(const KernelContext& ctx, const ConvProblem& p, bool forward, bool channels_last) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  ConvOutput output;
  output.sizes = forward ? p.out_sizes() : p.in_sizes();
  output.channels = output.sizes[1];
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bias != nullptr && (bias->rank() != 1 || bias->sizes()[0] != output.channels)) {
    ctx.fail("bias has shape " + format_sizes(bias->sizes()) + "; expected [" + std::to_string(output.channels) +
             "], one value per output channel");
  }
  output.empty = has_zero_size(x.sizes()) || has_zero_size(w.sizes()) || has_zero_size(output.sizes);
  if (channels_last) output.sizes = channels_last_order(output.sizes);
  const Tensor* addend = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (addend != nullptr && addend->sizes() != output.sizes) {
    ctx.fail("the addend Z has shape " + format_sizes(addend->sizes()) + "; expected the output's " + format_sizes(output.sizes));
  }
  return output;
}

bool check_conv_grad(const KernelContext& ctx, const ConvProblem& p, bool transposed, const Tensor& dy, const Tensor& x,
                     const Tensor& w) {
  const std::vector<int64_t> expected = transposed ? p.in_sizes() : p.out_sizes();
  if (dy.sizes() != expected) {
    ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; the forward output is " + format_sizes(expected));
  }
  return has_zero_size(dy.sizes()) || has_zero_size(w.sizes()) || has_zero_size(x.sizes());
}

ConvBiasGradShape conv_bias_grad_shape(const KernelContext& ctx, const Tensor& dy) {
  if (dy.rank() < 2) ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; expected [N, C, ...]");
  ConvBiasGradShape shape;
  shape.batch = dy.sizes()[0];
  shape.channels = dy.sizes()[1];
  shape.plane = shape.batch * shape.channels == 0 ? 0 : dy.num_elements() / (shape.batch * shape.channels);
  return shape;
}

void register_conv_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  registry.add("Conv", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<ConvKernel>(node, ConvKind::kForward); });
  registry.add("FusedConv", DeviceType::kCpu, types, [](const Node& node) {
    return std::make_unique<ConvKernel>(node, ConvKind::kForward, /*fused=*/true);
  });
  registry.add("ConvTranspose", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<ConvKernel>(node, ConvKind::kTranspose); });
  registry.add("ConvGradData", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<ConvGradKernel>(node, /*weight=*/false); });
  registry.add("ConvGradWeight", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<ConvGradKernel>(node, /*weight=*/true); });
  registry.add("ConvGradBias", DeviceType::kCpu, types,
               [](const Node&) { return std::make_unique<ConvGradBiasKernel>(); });
}

}  // namespace weir
