// A scalar input that device code reads from its tensor (lr, a step, a
// loss): its device pointer and element type, so a value the GPU computed
// feeds a kernel in stream order without a round trip to the host.
// cuda_kernel_util.h's device_scalar() makes one from a kernel's input;
// device_scalar.cuh's read_scalar() reads it in device code.
#pragma once

namespace weir::cuda {

// The element type of a scalar input read on the device.
enum class ScalarType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64 };

struct DeviceScalar {
  const void* data = nullptr;  // device memory; nullptr: absent
  ScalarType type = ScalarType::kFloat32;
};

}  // namespace weir::cuda
