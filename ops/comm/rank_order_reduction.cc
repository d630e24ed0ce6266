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
      std::vector<const T*> in;
      for (const void* p : inputs) in.push_back(static_cast<const T*>(p));
      T* result = static_cast<T*>(out);
      for (size_t i = 0; i < count; ++i) {
        C acc = load(in[0][i]);
        for (size_t r = 1; r < in.size(); ++r) {
          C value = load(in[r][i]);
          switch (op) {
            case ReduceOp::kSum:
            case ReduceOp::kAvg: acc = static_cast<C>(acc + value); break;
            case ReduceOp::kMax: acc = std::max(acc, value); break;
            case ReduceOp::kMin: acc = std::min(acc, value); break;
          }
        }
        if (op == ReduceOp::kAvg) acc = static_cast<C>(acc / static_cast<C>(in.size()));
        result[i] = store<T>(acc);
      }
    }
  });
}

}  // namespace weir
