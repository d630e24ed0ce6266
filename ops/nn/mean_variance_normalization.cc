#include "ops/nn/mean_variance_normalization.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/reduce/reduce_axes.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

// ONNX's epsilon, added to the standard deviation.
constexpr double kEpsilon = 1e-9;

const std::vector<int64_t> kDefaultAxes = {0, 2, 3};

ReduceAxes normalized_axes(const Node& node) {
  ReduceAxes axes;
  axes.axes = node.has_attr("axes") ? node.attr("axes").ints() : kDefaultAxes;
  return axes;
}

// The groups of X's elements that share a mean: calls fn(position, group)
// for every element, in order.
class Groups {
 public:
  Groups(const KernelContext& ctx, const Tensor& x, const ReduceAxes& axes)
      : reduced_(axes.resolve(x.rank(), [&](const std::string& message) { ctx.fail(message); })),
        kept_(ReduceAxes::kept_sizes(x.sizes(), reduced_)),
        plan_(x.sizes(), x.sizes(), kept_) {
    for (int64_t size : kept_) count_ *= size;
    size_ = count_ == 0 ? 0 : x.num_elements() / count_;
  }

  int64_t count() const { return count_; }  // number of groups
  double size() const { return static_cast<double>(size_); }  // elements per group

  template <typename Fn>
  void for_each(Fn&& fn) const {
    const int64_t stride = plan_.inner_stride_b();
    plan_.for_each([&](int64_t position, int64_t, int64_t group, int64_t run) {
      for (int64_t i = 0; i < run; ++i) fn(position + i, static_cast<size_t>(group + i * stride));
    });
  }

 private:
  std::vector<bool> reduced_;
  std::vector<int64_t> kept_;
  BroadcastPlan plan_;
  int64_t count_ = 1;
  int64_t size_ = 0;
};

// Each group's mean and standard deviation (population), in f64.
struct Moments {
  std::vector<double> mean, deviation;
};

template <typename T>
Moments moments_of(const Groups& groups, const T* x) {
  Moments m{std::vector<double>(static_cast<size_t>(groups.count()), 0.0), {}};
  m.deviation = m.mean;
  groups.for_each([&](int64_t position, size_t group) { m.mean[group] += static_cast<double>(load(x[position])); });
  for (double& mean : m.mean) mean /= groups.size();
  groups.for_each([&](int64_t position, size_t group) {
    double centered = static_cast<double>(load(x[position])) - m.mean[group];
    m.deviation[group] += centered * centered;
  });
  for (double& deviation : m.deviation) deviation = std::sqrt(deviation / groups.size());
  return m;
}

class MeanVarianceNormalizationKernel final : public OpKernel {
 public:
  explicit MeanVarianceNormalizationKernel(const Node& node) : axes_(normalized_axes(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Groups groups(ctx, x, axes_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        Moments m = moments_of(groups, in);
        groups.for_each([&](int64_t position, size_t group) {
          double value = (static_cast<double>(load(in[position])) - m.mean[group]) / (m.deviation[group] + kEpsilon);
          out[position] = store<T>(static_cast<ComputeType<T>>(value));
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }

 private:
  ReduceAxes axes_;
};

// Per group of n elements, with c = x - mean, s the deviation, d = s + eps:
//   dX = (dY - mean(dY)) / d - c * sum(dY * c) / (n s d^2)
// (the second term taken as 0 where s = 0: then every c is 0 too).
class MeanVarianceNormalizationGradKernel final : public OpKernel {
 public:
  explicit MeanVarianceNormalizationGradKernel(const Node& node) : axes_(normalized_axes(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.sizes() != x.sizes() || dy.dtype() != x.dtype()) {
      ctx.fail("dY " + dy.type_string() + " does not match X " + x.type_string());
    }
    Groups groups(ctx, x, axes_);
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* xs = x.data<T>();
        const T* grads = dy.data<T>();
        T* out = dx.data<T>();
        Moments m = moments_of(groups, xs);
        std::vector<double> grad_mean(m.mean.size(), 0.0), projection(m.mean.size(), 0.0);
        groups.for_each([&](int64_t position, size_t group) {
          auto g = static_cast<double>(load(grads[position]));
          grad_mean[group] += g;
          projection[group] += g * (static_cast<double>(load(xs[position])) - m.mean[group]);
        });
        for (size_t group = 0; group < grad_mean.size(); ++group) {
          grad_mean[group] /= groups.size();
          double s = m.deviation[group], d = s + kEpsilon;
          projection[group] = s > 0 ? projection[group] / (groups.size() * s * d * d) : 0.0;
        }
        groups.for_each([&](int64_t position, size_t group) {
          double centered = static_cast<double>(load(xs[position])) - m.mean[group];
          double value = (static_cast<double>(load(grads[position])) - grad_mean[group]) / (m.deviation[group] + kEpsilon) -
                         centered * projection[group];
          out[position] = store<T>(static_cast<ComputeType<T>>(value));
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }

 private:
  ReduceAxes axes_;
};

// Checks the axes against X's rank (input `index`) where it is known.
void check_axes(InferenceContext& ctx, size_t index) {
  const TensorType* x = ctx.input_type(index);
  if (x == nullptr || !x->shape.has_rank()) return;
  ReduceAxes axes;
  axes.axes = ctx.attr_ints("axes");
  axes.resolve(x->shape.rank(), [&](const std::string& message) { ctx.fail(message); });
}

}  // namespace

void register_mean_variance_normalization_schema(OpRegistry& registry) {
  OpSchema mvn("MeanVarianceNormalization");
  mvn.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", kFloatDTypes)
      .attr("axes", AttrType::kInts, Attribute(kDefaultAxes))
      .infer([](InferenceContext& ctx) {
        check_axes(ctx, 0);
        infer_same_as_input(ctx);
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("MeanVarianceNormalizationGrad", {grad, ctx.node().input(0)}, 1,
                                       ctx.node().attributes())[0]);
      })
      .doc("(X - mean) / (sqrt(variance) + 1e-9), mean and variance over `axes`");
  mvn.add_traits(OpTrait::kFullPrecisionCompute);
  registry.add(std::move(mvn));

  OpSchema grad("MeanVarianceNormalizationGrad");
  grad.input("dY", "T")
      .input("X", "T")
      .output("dX", "T")
      .type_constraint("T", kFloatDTypes)
      .attr("axes", AttrType::kInts, Attribute(kDefaultAxes))
      .infer([](InferenceContext& ctx) {
        check_axes(ctx, 1);
        infer_gradient_like_input_1(ctx);
      })
      .doc("The gradient of MeanVarianceNormalization over `axes`");
  registry.add(std::move(grad));
}

void register_mean_variance_normalization_cpu_kernel(KernelRegistry& registry) {
  registry.add("MeanVarianceNormalization", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<MeanVarianceNormalizationKernel>(node); });
  registry.add("MeanVarianceNormalizationGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<MeanVarianceNormalizationGradKernel>(node); });
}

}  // namespace weir
