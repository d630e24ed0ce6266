#include "ops/nn/lrn.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

// The attributes of an LRN node, with ONNX's defaults.
struct LrnParameters {
  double alpha = 0.0001;
  double beta = 0.75;
  double bias = 1.0;
  int64_t size = 0;
  // The window of channel c: [c - before, c + after].
  int64_t before() const { return (size - 1) / 2; }
  int64_t after() const { return size - 1 - before(); }

  static LrnParameters of(const Node& node) {
    LrnParameters p;
    p.alpha = float_attr(node, "alpha", p.alpha);
    p.beta = float_attr(node, "beta", p.beta);
    p.bias = float_attr(node, "bias", p.bias);
    p.size = int_attr(node, "size", 0);
    return p;
  }
};

// X viewed as [batch, channels, spatial].
struct LrnLayout {
  int64_t batch = 1, channels = 1, spatial = 1;
};

LrnLayout layout_of(const KernelContext& ctx, const Tensor& x, const LrnParameters& p) {
  if (x.rank() < 2) ctx.fail("X " + x.type_string() + " needs at least 2 axes (N, C, ...)");
  if (p.size < 1) ctx.fail("size must be at least 1, got " + std::to_string(p.size));
  LrnLayout layout{x.sizes()[0], x.sizes()[1], 1};
  for (size_t i = 2; i < x.sizes().size(); ++i) layout.spatial *= x.sizes()[i];
  return layout;
}

// bias + alpha / size * (sum of x^2 over channel c's window), at each of
// the `spatial` positions of row (n, c), into `scale`.
template <typename T>
void window_scale(const T* x, const LrnLayout& layout, const LrnParameters& p, int64_t n, int64_t c, double* scale) {
  for (int64_t s = 0; s < layout.spatial; ++s) scale[s] = 0;
  int64_t first = std::max<int64_t>(0, c - p.before()), last = std::min(layout.channels - 1, c + p.after());
  for (int64_t i = first; i <= last; ++i) {
    const T* row = x + (n * layout.channels + i) * layout.spatial;
    for (int64_t s = 0; s < layout.spatial; ++s) {
      auto value = static_cast<double>(load(row[s]));
      scale[s] += value * value;
    }
  }
  const double factor = p.alpha / static_cast<double>(p.size);
  for (int64_t s = 0; s < layout.spatial; ++s) scale[s] = p.bias + factor * scale[s];
}

// Runs fn(n, c) for every (batch, channel) row, rows split across threads.
template <typename Fn>
void for_each_row(const LrnLayout& layout, Fn&& fn) {
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, layout.spatial * 4));
  parallel_for(layout.batch * layout.channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) fn(row / layout.channels, row % layout.channels);
  });
}

