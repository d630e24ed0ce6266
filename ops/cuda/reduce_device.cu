#include "ops/cuda/reduce_device.h"

#include <limits>
#include <type_traits>

#include "ops/cuda/element_compute.cuh"

namespace weir::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocks = 65536;
// Blocks that keep every SM of an H100 (132) busy twice over: fewer outputs
// than that split their reductions into chunks.
constexpr int64_t kBusyBlocks = 264;
constexpr int64_t kMaxChunks = 1024;

int grid(int64_t blocks) { return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks); }

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Accumulators: integers wrap like the CPU's wrapping_add and wrapping_mul.
template <typename Acc>
__device__ inline Acc add(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    return static_cast<Acc>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
  } else {
    return a + b;
  }
}

template <typename Acc>
__device__ inline Acc mul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    return static_cast<Acc>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
  } else {
    return a * b;
  }
}

template <typename Acc>
__device__ inline bool is_nan(Acc value) {
  if constexpr (std::is_floating_point_v<Acc>) {
    return isnan(value);
  } else {
    return false;
  }
}

// Each reduction as transform (of one input element, given the output's
// shift) and combine (of two partial results).
struct SumOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return x; }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) { return add(a, b); }
};
struct AbsSumOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return x < Acc(0) ? Acc(0) - x : x; }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) { return add(a, b); }
};
struct SquareSumOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return mul(x, x); }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) { return add(a, b); }
};
struct ExpSumOp {  // LogSumExp's sum, after the max pass: exp(x - max)
  template <typename Acc> __device__ static Acc transform(Acc x, Acc shift) { return exp(x - shift); }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) { return a + b; }
};
struct ProdOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return x; }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) { return mul(a, b); }
};
// NaN propagates, as on the CPU: once a partial result is NaN nothing replaces it.
struct MaxOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return x; }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) {
    return (b > a || is_nan(b)) && !is_nan(a) ? b : a;
  }
};
struct MinOp {
  template <typename Acc> __device__ static Acc transform(Acc x, Acc) { return x; }
  template <typename Acc> __device__ static Acc combine(Acc a, Acc b) {
    return (b < a || is_nan(b)) && !is_nan(a) ? b : a;
  }
};

// Where a finished result goes: `out` as `type`, or the raw accumulator
// (the LogSumExp max pass, whose results are the next pass's shifts).
struct Target {
  void* out;
  ReduceType type;
  bool raw;
  Reduction reduction;
  int64_t count;
};

template <typename Acc>
__device__ inline void store_result(const Target& target, int64_t o, Acc acc, Acc shift) {
  if (target.raw) {
    static_cast<Acc*>(target.out)[o] = acc;
    return;
  }
  if constexpr (std::is_floating_point_v<Acc>) {
    double value = acc;
    switch (target.reduction) {
      case Reduction::kMean: value = acc / static_cast<double>(target.count); break;
      case Reduction::kL2: value = sqrt(acc); break;
      case Reduction::kLogSum: value = log(acc); break;
      case Reduction::kLogSumExp: value = isinf(shift) ? shift : shift + log(acc); break;
      default: break;
    }
    // Through f32 to the 16-bit types, as the CPU's store does.
    switch (target.type) {
      case ReduceType::kF32: static_cast<float*>(target.out)[o] = static_cast<float>(value); break;
      case ReduceType::kF64: static_cast<double*>(target.out)[o] = value; break;
      case ReduceType::kF16: static_cast<__half*>(target.out)[o] = __float2half_rn(static_cast<float>(value)); break;
      case ReduceType::kBF16:
        static_cast<__nv_bfloat16*>(target.out)[o] = __float2bfloat16_rn(static_cast<float>(value));
        break;
      default: break;
    }
  } else {
    long long value = acc;
    switch (target.reduction) {
      case Reduction::kMean: value = target.count == 0 ? 0 : acc / target.count; break;
      case Reduction::kL2: value = static_cast<long long>(sqrt(static_cast<double>(acc))); break;
      default: break;
    }
    if (target.type == ReduceType::kI32) {
      static_cast<int32_t*>(target.out)[o] = static_cast<int32_t>(value);
    } else {
      static_cast<int64_t*>(target.out)[o] = static_cast<int64_t>(value);
    }
  }
}

