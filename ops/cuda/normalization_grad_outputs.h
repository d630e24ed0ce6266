// What the CUDA gradient kernels of InstanceNormalization and
// LayerNormalization, (dY, X, scale) -> (dX, dScale, dB), check and allocate
// alike once they know how many values scale must hold.
//
//   const cuda::NormalizationGradOutputs out = cuda::normalization_grad_outputs(ctx, dy, x, scale, channels);
//   launch(..., out.dx.raw_data(), out.dscale.raw_data(), out.dbias.raw_data(), ..., out.stream);
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/kernel.h"

namespace weir::cuda {

struct NormalizationGradOutputs {
  cudaStream_t stream;
  Tensor& dx;      // X's shape and dtype
  Tensor& dscale;  // scale's
  Tensor& dbias;   // scale's
};

// Fails naming the node unless scale holds `scale_values` values, dY and
// scale have X's dtype and all three live on the device; then allocates the
// outputs, uninitialized.
inline NormalizationGradOutputs normalization_grad_outputs(KernelContext& ctx, const Tensor& dy, const Tensor& x,
                                                           const Tensor& scale, int64_t scale_values) {
  if (scale.num_elements() != scale_values) {
    ctx.fail("scale has " + std::to_string(scale.num_elements()) + " values; expected " + std::to_string(scale_values));
  }
  if (dy.dtype() != x.dtype() || scale.dtype() != x.dtype()) {
    ctx.fail("dY " + dy.type_string() + " and scale " + scale.type_string() + " must have X's dtype " +
             std::string(dtype_name(x.dtype())));
  }
  cudaStream_t stream = cuda_stream(ctx);
  require_on_device(ctx, dy, "dY");
  require_on_device(ctx, x, "X");
  require_on_device(ctx, scale, "scale");
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
  Tensor& dscale = ctx.allocate_output(1, scale.dtype(), scale.sizes(), KernelContext::Fill::kUninitialized);
  Tensor& dbias = ctx.allocate_output(2, scale.dtype(), scale.sizes(), KernelContext::Fill::kUninitialized);
  return {stream, dx, dscale, dbias};
}

}  // namespace weir::cuda
