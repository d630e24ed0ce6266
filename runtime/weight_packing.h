// Packing a plan's constant weights ahead of time, so that a plan file holds
// them in the layouts its kernels use on this machine (oneDNN's blocked and
// Winograd weights) and a loaded plan's first run does not pack them.
//
//   std::shared_ptr<const weir::Plan> plan = weir::compile(graph, {.opt_level = 3});
//   weir::WeightPacking packing = weir::pack_weights(plan);   // one run on zeros
//   weir::save_plan(*plan, "model.weirplan");                // the packs go in the file
//
// The kernels pack on their first run; pack_weights makes that run, on
// zero-filled inputs of the graph's static shapes, and counts what they
// hold. It leaves alone a plan it could not run that way, and says why: one
// whose inputs have symbolic dims (the layout depends on the shape fed),
// that holds persistent values (a run would change training state) or
// collectives (a run needs the other ranks), or that runs on a non-CPU
// device. A failing run is reported the same way, not thrown: the plan is
// still good, only unpacked.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/plan.h"

namespace weir {

struct WeightPacking {
  size_t kernels = 0;   // kernels that hold packed constants
  size_t bytes = 0;     // their packed bytes
  std::string skipped;  // why nothing was packed; empty when the run was made
};

WeightPacking pack_weights(const std::shared_ptr<const Plan>& plan);

}  // namespace weir
