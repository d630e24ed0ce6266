#include "ops/cuda/integer_arithmetic_device.h"

#include <type_traits>

#include "ops/cuda/elementwise_dispatch.cuh"

namespace weir::cuda {

namespace {

template <IntegerOp kOp, typename T>
__device__ inline T apply(T a, T b) {
  using Unsigned = std::make_unsigned_t<T>;
  if constexpr (kOp == IntegerOp::kAdd) return static_cast<T>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
  if constexpr (kOp == IntegerOp::kSub) return static_cast<T>(static_cast<Unsigned>(a) - static_cast<Unsigned>(b));
  if constexpr (kOp == IntegerOp::kMul) return static_cast<T>(static_cast<Unsigned>(a) * static_cast<Unsigned>(b));
  if constexpr (kOp == IntegerOp::kDiv) {
    if (b == 0) return 0;
    if (b == -1) return static_cast<T>(Unsigned(0) - static_cast<Unsigned>(a));
    return static_cast<T>(a / b);
  }
  if constexpr (kOp == IntegerOp::kMod || kOp == IntegerOp::kFmod) {
    if (b == 0 || b == -1) return 0;
    T r = static_cast<T>(a % b);
    if constexpr (kOp == IntegerOp::kMod) {
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    }
    return r;
  }
}

template <IntegerOp kOp, typename T>
__global__ void integer_binary(const T* a, const T* b, T* out, int64_t count, const __grid_constant__ BroadcastIndexing indexing) {
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    int64_t offset_a, offset_b;
    broadcast_offsets(indexing, i, offset_a, offset_b);
    out[i] = apply<kOp>(a[offset_a], b[offset_b]);
  }
}

template <typename T>
__global__ void find_zero(const T* divisor, int64_t count, unsigned long long* first_zero) {
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    if (divisor[i] == 0) atomicMin(first_zero, static_cast<unsigned long long>(i));
  }
}

template <typename T>
void launch_as(IntegerOp op, const void* a, const void* b, void* out, int64_t count, const BroadcastIndexing& indexing,
               cudaStream_t stream) {
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  auto* z = static_cast<T*>(out);
  const int blocks = blocks_for(count);
  switch (op) {
    case IntegerOp::kAdd: integer_binary<IntegerOp::kAdd, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
    case IntegerOp::kSub: integer_binary<IntegerOp::kSub, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
    case IntegerOp::kMul: integer_binary<IntegerOp::kMul, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
    case IntegerOp::kDiv: integer_binary<IntegerOp::kDiv, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
    case IntegerOp::kMod: integer_binary<IntegerOp::kMod, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
    case IntegerOp::kFmod: integer_binary<IntegerOp::kFmod, T><<<blocks, kThreads, 0, stream>>>(x, y, z, count, indexing); break;
  }
}

}  // namespace

void launch_integer_binary(IntegerOp op, bool wide, const void* a, const void* b, void* out, int64_t count,
                           const BroadcastIndexing& indexing, cudaStream_t stream) {
  if (wide) {
    launch_as<int64_t>(op, a, b, out, count, indexing, stream);
  } else {
    launch_as<int32_t>(op, a, b, out, count, indexing, stream);
  }
}

void launch_find_zero_divisor(bool wide, const void* divisor, int64_t count, int64_t* first_zero, cudaStream_t stream) {
  auto* found = reinterpret_cast<unsigned long long*>(first_zero);
  // All bits set: -1 as an i64, above every element as the unsigned atomicMin takes.
  if (cudaMemsetAsync(found, 0xFF, sizeof(*found), stream) != cudaSuccess || count == 0) return;
  if (wide) {
    find_zero<int64_t><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const int64_t*>(divisor), count, found);
  } else {
    find_zero<int32_t><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const int32_t*>(divisor), count, found);
  }
}

}  // namespace weir::cuda