__device__ inline int64_t kept_offset(const ReduceLayout& layout, int64_t o) {
  int64_t offset = 0;
  for (int axis = layout.kept_rank - 1; axis >= 0; --axis) {
    offset += (o % layout.kept_sizes[axis]) * layout.kept_strides[axis];
    o /= layout.kept_sizes[axis];
  }
  return offset;
}

__device__ inline int64_t reduced_offset(const ReduceLayout& layout, int64_t r) {
  if (layout.reduced_rank == 1) return r * layout.reduced_strides[0];
  int64_t offset = 0;
  for (int axis = layout.reduced_rank - 1; axis >= 0; --axis) {
    offset += (r % layout.reduced_sizes[axis]) * layout.reduced_strides[axis];
    r /= layout.reduced_sizes[axis];
  }
  return offset;
}

template <typename Op, typename Acc>
__device__ inline Acc warp_reduce(Acc value) {
  for (int offset = 16; offset > 0; offset /= 2) value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Innermost axis reduced: a group of G threads (a warp, or the block) per
// (output, chunk) item; the group's threads stride through the chunk, then
// reduce as a tree. Lane 0 of the group holds the result.
template <typename T, typename Acc, typename Op, int G>
__global__ void __launch_bounds__(kThreads) reduce_lines(const T* in, ReduceLayout layout, int64_t chunks, int64_t chunk_len,
                                                         Acc identity, const Acc* shift, Acc* partials, Target target) {
  __shared__ Acc warp_results[kWarps];
  constexpr int kGroups = kThreads / G;
  const int lane = threadIdx.x % G, group = threadIdx.x / G;
  const int64_t items = layout.outputs * chunks;
  // `first` is the same for the whole block, so every thread takes the
  // loop's iterations together (the block-wide tree syncs inside).
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < items;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t item = first + group;
    const int64_t o = item / chunks, c = item % chunks;
    Acc acc = identity, s = Acc(0);
    if (item < items) {
      const int64_t base = kept_offset(layout, o);
      if (shift != nullptr) s = shift[o];
      const int64_t begin = c * chunk_len;
      const int64_t end = begin + chunk_len < layout.count ? begin + chunk_len : layout.count;
      for (int64_t r = begin + lane; r < end; r += G) {
        acc = Op::combine(acc, Op::transform(static_cast<Acc>(compute_load(in[base + reduced_offset(layout, r)])), s));
      }
    }
    acc = warp_reduce<Op>(acc);
    if constexpr (G == kThreads) {
      __syncthreads();  // the previous item's readers are done with warp_results
      if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = acc;
      __syncthreads();
      if (threadIdx.x < 32) {
        acc = threadIdx.x < kWarps ? warp_results[threadIdx.x] : identity;
        acc = warp_reduce<Op>(acc);
      }
    }
    if (lane == 0 && item < items) {
      if (chunks > 1) {
        partials[c * layout.outputs + o] = acc;
      } else {
        store_result(target, o, acc, s);
      }
    }
  }
}

// Innermost axis kept: a block per (32 neighbouring outputs, chunk) item;
// each warp reads one row of 32 neighbouring elements at a time (coalesced),
// warp w taking rows w, w + 8, ...; the 8 warps' results are combined in
// order through shared memory.
template <typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kThreads) reduce_columns(const T* in, ReduceLayout layout, int64_t chunks, int64_t chunk_len,
                                                           Acc identity, const Acc* shift, Acc* partials, Target target) {
  __shared__ Acc rows[kWarps][33];
  const int x = threadIdx.x % 32, y = threadIdx.x / 32;
  const int64_t groups = ceil_div(layout.outputs, 32);
  const int64_t items = groups * chunks;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t c = item / groups, o = (item % groups) * 32 + x;
    Acc acc = identity, s = Acc(0);
    if (o < layout.outputs) {
      const int64_t base = kept_offset(layout, o);
      if (shift != nullptr) s = shift[o];
      const int64_t begin = c * chunk_len;
      const int64_t end = begin + chunk_len < layout.count ? begin + chunk_len : layout.count;
      for (int64_t r = begin + y; r < end; r += kWarps) {
        acc = Op::combine(acc, Op::transform(static_cast<Acc>(compute_load(in[base + reduced_offset(layout, r)])), s));
      }
    }
    rows[y][x] = acc;
    __syncthreads();
    if (y == 0 && o < layout.outputs) {
      for (int w = 1; w < kWarps; ++w) acc = Op::combine(acc, rows[w][x]);
      if (chunks > 1) {
        partials[c * layout.outputs + o] = acc;
      } else {
        store_result(target, o, acc, s);
      }
    }
    __syncthreads();  // the next item overwrites `rows`
  }
}

