#include "ops/loss/loss_kernels.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/elementwise/broadcast.h"

namespace weir {

namespace {

// scores [n, c, inner...] with labels [n, inner...], read as i64.
struct ClassBatch {
  int64_t n = 0, c = 0, inner = 1;
  std::vector<int64_t> labels;
  std::vector<double> weights;  // empty: every class weighs 1
  std::optional<int64_t> ignore_index;

  int64_t positions() const { return n * inner; }
  // Offset of (position, class) in scores.
  int64_t at(int64_t position, int64_t cls) const {
    return (position / inner * c + cls) * inner + position % inner;
  }
  // Weight of `position`, or 0 when ignored; validates the label.
  double weight(const KernelContext& ctx, int64_t position) const {
    int64_t label = labels[static_cast<size_t>(position)];
    if (ignore_index && label == *ignore_index) return 0.0;
    if (label < 0 || label >= c) {
      ctx.fail("label " + std::to_string(label) + " at position " + std::to_string(position) + " is outside [0, " +
               std::to_string(c) + ")");
    }
    return weights.empty() ? 1.0 : weights[static_cast<size_t>(label)];
  }
  // Sum of the weights of the positions not ignored: mean's denominator.
  double total_weight(const KernelContext& ctx) const {
    double total = 0;
    for (int64_t p = 0; p < positions(); ++p) total += weight(ctx, p);
    return total;
  }
};

std::vector<double> as_doubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
  dispatch_dtype(tensor.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* data = tensor.data<T>();
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(load(data[i]));
    }
  });
  return values;
}

// Reads scores/labels/weights of a class loss node; `scores` is input 0 for
// the forward ops and `reference` (input 1) for the backward ones.
ClassBatch read_batch(const KernelContext& ctx, const Tensor& scores, const Tensor& labels, size_t weights_input) {
  const ClassLossShape shape = class_loss_shape(ctx, scores, labels);
  ClassBatch batch;
  batch.n = shape.n;
  batch.c = shape.c;
  batch.inner = shape.inner;
  if (labels.dtype() == DType::kInt64) {
    batch.labels.assign(labels.data<int64_t>(), labels.data<int64_t>() + labels.num_elements());
  } else {
    batch.labels.assign(labels.data<int32_t>(), labels.data<int32_t>() + labels.num_elements());
  }
  if (ctx.has_input(weights_input)) {
    const Tensor& weights = ctx.input(weights_input);
    check_class_weights(ctx, weights, scores, batch.c);
    batch.weights = as_doubles(weights);
  }
  if (ctx.node().has_attr("ignore_index")) batch.ignore_index = ctx.node().attr("ignore_index").i();
  return batch;
}

void write_doubles(Tensor& tensor, const std::vector<double>& values) {
  dispatch_dtype(tensor.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* data = tensor.data<T>();
      for (size_t i = 0; i < values.size(); ++i) data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
    }
  });
}

// Per-position losses reduced to the output tensor.
void write_loss(KernelContext& ctx, LossReduction reduction, const std::vector<double>& losses,
                const std::vector<int64_t>& none_sizes, double mean_denominator, DType dtype) {
  if (reduction == LossReduction::kNone) {
    write_doubles(ctx.allocate_output(0, dtype, none_sizes), losses);
    return;
  }
  double sum = 0;
  for (double loss : losses) sum += loss;
  write_doubles(ctx.allocate_output(0, dtype, {}), {reduction == LossReduction::kSum ? sum : sum / mean_denominator});
}

