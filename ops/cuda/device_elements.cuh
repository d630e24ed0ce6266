// Loads and stores of the element types the CUDA kernels take, for device
// code: every type computes in f32, and f16/bf16 round to nearest even on
// store, which is what the CPU kernels' load()/store() do (the conversions
// are checked against each other bit for bit in tests/cuda); and the
// dispatch from an ElementType to its C++ type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

__device__ inline float load(float x) { return x; }
__device__ inline float load(__half x) { return __half2float(x); }
__device__ inline float load(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ inline T store(float x);
template <> __device__ inline float store<float>(float x) { return x; }
template <> __device__ inline __half store<__half>(float x) { return __float2half_rn(x); }
template <> __device__ inline __nv_bfloat16 store<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Calls `f` with a value of the C++ type of `type`, for host launchers:
//   with_element_type(type, [&](auto t) { using T = decltype(t); my_kernel<T><<<...>>>(...); });
template <typename F>
void with_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kFloat32: return f(float{});
    case ElementType::kFloat16: return f(__half{});
    case ElementType::kBFloat16: return f(__nv_bfloat16{});
  }
}

}  // namespace weir::cuda
