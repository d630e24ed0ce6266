// A numeric scalar input of an optimizer-family kernel (lr, step, the loss
// scale) as a double, and the 1-based step number as an integer; each fails
// naming the input when it is not what it should be.
#pragma once

#include <string>

#include "ops/dtype_dispatch.h"
#include "ops/kernel.h"

namespace weir {

inline double scalar_input(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1) ctx.fail(std::string(name) + " must be a scalar, got " + t.type_string());
  double value = 0;
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      ctx.fail(std::string(name) + " must be numeric");
    } else {
      value = static_cast<double>(load(t.data<T>()[0]));
    }
  });
  return value;
}

// The 1-based step number in `t` (host memory): an i64 or i32 scalar of at
// least 1.
inline int64_t step_value(const KernelContext& ctx, const Tensor& t) {
  if (t.num_elements() != 1 || (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)) {
    ctx.fail("step must be an i64 or i32 scalar, got " + t.type_string());
  }
  const int64_t step = t.dtype() == DType::kInt64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
  if (step < 1) ctx.fail("step must be at least 1 (it counts from 1), got " + std::to_string(step));
  return step;
}

// The 1-based step number input `index`, as step_value reads it.
inline int64_t step_input(const KernelContext& ctx, size_t index) { return step_value(ctx, ctx.input(index)); }

}  // namespace weir
