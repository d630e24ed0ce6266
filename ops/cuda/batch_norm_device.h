// The device side of the CUDA BatchNormalization and BatchNormGrad kernels
// (batch_norm_device.cu), for x [N, C, plane]. Own kernels, not cuDNN's
// batch norm: the CPU kernel's running variance is the biased batch
// variance and its statistics are two-pass in f64, where cuDNN keeps the
// unbiased variance and its own precision. Here, as on the CPU, statistics
// and gradient sums accumulate in f64 in a fixed order (deterministic);
// the per-element arithmetic rounds as the CPU's does (no fused
// multiply-adds where the CPU has none).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// The f64 workspace the statistics and the gradient need: per channel, a
// few sums for each of its chunks (a channel's elements are summed by
// several blocks, each over about 64K elements of whole planes, and the
// chunk sums then added in order: the same bits every run).
int64_t batch_norm_workspace_doubles(int64_t batch, int64_t channels, int64_t plane);

// mean[c] and the biased var[c] of channel c over N and plane, in f64 (two
// passes: the mean, then the squared deviations from it). channels > 0.
void launch_batch_norm_stats(ElementType type, const void* x, int64_t batch, int64_t channels, int64_t plane,
                             double* mean, double* var, double* workspace, cudaStream_t stream);

// dst[i] = src[i] as f64 (the given statistics of inference mode).
void launch_to_f64(ElementType type, const void* src, double* dst, int64_t count, cudaStream_t stream);

// Per channel: rstd = 1 / sqrt(var + epsilon) in f64; then in f32
// a = rstd * scale and b = bias - mean * a (bias null: 0), so y = x * a + b.
void launch_batch_norm_coefficients(ElementType type, const void* scale, const void* bias, const double* mean,
                                    const double* var, double epsilon, int64_t channels, float* a, float* b,
                                    cudaStream_t stream);

// y = x * a[c] + b[c].
void launch_batch_norm_apply(ElementType type, const void* x, const float* a, const float* b, void* y, int64_t batch,
                             int64_t channels, int64_t plane, cudaStream_t stream);

// out[c] = running[c] * momentum + batch_value[c] * (1 - momentum) in f64
// when update, else running[c]; rounded to `type`.
void launch_running_statistic(ElementType type, const void* running, const double* batch_value, double momentum,
                              bool update, void* out, int64_t channels, cudaStream_t stream);

// BatchNormGrad for x [N, C, plane] with the statistics mean/var (f64):
// dxhat = dy * scale; xhat = (x - mean) * rstd;
// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) with batch
// statistics (batch_stats), else rstd * dxhat; dscale = sum(dy * xhat),
// dbias = sum(dy). All of type `type`.
void launch_batch_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, const double* mean,
                            const double* var, double epsilon, bool batch_stats, void* dx, void* dscale, void* dbias,
                            int64_t batch, int64_t channels, int64_t plane, double* workspace, cudaStream_t stream);

}  // namespace weir::cuda
