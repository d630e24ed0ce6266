#include "passes/pass.h"

#include "ops/register_ops.h"

namespace weir {

PassContext::PassContext() : registry_(&default_op_registry()) {}

}  // namespace weir
