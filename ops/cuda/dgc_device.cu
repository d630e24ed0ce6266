#include "ops/cuda/dgc_device.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "ops/cuda/deterministic_sum.cuh"
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/launch_shape.cuh"
#include "ops/cuda/rounded_arithmetic.cuh"
#include "ops/cuda/sort_key_bits.h"

namespace weir::cuda {

namespace {

constexpr size_t kAlignment = 256;
constexpr int kMaxSampleBlocks = 16;
// The blocks of the sums and histograms over all elements: a fixed number
// for a given size, so the clipping norm's tree is the same every run.
constexpr int kReductionBlocks = 1024;
constexpr int kDigits = 256;

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

int reduction_blocks(int64_t count) {
  const int blocks = blocks_for(count);
  return blocks < kReductionBlocks ? blocks : kReductionBlocks;
}

// What DgcEncode's kernels hand each other on the device.
struct EncodeState {
  double scale;      // the clipping factor (1: none)
  double threshold;  // the sampled threshold
  float picked[kMaxSampleBlocks];
  unsigned long long candidates;  // entries with |v| > threshold
  int selecting;                  // candidates > k: the k-th largest is searched for
  unsigned int prefix, mask;      // the radix select's digits so far
  long long remaining;            // how many of the entries matching prefix are still wanted
  long long greater;              // candidates above every entry matching prefix
  unsigned int histogram[kDigits];
};

// |x|'s bits: for non-negative floats, unsigned order is value order.
__device__ inline unsigned int magnitude_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// The CPU's candidate test, in f64 as it compares.
__device__ inline bool is_candidate(float x, double threshold) { return static_cast<double>(fabsf(x)) > threshold; }

// One radix-select step over a histogram of the entries matching the
// digits so far: the digit (from the top) where the `remaining`-th largest
// lies; `remaining` becomes its rank within that digit, and `above` adds
// the entries of the higher digits.
__device__ inline unsigned int choose_digit(const unsigned int* histogram, long long& remaining, long long& above) {
  int digit = kDigits - 1;
  while (digit > 0 && static_cast<long long>(histogram[digit]) < remaining) {
    remaining -= histogram[digit];
    above += histogram[digit];
    --digit;
  }
  return static_cast<unsigned int>(digit);
}

__global__ void init_state(EncodeState* state) {
  state->scale = 1.0;
  state->threshold = 0.0;
  state->candidates = 0;
  state->selecting = 0;
  state->prefix = 0;
  state->mask = 0;
  state->remaining = 0;
  state->greater = 0;
  for (int d = 0; d < kDigits; ++d) state->histogram[d] = 0;
}

__global__ void partial_squares(const float* grad, int64_t count, double* partial) {
  double sum = 0;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const double g = grad[i];
    sum = dadd(sum, dmul(g, g));
  }
  const double block = block_sum<kThreads>(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = block;
}

__global__ void clip_scale(const double* partial, int blocks, double clip_norm, EncodeState* state) {
  double sum = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) sum = dadd(sum, partial[b]);
  const double total = block_sum<kThreads>(sum);
  if (threadIdx.x == 0) {
    const double norm = __dsqrt_rn(total);
    if (norm > clip_norm) state->scale = ddiv(clip_norm, norm);
  }
}

// Steps 1-3 of the CPU's accumulate(): u and v per element in f64.
template <bool kNesterov>
__global__ void accumulate(const float* grad, const float* param, float* u, float* v, int64_t count, double mu, double wd,
                           const EncodeState* state) {
  const double scale = state->scale;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    double g = dmul(static_cast<double>(grad[i]), scale);
    if (wd != 0) g = dadd(g, dmul(wd, static_cast<double>(param[i])));
    if constexpr (kNesterov) {
      const float next_u = static_cast<float>(dmul(mu, dadd(static_cast<double>(u[i]), g)));
      u[i] = next_u;
      v[i] = static_cast<float>(dadd(dadd(static_cast<double>(v[i]), static_cast<double>(next_u)), g));
    } else {
      const float next_u = static_cast<float>(dadd(dmul(mu, static_cast<double>(u[i])), g));
      u[i] = next_u;
      v[i] = static_cast<float>(dadd(static_cast<double>(v[i]), static_cast<double>(next_u)));
    }
  }
}