template <bool kSoftmax>
class ClassLossKernel final : public OpKernel {
 public:
  explicit ClassLossKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& scores = ctx.input(0);
    ClassBatch batch = read_batch(ctx, scores, ctx.input(1), 2);
    std::vector<double> x = as_doubles(scores);
    std::vector<double> log_prob = kSoftmax ? x : std::vector<double>();
    if constexpr (kSoftmax) {
      for (int64_t p = 0; p < batch.positions(); ++p) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < batch.c; ++c) max = std::max(max, x[static_cast<size_t>(batch.at(p, c))]);
        double sum = 0;
        for (int64_t c = 0; c < batch.c; ++c) sum += std::exp(x[static_cast<size_t>(batch.at(p, c))] - max);
        double log_sum = std::log(sum);
        for (int64_t c = 0; c < batch.c; ++c) log_prob[static_cast<size_t>(batch.at(p, c))] -= max + log_sum;
      }
    }
    const std::vector<double>& source = kSoftmax ? log_prob : x;
    std::vector<double> losses(static_cast<size_t>(batch.positions()));
    for (int64_t p = 0; p < batch.positions(); ++p) {
      double w = batch.weight(ctx, p);
      losses[static_cast<size_t>(p)] = w == 0 ? 0 : -w * source[static_cast<size_t>(batch.at(p, batch.labels[static_cast<size_t>(p)]))];
    }
    double denominator = reduction_ == LossReduction::kMean ? batch.total_weight(ctx) : 1.0;
    write_loss(ctx, reduction_, losses, ctx.input(1).sizes(), denominator, scores.dtype());
    if (kSoftmax && ctx.num_outputs() > 1) write_doubles(ctx.allocate_output(1, scores.dtype(), scores.sizes()), log_prob);
  }

 private:
  LossReduction reduction_;
};

// Inputs (dY, reference, labels[, weights]). Cross entropy: dX = g (softmax -
// onehot); negative log-likelihood: dX = -g at the label, 0 elsewhere; with
// g = dY (per position for none) times the label's weight, over the total
// weight for mean.
template <bool kSoftmax>
class ClassLossGradKernel final : public OpKernel {
 public:
  explicit ClassLossGradKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& reference = ctx.input(1);
    ClassBatch batch = read_batch(ctx, reference, ctx.input(2), 3);
    std::vector<double> dy = as_doubles(ctx.input(0));
    check_loss_dy(ctx, ctx.input(0), reduction_, batch.positions());
    double scale = reduction_ == LossReduction::kMean ? 1.0 / batch.total_weight(ctx) : 1.0;
    std::vector<double> ref = kSoftmax ? as_doubles(reference) : std::vector<double>();
    std::vector<double> dx(static_cast<size_t>(reference.num_elements()), 0.0);
    for (int64_t p = 0; p < batch.positions(); ++p) {
      double w = batch.weight(ctx, p);
      if (w == 0) continue;
      double g = dy[reduction_ == LossReduction::kNone ? static_cast<size_t>(p) : 0] * w * scale;
      int64_t label = batch.labels[static_cast<size_t>(p)];
      if constexpr (kSoftmax) {
        for (int64_t c = 0; c < batch.c; ++c) {
          auto at = static_cast<size_t>(batch.at(p, c));
          dx[at] = g * (std::exp(ref[at]) - (c == label ? 1.0 : 0.0));
        }
      } else {
        dx[static_cast<size_t>(batch.at(p, label))] = -g;
      }
    }
    write_doubles(ctx.allocate_output(0, reference.dtype(), reference.sizes()), dx);
  }

 private:
  LossReduction reduction_;
};

// MeanSquaredError (kGrad false) and its backward op (kGrad true).
template <bool kGrad>
class MeanSquaredErrorKernel final : public OpKernel {
 public:
  explicit MeanSquaredErrorKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& prediction = ctx.input(kGrad ? 1 : 0);
    const Tensor& target = ctx.input(kGrad ? 2 : 1);
    check_squared_error_target(ctx, prediction, target);
    std::vector<double> p = as_doubles(prediction), t = as_doubles(target);
    std::vector<double> difference(p.size());
    BroadcastPlan plan(prediction.sizes(), prediction.sizes(), target.sizes());
    plan.for_each([&](int64_t position, int64_t, int64_t target_offset, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        auto at = static_cast<size_t>(position + i);
        difference[at] = p[at] - t[static_cast<size_t>(target_offset + i * plan.inner_stride_b())];
      }
    });
    auto count = static_cast<double>(p.size());
    if constexpr (kGrad) {
      std::vector<double> dy = as_doubles(ctx.input(0));
      check_loss_dy(ctx, ctx.input(0), reduction_, static_cast<int64_t>(p.size()));
      std::vector<double> dx(p.size());
      for (size_t i = 0; i < p.size(); ++i) {
        double g = dy[reduction_ == LossReduction::kNone ? i : 0] / (reduction_ == LossReduction::kMean ? count : 1.0);
        dx[i] = 2 * difference[i] * g;
      }
      write_doubles(ctx.allocate_output(0, prediction.dtype(), prediction.sizes()), dx);
    } else {
      for (double& d : difference) d *= d;
      write_loss(ctx, reduction_, difference, prediction.sizes(), count, prediction.dtype());
    }
  }

 private:
  LossReduction reduction_;
};

