// DeviceCopy(X) -> Y: Y is a copy of X on the device the node runs on. The
// runtime inserts one wherever a value produced on one device is read on
// another, so kernels only ever see tensors of their own device.
//
// With to_host=1 the node runs on the device X lives on (a GPU) and Y is in
// that device's host memory (pinned for a GPU): the host cannot read device
// memory, so the copy back is the device's work, as a copy onto the device
// is. The runtime inserts it where a node the GPU has no kernel for runs on
// the host (CompileOptions::host_fallback).
#pragma once

#include "core/graph.h"
#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_device_copy_schema(OpRegistry& registry);
// The kernel is the backend's copy, so one kernel serves every device type.
void register_device_copy_kernels(KernelRegistry& registry);

// True for a DeviceCopy whose output is in host memory (to_host=1).
bool copies_to_host(const Node& node);

}  // namespace weir