// One block per sample block of dgc_threshold(): its rank-th largest
// sample |v|, by a radix select in shared memory.
__global__ void pick_samples(const float* v, DgcSelection selection, EncodeState* state) {
  __shared__ unsigned int histogram[kDigits];
  __shared__ unsigned int prefix, mask;
  __shared__ long long remaining;
  const int64_t b = blockIdx.x, n = selection.numel, blocks = selection.sample_blocks;
  const int64_t begin = b * n / blocks, length = (b + 1) * n / blocks - begin;
  const int64_t count = length < selection.sample_wanted ? length : selection.sample_wanted;
  const int64_t stride = length / count > 1 ? length / count : 1;
  const int64_t rank = selection.sample_rank < count ? selection.sample_rank : count;
  if (threadIdx.x == 0) {
    prefix = 0;
    mask = 0;
    remaining = rank;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int d = threadIdx.x; d < kDigits; d += blockDim.x) histogram[d] = 0;
    __syncthreads();
    const unsigned int p = prefix, m = mask;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const unsigned int bits = magnitude_bits(v[begin + j * stride]);
      if ((bits & m) == p) atomicAdd(&histogram[(bits >> shift) & 0xFFu], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long above = 0, wanted = remaining;
      const unsigned int digit = choose_digit(histogram, wanted, above);
      remaining = wanted;
      prefix |= digit << shift;
      mask |= 0xFFu << shift;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) state->picked[b] = __uint_as_float(prefix);
}

// The mean of the picks, summed in block order as the CPU sums them.
__global__ void mean_threshold(int blocks, EncodeState* state) {
  double sum = 0;
  for (int b = 0; b < blocks; ++b) sum = dadd(sum, static_cast<double>(state->picked[b]));
  state->threshold = ddiv(sum, static_cast<double>(blocks));
}

__global__ void count_candidates(const float* v, int64_t count, EncodeState* state) {
  const double threshold = state->threshold;
  unsigned long long mine = 0;
  for (int64_t i = global_index(); i < count; i += grid_stride()) mine += is_candidate(v[i], threshold) ? 1 : 0;
  if (mine > 0) atomicAdd(&state->candidates, mine);
}

__global__ void begin_selection(int64_t k, EncodeState* state) {
  state->selecting = state->candidates > static_cast<unsigned long long>(k) ? 1 : 0;
  state->remaining = k;
}

// A pass of the radix select over the candidates (when there are more
// than k): the histogram of the next digit of those matching the prefix.
__global__ void candidate_histogram(const float* v, int64_t count, int shift, EncodeState* state) {
  __shared__ unsigned int histogram[kDigits];
  if (!state->selecting) return;
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x) histogram[d] = 0;
  __syncthreads();
  const double threshold = state->threshold;
  const unsigned int p = state->prefix, m = state->mask;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const float x = v[i];
    const unsigned int bits = magnitude_bits(x);
    if (is_candidate(x, threshold) && (bits & m) == p) atomicAdd(&histogram[(bits >> shift) & 0xFFu], 1u);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x) {
    if (histogram[d] > 0) atomicAdd(&state->histogram[d], histogram[d]);
  }
}

__global__ void fix_digit(int shift, EncodeState* state) {
  if (!state->selecting) return;
  long long remaining = state->remaining, above = state->greater;
  const unsigned int digit = choose_digit(state->histogram, remaining, above);
  state->remaining = remaining;
  state->greater = above;
  state->prefix |= digit << shift;
  state->mask |= 0xFFu << shift;
  for (int d = 0; d < kDigits; ++d) state->histogram[d] = 0;
}

// 1 where a candidate ties the k-th largest (when selecting): their prefix
// sum ranks the ties in index order.
__global__ void tie_flags(const float* v, int64_t count, const EncodeState* state, int* flags) {
  const double threshold = state->threshold;
  const bool selecting = state->selecting != 0;
  const unsigned int kth = state->prefix;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const float x = v[i];
    flags[i] = selecting && is_candidate(x, threshold) && magnitude_bits(x) == kth ? 1 : 0;
  }
}

// 1 where an entry is sent: every candidate, or (selecting) those above
// the k-th largest and the first `remaining` ties.
__global__ void keep_flags(const float* v, int64_t count, const EncodeState* state, const int* tie_ranks, int* flags) {
  const double threshold = state->threshold;
  const bool selecting = state->selecting != 0;
  const unsigned int kth = state->prefix;
  const long long ties = state->remaining;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const float x = v[i];
    bool keep = is_candidate(x, threshold);
    if (keep && selecting) {
      const unsigned int bits = magnitude_bits(x);
      keep = bits > kth || (bits == kth && tie_ranks[i] < ties);
    }
    flags[i] = keep ? 1 : 0;
  }
}

