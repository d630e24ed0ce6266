#include "ops/cuda/tensor_device.h"

#include <cub/device/device_radix_sort.cuh>

#include <cstring>

#include "ops/cuda/element_compute.cuh"
#include "ops/cuda/launch_shape.cuh"
#include "ops/cuda/sort_key_bits.h"

namespace weir::cuda {

namespace {

constexpr int64_t kMaxStep = kMaxBlocks * kThreads;

// Calls fn with the unsigned word type of `size` bytes (1, 2, 4, 8, 16).
template <typename Fn>
void with_word(size_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<unsigned long long>();
    default: return fn.template operator()<uint4>();
  }
}

template <typename Fn>
void with_add_type(AddType type, Fn&& fn) {
  switch (type) {
    case AddType::kF32: return fn.template operator()<float>();
    case AddType::kF64: return fn.template operator()<double>();
    case AddType::kF16: return fn.template operator()<__half>();
    case AddType::kBF16: return fn.template operator()<__nv_bfloat16>();
    case AddType::kI8: return fn.template operator()<int8_t>();
    case AddType::kU8: return fn.template operator()<uint8_t>();
    case AddType::kI16: return fn.template operator()<int16_t>();
    case AddType::kU16: return fn.template operator()<uint16_t>();
    case AddType::kI32: return fn.template operator()<int32_t>();
    case AddType::kU32: return fn.template operator()<uint32_t>();
    case AddType::kI64: return fn.template operator()<int64_t>();
    case AddType::kU64: return fn.template operator()<uint64_t>();
  }
}

// The strided copy's layout in the index type the kernel computes in: 32-bit
// where every offset fits (64-bit division is many instructions on the GPU).
template <typename Index>
struct Dims {
  int rank;
  Index sizes[StridedCopy::kMaxRank];
  Index src[StridedCopy::kMaxRank];
  Index dst[StridedCopy::kMaxRank];
};

template <typename Word, typename Index>
__global__ void strided_copy_kernel(const Word* src, Word* dst, Dims<Index> dims, Index count) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    Index rest = i, from = 0, to = 0;
    for (int axis = dims.rank - 1; axis >= 0; --axis) {
      const Index coordinate = rest % dims.sizes[axis];
      rest /= dims.sizes[axis];
      from += coordinate * dims.src[axis];
      to += coordinate * dims.dst[axis];
    }
    dst[to] = src[from];
  }
}

template <typename Word, typename Index>
void strided_copy_as(const void* src, void* dst, const StridedCopy& layout, int64_t count, cudaStream_t stream) {
  Dims<Index> dims{};
  dims.rank = layout.rank;
  for (int axis = 0; axis < layout.rank; ++axis) {
    dims.sizes[axis] = static_cast<Index>(layout.sizes[axis]);
    dims.src[axis] = static_cast<Index>(layout.src_strides[axis]);
    dims.dst[axis] = static_cast<Index>(layout.dst_strides[axis]);
  }
  strided_copy_kernel<Word, Index><<<blocks_for(count), kThreads, 0, stream>>>(
      static_cast<const Word*>(src), static_cast<Word*>(dst), dims, static_cast<Index>(count));
}

// Whether count, the loop's last step past it, and every offset either side
// reaches fit in int32.
bool fits_32_bits(const StridedCopy& layout, int64_t count) {
  constexpr int64_t kLimit = (int64_t{1} << 31) - 1;
  if (count > kLimit - kMaxStep) return false;
  int64_t src_extent = 0, dst_extent = 0;
  for (int axis = 0; axis < layout.rank; ++axis) {
    const int64_t last = layout.sizes[axis] - 1;
    src_extent += last * (layout.src_strides[axis] < 0 ? -layout.src_strides[axis] : layout.src_strides[axis]);
    dst_extent += last * (layout.dst_strides[axis] < 0 ? -layout.dst_strides[axis] : layout.dst_strides[axis]);
  }
  return src_extent <= kLimit && dst_extent <= kLimit;
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column: each thread moves kTile / kTileRows words

template <typename Word>
__global__ void transpose_tiled_kernel(const Word* src, Word* dst, int64_t batch, int64_t rows, int64_t cols,
                                       int64_t tiles_r, int64_t tiles_c) {
  __shared__ Word tile[kTile][kTile + 1];  // +1: a column of the tile spans every bank
  const int64_t per_batch = tiles_r * tiles_c;
  const int64_t total = batch * per_batch;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int64_t b = t / per_batch, rest = t % per_batch;
    const int64_t r0 = (rest / tiles_c) * kTile, c0 = (rest % tiles_c) * kTile;
    const Word* in = src + b * rows * cols;
    Word* out = dst + b * rows * cols;
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t c = c0 + j, r = r0 + threadIdx.x;
      if (c < cols && r < rows) out[c * rows + r] = tile[threadIdx.x][j];
    }
    __syncthreads();  // the next tile overwrites `tile`
  }
}

