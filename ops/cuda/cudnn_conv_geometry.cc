#include "ops/cuda/cudnn_conv_geometry.h"

namespace weir::cuda {

CudnnConvGeometry cudnn_conv_geometry(const ConvProblem& original) {
  CudnnConvGeometry g;
  g.problem = original;
  ConvProblem& p = g.problem;
  for (size_t a = 0; a < p.spatial_rank; ++a) g.explicit_padding = g.explicit_padding || p.pads_begin[a] != p.pads_end[a];
  if (g.explicit_padding) {
    for (size_t a = 0; a < p.spatial_rank; ++a) {
      g.input_offset[a] = p.pads_begin[a];
      p.in[a] += p.pads_begin[a] + p.pads_end[a];
      p.pads_begin[a] = p.pads_end[a] = 0;
    }
  }
  // A 1-D problem is 2-D with a leading spatial axis of 1 (size, kernel,
  // stride and dilation 1, no pad): the same windows.
  const bool widen = p.spatial_rank == 1;
  g.in_dims = {p.batch, p.in_channels};
  g.out_dims = {p.batch, p.out_channels};
  g.filter_dims = {p.out_channels, p.group > 0 ? p.in_channels / p.group : 0};
  if (widen) {
    g.in_dims.push_back(1);
    g.out_dims.push_back(1);
    g.filter_dims.push_back(1);
    g.pads.push_back(0);
    g.strides.push_back(1);
    g.dilations.push_back(1);
  }
  for (size_t a = 0; a < p.spatial_rank; ++a) {
    g.in_dims.push_back(p.in[a]);
    g.out_dims.push_back(p.out[a]);
    g.filter_dims.push_back(p.kernel[a]);
    g.pads.push_back(p.pads_begin[a]);
    g.strides.push_back(p.strides[a]);
    g.dilations.push_back(p.dilations[a]);
  }
  return g;
}

ChannelsLastPadding channels_last_padding(const CudnnConvGeometry& g, const ConvProblem& original) {
  ChannelsLastPadding padding;
  const bool two = original.spatial_rank == 2;
  padding.from = {two ? original.in[0] : 1, two ? original.in[1] : original.in[0], original.in_channels};
  padding.to = {two ? g.problem.in[0] : 1, two ? g.problem.in[1] : g.problem.in[0], original.in_channels};
  padding.offset[0] = two ? -g.input_offset[0] : 0;
  padding.offset[1] = -g.input_offset[two ? 1 : 0];
  return padding;
}

}  // namespace weir::cuda
