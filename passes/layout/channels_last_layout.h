// ChannelsLastLayout — runs the convolutions of a conv net on channels-last
// data ([N, H, W, C]), the layout oneDNN's fastest CPU convolutions read and
// write, so no reorder runs around each convolution.
//
// Each f32/bf16 Conv or FusedConv with constant weights becomes a FusedConv
// with layout NHWC between two Transposes (to channels-last before it, back
// after it); each int8 QLinearConv or FusedQLinearConv with constant
// weights, a FusedQLinearConv with layout NHWC, the same way (the
// Transposes then sink through per-tensor QuantizeLinear and
// DequantizeLinear too). Local rules then move the back-Transposes below elementwise ops
// (Relu, Add of two such values, Add of a per-channel constant, ...),
// Concat (onto the moved axis), MaxPool/AveragePool (into ChannelsLastPool,
// where oneDNN has the window) and global pools (into ReduceMean/ReduceMax
// over the spatial axes), and cancel each Transpose pair that meets, so
// Transposes remain only where channels-first data enters or leaves the conv
// chain (the network's input, a Flatten or Reshape the rules do not cross).
//
//   weir::ChannelsLastLayout layout;
//   layout.run(graph, ctx);   // after the conv fusions: a FusedConv keeps its activation
#pragma once

#include "passes/pass.h"

namespace weir {

class ChannelsLastLayout final : public Pass {
 public:
  std::string name() const override { return "channels_last_layout"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
