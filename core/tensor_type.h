// TensorType — the static type of a graph value: dtype plus (symbolic) shape.
//
//   weir::TensorType t{weir::DType::kFloat32, weir::Shape{weir::Dim::symbol("N"), 10}};
//   t.to_string();       // "f32[N,10]"
//   t.is_known();        // true: dtype set and rank known
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/shape.h"

namespace weir {

struct TensorType {
  DType dtype = DType::kUndefined;
  Shape shape = Shape::unknown_rank();

  bool is_known() const { return dtype != DType::kUndefined && shape.has_rank(); }
  std::string to_string() const { return std::string(dtype_name(dtype)) + shape.to_string(); }
  bool operator==(const TensorType& other) const = default;
};

}  // namespace weir
