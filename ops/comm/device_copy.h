// DeviceCopy(X) -> Y: Y is a copy of X on the device the node runs on. The
// runtime inserts one wherever a value produced on one device is read on
// another, so kernels only ever see tensors of their own device.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_device_copy_schema(OpRegistry& registry);
void register_device_copy_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
