// OpSchema — the single description of an op that the builder, the ONNX
// importer, passes and the verifier all read: inputs and outputs, attributes
// with types and defaults, dtype constraints, traits, shape/dtype inference
// and the gradient rule.
//
//   weir::OpSchema schema("Relu");
//   schema.input("X", "T")
//         .output("Y", "T")
//         .type_constraint("T", {weir::DType::kFloat32, weir::DType::kBFloat16})
//         .traits(weir::OpTrait::kElementwise | weir::OpTrait::kInplaceable)
//         .infer([](weir::InferenceContext& ctx) { ctx.set_output_type(0, *ctx.input_type(0)); })
//         .doc("max(x, 0), elementwise");
//   registry.add(std::move(schema));
//
// Schemas are registered by one explicit function per op family (see
// ops/register_ops.h), called from one place; nothing self-registers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attribute.h"
#include "core/dtype.h"
#include "core/tensor_type.h"

namespace weir {

class Graph;
class Node;
class Value;

enum class OpTrait : uint32_t {
  kNone = 0,
  kElementwise = 1u << 0,   // output[i] depends only on input[i] (after broadcasting)
  kCommutative = 1u << 1,   // the first two inputs may be swapped
  kSideEffects = 1u << 2,   // must run even when its outputs are unused (DCE keeps it)
  kCollective = 1u << 3,    // communicates across ranks; all ranks run it in the same order
  kInplaceable = 1u << 4,   // output 0 may reuse input 0's buffer
  kStateful = 1u << 5,      // reads or writes persistent values or RNG state
  kViewOfInput = 1u << 6,   // output 0 may be input 0's memory itself (a view, no copy)
  // Mixed precision (passes/precision): an op that runs faster in bf16/f16
  // with f32 accumulation inside (matmul, conv) is on the allow list; one
  // whose result needs f32 range or accumulation (softmax, norms, losses,
  // reductions, exp/log) is on the deny list. Others follow their inputs.
  kLowPrecisionCompute = 1u << 7,
  kFullPrecisionCompute = 1u << 8,
};

constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr bool has_trait(OpTrait set, OpTrait trait) {
  return (static_cast<uint32_t>(set) & static_cast<uint32_t>(trait)) != 0;
}

enum class Arity { kSingle, kOptional, kVariadic };

struct FormalParameter {
  std::string name;
  std::string type_param;  // name of a type constraint ("T"), or "" for any dtype
  Arity arity = Arity::kSingle;
};

struct AttributeSpec {
  std::string name;
  AttrType type;
  bool required = false;
  std::optional<Attribute> default_value;
};

// What shape inference sees of a node: input types, constant inputs, and
// attributes with schema defaults filled in. It writes the output types.
class InferenceContext {
 public:
  InferenceContext(const Node& node, const class OpSchema& schema);

  const Node& node() const { return node_; }
  size_t num_inputs() const;
  size_t num_outputs() const { return outputs_.size(); }
  // nullptr for an absent optional input.
  const TensorType* input_type(size_t index) const;
  // The tensor of a constant input, or nullptr when the input is not constant.
  const Tensor* input_constant(size_t index) const;

  bool has_attr(const std::string& name) const;
  // The node's attribute, else the schema default; throws naming the node when neither exists.
  const Attribute& attr(const std::string& name) const;
  int64_t attr_int(const std::string& name) const { return attr(name).i(); }
  double attr_float(const std::string& name) const { return attr(name).f(); }
  const std::vector<int64_t>& attr_ints(const std::string& name) const { return attr(name).ints(); }

  void set_output_type(size_t index, TensorType type);
  const std::vector<TensorType>& output_types() const { return outputs_; }

  // A weir::Error(kShape) naming this node, for inference functions to throw.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Node& node_;
  const OpSchema& schema_;
  std::vector<TensorType> outputs_;
};

// What a gradient rule gets: the forward node, the gradients flowing into
// its outputs (nullptr where an output has no gradient), and the graph to add
// backward nodes to. It sets a gradient for each input that has one.
class GradientContext {
 public:
  GradientContext(Graph& graph, const Node& node, std::vector<Value*> output_grads);

