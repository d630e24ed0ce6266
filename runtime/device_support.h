// Whether this build and this machine can run a session on a device, asked
// before anything is compiled for it, so that "--device cuda:0" on a machine
// without a GPU fails with the reason instead of a missing kernel.
//
//   weir::check_device_usable(weir::Device::parse("cuda:0"));
//   // throws weir::Error(kDevice): "cuda:0: no CUDA device (cudaGetDeviceCount
//   // returned cudaErrorNoDevice: no CUDA-capable device is detected)"
//
// Host devices (cpu:N) are always usable. CUDA devices need a build with the
// CUDA backend (WEIR_CUDA, nvcc found at configure time) and that GPU.
#pragma once

#include "core/device.h"

namespace weir {

// Throws weir::Error naming the device and the reason when it cannot be used:
// kUnsupported for a build without CUDA, kDevice for a missing GPU.
void check_device_usable(const Device& device);

// True when this build has the CUDA backend (a GPU may still be absent).
bool built_with_cuda();

}  // namespace weir
