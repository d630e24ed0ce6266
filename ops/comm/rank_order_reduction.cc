#include "ops/comm/rank_order_reduction.h"

#include <algorithm>

#include "core/error.h"
#include "ops/dtype_dispatch.h"

namespace weir {

void reduce_in_rank_order(ReduceOp op, DType dtype, const std::vector<const void*>& inputs, void* out, size_t count) {
  if (inputs.empty()) throw Error(ErrorKind::kInvalidArgument, "a reduction over no ranks");
  dispatch_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw Error(ErrorKind::kUnsupported, "collective reductions over bool tensors are not supported");
    } else {
      using C = ComputeType<T>;
      // Blocks of elements, each reduced rank by rank: the same order of
      // operations per element as a loop over ranks inside, but loops the
      // compiler vectorizes.
      constexpr size_t kBlock = 2048;
      C acc[kBlock];
      T* result = static_cast<T*>(out);
      for (size_t begin = 0; begin < count; begin += kBlock) {
        const size_t n = std::min(kBlock, count - begin);
        const T* first = static_cast<const T*>(inputs[0]) + begin;
        for (size_t i = 0; i < n; ++i) acc[i] = load(first[i]);
        for (size_t r = 1; r < inputs.size(); ++r) {
          const T* in = static_cast<const T*>(inputs[r]) + begin;
          switch (op) {
            case ReduceOp::kSum:
            case ReduceOp::kAvg:
              for (size_t i = 0; i < n; ++i) acc[i] = static_cast<C>(acc[i] + load(in[i]));
              break;
            case ReduceOp::kMax:
              for (size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], static_cast<C>(load(in[i])));
              break;
            case ReduceOp::kMin:
              for (size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], static_cast<C>(load(in[i])));
              break;
          }
        }
        if (op == ReduceOp::kAvg) {
          const C ranks = static_cast<C>(inputs.size());
          for (size_t i = 0; i < n; ++i) acc[i] = static_cast<C>(acc[i] / ranks);
        }
        for (size_t i = 0; i < n; ++i) result[begin + i] = store<T>(acc[i]);
      }
    }
  });
}

}  // namespace weir
