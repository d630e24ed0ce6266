#include "ops/cuda/register_cuda_kernels.h"

#include "ops/cuda/elementwise_kernels.h"
#include "ops/cuda/matmul_kernels.h"
#include "ops/cuda/softmax_kernels.h"
#include "ops/tensor/tensor_kernels.h"

namespace weir {

void register_all_cuda_kernels(KernelRegistry& registry) {
  register_elementwise_cuda_kernels(registry);
  register_matmul_cuda_kernels(registry);
  register_softmax_cuda_kernels(registry);
  register_view_kernels(registry, DeviceType::kCuda);
}

}  // namespace weir
