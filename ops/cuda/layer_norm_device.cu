#include "ops/cuda/layer_norm_device.h"

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/row_statistics.cuh"

namespace weir::cuda {

namespace {

constexpr int64_t kMaxBlocks = 65536;

// The column sums of the backward pass add rows in chunks of at least
// kMinChunkRows, at most kMaxChunks chunks: enough blocks to fill the GPU,
// a bounded workspace.
constexpr int64_t kMinChunkRows = 16;
constexpr int64_t kMaxChunks = 256;

struct ChunkPlan {
  int64_t rows_per_chunk = 0, chunks = 0;
};

ChunkPlan chunk_plan(int64_t rows) {
  if (rows <= 0) return {};
  int64_t per_chunk = (rows + kMaxChunks - 1) / kMaxChunks;
  if (per_chunk < kMinChunkRows) per_chunk = kMinChunkRows;
  return {per_chunk, (rows + per_chunk - 1) / per_chunk};
}

template <typename T>
__global__ void layer_norm_rows(const T* x, const T* scale, const T* bias, T* y, float* mean_out, float* rstd_out,
                                int64_t rows, int64_t len, float epsilon) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * len;
    T* out = y + row * len;
    const float2 stats = row_statistics(in, len, epsilon);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      float value = (load(in[j]) - stats.x) * stats.y * load(scale[j]);
      if (bias != nullptr) value += load(bias[j]);
      out[j] = store<T>(value);
    }
    if (threadIdx.x == 0) {
      if (mean_out != nullptr) mean_out[row] = stats.x;
      if (rstd_out != nullptr) rstd_out[row] = stats.y;
    }
  }
}

// dx of every row, and the row's (mean, rstd) into `stats` for the column sums.
template <typename T>
__global__ void layer_norm_grad_rows(const T* dy, const T* x, const T* scale, T* dx, float2* stats, int64_t rows,
                                     int64_t len, float epsilon) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * len;
    const T* grad = dy + row * len;
    T* out = dx + row * len;
    const float2 s = row_statistics(in, len, epsilon);
    float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
    // dxhat rounded alone, as the CPU's (no fused multiply-add): in a row of
    // one element dxhat - mean_dxhat is then exactly 0, as there.
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float xhat = (load(in[j]) - s.x) * s.y;
      const float dxhat = __fmul_rn(load(grad[j]), load(scale[j]));
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
    }
    const float mean_dxhat = block_reduce<SumOp>(sum_dxhat) / static_cast<float>(len);
    const float mean_dxhat_xhat = block_reduce<SumOp>(sum_dxhat_xhat) / static_cast<float>(len);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float xhat = (load(in[j]) - s.x) * s.y;
      const float dxhat = __fmul_rn(load(grad[j]), load(scale[j]));
      out[j] = store<T>(s.y * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
    if (threadIdx.x == 0) stats[row] = s;
  }
}

// partial[c][col] = sum of dy * xhat, partial[chunks + c][col] = sum of dy
// over the rows of chunk c (blockIdx.y); a thread per column, so each row
// step is one coalesced read.
template <typename T>
__global__ void layer_norm_grad_partials(const T* dy, const T* x, const float2* stats, float* partial, int64_t rows,
                                         int64_t len, int64_t rows_per_chunk) {
  const int64_t chunk = blockIdx.y, chunks = gridDim.y;
  const int64_t begin = chunk * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < len; col += step) {
    float sum_scale = 0.0f, sum_bias = 0.0f;
    for (int64_t r = begin; r < end; ++r) {
      const float2 s = stats[r];
      const float g = load(dy[r * len + col]);
      sum_scale += g * ((load(x[r * len + col]) - s.x) * s.y);
      sum_bias += g;
    }
    partial[chunk * len + col] = sum_scale;
    partial[(chunks + chunk) * len + col] = sum_bias;
  }
}

