#include "ops/cuda/host_input.h"

#include "ops/cuda/cuda_kernel_util.h"

namespace weir::cuda {

Tensor host_input(const KernelContext& ctx, size_t index, const char* what) {
  const Node& node = ctx.node();
  const Value* value = index < node.num_inputs() ? node.input(index) : nullptr;
  // The constant's tensor is what the session made resident on the device
  // and passed as this input: the same values, already on the host.
  if (value != nullptr && value->is_constant() && value->data().defined() && value->data().device().type == DeviceType::kCpu &&
      value->data().sizes() == ctx.input(index).sizes() && value->data().dtype() == ctx.input(index).dtype()) {
    return value->data();
  }
  return host_copy(ctx, ctx.input(index), what);
}

}  // namespace weir::cuda
