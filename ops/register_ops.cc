#include "ops/register_ops.h"

#include "ops/cast/cast.h"
#include "ops/comm/collective_kernels.h"
#include "ops/comm/collective_schemas.h"
#include "ops/comm/device_copy.h"
#include "ops/control/control_flow.h"
#include "ops/sequence/optional_ops.h"
#include "ops/sequence/sequence_ops.h"
#include "ops/elementwise/activation_kernels.h"
#include "ops/elementwise/activation_schemas.h"
#include "ops/elementwise/backward_kernels.h"
#include "ops/elementwise/binary_kernels.h"
#include "ops/elementwise/elementwise_schemas.h"
#include "ops/elementwise/fused_elementwise.h"
#include "ops/elementwise/logic_kernels.h"
#include "ops/elementwise/logic_schemas.h"
#include "ops/elementwise/prelu.h"
#include "ops/elementwise/unary_kernels.h"
#include "ops/linalg/linalg_schemas.h"
#include "ops/linalg/det.h"
#include "ops/linalg/einsum.h"
#include "ops/linalg/matmul_kernels.h"
#include "ops/loss/loss_kernels.h"
#include "ops/loss/class_center_sampling.h"
#include "ops/loss/class_shards.h"
#include "ops/loss/loss_schemas.h"
#include "ops/loss/margin_logits.h"
#include "ops/loss/sharded_cross_entropy.h"
#include "ops/nn/attention.h"
#include "ops/nn/conv_kernels.h"
#include "ops/nn/dropout.h"
#include "ops/nn/random_ops.h"
#include "ops/nn/hardmax.h"
#include "ops/nn/lrn.h"
#include "ops/nn/mean_variance_normalization.h"
#include "ops/nn/conv_schemas.h"
#include "ops/nn/normalization_kernels.h"
#include "ops/nn/normalization_schemas.h"
#include "ops/nn/pool_kernels.h"
#include "ops/nn/resize.h"
#include "ops/nn/recurrent.h"
#include "ops/nn/max_unpool.h"
#include "ops/nn/grid_sample.h"
#include "ops/nn/non_max_suppression.h"
#include "ops/nn/roi_align.h"
#include "ops/nn/tfidf_vectorizer.h"
#include "ops/signal/dft.h"
#include "ops/signal/mel_weight_matrix.h"
#include "ops/signal/window_functions.h"
#include "ops/nn/pool_schemas.h"
#include "ops/nn/softmax_kernels.h"
#include "ops/optimizer/dgc.h"
#include "ops/optimizer/gradient_merge.h"
#include "ops/optimizer/local_sgd.h"
#include "ops/optimizer/loss_scaling.h"
#include "ops/optimizer/onnx_training_ops.h"
#include "ops/optimizer/optimizer_kernels.h"
#include "ops/optimizer/optimizer_schemas.h"
#include "ops/ps/parameter_server_ops.h"
#include "ops/quantization/integer_conv.h"
#include "ops/quantization/integer_matmul.h"
#include "ops/quantization/quantize_linear.h"
#include "ops/reduce/along_axis_kernels.h"
#include "ops/reduce/along_axis_schemas.h"
#include "ops/reduce/reduce_kernels.h"
#include "ops/reduce/reduce_schemas.h"
#include "ops/nn/softmax_schemas.h"
#include "ops/tensor/depth_space.h"
#include "ops/tensor/indexing_kernels.h"
#include "ops/tensor/indexing_schemas.h"
#include "ops/tensor/one_hot.h"
#include "ops/tensor/pad.h"
#include "ops/tensor/scatter_gather_kernels.h"
#include "ops/tensor/scatter_gather_schemas.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_schemas.h"
#include "ops/tensor/trilu.h"
#include "ops/tensor/eye_like.h"
#include "ops/tensor/reverse_sequence.h"
#include "ops/tensor/selection.h"

#if WEIR_HAVE_CUDA
#include "ops/cuda/register_cuda_kernels.h"
#endif

