// How a loss op reduces its per-position losses (its "reduction" attribute:
// "none", "sum" or "mean"). Alone in this header, with no includes, because
// the CUDA loss kernels' device code (ops/cuda/loss_device.h) uses it too.
#pragma once

namespace weir {

enum class LossReduction { kNone, kSum, kMean };

}  // namespace weir