class LrnKernel final : public OpKernel {
 public:
  explicit LrnKernel(const Node& node) : p_(LrnParameters::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    LrnLayout layout = layout_of(ctx, x, p_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        for_each_row(layout, [&](int64_t n, int64_t c) {
          std::vector<double> scale(static_cast<size_t>(layout.spatial));
          window_scale(in, layout, p_, n, c, scale.data());
          const int64_t offset = (n * layout.channels + c) * layout.spatial;
          for (int64_t s = 0; s < layout.spatial; ++s) {
            double value = static_cast<double>(load(in[offset + s])) / std::pow(scale[static_cast<size_t>(s)], p_.beta);
            out[offset + s] = store<T>(static_cast<ComputeType<T>>(value));
          }
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }

 private:
  LrnParameters p_;
};

// With D_c = bias + alpha / size * square_sum_c and Y_c = X_c D_c^-beta:
//   dX_j = dY_j D_j^-beta - 2 alpha beta / size * X_j * sum over the channels c
//          whose window holds j (c in [j - after, j + before]) of dY_c X_c D_c^(-beta-1).
class LrnGradKernel final : public OpKernel {
 public:
  explicit LrnGradKernel(const Node& node) : p_(LrnParameters::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    LrnLayout layout = layout_of(ctx, x, p_);
    if (dy.sizes() != x.sizes() || dy.dtype() != x.dtype()) {
      ctx.fail("dY " + dy.type_string() + " does not match X " + x.type_string());
    }
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* xs = x.data<T>();
        const T* grads = dy.data<T>();
        T* out = dx.data<T>();
        // Per element: D^-beta, and dY X D^(-beta-1), the terms the windows share.
        std::vector<double> power(static_cast<size_t>(x.num_elements())), term(power.size());
        for_each_row(layout, [&](int64_t n, int64_t c) {
          const int64_t offset = (n * layout.channels + c) * layout.spatial;
          double* d = power.data() + offset;
          window_scale(xs, layout, p_, n, c, d);
          for (int64_t s = 0; s < layout.spatial; ++s) {
            double scaled = std::pow(d[s], -p_.beta);
            term[static_cast<size_t>(offset + s)] =
                static_cast<double>(load(grads[offset + s])) * static_cast<double>(load(xs[offset + s])) * scaled / d[s];
            d[s] = scaled;
          }
        });
        const double factor = 2.0 * p_.alpha * p_.beta / static_cast<double>(p_.size);
        for_each_row(layout, [&](int64_t n, int64_t j) {
          const int64_t offset = (n * layout.channels + j) * layout.spatial;
          std::vector<double> shared(static_cast<size_t>(layout.spatial), 0.0);
          int64_t first = std::max<int64_t>(0, j - p_.after()), last = std::min(layout.channels - 1, j + p_.before());
          for (int64_t c = first; c <= last; ++c) {
            const double* row = term.data() + (n * layout.channels + c) * layout.spatial;
            for (int64_t s = 0; s < layout.spatial; ++s) shared[static_cast<size_t>(s)] += row[s];
          }
          for (int64_t s = 0; s < layout.spatial; ++s) {
            double value = static_cast<double>(load(grads[offset + s])) * power[static_cast<size_t>(offset + s)] -
                           factor * static_cast<double>(load(xs[offset + s])) * shared[static_cast<size_t>(s)];
            out[offset + s] = store<T>(static_cast<ComputeType<T>>(value));
          }
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }

 private:
  LrnParameters p_;
};

OpSchema& with_lrn_attributes(OpSchema& schema) {
  return schema.attr("alpha", AttrType::kFloat, Attribute(0.0001))
      .attr("beta", AttrType::kFloat, Attribute(0.75))
      .attr("bias", AttrType::kFloat, Attribute(1.0))
      .required_attr("size", AttrType::kInt);
}

void check_lrn(InferenceContext& ctx, const TensorType* x) {
  if (x != nullptr && x->shape.has_rank() && x->shape.rank() < 2) {
    ctx.fail("X " + x->shape.to_string() + " needs at least 2 axes (N, C, ...)");
  }
  if (ctx.attr_int("size") < 1) ctx.fail("size must be at least 1, got " + std::to_string(ctx.attr_int("size")));
}

}  // namespace

void register_lrn_schema(OpRegistry& registry) {
  OpSchema lrn("LRN");
  lrn.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", kFloatDTypes)
      .infer([](InferenceContext& ctx) {
        check_lrn(ctx, ctx.input_type(0));
        infer_same_as_input(ctx);
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("LRNGrad", {grad, ctx.node().input(0)}, 1, ctx.node().attributes())[0]);
      })
      .doc("X / (bias + alpha / size * sum of X^2 over a window of `size` channels)^beta");
  with_lrn_attributes(lrn).add_traits(OpTrait::kFullPrecisionCompute);
  registry.add(std::move(lrn));

  OpSchema grad("LRNGrad");
  grad.input("dY", "T")
      .input("X", "T")
      .output("dX", "T")
      .type_constraint("T", kFloatDTypes)
      .infer([](InferenceContext& ctx) {
        check_lrn(ctx, ctx.input_type(1));
        infer_gradient_like_input_1(ctx);
      })
      .doc("The gradient of LRN with these attributes");
  registry.add(std::move(with_lrn_attributes(grad)));
}

void register_lrn_cpu_kernel(KernelRegistry& registry) {
  registry.add("LRN", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<LrnKernel>(node); });
  registry.add("LRNGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<LrnGradKernel>(node); });
}

}  // namespace weir
