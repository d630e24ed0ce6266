// A numeric scalar input of an optimizer-family kernel (lr, step, the loss
// scale) as a double; fails naming the input when it is not one element or
// not numeric.
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

}  // namespace weir
