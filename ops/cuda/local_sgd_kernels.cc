#include "ops/cuda/local_sgd_kernels.h"

#include <memory>
#include <string>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/local_sgd_device.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/local_sgd.h"

namespace weir {

namespace {

// The step input `index` for device code: an i64 or i32 scalar on the GPU.
cuda::DeviceScalar step_scalar(const KernelContext& ctx, size_t index) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1 || (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)) {
    ctx.fail("step must be an i64 or i32 scalar, got " + t.type_string());
  }
  return cuda::device_scalar(ctx, index, "step");
}

// Device memory for the step the kernel read, and the check that fails the
// node, as the CPU's step_input() would, when it was below 1.
Tensor seen_step_of(const KernelContext& ctx) { return Tensor::uninitialized(DType::kInt64, {1}, ctx.allocator()); }

void check_seen_step(KernelContext& ctx, Tensor seen_step) {
  const Node& node = ctx.node();
  cuda::check_device_values(ctx, std::move(seen_step), [&node](const std::vector<int64_t>& found) {
    if (found[0] < 1) {
      fail_node(node, "step must be at least 1 (it counts from 1), got " + std::to_string(found[0]));
    }
  });
}

class ScheduleCudaKernel final : public OpKernel {
 public:
  explicit ScheduleCudaKernel(const Node& node) : begin_step_(int_attr(node, "begin_step", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& schedule = check_local_sgd_schedule(ctx, 0);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, schedule, "schedule");
    const cuda::DeviceScalar step = step_scalar(ctx, 1);
    Tensor& out = ctx.allocate_output(0, DType::kBool, {}, KernelContext::Fill::kUninitialized);
    Tensor seen = seen_step_of(ctx);
    cuda::launch_local_sgd_schedule(schedule.data<double>(), step, begin_step_, out.data<bool>(), seen.data<int64_t>(),
                                    stream);
    cuda::check_launch(ctx, "local_sgd_schedule");
    check_seen_step(ctx, std::move(seen));
  }

 private:
  int64_t begin_step_;
};

class AdvanceCudaKernel final : public OpKernel {
 public:
  explicit AdvanceCudaKernel(const Node& node)
      : adaptive_(int_attr(node, "adaptive", 0) != 0), init_k_steps_(int_attr(node, "init_k_steps", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& schedule = check_local_sgd_schedule(ctx, 0);
    const Tensor& communicated = check_local_sgd_flag(ctx, 2);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, schedule, "schedule");
    cuda::require_on_device(ctx, communicated, "communicate");
    const cuda::DeviceScalar step = step_scalar(ctx, 1);
    cuda::DeviceScalar loss, lr;
    if (adaptive_) {
      if (ctx.num_inputs() < 5 || !ctx.has_input(3) || !ctx.has_input(4)) {
        ctx.fail("adaptive LocalSGD needs the world's mean loss and the learning rate");
      }
      loss = cuda::device_scalar(ctx, 3, "loss");
      lr = cuda::device_scalar(ctx, 4, "lr");
    }
    Tensor seen = seen_step_of(ctx);
    cuda::launch_local_sgd_advance(schedule.data<double>(), step, communicated.data<bool>(), adaptive_, init_k_steps_,
                                   kMaxAdaptiveLocalSgdSteps, loss, lr, seen.data<int64_t>(), stream);
    cuda::check_launch(ctx, "local_sgd_advance");
    check_seen_step(ctx, std::move(seen));
    ctx.set_output(0, schedule);
  }

 private:
  bool adaptive_;
  int64_t init_k_steps_;
};

class AverageCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    check_local_sgd_average_inputs(ctx);
    const Tensor& param = ctx.input(0);
    const Tensor& snapshot = ctx.input(1);
    const Tensor& delta = ctx.input(2);
    const Tensor& communicate = ctx.input(3);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, param, "param");
    cuda::require_on_device(ctx, snapshot, "snapshot");
    cuda::require_on_device(ctx, delta, "averaged_delta");
    cuda::require_on_device(ctx, communicate, "communicate");
    if (param.num_elements() > 0) {
      cuda::launch_local_sgd_average(param.data<float>(), snapshot.data<float>(), delta.data<float>(),
                                     param.num_elements(), communicate.data<bool>(), stream);
      cuda::check_launch(ctx, "local_sgd_average");
    }
    ctx.set_output(0, param);
    ctx.set_output(1, snapshot);
  }
};

}  // namespace

void register_local_sgd_cuda_kernels(KernelRegistry& registry) {
  registry.add("LocalSgdSchedule", DeviceType::kCuda, {DType::kFloat64},
               [](const Node& node) { return std::make_unique<ScheduleCudaKernel>(node); });
  registry.add("LocalSgdAdvance", DeviceType::kCuda, {DType::kFloat64},
               [](const Node& node) { return std::make_unique<AdvanceCudaKernel>(node); });
  registry.add("LocalSgdAverage", DeviceType::kCuda, {DType::kFloat32},
               [](const Node&) { return std::make_unique<AverageCudaKernel>(); });
}

}  // namespace weir
