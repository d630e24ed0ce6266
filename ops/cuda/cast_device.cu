#include "ops/cuda/cast_device.h"

#include <cuda/std/limits>
#include <type_traits>

#include "ops/cuda/element_compute.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

// ops/cast/cast.cc's convert(), case by case.
template <typename To, typename From>
__device__ inline To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return compute_load(value) != static_cast<Compute<From>>(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return compute_store<To>(static_cast<Compute<To>>(value ? 1 : 0));
  } else if constexpr (std::is_integral_v<To> && kFloatingElement<From>) {
    const double x = static_cast<double>(compute_load(value));
    if (isnan(x)) return To(0);
    using Limits = ::cuda::std::numeric_limits<To>;
    if (x <= static_cast<double>(Limits::lowest())) return Limits::lowest();
    if (x >= static_cast<double>(Limits::max())) return Limits::max();
    return static_cast<To>(x);
  } else if constexpr (std::is_integral_v<To>) {
    // Integer to integer: modular, as C++20 defines it and the GPU does.
    return static_cast<To>(value);
  } else {
    return compute_store<To>(static_cast<Compute<To>>(compute_load(value)));
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* in, To* out, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    out[i] = convert<To>(in[i]);
  }
}

// Calls fn with the C++ type of `type`.
template <typename Fn>
void with_type(CastType type, Fn&& fn) {
  switch (type) {
    case CastType::kF32: return fn.template operator()<float>();
    case CastType::kF64: return fn.template operator()<double>();
    case CastType::kF16: return fn.template operator()<__half>();
    case CastType::kBF16: return fn.template operator()<__nv_bfloat16>();
    case CastType::kI8: return fn.template operator()<int8_t>();
    case CastType::kU8: return fn.template operator()<uint8_t>();
    case CastType::kI16: return fn.template operator()<int16_t>();
    case CastType::kU16: return fn.template operator()<uint16_t>();
    case CastType::kI32: return fn.template operator()<int32_t>();
    case CastType::kU32: return fn.template operator()<uint32_t>();
    case CastType::kI64: return fn.template operator()<int64_t>();
    case CastType::kU64: return fn.template operator()<uint64_t>();
    case CastType::kBool: return fn.template operator()<bool>();
  }
}

}  // namespace

void launch_cast(CastType from, const void* in, CastType to, void* out, int64_t count, cudaStream_t stream) {
  with_type(from, [&]<typename From>() {
    with_type(to, [&]<typename To>() {
      if constexpr (!std::is_same_v<From, To>) {
        cast_kernel<From, To><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const From*>(in),
                                                                          static_cast<To*>(out), count);
      }
    });
  });
}

}  // namespace weir::cuda
