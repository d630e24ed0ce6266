// GraphBuilder — builds a Weir graph from C++ with typed value handles.
//
//   weir::GraphBuilder b("mlp", /*seed=*/42);
//   weir::Var x = b.input("x", {weir::DType::kFloat32, weir::Shape{64, 784}});
//   weir::Var w = b.parameter("w", weir::init::xavier_uniform({784, 10}, b.rng()));
//   weir::Var y = b.op("Relu", {b.op("MatMul", {x, w})});
//   b.output(y);
//   std::unique_ptr<weir::Graph> graph = b.finish();   // throws the first error, if any
//
// Each call adds a node and infers its output types at once, so a wrong
// shape is caught by the call that made it. The builder keeps the first
// error (with the offending call: op, node name and input types) and turns
// every later call into a no-op returning an invalid Var, so model code stays
// a chain of calls without error checks; finish() reports that first error.
// Names are scoped: inside `auto s = b.scope("block1")` a node or parameter
// "conv" is named "block1/conv".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

class GraphBuilder;

// A handle to a value being built. Invalid after a failed call.
class Var {
 public:
  Var() = default;
  Var(GraphBuilder* builder, Value* value) : builder_(builder), value_(value) {}

  bool valid() const { return value_ != nullptr; }
  GraphBuilder* builder() const { return builder_; }
  Value* value() const { return value_; }
  // Type of the value; an undefined type for an invalid Var.
  const TensorType& type() const;
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  // Static size of `axis` (negative counts from the end); -1 when unknown.
  int64_t size(int64_t axis) const;
  const std::string& name() const;

 private:
  GraphBuilder* builder_ = nullptr;
  Value* value_ = nullptr;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "model", uint64_t seed = 0);
  GraphBuilder(std::string graph_name, uint64_t seed, const OpRegistry& registry);
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // --- values ----------------------------------------------------------
  Var input(const std::string& name, TensorType type);
  Var constant(Tensor value, const std::string& name = "");
  Var scalar(double value, DType dtype = DType::kFloat32);
  Var ints(const std::vector<int64_t>& values);  // an int64 1-D constant (shapes, axes)
  // A trainable persistent value holding `initial`.
  Var parameter(const std::string& name, Tensor initial);
  // A trainable persistent value without an initial tensor (a session
  // zero-fills it): the caller writes its value once the session exists,
  // as each rank does with its shard of a model-parallel head
  // (frontend/nn/margin_head.h). `type` must be static.
  Var parameter(const std::string& name, TensorType type);
  // A persistent value that is not trained (running statistics, optimizer state).
  Var state(const std::string& name, Tensor initial, PersistentRole role = PersistentRole::kBuffer);

  // --- nodes -----------------------------------------------------------
  // Adds a node; returns its outputs (all invalid after an error).
  std::vector<Var> op(const std::string& op_type, const std::vector<Var>& inputs, size_t num_outputs,
                      std::map<std::string, Attribute> attributes = {}, const std::string& name = "");
  // The single-output form.
  Var op(const std::string& op_type, const std::vector<Var>& inputs,
         std::map<std::string, Attribute> attributes = {}, const std::string& name = "");
  // An absent optional input.
  static Var none() { return Var(); }
  void output(Var value);

  // --- names -----------------------------------------------------------
  class Scope {
   public:
    Scope(GraphBuilder& builder, const std::string& name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GraphBuilder& builder_;
  };
  [[nodiscard]] Scope scope(const std::string& name) { return Scope(*this, name); }
  // "outer/inner/name" for the current scope.
  std::string scoped(const std::string& name) const;

  // --- errors and result -----------------------------------------------
  bool ok() const { return !error_.has_value(); }
  // The first error, if any.
  const std::optional<Error>& error() const { return error_; }
  // Records an error from model code (a bad layer argument, say); the first one wins.
  void fail(ErrorKind kind, const std::string& message);

  // Throws the first error; otherwise verifies the graph and hands it over.
  std::unique_ptr<Graph> finish();
  // The graph being built (for passes that run before finish()).
  Graph& graph() { return *graph_; }
  const OpRegistry& registry() const { return *registry_; }

  // Seeded randomness for initializers: parameters drawn in the same order
  // from the same seed are the same.
  std::mt19937_64& rng() { return rng_; }
  // A fresh seed for a random op (Dropout's seed attribute).
  int64_t next_op_seed() { return static_cast<int64_t>(rng_() >> 1); }

 private:
  std::string describe_call(const std::string& op_type, const std::string& name, const std::vector<Var>& inputs) const;

  std::unique_ptr<Graph> graph_;
  const OpRegistry* registry_;
  std::vector<std::string> scopes_;
  std::optional<Error> error_;
  std::mt19937_64 rng_;
};

// Elementwise arithmetic with broadcasting (Add, Sub, Mul, Div nodes).
Var operator+(Var a, Var b);
Var operator-(Var a, Var b);
Var operator*(Var a, Var b);
Var operator/(Var a, Var b);
Var operator*(Var a, double b);
Var operator+(Var a, double b);

}  // namespace weir
