// TensorType — the static type of a graph value: dtype plus (symbolic) shape,
// and whether it is a sequence of such tensors or an optional one (ONNX's
// seq and optional types).
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
  // ONNX's seq(tensor): a sequence of tensors of `dtype`; `shape` is the
  // elements' (symbolic where they differ).
  bool sequence = false;
  // ONNX's optional(...): the tensor or sequence may be absent.
  bool optional = false;

  bool is_known() const { return dtype != DType::kUndefined && shape.has_rank(); }
  // A plain tensor: neither a sequence nor an optional.
  bool is_tensor() const { return !sequence && !optional; }
  // "f32[N,10]", "seq(f32[2,?])", "opt(f32[3])", "opt(seq(i64[]))".
  std::string to_string() const {
    std::string text = std::string(dtype_name(dtype)) + shape.to_string();
    if (sequence) text = "seq(" + text + ")";
    if (optional) text = "opt(" + text + ")";
    return text;
  }
  bool operator==(const TensorType& other) const = default;
};

}  // namespace weir
