// CPU kernels of BatchNormalization, LayerNormalization,
// InstanceNormalization and their backward ops. One engine serves all three:
// each normalizes "groups" of elements (a channel across the batch, an
// (N, C) plane, a row) and applies a per-channel or per-element affine.
// Statistics accumulate in f64 and are two-pass; results do not depend on
// the thread count (partial sums are reduced in a fixed order).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/kernel.h"

namespace weir {

void register_normalization_cpu_kernels(KernelRegistry& registry);

// Shared with the CUDA kernels (ops/cuda/batch_norm_kernels.cc,
// instance_norm_kernels.cc), which must see X and fail as the CPU's do.

enum class NormKind { kBatch, kInstance, kLayer };

// Group g holds `rows` runs of `len` contiguous elements starting at
// first(g) + r * row_stride. Its affine parameters are params[param_of(g)]
// (per channel) or, when per_element, params[s] for the s-th element of a run.
// BatchNormalization: a group per channel, `rows` = N runs of a plane;
// InstanceNormalization: a group per (N, C) plane of `len` elements.
struct NormPlan {
  int64_t groups = 0, rows = 1, len = 0, row_stride = 0, channels = 1;
  bool per_element = false;

  int64_t first(int64_t g) const { return g * len; }
  int64_t param_of(int64_t g) const { return g % channels; }
  int64_t count() const { return rows * len; }
  int64_t num_params() const { return per_element ? len : channels; }
};

// X of `sizes` for `kind`; fails naming the node unless X is [N, C, ...]
// (Instance: [N, C, spatial...]; Layer: any, normalized from the axis attribute).
NormPlan normalization_plan(const KernelContext& ctx, NormKind kind, const std::vector<int64_t>& sizes);
// Input `index` (`name`) must hold one value per channel (or per
// normalized element) in X's dtype.
void check_normalization_param(const KernelContext& ctx, const NormPlan& p, size_t index, const char* name);

}  // namespace weir
