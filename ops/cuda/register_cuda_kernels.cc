#include "ops/cuda/register_cuda_kernels.h"

#include "ops/comm/collective_kernels.h"
#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/conv_kernels.h"
#include "ops/cuda/dgc_kernels.h"
#include "ops/cuda/pool_kernels.h"
#include "ops/cuda/dropout_kernels.h"
#include "ops/cuda/elementwise_grad_kernels.h"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/cuda/fused_elementwise_kernels.h"
#include "ops/cuda/logic_kernels.h"
#include "ops/cuda/gelu_kernels.h"
#include "ops/cuda/gradient_merge_kernels.h"
#include "ops/cuda/instance_norm_kernels.h"
#include "ops/cuda/integer_arithmetic_kernels.h"
#include "ops/cuda/layer_norm_kernels.h"
#include "ops/cuda/loss_kernels.h"
#include "ops/cuda/local_sgd_kernels.h"
#include "ops/cuda/loss_scaling_kernels.h"
#include "ops/cuda/onnx_training_kernels.h"
#include "ops/cuda/optimizer_kernels.h"
#include "ops/cuda/matmul_kernels.h"
#include "ops/cuda/softmax_grad_kernels.h"
#include "ops/cuda/softmax_kernels.h"
#include "ops/cuda/cast_kernels.h"
#include "ops/cuda/indexing_kernels.h"
#include "ops/cuda/reduce_kernels.h"
#include "ops/cuda/tensor_kernels.h"
#include "ops/tensor/tensor_kernels.h"

namespace weir {

void register_all_cuda_kernels(KernelRegistry& registry) {
  register_elementwise_cuda_kernels(registry);
  register_integer_arithmetic_cuda_kernels(registry);
  register_elementwise_grad_cuda_kernels(registry);
  register_fused_elementwise_cuda_kernel(registry);
  register_logic_cuda_kernels(registry);
  register_softmax_grad_cuda_kernels(registry);
  register_attention_cuda_kernels(registry);
  register_batch_norm_cuda_kernels(registry);
  register_conv_cuda_kernels(registry);
  register_pool_cuda_kernels(registry);
  register_dropout_cuda_kernels(registry);
  register_gelu_cuda_kernels(registry);
  register_instance_norm_cuda_kernels(registry);
  register_layer_norm_cuda_kernels(registry);
  register_loss_cuda_kernels(registry);
  register_loss_scaling_cuda_kernels(registry);
  register_onnx_training_cuda_kernels(registry);
  register_optimizer_cuda_kernels(registry);
  register_gradient_merge_cuda_kernels(registry);
  register_local_sgd_cuda_kernels(registry);
  register_dgc_cuda_kernels(registry);
  register_matmul_cuda_kernels(registry);
  register_softmax_cuda_kernels(registry);
  register_cast_cuda_kernels(registry);
  register_tensor_cuda_kernels(registry);
  register_indexing_cuda_kernels(registry);
  register_reduce_cuda_kernels(registry);
  register_view_kernels(registry, DeviceType::kCuda);
  register_collective_kernels(registry, DeviceType::kCuda);
}

}  // namespace weir
