// The device side of the CUDA DGC kernels (dgc_device.cu): DgcEncode's
// sparse phase and DgcMomentum's sparse update, with the CPU kernels'
// arithmetic and selection (ops/optimizer/dgc.h), so that the pairs, u, v
// and the parameter equal the CPU's bit for bit for NaN-free values without
// clipping (with clipping, the gradient's norm is summed in another order,
// so the factor may differ in its last bits).
//
// DgcEncode, all on the device, nothing read back:
//   1. the clipping factor (a fixed-tree f64 sum of squares), then u and v
//      accumulated per element in f64 as the CPU does;
//   2. the sampled threshold: each of the B sample blocks finds its
//      rank-th largest |v| sample exactly by a radix select on the bits of
//      |v| (a non-negative float's bits order as its value), and the mean
//      of the B picks is summed in block order;
//   3. the candidates |v| > threshold; when there are more than k of them,
//      a radix select over the candidates finds the k-th largest |v| and
//      how many lie above it, and the ties at it are kept in index order;
//   4. the kept entries' places in the output by a prefix sum over the
//      index order (cub::DeviceScan), the (index, v) pairs written there
//      and (-1, 0) after them, and u and v zeroed where sent.
// Only the step decides what to launch (k and the output's length); the
// caller reads it on the host.
//
// DgcMomentum's sparse update: the gathered pairs sorted by index with
// their positions (a stable cub::DeviceRadixSort, so each index's values
// keep the gathered order), each index's values summed in f64 in that
// order, then param[i] -= lr * (sum / ranks). An index outside [-1, numel)
// is recorded (the first such pair) and nothing is applied, as the CPU
// kernel fails before it writes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/device_scalar.h"

namespace weir::cuda {

struct DgcAccumulation {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double clip_norm = 0.0;  // 0: no clipping
};

// What ops/optimizer/dgc.h's dgc_k() and dgc_sampling() give for the step.
struct DgcSelection {
  int64_t numel = 0;  // 1 to 2^31 - 1
  int64_t k = 0;      // 1 to numel
  int64_t sample_rank = 1;
  int64_t sample_wanted = 1;
  int64_t sample_blocks = 1;  // at most 16
};

// Scratch DgcEncode needs for `numel` elements (about 8 bytes an element).
size_t dgc_encode_workspace_bytes(int64_t numel);
// DgcEncode's sparse phase: u and v updated in place, `encoded` (2k floats)
// written. grad, param, u and v hold selection.numel floats each, distinct.
cudaError_t launch_dgc_encode(const float* grad, const float* param, float* u, float* v, float* encoded,
                              const DgcAccumulation& accumulation, const DgcSelection& selection, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);

// Scratch DgcMomentum's sparse update needs for `pairs` gathered pairs.
size_t dgc_sparse_sgd_workspace_bytes(int64_t pairs, int64_t numel);
// param (numel floats) -= lr * (the sum of `gathered`'s pairs per index) /
// ranks. *first_bad gets the position of the first pair whose index is
// outside [-1, numel), or -1; when there is one, param is left as it was.
cudaError_t launch_dgc_sparse_sgd(float* param, int64_t numel, const float* gathered, int64_t pairs, int64_t ranks,
                                  DeviceScalar lr, int64_t* first_bad, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream);

}  // namespace weir::cuda
