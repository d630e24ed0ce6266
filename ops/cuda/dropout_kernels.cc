#include "ops/cuda/dropout_kernels.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/dropout_device.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/host_input.h"
#include "ops/nn/dropout.h"

namespace weir {

namespace {

// Input `index` as a double (`fallback` when absent), read on the host:
// a graph constant's own host tensor (the usual ratio and training_mode),
// so the step neither copies nor waits for the device.
double scalar_of(const KernelContext& ctx, size_t index, double fallback, const char* what) {
  return dropout_scalar(ctx, index, fallback, what,
                        [&](const Tensor&, const char* name) { return cuda::host_input(ctx, index, name); });
}

double checked_ratio(const KernelContext& ctx, size_t index) {
  return dropout_ratio(ctx, index, [&](const Tensor&, const char* name) { return cuda::host_input(ctx, index, name); });
}

class DropoutCudaKernel final : public OpKernel {
 public:
  explicit DropoutCudaKernel(const Node& node) : seed_(dropout_seed(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const cuda::ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "data");
    const double ratio = checked_ratio(ctx, 1);
    const bool training = scalar_of(ctx, 2, 0, "training_mode") != 0 && ratio > 0;
    const bool want_mask = ctx.num_outputs() > 1;
    if (!training) {
      ctx.set_output(0, x);
      if (want_mask) {
        Tensor& mask = ctx.allocate_output(1, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
        if (mask.nbytes() == 0) return;
        // All true: a bool is one byte holding 1.
        cuda::check_cuda_status(ctx, cudaMemsetAsync(mask.raw_data(), 1, mask.nbytes(), stream), "filling the mask");
      }
      return;
    }
    // The CPU kernel's stream for this run (ops/nn/dropout.cc).
    const uint64_t run = ctx.rng_counter().value_or(runs_.fetch_add(1));
    const uint64_t stream_key = dropout_stream_key(seed_, run);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    bool* mask = nullptr;
    if (want_mask) {
      mask = static_cast<bool*>(
          ctx.allocate_output(1, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized).raw_data());
    }
    if (y.num_elements() == 0) return;
    const float scale = static_cast<float>(1.0 / (1.0 - ratio));
    cuda::launch_dropout(type, x.raw_data(), y.raw_data(), mask, y.num_elements(), stream_key, ratio, scale, stream);
    cuda::check_launch(ctx, "dropout_elements");
  }

 private:
  uint64_t seed_;
  std::atomic<uint64_t> runs_{0};
};

// DropoutGrad(dY, mask, ratio?, training_mode?) = dY * mask / (1 - ratio) in training, else dY.
class DropoutGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& mask = ctx.input(1);
    const cuda::ElementType type = cuda::element_type(ctx, dy.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    const double ratio = checked_ratio(ctx, 2);
    const bool training = scalar_of(ctx, 3, 0, "training_mode") != 0 && ratio > 0;
    if (!training) {
      ctx.set_output(0, dy);
      return;
    }
    check_dropout_mask(ctx, mask, dy);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, mask, "mask");
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    const float scale = static_cast<float>(1.0 / (1.0 - ratio));
    cuda::launch_dropout_grad(type, dy.raw_data(), static_cast<const bool*>(mask.raw_data()), dx.raw_data(),
                              dx.num_elements(), scale, stream);
    cuda::check_launch(ctx, "dropout_grad_elements");
  }
};

}  // namespace

void register_dropout_cuda_kernels(KernelRegistry& registry) {
  registry.add("Dropout", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<DropoutCudaKernel>(node); });
  registry.add("DropoutGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node&) { return std::make_unique<DropoutGradCudaKernel>(); });
}

}  // namespace weir