template <typename Word, typename IndexT>
__global__ void gather_kernel(const Word* data, const IndexT* indices, Word* out, int64_t along, int64_t count,
                              int64_t row, int64_t total, unsigned long long* first_bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t k = e % row, rest = e / row;
    const int64_t i = rest % count, o = rest / count;
    int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0) index += along;
    Word value{};
    if (index >= 0 && index < along) {
      value = data[(o * along + index) * row + k];
    } else if (o == 0 && k == 0) {  // one thread per position reports it
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
    out[e] = value;
  }
}

// GatherGrad, step 1: keys (the wrapped index, or `along` for one out of
// range, which sorts last and matches no row) and values (the position i).
template <typename IndexT>
__global__ void gather_grad_keys(const IndexT* indices, int32_t* keys, int32_t* positions, int64_t along,
                                 int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0) index += along;
    keys[i] = static_cast<int32_t>(index >= 0 && index < along ? index : along);
    positions[i] = static_cast<int32_t>(i);
  }
}

// The first p in [0, count) with keys[p] >= key (keys ascending), else count.
__device__ inline int64_t lower_bound(const int32_t* keys, int64_t count, int64_t key) {
  int64_t low = 0, high = count;
  while (low < high) {
    const int64_t middle = low + (high - low) / 2;
    if (keys[middle] < key) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// GatherGrad, step 3: each dx element sums its sources in increasing i (the
// sort is stable), in the element type, as the CPU kernel's loop does.
template <typename T>
__global__ void gather_grad_sum(const T* dy, const int32_t* keys, const int32_t* positions, T* dx, int64_t along,
                                int64_t count, int64_t row, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t k = e % row, rest = e / row;
    const int64_t j = rest % along, o = rest / along;
    T sum = element_zero<T>();
    const int64_t end = lower_bound(keys, count, j + 1);
    for (int64_t p = lower_bound(keys, count, j); p < end; ++p) {
      sum = add_in_element_type(sum, dy[(o * count + positions[p]) * row + k]);
    }
    dx[e] = sum;
  }
}

struct TileDims {
  int rank;
  int64_t x_sizes[kMaxTileRank];
  int64_t repeats[kMaxTileRank];
  int64_t dy_strides[kMaxTileRank];
  int64_t tiles;
};

template <typename T>
__global__ void tile_grad_kernel(const T* dy, T* dx, TileDims dims, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t base = 0, rest = e;
    for (int axis = dims.rank - 1; axis >= 0; --axis) {
      base += (rest % dims.x_sizes[axis]) * dims.dy_strides[axis];
      rest /= dims.x_sizes[axis];
    }
    T sum = element_zero<T>();
    for (int64_t t = 0; t < dims.tiles; ++t) {
      int64_t offset = base, tile = t;
      for (int axis = dims.rank - 1; axis >= 0; --axis) {
        offset += (tile % dims.repeats[axis]) * dims.x_sizes[axis] * dims.dy_strides[axis];
        tile /= dims.repeats[axis];
      }
      sum = add_in_element_type(sum, dy[offset]);
    }
    dx[e] = sum;
  }
}

template <typename Word>
__global__ void fill_kernel(Word* dst, int64_t count, Word value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) dst[i] = value;
}

struct WrittenValues {
  int64_t values[kMaxWrittenValues];
};

__global__ void write_i64_kernel(int64_t* dst, WrittenValues values, int count) {
  if (static_cast<int>(threadIdx.x) < count) dst[threadIdx.x] = values.values[threadIdx.x];
}

constexpr size_t kAlignment = 256;

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

size_t sort_bytes(int64_t count, int64_t along) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                  static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                  static_cast<int>(count), 0, sort_key_bits(along));
  return bytes;
}

}  // namespace

void launch_strided_copy(size_t word_size, const void* src, void* dst, const StridedCopy& layout, int64_t count,
                         cudaStream_t stream) {
  const bool narrow = fits_32_bits(layout, count);
  with_word(word_size, [&]<typename Word>() {
    if (narrow) {
      strided_copy_as<Word, int32_t>(src, dst, layout, count, stream);
    } else {
      strided_copy_as<Word, int64_t>(src, dst, layout, count, stream);
    }
  });
}

void launch_transpose_tiled(size_t word_size, const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
                            cudaStream_t stream) {
  const int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  const int64_t tiles = batch * tiles_r * tiles_c;
  const int blocks = static_cast<int>(tiles < kMaxBlocks ? tiles : kMaxBlocks);
  const dim3 threads(kTile, kTileRows);
  with_word(word_size, [&]<typename Word>() {
    if constexpr (sizeof(Word) <= 8) {
      transpose_tiled_kernel<Word><<<blocks, threads, 0, stream>>>(static_cast<const Word*>(src), static_cast<Word*>(dst),
                                                                   batch, rows, cols, tiles_r, tiles_c);
    }
  });
}

