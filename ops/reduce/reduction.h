// What a Reduce* op computes over its reduced axes. Alone in this header,
// without includes, because the CUDA kernels' device code
// (ops/cuda/reduce_device.h) uses it too.
#pragma once

namespace weir {

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

}  // namespace weir