// dscale and dbias: the chunks' partials added in chunk order.
template <typename T>
__global__ void layer_norm_grad_columns(const float* partial, T* dscale, T* dbias, int64_t chunks, int64_t len) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < len; col += step) {
    float sum_scale = 0.0f, sum_bias = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      sum_scale += partial[c * len + col];
      sum_bias += partial[(chunks + c) * len + col];
    }
    dscale[col] = store<T>(sum_scale);
    dbias[col] = store<T>(sum_bias);
  }
}

int row_blocks(int64_t rows) { return static_cast<int>(rows < kMaxBlocks ? rows : kMaxBlocks); }

int column_blocks(int64_t len, int threads) {
  const int64_t wanted = (len + threads - 1) / threads;
  return static_cast<int>(wanted < 4096 ? wanted : 4096);
}

template <typename T>
void layer_norm_as(const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std_dev,
                   int64_t rows, int64_t len, float epsilon, cudaStream_t stream) {
  const int threads = threads_for_line(len, 512);
  layer_norm_rows<T><<<row_blocks(rows), threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), mean,
      inv_std_dev, rows, len, epsilon);
}

template <typename T>
void layer_norm_grad_as(const void* dy, const void* x, const void* scale, void* dx, void* dscale, void* dbias,
                        int64_t rows, int64_t len, float epsilon, void* workspace, cudaStream_t stream) {
  const ChunkPlan plan = chunk_plan(rows);
  float2* stats = static_cast<float2*>(workspace);
  float* partial = reinterpret_cast<float*>(stats + rows);
  const T* g = static_cast<const T*>(dy);
  const T* in = static_cast<const T*>(x);
  constexpr int kColumnThreads = 256;
  if (rows > 0) {
    layer_norm_grad_rows<T><<<row_blocks(rows), threads_for_line(len, 512), 0, stream>>>(
        g, in, static_cast<const T*>(scale), static_cast<T*>(dx), stats, rows, len, epsilon);
    const dim3 grid(static_cast<unsigned>(column_blocks(len, kColumnThreads)), static_cast<unsigned>(plan.chunks));
    layer_norm_grad_partials<T><<<grid, kColumnThreads, 0, stream>>>(g, in, stats, partial, rows, len,
                                                                     plan.rows_per_chunk);
  }
  layer_norm_grad_columns<T><<<column_blocks(len, kColumnThreads), kColumnThreads, 0, stream>>>(
      partial, static_cast<T*>(dscale), static_cast<T*>(dbias), plan.chunks, len);
}

}  // namespace

void launch_layer_norm(ElementType type, const void* x, const void* scale, const void* bias, void* y, float* mean,
                       float* inv_std_dev, int64_t rows, int64_t len, float epsilon, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32:
      return layer_norm_as<float>(x, scale, bias, y, mean, inv_std_dev, rows, len, epsilon, stream);
    case ElementType::kFloat16:
      return layer_norm_as<__half>(x, scale, bias, y, mean, inv_std_dev, rows, len, epsilon, stream);
    case ElementType::kBFloat16:
      return layer_norm_as<__nv_bfloat16>(x, scale, bias, y, mean, inv_std_dev, rows, len, epsilon, stream);
  }
}

size_t layer_norm_grad_workspace_bytes(int64_t rows, int64_t len) {
  const ChunkPlan plan = chunk_plan(rows);
  return static_cast<size_t>(rows) * sizeof(float2) + static_cast<size_t>(2 * plan.chunks * len) * sizeof(float);
}

void launch_layer_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, void* dx, void* dscale,
                            void* dbias, int64_t rows, int64_t len, float epsilon, void* workspace, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32:
      return layer_norm_grad_as<float>(dy, x, scale, dx, dscale, dbias, rows, len, epsilon, workspace, stream);
    case ElementType::kFloat16:
      return layer_norm_grad_as<__half>(dy, x, scale, dx, dscale, dbias, rows, len, epsilon, workspace, stream);
    case ElementType::kBFloat16:
      return layer_norm_grad_as<__nv_bfloat16>(dy, x, scale, dx, dscale, dbias, rows, len, epsilon, workspace, stream);
  }
}

}  // namespace weir::cuda
