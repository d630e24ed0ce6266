// How one convolution problem (ops/nn/conv_problem.h) is put to cuDNN, in
// plain C++ (no CUDA types), so it is checked on the host:
//
// - cuDNN's convolution descriptors take at least two spatial axes, so a
//   1-D problem becomes 2-D with a leading spatial axis of size 1;
// - cuDNN pads both ends of an axis alike, so a problem with pads_begin !=
//   pads_end (SAME_UPPER/LOWER with an odd total, or explicit asymmetric
//   pads) runs on an explicitly zero-padded input with no pads: the
//   forward and weight-gradient directions read the padded input, the
//   data gradient is computed for it and cropped.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ops/nn/conv_problem.h"

namespace weir::cuda {

struct CudnnConvGeometry {
  // The problem cuDNN runs: `original`'s, or with the padding made
  // explicit (in[i] grown by both pads, pads zero).
  ConvProblem problem;
  bool explicit_padding = false;
  // Where the original input starts inside the padded one (pads_begin; zero without explicit padding).
  int64_t input_offset[3] = {0, 0, 0};
  // Descriptor arrays: dims [N, C, spatial...] with 2 or 3 spatial axes.
  std::vector<int64_t> in_dims, out_dims, filter_dims;
  std::vector<int64_t> pads, strides, dilations;  // one per spatial axis of the descriptors
};

CudnnConvGeometry cudnn_conv_geometry(const ConvProblem& original);

// The explicit padding of a channels-last input [N, spatial..., C] (one or
// two spatial axes) as a shifted copy (conv_elements.h) of N planes: from
// [1 or in0, in1, C] to g.problem's padded sizes, the spatial axes shifted
// by the pads' begin, the channel axis not at all.
struct ChannelsLastPadding {
  std::array<int64_t, 3> from{1, 1, 1}, to{1, 1, 1};
  int64_t offset[3] = {0, 0, 0};
};
ChannelsLastPadding channels_last_padding(const CudnnConvGeometry& g, const ConvProblem& original);

}  // namespace weir::cuda