// The pairs at their places, and u and v zeroed where sent.
__global__ void write_pairs(float* u, float* v, int64_t count, const int* flags, const int* places, float* encoded) {
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    if (!flags[i]) continue;
    const int64_t j = places[i];
    encoded[2 * j] = __int_as_float(static_cast<int>(i));
    encoded[2 * j + 1] = v[i];
    u[i] = 0.0f;
    v[i] = 0.0f;
  }
}

__global__ void write_padding(int64_t count, int64_t k, const int* flags, const int* places, float* encoded) {
  const int64_t sent = static_cast<int64_t>(places[count - 1]) + flags[count - 1];
  for (int64_t j = sent + global_index(); j < k; j += grid_stride()) {
    encoded[2 * j] = __int_as_float(-1);
    encoded[2 * j + 1] = 0.0f;
  }
}

size_t scan_bytes(int64_t count) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                static_cast<int>(count));
  return bytes;
}

// The DGC encode workspace, carved.
struct EncodeWorkspace {
  EncodeState* state;
  double* partial;
  int* flags;
  int* places;
  void* scan;
  size_t scan_bytes;
};

EncodeWorkspace carve_encode(void* workspace, int64_t numel) {
  auto* base = static_cast<char*>(workspace);
  EncodeWorkspace parts;
  const size_t array = aligned(static_cast<size_t>(numel) * sizeof(int));
  parts.state = reinterpret_cast<EncodeState*>(base);
  base += aligned(sizeof(EncodeState));
  parts.partial = reinterpret_cast<double*>(base);
  base += aligned(kReductionBlocks * sizeof(double));
  parts.flags = reinterpret_cast<int*>(base);
  base += array;
  parts.places = reinterpret_cast<int*>(base);
  base += array;
  parts.scan = base;
  parts.scan_bytes = scan_bytes(numel);
  return parts;
}

size_t sort_bytes(int64_t pairs, int64_t numel) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const unsigned int*>(nullptr),
                                  static_cast<unsigned int*>(nullptr), static_cast<const int*>(nullptr),
                                  static_cast<int*>(nullptr), static_cast<int>(pairs), 0, sort_key_bits(numel));
  return bytes;
}

// Sort keys: index + 1, 0 for padding and for an index out of range (whose
// first position is recorded).
__global__ void pair_keys(const float* gathered, int64_t pairs, int64_t numel, unsigned int* keys, int* positions,
                          unsigned long long* first_bad) {
  for (int64_t j = global_index(); j < pairs; j += grid_stride()) {
    const int index = __float_as_int(gathered[2 * j]);
    const bool bad = index < -1 || index >= numel;
    if (bad) atomicMin(first_bad, static_cast<unsigned long long>(j));
    keys[j] = bad ? 0u : static_cast<unsigned int>(index + 1);
    positions[j] = static_cast<int>(j);
  }
}

// One thread per run of equal keys: its values summed in gathered order.
__global__ void apply_sums(float* param, const float* gathered, int64_t pairs, double ranks, DeviceScalar lr_in,
                           const unsigned int* keys, const int* positions, const unsigned long long* first_bad) {
  if (*first_bad != ~0ull) return;  // the CPU fails before it writes
  const double lr = read_scalar(lr_in);
  for (int64_t j = global_index(); j < pairs; j += grid_stride()) {
    const unsigned int key = keys[j];
    if (key == 0 || (j > 0 && keys[j - 1] == key)) continue;
    double sum = 0.0;
    for (int64_t m = j; m < pairs && keys[m] == key; ++m) {
      sum = dadd(sum, static_cast<double>(gathered[2 * static_cast<int64_t>(positions[m]) + 1]));
    }
    const int64_t i = static_cast<int64_t>(key) - 1;
    param[i] = fsub(param[i], static_cast<float>(dmul(lr, ddiv(sum, ranks))));
  }
}

}  // namespace

size_t dgc_encode_workspace_bytes(int64_t numel) {
  return aligned(sizeof(EncodeState)) + aligned(kReductionBlocks * sizeof(double)) +
         2 * aligned(static_cast<size_t>(numel) * sizeof(int)) + aligned(scan_bytes(numel));
}