namespace weir {

void register_all_ops(OpRegistry& registry) {
  register_elementwise_schemas(registry);
  register_logic_schemas(registry);
  register_activation_schemas(registry);
  register_prelu_schema(registry);
  register_fused_elementwise_schema(registry);
  register_cast_schema(registry);
  register_linalg_schemas(registry);
  register_softmax_schemas(registry);
  register_hardmax_schema(registry);
  register_attention_schemas(registry);
  register_conv_schemas(registry);
  register_dropout_schemas(registry);
  register_random_schemas(registry);
  register_parameter_server_schemas(registry);
  register_pool_schemas(registry);
  register_resize_schemas(registry);
  register_recurrent_schemas(registry);
  register_grid_sample_schemas(registry);
  register_non_max_suppression_schema(registry);
  register_roi_align_schema(registry);
  register_tfidf_vectorizer_schema(registry);
  register_dft_schemas(registry);
  register_window_function_schemas(registry);
  register_mel_weight_matrix_schema(registry);
  register_normalization_schemas(registry);
  register_lrn_schema(registry);
  register_mean_variance_normalization_schema(registry);
  register_tensor_schemas(registry);
  register_indexing_schemas(registry);
  register_scatter_gather_schemas(registry);
  register_pad_schemas(registry);
  register_one_hot_schema(registry);
  register_trilu_schema(registry);
  register_control_flow_schemas(registry);
  register_sequence_schemas(registry);
  register_optional_schemas(registry);
  register_eye_like_schema(registry);
  register_selection_schemas(registry);
  register_reverse_sequence_schema(registry);
  register_det_schemas(registry);
  register_einsum_schemas(registry);
  register_max_unpool_schemas(registry);
  register_quantize_linear_schemas(registry);
  register_integer_matmul_schemas(registry);
  register_integer_conv_schemas(registry);
  register_depth_space_schemas(registry);
  register_reduce_schemas(registry);
  register_along_axis_schemas(registry);
  register_loss_schemas(registry);
  register_margin_logits_schemas(registry);
  register_class_shard_schemas(registry);
  register_class_center_sampling_schemas(registry);
  register_sharded_cross_entropy_schemas(registry);
  register_optimizer_schemas(registry);
  register_onnx_training_schemas(registry);
  register_local_sgd_schemas(registry);
  register_loss_scaling_schemas(registry);
  register_gradient_merge_schemas(registry);
  register_dgc_schemas(registry);
  register_collective_schemas(registry);
  register_device_copy_schema(registry);
}

const OpRegistry& default_op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry built;
    register_all_ops(built);
    return built;
  }();
  return registry;
}

void register_cpu_kernels(KernelRegistry& registry) {
  register_binary_cpu_kernels(registry);
  register_unary_cpu_kernels(registry);
  register_activation_cpu_kernels(registry);
  register_prelu_cpu_kernel(registry);
  register_fused_elementwise_cpu_kernel(registry);
  register_logic_cpu_kernels(registry);
  register_cast_cpu_kernel(registry);
  register_elementwise_backward_cpu_kernels(registry);
  register_matmul_cpu_kernels(registry);
  register_attention_cpu_kernels(registry);
  register_tensor_cpu_kernels(registry);
  register_indexing_cpu_kernels(registry);
  register_scatter_gather_cpu_kernels(registry);
  register_pad_cpu_kernels(registry);
  register_one_hot_cpu_kernel(registry);
  register_trilu_cpu_kernel(registry);
  register_control_flow_cpu_kernels(registry);
  register_sequence_cpu_kernels(registry);
  register_optional_cpu_kernels(registry);
  register_eye_like_cpu_kernel(registry);
  register_selection_cpu_kernels(registry);
  register_reverse_sequence_cpu_kernel(registry);
  register_det_cpu_kernels(registry);
  register_einsum_cpu_kernels(registry);
  register_max_unpool_cpu_kernels(registry);
  register_quantize_linear_cpu_kernels(registry);
  register_integer_matmul_cpu_kernels(registry);
  register_integer_conv_cpu_kernels(registry);
  register_depth_space_cpu_kernels(registry);
  register_softmax_cpu_kernels(registry);
  register_hardmax_cpu_kernel(registry);
  register_conv_cpu_kernels(registry);
  register_dropout_cpu_kernels(registry);
  register_random_cpu_kernels(registry);
  register_parameter_server_cpu_kernels(registry);
  register_pool_cpu_kernels(registry);
  register_resize_cpu_kernels(registry);
  register_recurrent_cpu_kernels(registry);
  register_grid_sample_cpu_kernels(registry);
  register_non_max_suppression_cpu_kernel(registry);
  register_roi_align_cpu_kernel(registry);
  register_tfidf_vectorizer_cpu_kernel(registry);
  register_dft_cpu_kernels(registry);
  register_window_function_cpu_kernels(registry);
  register_mel_weight_matrix_cpu_kernel(registry);
  register_normalization_cpu_kernels(registry);
  register_lrn_cpu_kernel(registry);
  register_mean_variance_normalization_cpu_kernel(registry);
  register_reduce_cpu_kernels(registry);
  register_along_axis_cpu_kernels(registry);
  register_loss_cpu_kernels(registry);
  register_margin_logits_cpu_kernels(registry);
  register_class_shard_cpu_kernels(registry);
  register_class_center_sampling_cpu_kernels(registry);
  register_sharded_cross_entropy_cpu_kernels(registry);
  register_optimizer_cpu_kernels(registry);
  register_onnx_training_cpu_kernels(registry);
  register_local_sgd_cpu_kernels(registry);
  register_loss_scaling_cpu_kernels(registry);
  register_gradient_merge_cpu_kernels(registry);
  register_dgc_cpu_kernels(registry);
  register_collective_cpu_kernels(registry);
  register_device_copy_kernels(registry);
}

void register_all_kernels(KernelRegistry& registry) {
  register_cpu_kernels(registry);
#if WEIR_HAVE_CUDA
  register_all_cuda_kernels(registry);
#endif
}

const KernelRegistry& default_kernel_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry built;
    register_all_kernels(built);
    return built;
  }();
  return registry;
}

}  // namespace weir
