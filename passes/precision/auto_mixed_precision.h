// Automatic mixed precision: runs the ops that gain from it (matmul, conv)
// in bf16 or f16 and keeps the ones that need f32 (softmax, norms, losses,
// reductions, exp/log) in f32, with casts only where the two meet.
//
//   weir::AutoMixedPrecision amp({.low = weir::DType::kBFloat16});
//   amp.run(forward_graph, ctx);            // before autodiff: the backward follows the casts
//
// Each op is on one of three lists. Allow (trait kLowPrecisionCompute, or
// named in `allow`): its f32 operands are cast down. Deny (trait
// kFullPrecisionCompute, or named in `deny`; wins over allow): its low
// operands are cast up. Follow (everything else): it runs low when one of
// its operands already is low, else in f32. An op runs low only when a CPU
// kernel for the low dtype exists; otherwise it stays f32.
//
// Casts: each value is cast to a dtype at most once and the result shared by
// every reader; a value that is itself a cast of the wanted dtype is read
// directly (so f32 -> bf16 -> f32 never appears). Parameters stay f32: the
// pass reads them through a Cast, so the optimizer updates the f32 master
// copy and every run refreshes the low copy from it; the Cast's gradient
// brings the low gradient back to f32. Graph outputs keep their names and
// dtypes.
//
// Run it on a forward graph before autodiff (minimize() does, given an AMP
// strategy). f16 needs dynamic loss scaling against gradient underflow and
// overflow (minimize adds it); bf16 has f32's range and needs none.
#pragma once

#include <set>
#include <string>

#include "core/dtype.h"
#include "passes/pass.h"

namespace weir {

struct AmpOptions {
  DType low = DType::kBFloat16;  // kBFloat16 or kFloat16
  std::set<std::string> allow{};   // op types added to the allow list
  std::set<std::string> deny{};    // op types kept in f32 (wins over allow and the traits)
  std::set<std::string> follow{};  // op types that follow their inputs whatever their traits say
};

// "bf16" / "fp16" (also "f16", "bfloat16", "float16"); throws naming the choices.
DType parse_amp_dtype(const std::string& name);
// Whether training in `low` needs dynamic loss scaling: f16 yes, bf16 no.
bool amp_needs_loss_scaling(DType low);

class AutoMixedPrecision final : public Pass {
 public:
  explicit AutoMixedPrecision(AmpOptions options);
  std::string name() const override { return "auto_mixed_precision"; }
  bool run(Graph& graph, PassContext& context) override;

  // After run(): the nodes it runs in low precision, and the casts it added.
  int low_precision_nodes() const { return low_nodes_; }
  int casts_inserted() const { return casts_; }

 private:
  AmpOptions options_;
  int low_nodes_ = 0;
  int casts_ = 0;
};

}  // namespace weir
