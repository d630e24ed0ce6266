// Pass — one graph rewrite, and the context passes share.
//
//   weir::PassContext ctx;                       // the default op registry
//   weir::Autodiff autodiff({.loss = "loss"});
//   bool changed = autodiff.run(graph, ctx);
//   ctx.options<MyPassOptions>().threshold = 4;  // typed options, one object per type
//
// A pass returns true when it changed the graph. It reads op semantics only
// through the context's registry, so a graph with plugin ops is rewritten
// with the registry that knows them.
#pragma once

#include <any>
#include <map>
#include <string>
#include <typeindex>

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

class KernelRegistry;

class PassContext {
 public:
  PassContext();
  explicit PassContext(const OpRegistry& registry, const KernelRegistry* kernels = nullptr);

  const OpRegistry& registry() const { return *registry_; }
  // The kernels passes that evaluate nodes (constant folding) run.
  const KernelRegistry& kernels() const { return *kernels_; }

  // The options object of type T, default-constructed on first use.
  template <typename T>
  T& options() {
    std::any& slot = options_[std::type_index(typeid(T))];
    if (!slot.has_value()) slot = T{};
    return std::any_cast<T&>(slot);
  }

 private:
  const OpRegistry* registry_;
  const KernelRegistry* kernels_;
  std::map<std::type_index, std::any> options_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The name pipelines, --disable-pass and --print-after use.
  virtual std::string name() const = 0;
  // Rewrites `graph`; true when it changed anything.
  virtual bool run(Graph& graph, PassContext& context) = 0;
};

}  // namespace weir
