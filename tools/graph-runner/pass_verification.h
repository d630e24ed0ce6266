// Checks each pass of the inference pipeline numerically: the graph runs
// (with the reference evaluator) before and after every pass that changed
// it, on the same inputs. What `graph-runner verify` prints and
// weir.verify() returns in Python.
//
//   weir::tools::PassVerification v = weir::tools::verify_passes("model.onnx", *ops, {.opt_level = 3}, {}, 1e-4);
//   if (!v.first_broken.empty()) { /* that pass changed the outputs by more than 1e-4 */ }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

struct PassCheck {
  std::string pass;
  bool changed = false;        // unchanged passes are not evaluated; the figures below are 0
  double max_abs_diff = 0;     // against the graph before this pass
  double max_abs_diff_total = 0;  // against the original graph
  double relative_l2 = 0;      // ||original - now|| / ||original||, all outputs together
  double relative_l2_step = 0; // ||before - now|| / ||before||: this pass's own change
  bool breaks_tolerance = false;
};

struct PassVerification {
  std::vector<PassCheck> passes;  // in pipeline order
  std::string first_broken;       // the first pass past the tolerance; empty when none
};

// `inputs`: NAME=FILE.npy or NAME=FILE.pb; the other inputs are seeded
// random. `after_each` (optional) sees each pass's check as it is made.
// The tolerance bounds each pass's largest absolute change; under --amp
// (model_options.amp) it bounds each pass's relative L2 change instead
// (kAmpTolerance by default), since rounding to bf16 moves every output by
// about 2^-8 of its size, however large.
inline constexpr double kAmpTolerance = 3e-2;  // about 8 bf16 ulps (2^-8 each), relative

PassVerification verify_passes(const std::string& model, const OpSet& ops, const ModelOptions& model_options,
                               const std::vector<std::string>& inputs, double tolerance,
                               const std::function<void(const PassCheck&)>& after_each = {});

}  // namespace weir::tools
