#include "ops/cuda/cast_kernels.h"

#include <string>

#include "core/error.h"
#include "ops/cast/cast.h"
#include "ops/cuda/cast_device.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/dtype_sets.h"

namespace weir {

namespace {

cuda::CastType cast_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return cuda::CastType::kF32;
    case DType::kFloat64: return cuda::CastType::kF64;
    case DType::kFloat16: return cuda::CastType::kF16;
    case DType::kBFloat16: return cuda::CastType::kBF16;
    case DType::kInt8: return cuda::CastType::kI8;
    case DType::kUInt8: return cuda::CastType::kU8;
    case DType::kInt16: return cuda::CastType::kI16;
    case DType::kUInt16: return cuda::CastType::kU16;
    case DType::kInt32: return cuda::CastType::kI32;
    case DType::kUInt32: return cuda::CastType::kU32;
    case DType::kInt64: return cuda::CastType::kI64;
    case DType::kUInt64: return cuda::CastType::kU64;
    case DType::kBool: return cuda::CastType::kBool;
    case DType::kUndefined: break;
  }
  throw Error(ErrorKind::kInternal, "Cast on an undefined dtype");
}

class CastCudaKernel final : public OpKernel {
 public:
  explicit CastCudaKernel(const Node& node) : to_(cast_target(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    cuda::require_on_device(ctx, x, "input 0");
    if (x.dtype() == to_) {  // a view, as on the CPU (Cast is kViewOfInput)
      ctx.set_output(0, x);
      return;
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& y = ctx.allocate_output(0, to_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_cast(cast_type(x.dtype()), x.raw_data(), cast_type(to_), y.raw_data(), y.num_elements(), stream);
    cuda::check_launch(ctx, "cast_kernel");
  }

 private:
  DType to_;
};

}  // namespace

void register_cast_cuda_kernels(KernelRegistry& registry) {
  registry.add("Cast", DeviceType::kCuda, kAnyDTypes, [](const Node& node) { return std::make_unique<CastCudaKernel>(node); });
}

}  // namespace weir
