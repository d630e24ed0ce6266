// The CPU's ComputeType rule (ops/dtype_dispatch.h) for device code, over
// every element type: f16 and bf16 compute in f32 (round to nearest even on
// store), every other type in itself. Used where a kernel must do what the
// CPU kernel does in the element type (Cast, gradients that add in it).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace weir::cuda {

template <typename T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<__half> { using type = float; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <typename T> using Compute = typename ComputeOf<T>::type;

template <typename T>
constexpr bool kFloatingElement = std::is_floating_point_v<Compute<T>>;

template <typename T>
__device__ inline Compute<T> compute_load(T value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(value);
  } else {
    return value;
  }
}

template <typename T>
__device__ inline T compute_store(Compute<T> value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(value);
  } else {
    return static_cast<T>(value);
  }
}

// a + b in the compute type, stored back: the CPU's
// store<T>(load(a) + load(b)) (integers wrap on the narrowing store).
template <typename T>
__device__ inline T add_in_element_type(T a, T b) {
  return compute_store<T>(static_cast<Compute<T>>(compute_load(a) + compute_load(b)));
}

// The zero of T.
template <typename T>
__device__ inline T element_zero() {
  return compute_store<T>(static_cast<Compute<T>>(0));
}

}  // namespace weir::cuda
