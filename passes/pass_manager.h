// Running passes: pipelines (themselves passes), a fixed-point wrapper, the
// verifier after every pass that changed something, passes by name, and the
// optimization levels.
//
//   weir::PassContext ctx;
//   std::unique_ptr<weir::Pipeline> pipeline = weir::inference_pipeline(/*level=*/3, {"constant_folding"});
//   pipeline->set_after_pass([](const weir::Pass& pass, const weir::Graph& g, bool changed) { ... });
//   pipeline->run(graph, ctx);
//
//   weir::pass_names();                 // every pass --disable-pass and --print-after accept
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "passes/pass.h"

namespace weir {

// Runs its passes in order. After each pass that changed the graph, types
// are re-inferred and the graph is verified: a pass that breaks an
// invariant is named in the error. A callback sees the graph after every
// pass (--print-after, the verify tool).
class Pipeline final : public Pass {
 public:
  using AfterPass = std::function<void(const Pass& pass, const Graph& graph, bool changed)>;

  explicit Pipeline(std::string name = "pipeline") : name_(std::move(name)) {}
  Pipeline& add(std::unique_ptr<Pass> pass);
  void set_after_pass(AfterPass callback) { after_ = std::move(callback); }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

  std::string name() const override { return name_; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Pass>> passes_;
  AfterPass after_;
};

// Runs `pass` until it changes nothing, at most `max_iterations` times.
class FixedPoint final : public Pass {
 public:
  FixedPoint(std::unique_ptr<Pass> pass, int max_iterations) : pass_(std::move(pass)), max_(max_iterations) {}
  std::string name() const override { return pass_->name() + "*"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  std::unique_ptr<Pass> pass_;
  int max_;
};

// The passes this build has, by name; throws naming the choices for an unknown one.
std::vector<std::string> pass_names();
std::unique_ptr<Pass> make_pass(const std::string& name);
// Throws naming the choices unless `name` is one of pass_names().
void require_pass_name(const std::string& name);

// The inference pipeline at optimization level 0 (nothing) to 3 (everything),
// without the passes named in `disabled` (each must be a known pass name).
// With `amp` (bf16 or f16), auto_mixed_precision runs after the fusions and
// the layout, so it sees the fused convs and matmuls (which run low) and the
// norms, softmax and reductions (which stay f32); a second constant folding
// then turns the casts of constant weights into low-precision constants, so
// a run reads bf16 weights and casts only where f32 and bf16 ops meet; at
// level 3 wide_output_fusion lets a matmul whose result is cast up write f32
// itself (the logits keep f32's resolution). AMP runs at every level, 0
// included: it is a choice of precision, not an optimization (at level 0
// nothing folds the weights' casts).
std::unique_ptr<Pipeline> inference_pipeline(int level, const std::set<std::string>& disabled = {},
                                             std::optional<DType> amp = std::nullopt);

// The pipeline for a training step graph (after autodiff and the optimizer
// updates), at level 0 to 3: the simplifications and elementwise_fusion,
// which rewrite forward and backward ops alike; not the inference-only
// fusions (their ops have no gradient, and the conv and matmul fusions and
// the layout want constant weights) nor freezing (nothing to freeze).
std::unique_ptr<Pipeline> training_optimization_pipeline(int level, const std::set<std::string>& disabled = {});

}  // namespace weir