// A long reduction's chunks, combined in chunk order: a thread per output.
template <typename Acc, typename Op>
__global__ void reduce_partials(const Acc* partials, int64_t chunks, int64_t outputs, const Acc* shift, Target target) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += step) {
    Acc acc = partials[o];
    for (int64_t c = 1; c < chunks; ++c) acc = Op::combine(acc, partials[c * outputs + o]);
    store_result(target, o, acc, shift != nullptr ? shift[o] : Acc(0));
  }
}

struct Plan {
  bool lines;       // innermost axis reduced (or nothing kept)
  int group;        // lines: threads per item, 32 or kThreads
  int64_t chunks;   // pieces each output's reduction is cut into
  int64_t chunk_len;
};

Plan plan_for(const ReduceLayout& layout) {
  Plan plan{};
  plan.lines = layout.kept_rank == 0 ||
               (layout.reduced_rank > 0 && layout.reduced_strides[layout.reduced_rank - 1] == 1);
  int64_t blocks = 0, per_chunk = 0;
  if (plan.lines) {
    plan.group = layout.count > 2048 ? kThreads : 32;
    blocks = ceil_div(layout.outputs, kThreads / plan.group);
    per_chunk = plan.group * 16;  // 16 elements per thread at least
  } else {
    plan.group = kThreads;
    blocks = ceil_div(layout.outputs, 32);
    per_chunk = kWarps * 64;
  }
  plan.chunks = 1;
  if (blocks < kBusyBlocks && layout.count > 2 * per_chunk) {
    int64_t chunks = ceil_div(kBusyBlocks, blocks);
    const int64_t most = ceil_div(layout.count, per_chunk);
    if (chunks > most) chunks = most;
    if (chunks > kMaxChunks) chunks = kMaxChunks;
    plan.chunks = chunks;
  }
  plan.chunk_len = ceil_div(layout.count, plan.chunks);
  if (plan.chunk_len == 0) plan.chunk_len = 1;
  plan.chunks = layout.count == 0 ? 1 : ceil_div(layout.count, plan.chunk_len);
  return plan;
}

constexpr size_t kAlignment = 256;
size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

template <typename T, typename Acc, typename Op>
void run(const T* in, const ReduceLayout& layout, const Plan& plan, Acc identity, const Acc* shift, Acc* partials,
         const Target& target, cudaStream_t stream) {
  if (plan.lines) {
    const int64_t items = layout.outputs * plan.chunks;
    if (plan.group == 32) {
      reduce_lines<T, Acc, Op, 32><<<grid(ceil_div(items, kWarps)), kThreads, 0, stream>>>(
          in, layout, plan.chunks, plan.chunk_len, identity, shift, partials, target);
    } else {
      reduce_lines<T, Acc, Op, kThreads><<<grid(items), kThreads, 0, stream>>>(in, layout, plan.chunks, plan.chunk_len,
                                                                              identity, shift, partials, target);
    }
  } else {
    reduce_columns<T, Acc, Op><<<grid(ceil_div(layout.outputs, 32) * plan.chunks), kThreads, 0, stream>>>(
        in, layout, plan.chunks, plan.chunk_len, identity, shift, partials, target);
  }
  if (plan.chunks > 1) {
    reduce_partials<Acc, Op><<<grid(ceil_div(layout.outputs, kThreads)), kThreads, 0, stream>>>(
        partials, plan.chunks, layout.outputs, shift, target);
  }
}

