// Autodiff — reverse-mode differentiation as a graph rewrite: appends the
// backward graph of a scalar loss with respect to chosen values (by default
// every parameter), built from each op's gradient rule.
//
//   weir::Autodiff autodiff({.loss = "loss"});       // wrt: every parameter
//   autodiff.run(graph, ctx);
//   weir::Value* dw = autodiff.gradients().at("fc1.weight");
//
//   // or directly, for chosen values
//   std::vector<weir::Value*> grads = weir::append_backward(graph, loss, {w, b}, registry);
//
// Only nodes on a path from a wrt value to the loss are differentiated; a
// value used several times gets the Sum of its gradients; backward nodes
// that nothing reads (the gradient of a data input, say) are removed again.
// Each backward node runs on the device of the forward node it comes from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

// Appends d(loss)/d(w) for each w in `wrt`; nullptr where the loss does not
// depend on w. The loss must be a floating-point value with one element.
// Throws weir::Error naming the node when a node on the path has no
// gradient rule.
std::vector<Value*> append_backward(Graph& graph, Value* loss, const std::vector<Value*>& wrt,
                                    const OpRegistry& registry);

struct AutodiffOptions {
  std::string loss{};               // the scalar to differentiate
  std::vector<std::string> wrt{};   // empty: every persistent value with the parameter role
  bool add_outputs = false;       // also make each gradient a graph output
};

class Autodiff final : public Pass {
 public:
  explicit Autodiff(AutodiffOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "autodiff"; }
  bool run(Graph& graph, PassContext& context) override;

  // After run(): the gradient of each wrt value, by its name; values the
  // loss does not depend on are absent.
  const std::map<std::string, Value*>& gradients() const { return gradients_; }

 private:
  AutodiffOptions options_;
  std::map<std::string, Value*> gradients_;
};

}  // namespace weir
