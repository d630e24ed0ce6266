// Local rewrite rules and the one driver that runs them.
//
// A rule matches a small pattern that ends at a root node of a known op type
// and replaces it. The driver visits every node once per sweep, hands it to
// the rules that start from its op type, and sweeps again while anything
// changed (capped), so a rule's result can feed another rule. Global
// rewrites (layout assignment, freezing, autodiff) stay whole passes.
//
//   class ReluOfRelu final : public RewriteRule {
//     std::string name() const override { return "relu_of_relu"; }
//     std::vector<std::string> root_ops() const override { return {"Relu"}; }
//     bool apply(Node& relu, Rewriter& rw) override {
//       Node* inner = rw.producer_of(relu.input(0), "Relu");
//       if (inner == nullptr) return false;
//       rw.replace(relu, inner->output(0));   // uses move over, `relu` is removed
//       return true;
//     }
//   };
//   RewriteDriver driver("my_rules", make_rules<ReluOfRelu>());
//   driver.run(graph, ctx);
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "passes/pass.h"

namespace weir {

// What a rule may do to the graph, with the bookkeeping the driver needs.
class Rewriter {
 public:
  Rewriter(Graph& graph, PassContext& context) : graph_(graph), context_(context) {}
  Graph& graph() { return graph_; }
  PassContext& context() { return context_; }

  // Adds a node that takes `like`'s place: on its device and stream, since a
  // rule's replacement runs where the node it replaces ran.
  Node* create(const Node& like, const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs = 1,
               std::map<std::string, Attribute> attributes = {}, const std::string& name = "");

  // The producer of `value` when it is a built-in `op_type` node (nullptr otherwise).
  Node* producer_of(const Value* value, const char* op_type) const;
  // Moves every use of `root`'s single output to `value`, then removes `root`
  // and whatever of its inputs' producers that leaves unread (matched
  // pattern nodes with no other readers). When `root`'s output is a graph
  // output and `value` a fresh, unread node output, `value`'s producer takes
  // over the old value, so the graph output keeps its name.
  void replace(Node& root, Value* value);
  // Removes `node` (its outputs must be unread) and records it as removed.
  void remove(Node* node);
  // Whether `node`, a node that was in the graph when this Rewriter was
  // made, has been removed since (addresses of removed nodes may be reused
  // by new ones, so this is no test for nodes added later).
  bool removed(const Node* node) const { return removed_.count(node) != 0; }

 private:
  void remove_unread_producers(const std::vector<Value*>& values);

  Graph& graph_;
  PassContext& context_;
  std::unordered_set<const Node*> removed_;
};

class RewriteRule {
 public:
  virtual ~RewriteRule() = default;
  virtual std::string name() const = 0;
  // The op types (built-in domain) a match is rooted at.
  virtual std::vector<std::string> root_ops() const = 0;
  // Tries to rewrite the pattern rooted at `root`; true when it changed the graph.
  virtual bool apply(Node& root, Rewriter& rewriter) = 0;
};

template <typename... Rules>
std::vector<std::unique_ptr<RewriteRule>> make_rules() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  (rules.push_back(std::make_unique<Rules>()), ...);
  return rules;
}

// A pass that runs its rules over the graph until none applies (at most
// `max_sweeps` sweeps).
class RewriteDriver : public Pass {
 public:
  RewriteDriver(std::string name, std::vector<std::unique_ptr<RewriteRule>> rules, int max_sweeps = 16);
  std::string name() const override { return name_; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<RewriteRule>> rules_;
  std::unordered_map<std::string, std::vector<RewriteRule*>> by_root_;
  int max_sweeps_;
};

}  // namespace weir