cudaError_t launch_dgc_encode(const float* grad, const float* param, float* u, float* v, float* encoded,
                              const DgcAccumulation& accumulation, const DgcSelection& selection, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  const int64_t n = selection.numel;
  if (workspace_bytes < dgc_encode_workspace_bytes(n) || selection.sample_blocks > kMaxSampleBlocks ||
      selection.k < 1 || selection.k > n) {
    return cudaErrorInvalidValue;
  }
  EncodeWorkspace parts = carve_encode(workspace, n);
  EncodeState* state = parts.state;
  init_state<<<1, 1, 0, stream>>>(state);
  const int blocks = reduction_blocks(n);
  if (accumulation.clip_norm > 0) {
    partial_squares<<<blocks, kThreads, 0, stream>>>(grad, n, parts.partial);
    clip_scale<<<1, kThreads, 0, stream>>>(parts.partial, blocks, accumulation.clip_norm, state);
  }
  if (accumulation.nesterov) {
    accumulate<true><<<blocks_for(n), kThreads, 0, stream>>>(grad, param, u, v, n, accumulation.momentum,
                                                             accumulation.weight_decay, state);
  } else {
    accumulate<false><<<blocks_for(n), kThreads, 0, stream>>>(grad, param, u, v, n, accumulation.momentum,
                                                              accumulation.weight_decay, state);
  }
  pick_samples<<<static_cast<int>(selection.sample_blocks), kThreads, 0, stream>>>(v, selection, state);
  mean_threshold<<<1, 1, 0, stream>>>(static_cast<int>(selection.sample_blocks), state);
  count_candidates<<<blocks, kThreads, 0, stream>>>(v, n, state);
  begin_selection<<<1, 1, 0, stream>>>(selection.k, state);
  for (int shift = 24; shift >= 0; shift -= 8) {
    candidate_histogram<<<blocks, kThreads, 0, stream>>>(v, n, shift, state);
    fix_digit<<<1, 1, 0, stream>>>(shift, state);
  }
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  tie_flags<<<blocks_for(n), kThreads, 0, stream>>>(v, n, state, parts.flags);
  size_t scan_storage = parts.scan_bytes;
  status = cub::DeviceScan::ExclusiveSum(parts.scan, scan_storage, parts.flags, parts.places, static_cast<int>(n), stream);
  if (status != cudaSuccess) return status;
  keep_flags<<<blocks_for(n), kThreads, 0, stream>>>(v, n, state, parts.places, parts.flags);
  status = cub::DeviceScan::ExclusiveSum(parts.scan, scan_storage, parts.flags, parts.places, static_cast<int>(n), stream);
  if (status != cudaSuccess) return status;
  write_padding<<<blocks_for(selection.k), kThreads, 0, stream>>>(n, selection.k, parts.flags, parts.places, encoded);
  write_pairs<<<blocks_for(n), kThreads, 0, stream>>>(u, v, n, parts.flags, parts.places, encoded);
  return cudaGetLastError();
}

size_t dgc_sparse_sgd_workspace_bytes(int64_t pairs, int64_t numel) {
  const size_t array = aligned(static_cast<size_t>(pairs) * sizeof(int));
  return 4 * array + aligned(sort_bytes(pairs, numel));
}

cudaError_t launch_dgc_sparse_sgd(float* param, int64_t numel, const float* gathered, int64_t pairs, int64_t ranks,
                                  DeviceScalar lr, int64_t* first_bad, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream) {
  auto* bad = reinterpret_cast<unsigned long long*>(first_bad);
  // All bits set: -1 as an i64, above every position as the unsigned atomicMin takes.
  cudaError_t status = cudaMemsetAsync(bad, 0xFF, sizeof(*bad), stream);
  if (status != cudaSuccess || pairs == 0) return status;
  if (workspace_bytes < dgc_sparse_sgd_workspace_bytes(pairs, numel)) return cudaErrorInvalidValue;
  auto* base = static_cast<char*>(workspace);
  const size_t array = aligned(static_cast<size_t>(pairs) * sizeof(int));
  auto* keys_in = reinterpret_cast<unsigned int*>(base);
  auto* keys = reinterpret_cast<unsigned int*>(base + array);
  auto* positions_in = reinterpret_cast<int*>(base + 2 * array);
  auto* positions = reinterpret_cast<int*>(base + 3 * array);
  pair_keys<<<blocks_for(pairs), kThreads, 0, stream>>>(gathered, pairs, numel, keys_in, positions_in, bad);
  status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  size_t sort_storage = workspace_bytes - 4 * array;
  status = cub::DeviceRadixSort::SortPairs(base + 4 * array, sort_storage, keys_in, keys, positions_in, positions,
                                           static_cast<int>(pairs), 0, sort_key_bits(numel), stream);
  if (status != cudaSuccess) return status;
  apply_sums<<<blocks_for(pairs), kThreads, 0, stream>>>(param, gathered, pairs, static_cast<double>(ranks), lr, keys,
                                                         positions, bad);
  return cudaGetLastError();
}

}  // namespace weir::cuda
