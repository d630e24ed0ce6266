// What the signal ops that make a tensor from scalars share (the windows,
// MelWeightMatrix): the `output_datatype` attribute, an ONNX TensorProto code
// (which is Weir's DType numbering) of a numeric type, f32 when absent; and
// writing f64 results as that type.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "ops/dtype_dispatch.h"

namespace weir {

// output_datatype's DType, or nullopt when the code is no numeric type.
inline std::optional<DType> numeric_dtype_of(int64_t code) {
  if (code < 0 || code > 1000 || !is_valid_dtype(static_cast<int32_t>(code))) return std::nullopt;
  auto dtype = static_cast<DType>(code);
  if (dtype == DType::kBool) return std::nullopt;
  return dtype;
}

inline std::string bad_output_datatype(int64_t code) {
  return "output_datatype " + std::to_string(code) + " is not a numeric type code (1 f32, 11 f64, 10 f16, 16 bf16, 2-7, 12, 13 integers)";
}

// For kernels: throws weir::Error(kInvalidArgument) naming the node.
inline DType signal_output_dtype(const Node& node) {
  int64_t code = node.has_attr("output_datatype") ? node.attr("output_datatype").i() : static_cast<int64_t>(DType::kFloat32);
  std::optional<DType> dtype = numeric_dtype_of(code);
  if (!dtype) {
    throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + bad_output_datatype(code))
        .with_node(node.name());
  }
  return *dtype;
}

// For inference: fails through the context.
inline DType signal_output_dtype(const InferenceContext& ctx) {
  int64_t code = ctx.attr_int("output_datatype");
  std::optional<DType> dtype = numeric_dtype_of(code);
  if (!dtype) ctx.fail(bad_output_datatype(code));
  return *dtype;
}

// Writes `values` into `out` (as many elements), converted as a store does
// (integers truncate toward zero).
inline void store_doubles(Tensor& out, const std::vector<double>& values) {
  dispatch_dtype(out.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* data = out.data<T>();
      for (size_t i = 0; i < values.size(); ++i) data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
    }
  });
}

}  // namespace weir
