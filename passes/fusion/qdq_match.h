// Matching QDQ patterns: what qdq_fusion and qdq_residual_fusion both read
// of a DequantizeLinear and its constant parameters.
//
//   std::optional<weir::Dequantized> d = weir::dequantized(rw, value);   // value = DequantizeLinear(q, scale, zero)
//   if (d && weir::per_tensor(*d) && weir::same_value(d->zero, other_zero, d->q->dtype())) ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "passes/rewrite_rule.h"

namespace weir {

bool has_constant_data(const Value* v);

// A DequantizeLinear whose scale (f32) and zero point are constants.
struct Dequantized {
  Value* q = nullptr;
  Value* scale = nullptr;
  Value* zero = nullptr;  // null: zero point 0
  int64_t axis = 1;
};

// The DequantizeLinear producing `value`, when its parameters are constants
// (the zero point shaped like the scale); nullopt otherwise.
std::optional<Dequantized> dequantized(const Rewriter& rw, const Value* value);

// One value each (an activation's parameters).
bool per_tensor(const Dequantized& d);

// Whether two one-value constants (scale or zero point; an absent zero
// point, null, is 0 of `zero_dtype`) hold the same bits.
bool same_value(const Value* a, const Value* b, DType zero_dtype);

// A constant zero point of 0 (Tensor zero-fills), named after `name`.
Value* zero_constant(Graph& graph, DType dtype, const std::vector<int64_t>& sizes, const std::string& name);

}  // namespace weir
