#include "passes/pass.h"

#include "ops/register_ops.h"

namespace weir {

PassContext::PassContext() : registry_(&default_op_registry()), kernels_(&default_kernel_registry()) {}

PassContext::PassContext(const OpRegistry& registry, const KernelRegistry* kernels)
    : registry_(&registry), kernels_(kernels != nullptr ? kernels : &default_kernel_registry()) {}

}  // namespace weir
