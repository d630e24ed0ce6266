#include "ops/cuda/attention_device.h"

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/device_elements.cuh"

namespace weir::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocks = 65536;

// A block per (b, h, i): row = (b * heads + h) * seq + i.
template <typename T>
__global__ void attention_rows(const T* q, const T* k, const T* v, const T* mask, AttentionMaskStrides mask_strides,
                               T* y, int64_t batch, int64_t seq, int64_t heads, int64_t dim, float scale) {
  extern __shared__ float shared[];
  float* query = shared;          // dim values
  float* scores = shared + dim;   // seq values
  const int64_t width = heads * dim;
  const int64_t rows = batch * heads * seq;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % seq, h = (row / seq) % heads, b = row / (seq * heads);
    const int64_t head_offset = b * seq * width + h * dim;  // element (b, 0, h, 0)
    __syncthreads();  // the previous row's readers are done with `shared`
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) query[d] = load(q[head_offset + i * width + d]);
    __syncthreads();
    // A warp per key: lanes split the head dimension, a shuffle adds them up.
    for (int64_t j = warp; j < seq; j += kWarps) {
      const T* key = k + head_offset + j * width;
      float dot = 0.0f;
      for (int64_t d = lane; d < dim; d += 32) dot += query[d] * load(key[d]);
      dot = warp_reduce<SumOp>(dot);
      if (lane == 0) {
        float value = scale * dot;
        if (mask != nullptr) value += load(mask[b * mask_strides.batch + h * mask_strides.head + i * mask_strides.row + j]);
        scores[j] = value;
      }
    }
    __syncthreads();
    float max = MaxOp::identity();
    for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) max = MaxOp::combine(max, scores[j]);
    max = block_reduce<MaxOp>(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) {
      const float e = expf(scores[j] - max);
      scores[j] = e;
      sum += e;
    }
    sum = block_reduce<SumOp>(sum);  // its barriers also publish every thread's scores[j]
    const float inverse = 1.0f / sum;
    // A thread per output element: neighbouring threads read neighbouring values of each V row.
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
      float acc = 0.0f;
      for (int64_t j = 0; j < seq; ++j) acc += scores[j] * inverse * load(v[head_offset + j * width + d]);
      y[head_offset + i * width + d] = store<T>(acc);
    }
  }
}

template <typename T>
void attention_as(const void* q, const void* k, const void* v, const void* mask, const AttentionMaskStrides& strides,
                  void* y, int64_t batch, int64_t seq, int64_t heads, int64_t dim, float scale, cudaStream_t stream) {
  const int64_t rows = batch * heads * seq;
  const int blocks = static_cast<int>(rows < kMaxBlocks ? rows : kMaxBlocks);
  const size_t shared = static_cast<size_t>(attention_shared_bytes(seq, dim));
  attention_rows<T><<<blocks, kThreads, shared, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                          static_cast<const T*>(v), static_cast<const T*>(mask), strides,
                                                          static_cast<T*>(y), batch, seq, heads, dim, scale);
}

}  // namespace

int64_t attention_shared_bytes(int64_t seq, int64_t dim) { return (seq + dim) * static_cast<int64_t>(sizeof(float)); }

void launch_attention(ElementType type, const void* q, const void* k, const void* v, const void* mask,
                      const AttentionMaskStrides& mask_strides, void* y, int64_t batch, int64_t seq, int64_t heads,
                      int64_t dim, float scale, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32:
      return attention_as<float>(q, k, v, mask, mask_strides, y, batch, seq, heads, dim, scale, stream);
    case ElementType::kBFloat16:
      return attention_as<__nv_bfloat16>(q, k, v, mask, mask_strides, y, batch, seq, heads, dim, scale, stream);
    case ElementType::kFloat16:
      return attention_as<__half>(q, k, v, mask, mask_strides, y, batch, seq, heads, dim, scale, stream);
  }
}

}  // namespace weir::cuda
