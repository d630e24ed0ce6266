// read_scalar(): a DeviceScalar (device_scalar.h) as a double, in device
// code, as ops/optimizer/scalar_input.h's scalar_input() reads it on the
// host (f16 and bf16 widened exactly, integers converted).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/cuda/device_scalar.h"

namespace weir::cuda {

__device__ inline double read_scalar(DeviceScalar scalar) {
  switch (scalar.type) {
    case ScalarType::kFloat32: return static_cast<double>(*static_cast<const float*>(scalar.data));
    case ScalarType::kFloat64: return *static_cast<const double*>(scalar.data);
    case ScalarType::kFloat16: return static_cast<double>(__half2float(*static_cast<const __half*>(scalar.data)));
    case ScalarType::kBFloat16:
      return static_cast<double>(__bfloat162float(*static_cast<const __nv_bfloat16*>(scalar.data)));
    case ScalarType::kInt32: return static_cast<double>(*static_cast<const int32_t*>(scalar.data));
    case ScalarType::kInt64: return static_cast<double>(*static_cast<const int64_t*>(scalar.data));
  }
  return 0;
}

}  // namespace weir::cuda