template <typename Kernel>
KernelFactory factory() {
  return [](const Node& node) { return std::make_unique<Kernel>(node); };
}

}  // namespace

LossReduction loss_reduction(const Node& node) {
  std::string name = node.has_attr("reduction") ? node.attr("reduction").s() : "mean";
  if (name == "none") return LossReduction::kNone;
  if (name == "sum") return LossReduction::kSum;
  return LossReduction::kMean;  // the schema has already rejected anything else
}

ClassLossShape class_loss_shape(const KernelContext& ctx, const Tensor& scores, const Tensor& labels) {
  const std::vector<int64_t>& sizes = scores.sizes();
  if (sizes.size() < 2) ctx.fail("scores must be [N, C, ...], got " + scores.type_string());
  std::vector<int64_t> expected = sizes;
  expected.erase(expected.begin() + 1);
  if (labels.sizes() != expected || (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64)) {
    ctx.fail("labels " + labels.type_string() + " must be i32/i64 of scores " + scores.type_string() +
             " without its class axis");
  }
  ClassLossShape shape;
  shape.n = sizes[0];
  shape.c = sizes[1];
  for (size_t i = 2; i < sizes.size(); ++i) shape.inner *= sizes[i];
  return shape;
}

void check_class_weights(const KernelContext& ctx, const Tensor& weights, const Tensor& scores, int64_t classes) {
  if (weights.sizes() != std::vector<int64_t>{classes} || weights.dtype() != scores.dtype()) {
    ctx.fail("weights " + weights.type_string() + " must be [C] = [" + std::to_string(classes) + "] of " +
             std::string(dtype_name(scores.dtype())));
  }
}

void check_loss_dy(const KernelContext& ctx, const Tensor& dy, LossReduction reduction, int64_t positions) {
  const int64_t expected = reduction == LossReduction::kNone ? positions : 1;
  if (dy.num_elements() != expected) {
    ctx.fail("dY has " + std::to_string(dy.num_elements()) + " elements, expected " + std::to_string(expected));
  }
}

void check_squared_error_target(const KernelContext& ctx, const Tensor& prediction, const Tensor& target) {
  auto broadcast = broadcast_sizes(prediction.sizes(), target.sizes());
  if (!broadcast || *broadcast != prediction.sizes() || target.dtype() != prediction.dtype()) {
    ctx.fail("target " + target.type_string() + " must broadcast to prediction " + prediction.type_string());
  }
}

void register_loss_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> floating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  registry.add("SoftmaxCrossEntropyLoss", DeviceType::kCpu, floating, factory<ClassLossKernel<true>>());
  registry.add("NegativeLogLikelihoodLoss", DeviceType::kCpu, floating, factory<ClassLossKernel<false>>());
  registry.add("SoftmaxCrossEntropyLossGrad", DeviceType::kCpu, floating, factory<ClassLossGradKernel<true>>());
  registry.add("NegativeLogLikelihoodLossGrad", DeviceType::kCpu, floating, factory<ClassLossGradKernel<false>>());
  registry.add("MeanSquaredError", DeviceType::kCpu, floating, factory<MeanSquaredErrorKernel<false>>());
  registry.add("MeanSquaredErrorGrad", DeviceType::kCpu, floating, factory<MeanSquaredErrorKernel<true>>());
}

}  // namespace weir
