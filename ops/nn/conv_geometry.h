// Convolution geometry: kernel, strides, dilations and pads of a Conv or
// ConvTranspose node, resolved against concrete spatial sizes (auto_pad
// needs them), and the output sizes that follow.
//
//   ConvGeometry g = conv_geometry(node, ConvKind::kForward, {28, 28}, {5, 5});
//   std::vector<int64_t> out = g.output_spatial({28, 28});
//
// Both shape inference and the kernels use this, so they can never disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir {

enum class ConvKind { kForward, kTranspose };

struct ConvGeometry {
  ConvKind kind = ConvKind::kForward;
  int64_t group = 1;
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, output_padding;

  size_t spatial_rank() const { return kernel.size(); }
  // Extent one kernel covers along `axis`: (k - 1) * dilation + 1.
  int64_t kernel_extent(size_t axis) const { return (kernel[axis] - 1) * dilations[axis] + 1; }
  // Output spatial sizes for `input` spatial sizes (Conv: the sliding windows;
  // ConvTranspose: stride * (in - 1) + output_padding + extent - pads).
  std::vector<int64_t> output_spatial(const std::vector<int64_t>& input) const;
};

// Reads the node's attributes (ONNX defaults where absent) and resolves
// auto_pad against `input_spatial`. Throws weir::Error(kShape) naming the node
// when an attribute has the wrong length, a stride or dilation is not
// positive, or a pad is negative. `kernel_spatial` comes from the weight.
ConvGeometry conv_geometry(const Node& node, ConvKind kind, const std::vector<int64_t>& input_spatial,
                           const std::vector<int64_t>& kernel_spatial);

}  // namespace weir
