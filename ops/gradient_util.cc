#include "ops/gradient_util.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "ops/dtype_dispatch.h"

namespace weir {

Value* sum_to_input_shape(GradientContext& ctx, Value* grad, size_t index, bool broadcast) {
  if (!broadcast) return grad;
  return ctx.emit("SumToShape", {grad, ctx.node().input(index)})[0];
}

Value* scalar_constant(Graph& graph, DType dtype, double value, const std::string& name_prefix) {
  Tensor scalar(dtype, {});
  dispatch_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      scalar.data<bool>()[0] = value != 0;
    } else if constexpr (std::is_integral_v<T>) {
      // Both bounds are powers of two (or zero), exact as doubles.
      const double low = static_cast<double>(std::numeric_limits<T>::min());
      const double high = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
      if (!(value >= low && value < high)) {
        std::ostringstream text;
        text << "constant '" << name_prefix << "': " << value << " does not fit " << dtype_name(dtype);
        throw Error(ErrorKind::kInvalidArgument, text.str());
      }
      scalar.data<T>()[0] = static_cast<T>(value);
    } else {
      scalar.data<T>()[0] = store<T>(static_cast<ComputeType<T>>(value));
    }
  });
  return graph.add_constant(graph.unique_name(name_prefix), scalar);
}

}  // namespace weir
