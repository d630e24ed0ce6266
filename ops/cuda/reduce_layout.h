// The layouts the CUDA reduction kernels take (reduce_device.h), built from
// a dense tensor's sizes and a flag per axis (reduced or kept): axes of
// size 1 left out, neighbours of the same kind merged.
//
//   std::optional<cuda::ReduceLayout> layout = cuda::reduce_layout(x.sizes(), reduced);   // nullopt: too many runs of axes
#pragma once

#include <optional>
#include <vector>

#include "ops/cuda/reduce_device.h"

namespace weir::cuda {

// Output o (row-major over the kept axes, the reduction's output order)
// reads input elements kept_offset(o) + reduced_offset(r), r < count.
// nullopt when the axes alternate between kept and reduced more than
// ReduceLayout::kMaxRank times each.
std::optional<ReduceLayout> reduce_layout(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced);

// The broadcast back (BroadcastReduced, ReduceExtremumGrad): element p of X
// (of `sizes`) reads dY at p's kept coordinates, row-major over the kept
// sizes. nullopt beyond BroadcastBackLayout::kMaxRank merged axes.
std::optional<BroadcastBackLayout> broadcast_back_layout(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced);

}  // namespace weir::cuda
