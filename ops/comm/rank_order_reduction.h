// The reduction every host communicator applies, so that every world gives
// bitwise the same result for the same inputs: element i of the result is
// the ranks' elements combined in rank order, ((x0 + x1) + x2) + ..., in
// the dtype's compute type (f32 for f16 and bf16), an average divided by the
// rank count at the end, and rounded to the dtype once. The in-process
// world reduces its ranks' deposits this way; the Gloo world reduces the
// shards its reduce-scatter gathers this way (a ring would add in an order
// that depends on the chunk, so N > 2 ranks would differ in the last bits).
//
//   std::vector<const void*> by_rank = {a.raw_data(), b.raw_data()};
//   weir::reduce_in_rank_order(weir::ReduceOp::kAvg, weir::DType::kFloat32, by_rank, out.raw_data(), n);
#pragma once

#include <cstddef>
#include <vector>

#include "core/communicator.h"
#include "core/dtype.h"

namespace weir {

// out[i] = reduce over r of inputs[r][i], i in [0, count). Throws
// weir::Error(kUnsupported) for bool.
void reduce_in_rank_order(ReduceOp op, DType dtype, const std::vector<const void*>& inputs, void* out, size_t count);

}  // namespace weir
