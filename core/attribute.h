// Attribute — a typed node attribute: int, float, string, tensor, sub-graph,
// or a list of any of these.
//
//   node->set_attr("axis", 1);                                  // kInt
//   node->set_attr("alpha", 0.2);                               // kFloat (stored as double)
//   node->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});   // kInts
//   node->set_attr("body", std::make_shared<weir::Graph>("b")); // kGraph
//   int64_t axis = node->attr("axis").i();   // throws weir::Error if not an int
//
// Sub-graphs are held by shared_ptr; Graph::clone() deep-copies them, so a
// cloned graph never shares a mutable sub-graph with its source.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace weir {

class Graph;
using GraphPtr = std::shared_ptr<Graph>;

enum class AttrType { kInt, kFloat, kString, kTensor, kGraph, kInts, kFloats, kStrings, kTensors, kGraphs };

std::string_view attr_type_name(AttrType type);

class Attribute {
 public:
  Attribute() = default;  // an int 0
  Attribute(int value) : value_(static_cast<int64_t>(value)) {}  // NOLINT: implicit on purpose
  Attribute(int64_t value) : value_(value) {}                    // NOLINT
  Attribute(float value) : value_(static_cast<double>(value)) {} // NOLINT
  Attribute(double value) : value_(value) {}                     // NOLINT
  Attribute(const char* value) : value_(std::string(value)) {}   // NOLINT
  Attribute(std::string value) : value_(std::move(value)) {}     // NOLINT
  Attribute(Tensor value) : value_(std::move(value)) {}          // NOLINT
  Attribute(GraphPtr value) : value_(std::move(value)) {}        // NOLINT
  Attribute(std::vector<int64_t> value) : value_(std::move(value)) {}      // NOLINT
  Attribute(std::vector<double> value) : value_(std::move(value)) {}       // NOLINT
  Attribute(std::vector<std::string> value) : value_(std::move(value)) {}  // NOLINT
  Attribute(std::vector<Tensor> value) : value_(std::move(value)) {}       // NOLINT
  Attribute(std::vector<GraphPtr> value) : value_(std::move(value)) {}     // NOLINT

  AttrType type() const { return static_cast<AttrType>(value_.index()); }

  // Typed access; each throws weir::Error(kInvalidArgument) on the wrong type.
  int64_t i() const { return get<int64_t>(AttrType::kInt); }
  double f() const { return get<double>(AttrType::kFloat); }
  const std::string& s() const { return get<std::string>(AttrType::kString); }
  const Tensor& t() const { return get<Tensor>(AttrType::kTensor); }
  const GraphPtr& g() const { return get<GraphPtr>(AttrType::kGraph); }
  const std::vector<int64_t>& ints() const { return get<std::vector<int64_t>>(AttrType::kInts); }
  const std::vector<double>& floats() const { return get<std::vector<double>>(AttrType::kFloats); }
  const std::vector<std::string>& strings() const {
    return get<std::vector<std::string>>(AttrType::kStrings);
  }
  const std::vector<Tensor>& tensors() const { return get<std::vector<Tensor>>(AttrType::kTensors); }
  const std::vector<GraphPtr>& graphs() const { return get<std::vector<GraphPtr>>(AttrType::kGraphs); }

  // Copy whose sub-graphs are deep-cloned (tensors stay shared: they are values).
  Attribute deep_copy() const;

 private:
  template <typename T>
  const T& get(AttrType expected) const {
    if (const T* value = std::get_if<T>(&value_)) return *value;
    throw_wrong_type(expected);
  }
  [[noreturn]] void throw_wrong_type(AttrType expected) const;

  // Alternative order matches AttrType.
  std::variant<int64_t, double, std::string, Tensor, GraphPtr, std::vector<int64_t>,
               std::vector<double>, std::vector<std::string>, std::vector<Tensor>,
               std::vector<GraphPtr>>
      value_;
};

}  // namespace weir
