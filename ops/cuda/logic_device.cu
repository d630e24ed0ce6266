#include "ops/cuda/logic_device.h"

#include <type_traits>

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/elementwise_dispatch.cuh"

namespace weir::cuda {

namespace {

// The value an operand compares as: f16/bf16 in f32, the rest as they are.
__device__ inline float value_of(__half x) { return __half2float(x); }
__device__ inline float value_of(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ inline T value_of(T x) { return x; }

template <CompareOp kOp, typename C>
__device__ inline bool compare(C a, C b) {
  if constexpr (kOp == CompareOp::kEqual) return a == b;
  if constexpr (kOp == CompareOp::kLess) return a < b;
  if constexpr (kOp == CompareOp::kGreater) return a > b;
  if constexpr (kOp == CompareOp::kLessOrEqual) return a <= b;
  if constexpr (kOp == CompareOp::kGreaterOrEqual) return a >= b;
  if constexpr (kOp == CompareOp::kAnd) return a && b;
  if constexpr (kOp == CompareOp::kOr) return a || b;
  if constexpr (kOp == CompareOp::kXor) return a != b;
}

template <typename T, CompareOp kOp>
__global__ void compare_kernel(const T* a, const T* b, bool* out, int64_t count,
                               const __grid_constant__ BroadcastIndexing indexing) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t offset_a, offset_b;
    broadcast_offsets(indexing, i, offset_a, offset_b);
    out[i] = compare<kOp>(value_of(a[offset_a]), value_of(b[offset_b]));
  }
}

__global__ void not_kernel(const bool* x, bool* out, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) out[i] = !x[i];
}

template <typename Bits>
__global__ void where_kernel(const bool* condition, const Bits* x, const Bits* y, Bits* out, int64_t count,
                             const __grid_constant__ MultiBroadcastIndexing indexing) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t coordinates[MultiBroadcastIndexing::kMaxRank];
    broadcast_coordinates(indexing, i, coordinates);
    out[i] = condition[operand_offset(indexing, 0, coordinates)] ? x[operand_offset(indexing, 1, coordinates)]
                                                                 : y[operand_offset(indexing, 2, coordinates)];
  }
}

template <typename F>
void dispatch_compare_type(CompareType type, F&& f) {
  switch (type) {
    case CompareType::kFloat32: return f.template operator()<float>();
    case CompareType::kFloat16: return f.template operator()<__half>();
    case CompareType::kBFloat16: return f.template operator()<__nv_bfloat16>();
    case CompareType::kInt32: return f.template operator()<int32_t>();
    case CompareType::kInt64: return f.template operator()<int64_t>();
    case CompareType::kBool: return f.template operator()<bool>();
  }
}

}  // namespace

void launch_compare(CompareOp op, CompareType type, const void* a, const void* b, bool* out, int64_t count,
                    const BroadcastIndexing& indexing, cudaStream_t stream) {
  dispatch_compare_type(type, [&]<typename T>() {
    auto launch = [&]<CompareOp kOp>() {
      compare_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(a),
                                                                          static_cast<const T*>(b), out, count, indexing);
    };
    if constexpr (std::is_same_v<T, bool>) {
      dispatch_op<CompareOp, CompareOp::kEqual, CompareOp::kAnd, CompareOp::kOr, CompareOp::kXor>(op, launch);
    } else {
      dispatch_op<CompareOp, CompareOp::kEqual, CompareOp::kLess, CompareOp::kGreater, CompareOp::kLessOrEqual,
                  CompareOp::kGreaterOrEqual>(op, launch);
    }
  });
}

void launch_not(const bool* x, bool* out, int64_t count, cudaStream_t stream) {
  not_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, out, count);
}

void launch_where(const bool* condition, const void* x, const void* y, void* out, int64_t count, int element_size,
                  const MultiBroadcastIndexing& indexing, cudaStream_t stream) {
  auto launch = [&]<typename Bits>() {
    where_kernel<Bits><<<blocks_for(count), kThreads, 0, stream>>>(condition, static_cast<const Bits*>(x),
                                                                    static_cast<const Bits*>(y), static_cast<Bits*>(out),
                                                                    count, indexing);
  };
  switch (element_size) {
    case 1: return launch.template operator()<uint8_t>();
    case 2: return launch.template operator()<uint16_t>();
    case 4: return launch.template operator()<uint32_t>();
    case 8: return launch.template operator()<uint64_t>();
    default: return;  // the kernel checks the size before launching
  }
}

}  // namespace weir::cuda
