#include "ops/cuda/loss_kernels.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/loss_device.h"
#include "ops/elementwise/broadcast.h"
#include "ops/loss/loss_kernels.h"

namespace weir {

namespace {

using cuda::LossReduction;

using cuda::element_type;

// The CPU kernel's read_batch: scores (or the reference) [N, C, ...],
// labels [N, ...] of i32/i64, weights [C] of the scores' type; every check
// and message the same.
cuda::ClassLossProblem read_problem(const KernelContext& ctx, const Tensor& scores, const Tensor& labels,
                                    size_t weights_input, LossReduction reduction) {
  const ClassLossShape shape = class_loss_shape(ctx, scores, labels);
  cuda::ClassLossProblem problem;
  problem.type = element_type(ctx, scores);
  problem.scores = scores.raw_data();
  problem.labels = labels.raw_data();
  problem.labels_int64 = labels.dtype() == DType::kInt64;
  problem.n = shape.n;
  problem.c = shape.c;
  problem.inner = shape.inner;
  cuda::require_on_device(ctx, scores, "scores");
  cuda::require_on_device(ctx, labels, "labels");
  if (ctx.has_input(weights_input)) {
    const Tensor& weights = ctx.input(weights_input);
    check_class_weights(ctx, weights, scores, problem.c);
    cuda::require_on_device(ctx, weights, "weights");
    problem.weights = weights.raw_data();
  }
  if (ctx.node().has_attr("ignore_index")) {
    problem.has_ignore_index = true;
    problem.ignore_index = ctx.node().attr("ignore_index").i();
  }
  problem.reduction = reduction;
  return problem;
}

// The first position with a label outside [0, C), as the launch recorded it
// in `bad_label` on the device: the CPU kernel's error, found once the
// device work is done (the step does not wait for it).
void check_labels(KernelContext& ctx, const Tensor& bad_label, int64_t classes) {
  const Node& node = ctx.node();
  cuda::check_device_values(ctx, bad_label, [&node, classes](const std::vector<int64_t>& found) {
    if (found[0] == std::numeric_limits<int64_t>::max()) return;
    fail_node(node, "label " + std::to_string(found[1]) + " at position " + std::to_string(found[0]) + " is outside [0, " +
                        std::to_string(classes) + ")");
  });
}

// Two i64 on the device for the label check: a launch's own, since its
// check reads them after the run, when another run's launch may have reset
// a buffer they shared.
Tensor bad_label_of(KernelContext& ctx) { return Tensor::uninitialized(DType::kInt64, {2}, ctx.allocator()); }

template <bool kSoftmax>
class ClassLossCudaKernel final : public OpKernel {
 public:
  explicit ClassLossCudaKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& scores = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    cuda::ClassLossProblem problem = read_problem(ctx, scores, labels, 2, reduction_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& loss = ctx.allocate_output(0, scores.dtype(), reduction_ == LossReduction::kNone ? labels.sizes() : std::vector<int64_t>{},
                                       KernelContext::Fill::kUninitialized);
    void* log_prob = nullptr;
    if (kSoftmax && ctx.num_outputs() > 1) {
      log_prob = ctx.allocate_output(1, scores.dtype(), scores.sizes(), KernelContext::Fill::kUninitialized).raw_data();
    }
    const cuda::LaunchScratch workspace(ctx, {cuda::class_loss_workspace_doubles(problem) * sizeof(double)});
    Tensor bad_label = bad_label_of(ctx);
    cuda::launch_class_loss(kSoftmax, problem, loss.raw_data(), log_prob, workspace.part<double>(0),
                            bad_label.data<int64_t>(), stream);
    cuda::check_launch(ctx, kSoftmax ? "softmax_cross_entropy_loss" : "negative_log_likelihood_loss");
    check_labels(ctx, bad_label, problem.c);
  }