  Graph& graph() { return graph_; }
  const Node& node() const { return node_; }
  Value* output_grad(size_t index) const { return output_grads_.at(index); }
  // Adds a backward node and returns its outputs.
  std::vector<Value*> emit(const std::string& op_type, const std::vector<Value*>& inputs,
                           size_t num_outputs = 1, std::map<std::string, Attribute> attributes = {});
  void set_input_grad(size_t index, Value* grad);
  const std::vector<Value*>& input_grads() const { return input_grads_; }

 private:
  Graph& graph_;
  const Node& node_;
  std::vector<Value*> output_grads_;
  std::vector<Value*> input_grads_;
};

using ShapeInferenceFn = std::function<void(InferenceContext&)>;
using GradientFn = std::function<void(GradientContext&)>;

class OpSchema {
 public:
  explicit OpSchema(std::string name, std::string domain = "");

  // Builder calls, in the order inputs/outputs appear.
  OpSchema& input(std::string name, std::string type_param, Arity arity = Arity::kSingle);
  OpSchema& output(std::string name, std::string type_param, Arity arity = Arity::kSingle);
  OpSchema& type_constraint(std::string type_param, std::vector<DType> allowed);
  OpSchema& attr(std::string name, AttrType type, std::optional<Attribute> default_value = std::nullopt);
  OpSchema& required_attr(std::string name, AttrType type);
  OpSchema& traits(OpTrait traits);
  OpSchema& add_traits(OpTrait traits);  // ORs into those set so far
  OpSchema& infer(ShapeInferenceFn fn);
  OpSchema& gradient(GradientFn fn);
  OpSchema& doc(std::string text);
  // Output 0 may be written over input `index`'s buffer when the node is
  // that input's last reader, for an op that reads each element of it only
  // to produce the same element of the output (FusedConv's addend). Ops with
  // kElementwise | kInplaceable need not say so: theirs is input 0.
  OpSchema& inplace_input(size_t index);

  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }
  const std::vector<FormalParameter>& inputs() const { return inputs_; }
  const std::vector<FormalParameter>& outputs() const { return outputs_; }
  const std::map<std::string, std::vector<DType>>& type_constraints() const { return constraints_; }
  const std::vector<AttributeSpec>& attributes() const { return attributes_; }
  const AttributeSpec* find_attr(std::string_view name) const;
  OpTrait traits() const { return traits_; }
  bool has(OpTrait trait) const { return has_trait(traits_, trait); }
  const ShapeInferenceFn& inference() const { return inference_; }
  const GradientFn& gradient_rule() const { return gradient_; }
  bool differentiable() const { return static_cast<bool>(gradient_); }
  const std::string& documentation() const { return doc_; }
  std::optional<size_t> inplace_input() const;

  // Input/output counts the schema allows (max is SIZE_MAX when variadic).
  size_t min_inputs() const;
  size_t max_inputs() const;
  size_t min_outputs() const;
  size_t max_outputs() const;
  // The formal parameter that actual input/output `index` binds to.
  const FormalParameter& input_param(size_t index) const;
  const FormalParameter& output_param(size_t index) const;

 private:
  std::string name_;
  std::string domain_;
  std::vector<FormalParameter> inputs_;
  std::vector<FormalParameter> outputs_;
  std::map<std::string, std::vector<DType>> constraints_;
  std::vector<AttributeSpec> attributes_;
  OpTrait traits_ = OpTrait::kNone;
  std::optional<size_t> inplace_input_;
  ShapeInferenceFn inference_;
  GradientFn gradient_;
  std::string doc_;
};

// All known op schemas, by (domain, name). Filled once at start-up by the
// ops layer's register_all_ops(); read-only afterwards, so concurrent reads
// are safe.
class OpRegistry {
 public:
  // Throws when a schema of the same domain and name is already registered.
  void add(OpSchema schema);
  const OpSchema* find(std::string_view op_type, std::string_view domain = "") const;
  const OpSchema& get(std::string_view op_type, std::string_view domain = "") const;  // throws
  size_t size() const { return schemas_.size(); }
  std::vector<std::string> names() const;

 private:
  std::map<std::pair<std::string, std::string>, OpSchema, std::less<>> schemas_;
};

// Runs the schema's inference for one node and returns the output types
// (unknown types where the schema has no inference function). Throws
// weir::Error(kShape) naming the node when inputs contradict the schema.
std::vector<TensorType> infer_output_types(const Node& node, const OpSchema& schema);

}  // namespace weir
