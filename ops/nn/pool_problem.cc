#include "ops/nn/pool_problem.h"

#include "core/error.h"
#include "core/shape.h"

namespace weir {

ConvProblem pool_problem(const Node& node, const std::vector<int64_t>& x_sizes) {
  auto fail = [&](const std::string& message) {
    throw Error(ErrorKind::kShape, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
  };
  if (x_sizes.size() < 3 || x_sizes.size() > 5) {
    fail("input has shape " + format_sizes(x_sizes) + "; expected [N, C, spatial...] with 1 to 3 spatial axes");
  }
  if (!node.has_attr("kernel_shape")) fail("the kernel_shape attribute is required");
  std::vector<int64_t> kernel = node.attr("kernel_shape").ints();
  std::vector<int64_t> x_spatial(x_sizes.begin() + 2, x_sizes.end());
  if (kernel.size() != x_spatial.size()) {
    fail("kernel_shape " + format_sizes(kernel) + " does not have one entry per spatial axis of the input " +
         format_sizes(x_sizes));
  }
  ConvGeometry g = conv_geometry(node, ConvKind::kForward, x_spatial, kernel);
  std::vector<int64_t> out = g.output_spatial(x_spatial);
  bool ceil_mode = node.has_attr("ceil_mode") && node.attr("ceil_mode").i() != 0;
  ConvProblem p;
  p.batch = x_sizes[0];
  p.in_channels = p.out_channels = p.group = x_sizes[1];
  p.spatial_rank = x_spatial.size();
  for (size_t i = 0; i < x_spatial.size(); ++i) {
    int64_t span = x_spatial[i] + g.pads_begin[i] + g.pads_end[i] - g.kernel_extent(i);
    if (span < 0) {
      fail("the window " + format_sizes(kernel) + " (dilations " + format_sizes(g.dilations) +
           ") does not fit the padded input " + format_sizes(x_spatial));
    }
    if (ceil_mode) {
      out[i] = (span + g.strides[i] - 1) / g.strides[i] + 1;
      // A last window that would start in the end padding is dropped.
      if ((out[i] - 1) * g.strides[i] >= x_spatial[i] + g.pads_begin[i]) --out[i];
    }
    p.in[i] = x_spatial[i];
    p.out[i] = out[i];
    p.kernel[i] = kernel[i];
    p.strides[i] = g.strides[i];
    p.dilations[i] = g.dilations[i];
    p.pads_begin[i] = g.pads_begin[i];
    p.pads_end[i] = g.pads_end[i];
  }
  return p;
}

}  // namespace weir
