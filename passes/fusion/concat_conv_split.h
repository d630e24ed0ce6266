// ConcatConvSplit — a convolution of a channel Concat becomes one
// convolution per concatenated part, chained through FusedConv's addend:
//
//   Conv(Concat(a, b), W, B)  ==  Conv(a, W[:, :Ca], B) + Conv(b, W[:, Ca:])
//
// so the concatenated tensor is never written. The second part adds its sum
// onto the first's output in place (FusedConv's Z, a oneDNN sum post-op) and
// applies the activation; the first runs without one. SqueezeNet's fire
// modules concatenate two expand convs and feed the result to the next
// squeeze conv: each Concat copied 0.3-1.5 MB per run. Channel-wise pools
// between the Concat and the conv are moved below the Concat first
// (Pool(Concat(a, b)) == Concat(Pool(a), Pool(b))) when the conv will split.
//
// Splitting adds a write and a read of the conv's output per extra part, so
// a conv splits only when that is smaller than the Concat it saves
// ((parts - 1) x output elements < concatenated elements): a squeeze conv
// (16-64 output channels) splits, SqueezeNet's classifier (1000) does not.
//
//   weir::ConcatConvSplit split;
//   split.run(graph, ctx);   // after channels_last_layout: it sees the NHWC Concats
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class ConcatConvSplit final : public RewriteDriver {
 public:
  ConcatConvSplit();
};

}  // namespace weir