void launch_gather(size_t word_size, const void* data, const void* indices, bool indices_are_i64, void* out,
                   int64_t outer, int64_t along, int64_t count, int64_t row_words, int64_t* first_bad,
                   cudaStream_t stream) {
  const int64_t total = outer * count * row_words;
  // All bits set: -1 as an i64, above every position as the unsigned the atomic takes.
  auto* bad = reinterpret_cast<unsigned long long*>(first_bad);
  if (cudaMemsetAsync(bad, 0xFF, sizeof(*bad), stream) != cudaSuccess) return;  // the caller's launch check reports it
  with_word(word_size, [&]<typename Word>() {
    const auto* in = static_cast<const Word*>(data);
    auto* result = static_cast<Word*>(out);
    if (indices_are_i64) {
      gather_kernel<Word, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(
          in, static_cast<const int64_t*>(indices), result, along, count, row_words, total, bad);
    } else {
      gather_kernel<Word, int32_t><<<blocks_for(total), kThreads, 0, stream>>>(
          in, static_cast<const int32_t*>(indices), result, along, count, row_words, total, bad);
    }
  });
}

size_t gather_grad_workspace_bytes(int64_t count, int64_t along) {
  if (count == 0) return 0;
  const size_t array = aligned(static_cast<size_t>(count) * sizeof(int32_t));
  return 4 * array + aligned(sort_bytes(count, along));
}

cudaError_t launch_gather_grad(AddType type, const void* dy, const void* indices, bool indices_are_i64, void* dx,
                               int64_t outer, int64_t along, int64_t count, int64_t row, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream) {
  auto* base = static_cast<char*>(workspace);
  const size_t array = aligned(static_cast<size_t>(count) * sizeof(int32_t));
  auto* keys_in = reinterpret_cast<int32_t*>(base);
  auto* keys = reinterpret_cast<int32_t*>(base + array);
  auto* positions_in = reinterpret_cast<int32_t*>(base + 2 * array);
  auto* positions = reinterpret_cast<int32_t*>(base + 3 * array);
  if (count > 0) {
    if (indices_are_i64) {
      gather_grad_keys<int64_t><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const int64_t*>(indices), keys_in,
                                                                          positions_in, along, count);
    } else {
      gather_grad_keys<int32_t><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const int32_t*>(indices), keys_in,
                                                                          positions_in, along, count);
    }
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
    size_t sort_storage = workspace_bytes - 4 * array;
    status = cub::DeviceRadixSort::SortPairs(base + 4 * array, sort_storage, keys_in, keys, positions_in, positions,
                                             static_cast<int>(count), 0, sort_key_bits(along), stream);
    if (status != cudaSuccess) return status;
  }
  const int64_t total = outer * along * row;
  with_add_type(type, [&]<typename T>() {
    gather_grad_sum<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(dy), keys, positions,
                                                                   static_cast<T*>(dx), along, count, row, total);
  });
  return cudaGetLastError();
}

void launch_tile_grad(AddType type, const void* dy, void* dx, int rank, const int64_t* x_sizes, const int64_t* repeats,
                      cudaStream_t stream) {
  TileDims dims{};
  dims.rank = rank;
  dims.tiles = 1;
  int64_t total = 1;
  for (int axis = 0; axis < rank; ++axis) {
    dims.x_sizes[axis] = x_sizes[axis];
    dims.repeats[axis] = repeats[axis];
    dims.tiles *= repeats[axis];
    total *= x_sizes[axis];
  }
  int64_t stride = 1;
  for (int axis = rank - 1; axis >= 0; --axis) {
    dims.dy_strides[axis] = stride;
    stride *= x_sizes[axis] * repeats[axis];
  }
  with_add_type(type, [&]<typename T>() {
    tile_grad_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx), dims,
                                                                    total);
  });
}

void launch_fill(size_t word_size, void* dst, int64_t count, uint64_t bits, cudaStream_t stream) {
  with_word(word_size, [&]<typename Word>() {
    if constexpr (sizeof(Word) <= 8) {
      Word value;
      std::memcpy(&value, &bits, sizeof(Word));  // the low bytes, on a little-endian host
      fill_kernel<Word><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<Word*>(dst), count, value);
    }
  });
}

void launch_write_i64(int64_t* dst, const int64_t* values, int count, cudaStream_t stream) {
  WrittenValues written{};
  for (int i = 0; i < count; ++i) written.values[i] = values[i];
  write_i64_kernel<<<1, kMaxWrittenValues, 0, stream>>>(dst, written, count);
}

}  // namespace weir::cuda