template <typename T>
void reduce_as(Reduction reduction, const void* x, ReduceType out_type, void* y, const ReduceLayout& layout,
               void* workspace, cudaStream_t stream) {
  using Acc = std::conditional_t<std::is_integral_v<T>, long long, double>;
  const T* in = static_cast<const T*>(x);
  const Plan plan = plan_for(layout);
  auto* next = static_cast<char*>(workspace);
  Acc* shift = nullptr;
  // Integer max/min start at T's limits, so an empty set gives them (as on the CPU).
  Acc lowest, highest;
  if constexpr (std::is_integral_v<T>) {
    lowest = std::numeric_limits<T>::lowest();
    highest = std::numeric_limits<T>::max();
  } else {
    lowest = -std::numeric_limits<Acc>::infinity();
    highest = std::numeric_limits<Acc>::infinity();
  }
  if (reduction == Reduction::kLogSumExp) {
    shift = reinterpret_cast<Acc*>(next);
    next += aligned(static_cast<size_t>(layout.outputs) * sizeof(Acc));
  }
  Acc* partials = plan.chunks > 1 ? reinterpret_cast<Acc*>(next) : nullptr;
  const Target target{y, out_type, false, reduction, layout.count};
  switch (reduction) {
    case Reduction::kSum:
    case Reduction::kMean:
    case Reduction::kLogSum: return run<T, Acc, SumOp>(in, layout, plan, Acc(0), nullptr, partials, target, stream);
    case Reduction::kMax: return run<T, Acc, MaxOp>(in, layout, plan, lowest, nullptr, partials, target, stream);
    case Reduction::kMin: return run<T, Acc, MinOp>(in, layout, plan, highest, nullptr, partials, target, stream);
    case Reduction::kProd: return run<T, Acc, ProdOp>(in, layout, plan, Acc(1), nullptr, partials, target, stream);
    case Reduction::kL1: return run<T, Acc, AbsSumOp>(in, layout, plan, Acc(0), nullptr, partials, target, stream);
    case Reduction::kL2:
    case Reduction::kSumSquare: return run<T, Acc, SquareSumOp>(in, layout, plan, Acc(0), nullptr, partials, target, stream);
    case Reduction::kLogSumExp:
      if constexpr (std::is_floating_point_v<Acc>) {
        // The max pass first: each output's shift, as the CPU's LogSumExp.
        const Target shifts{shift, out_type, true, Reduction::kMax, layout.count};
        run<T, Acc, MaxOp>(in, layout, plan, lowest, nullptr, partials, shifts, stream);
        run<T, Acc, ExpSumOp>(in, layout, plan, Acc(0), shift, partials, target, stream);
      }
      return;
  }
}

template <typename T>
__global__ void broadcast_reduced_kernel(const T* dy, const T* x, const T* y, T* dx, BroadcastBackLayout layout,
                                         int64_t total, Compute<T> divisor, bool mean, bool extremum) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += step) {
    int64_t slot = 0, rest = p;
    for (int axis = layout.rank - 1; axis >= 0; --axis) {
      slot += (rest % layout.sizes[axis]) * layout.dy_strides[axis];
      rest /= layout.sizes[axis];
    }
    Compute<T> value = compute_load(dy[slot]);
    if (mean) value = value / divisor;
    if (extremum && !(compute_load(x[p]) == compute_load(y[slot]))) value = Compute<T>(0);
    dx[p] = compute_store<T>(value);
  }
}

template <typename Fn>
void with_type(ReduceType type, Fn&& fn) {
  switch (type) {
    case ReduceType::kF32: return fn.template operator()<float>();
    case ReduceType::kF64: return fn.template operator()<double>();
    case ReduceType::kF16: return fn.template operator()<__half>();
    case ReduceType::kBF16: return fn.template operator()<__nv_bfloat16>();
    case ReduceType::kI32: return fn.template operator()<int32_t>();
    case ReduceType::kI64: return fn.template operator()<int64_t>();
  }
}

}  // namespace

size_t reduce_workspace_bytes(Reduction reduction, const ReduceLayout& layout) {
  const Plan plan = plan_for(layout);
  size_t bytes = 0;
  if (reduction == Reduction::kLogSumExp) bytes += aligned(static_cast<size_t>(layout.outputs) * 8);
  if (plan.chunks > 1) bytes += aligned(static_cast<size_t>(layout.outputs * plan.chunks) * 8);
  return bytes;
}

void launch_reduce(Reduction reduction, ReduceType in_type, const void* x, ReduceType out_type, void* y,
                   const ReduceLayout& layout, void* workspace, cudaStream_t stream) {
  with_type(in_type, [&]<typename T>() { reduce_as<T>(reduction, x, out_type, y, layout, workspace, stream); });
}

void launch_broadcast_reduced(ReduceType type, const void* dy, const void* x, const void* y, void* dx,
                              const BroadcastBackLayout& layout, int64_t total, int64_t count, bool mean,
                              bool extremum, cudaStream_t stream) {
  const int64_t blocks = ceil_div(total, kThreads);
  with_type(type, [&]<typename T>() {
    broadcast_reduced_kernel<T><<<grid(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(y), static_cast<T*>(dx), layout, total,
        static_cast<Compute<T>>(count), mean, extremum);
  });
}

}  // namespace weir::cuda
