// NumPy broadcasting for device kernels: the strides with which each output
// element reads its two operands, adjacent axes collapsed wherever both
// operands allow, so the per-element index arithmetic on the GPU is as short
// as the shapes permit (one axis for same-shape operands and scalars).
//
//   auto out = broadcast_sizes(a.sizes(), b.sizes());           // ops/elementwise/broadcast.h
//   std::optional<BroadcastIndexing> ix = broadcast_indexing(*out, a.sizes(), b.sizes());
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// `a` and `b` must broadcast to `out` (checked by the caller). nullopt when
// more than BroadcastIndexing::kMaxRank axes remain after collapsing.
std::optional<BroadcastIndexing> broadcast_indexing(const std::vector<int64_t>& out, const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b);

// The same for any number of operands (at most
// MultiBroadcastIndexing::kMaxOperands, checked by the caller), each of which
// must broadcast to `out`. nullopt when more than kMaxRank axes remain.
std::optional<MultiBroadcastIndexing> broadcast_indexing(const std::vector<int64_t>& out,
                                                         const std::vector<std::vector<int64_t>>& operands);

}  // namespace weir::cuda