 private:
  LossReduction reduction_;
};

// Inputs (dY, reference, labels[, weights]), as the CPU's ClassLossGradKernel.
template <bool kSoftmax>
class ClassLossGradCudaKernel final : public OpKernel {
 public:
  explicit ClassLossGradCudaKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& reference = ctx.input(1);
    cuda::ClassLossProblem problem = read_problem(ctx, reference, ctx.input(2), 3, reduction_);
    check_loss_dy(ctx, dy, reduction_, problem.n * problem.inner);
    if (dy.dtype() != reference.dtype()) ctx.fail("dY " + dy.type_string() + " must have the type of the reference " + reference.type_string());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    Tensor& dx = ctx.allocate_output(0, reference.dtype(), reference.sizes(), KernelContext::Fill::kUninitialized);
    const cuda::LaunchScratch workspace(ctx, {sizeof(double)});
    Tensor bad_label = bad_label_of(ctx);
    cuda::launch_class_loss_grad(kSoftmax, problem, dy.raw_data(), dx.raw_data(), workspace.part<double>(0),
                                 bad_label.data<int64_t>(), stream);
    cuda::check_launch(ctx, kSoftmax ? "softmax_cross_entropy_loss_grad" : "negative_log_likelihood_loss_grad");
    check_labels(ctx, bad_label, problem.c);
  }

 private:
  LossReduction reduction_;
};

// MeanSquaredError (kGrad false) and its backward op (kGrad true).
template <bool kGrad>
class MeanSquaredErrorCudaKernel final : public OpKernel {
 public:
  explicit MeanSquaredErrorCudaKernel(const Node& node) : reduction_(loss_reduction(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& prediction = ctx.input(kGrad ? 1 : 0);
    const Tensor& target = ctx.input(kGrad ? 2 : 1);
    check_squared_error_target(ctx, prediction, target);
    const cuda::ElementType type = element_type(ctx, prediction);
    const int64_t count = prediction.num_elements();
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(prediction.sizes(), prediction.sizes(), target.sizes());
    if (!indexing) ctx.fail("broadcasting target " + target.type_string() + " needs more axes than the GPU kernel takes");
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, prediction, "prediction");
    cuda::require_on_device(ctx, target, "target");
    if constexpr (kGrad) {
      const Tensor& dy = ctx.input(0);
      check_loss_dy(ctx, dy, reduction_, count);
      if (dy.dtype() != prediction.dtype()) ctx.fail("dY " + dy.type_string() + " must have the type of the prediction " + prediction.type_string());
      cuda::require_on_device(ctx, dy, "dY");
      Tensor& dx = ctx.allocate_output(0, prediction.dtype(), prediction.sizes(), KernelContext::Fill::kUninitialized);
      cuda::launch_mean_squared_error_grad(type, dy.raw_data(), prediction.raw_data(), target.raw_data(), *indexing, count,
                                           reduction_, dx.raw_data(), stream);
      cuda::check_launch(ctx, "mean_squared_error_grad");
    } else {
      Tensor& loss = ctx.allocate_output(0, prediction.dtype(),
                                         reduction_ == LossReduction::kNone ? prediction.sizes() : std::vector<int64_t>{},
                                         KernelContext::Fill::kUninitialized);
      const cuda::LaunchScratch workspace(ctx, {cuda::mean_squared_error_workspace_doubles(count) * sizeof(double)});
      cuda::launch_mean_squared_error(type, prediction.raw_data(), target.raw_data(), *indexing, count, reduction_,
                                      loss.raw_data(), workspace.part<double>(0), stream);
      cuda::check_launch(ctx, "mean_squared_error");
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

void register_loss_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("SoftmaxCrossEntropyLoss", DeviceType::kCuda, types, factory<ClassLossCudaKernel<true>>());
  registry.add("NegativeLogLikelihoodLoss", DeviceType::kCuda, types, factory<ClassLossCudaKernel<false>>());
  registry.add("SoftmaxCrossEntropyLossGrad", DeviceType::kCuda, types, factory<ClassLossGradCudaKernel<true>>());
  registry.add("NegativeLogLikelihoodLossGrad", DeviceType::kCuda, types, factory<ClassLossGradCudaKernel<false>>());
  registry.add("MeanSquaredError", DeviceType::kCuda, types, factory<MeanSquaredErrorCudaKernel<false>>());
  registry.add("MeanSquaredErrorGrad", DeviceType::kCuda, types, factory<MeanSquaredErrorCudaKernel<true>>());
}

}  // namespace weir
