#include "ops/register_ops.h"

#include "ops/elementwise/elementwise_schemas.h"
#include "ops/linalg/linalg_schemas.h"
#include "ops/nn/softmax_schemas.h"

namespace weir {

void register_all_ops(OpRegistry& registry) {
  register_elementwise_schemas(registry);
  register_linalg_schemas(registry);
  register_softmax_schemas(registry);
}

const OpRegistry& default_op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry built;
    register_all_ops(built);
    return built;
  }();
  return registry;
}

}  // namespace weir
