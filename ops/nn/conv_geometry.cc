#include "ops/nn/conv_geometry.h"

#include "core/error.h"
#include "core/shape.h"

namespace weir {

namespace {

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw Error(ErrorKind::kShape, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
}

std::vector<int64_t> ints_or(const Node& node, const char* name, size_t count, int64_t fallback) {
  if (!node.has_attr(name)) return std::vector<int64_t>(count, fallback);
  std::vector<int64_t> values = node.attr(name).ints();
  if (values.size() != count) {
    fail(node, std::string(name) + " " + format_sizes(values) + " has " + std::to_string(values.size()) +
                   " entries; the kernel has " + std::to_string(count) + " spatial axes");
  }
  return values;
}

// Every number that enters the geometry's size arithmetic (input sizes,
// kernel, strides, dilations, pads, output padding and shape) is at most
// 2^30, so no expression below, a product of two and a sum of a few, can
// overflow int64. They come from model and plan files.
constexpr int64_t kMaxExtent = int64_t{1} << 30;

void check_extents(const Node& node, const char* name, const std::vector<int64_t>& values) {
  for (int64_t value : values) {
    if (value > kMaxExtent) {
      fail(node, std::string(name) + " " + format_sizes(values) + " exceeds the limit of 2^30 per axis");
    }
  }
}

}  // namespace

std::vector<int64_t> ConvGeometry::output_spatial(const std::vector<int64_t>& input) const {
  std::vector<int64_t> out(spatial_rank());
  for (size_t i = 0; i < out.size(); ++i) {
    if (kind == ConvKind::kForward) {
      int64_t span = input[i] + pads_begin[i] + pads_end[i] - kernel_extent(i);
      out[i] = span < 0 ? 0 : span / strides[i] + 1;
    } else {
      out[i] = strides[i] * (input[i] - 1) + output_padding[i] + kernel_extent(i) - pads_begin[i] - pads_end[i];
    }
  }
  return out;
}

ConvGeometry conv_geometry(const Node& node, ConvKind kind, const std::vector<int64_t>& input_spatial,
                           const std::vector<int64_t>& kernel_spatial) {
  ConvGeometry g;
  g.kind = kind;
  size_t rank = kernel_spatial.size();
  if (input_spatial.size() != rank) {
    fail(node, "input has " + std::to_string(input_spatial.size()) + " spatial axes but the weight has " +
                   std::to_string(rank));
  }
  g.kernel = kernel_spatial;
  if (node.has_attr("kernel_shape") && node.attr("kernel_shape").ints() != kernel_spatial) {
    fail(node, "kernel_shape " + format_sizes(node.attr("kernel_shape").ints()) + " does not match the weight's " +
                   format_sizes(kernel_spatial));
  }
  g.group = node.has_attr("group") ? node.attr("group").i() : 1;
  if (g.group < 1) fail(node, "group must be at least 1, got " + std::to_string(g.group));
  g.strides = ints_or(node, "strides", rank, 1);
  g.dilations = ints_or(node, "dilations", rank, 1);
  g.output_padding = kind == ConvKind::kTranspose ? ints_or(node, "output_padding", rank, 0)
                                                  : std::vector<int64_t>(rank, 0);
  check_extents(node, "input spatial sizes", input_spatial);
  check_extents(node, "kernel size", g.kernel);
  check_extents(node, "strides", g.strides);
  check_extents(node, "dilations", g.dilations);
  check_extents(node, "output_padding", g.output_padding);
  for (size_t i = 0; i < rank; ++i) {
    if (input_spatial[i] < 0) fail(node, "input spatial sizes " + format_sizes(input_spatial) + " are negative");
    if (g.strides[i] < 1) fail(node, "strides " + format_sizes(g.strides) + " must be positive");
    if (g.dilations[i] < 1) fail(node, "dilations " + format_sizes(g.dilations) + " must be positive");
    if (g.kernel[i] < 1) fail(node, "kernel size " + format_sizes(g.kernel) + " must be positive");
    if (g.output_padding[i] < 0 || (g.output_padding[i] >= g.strides[i] && g.output_padding[i] >= g.dilations[i])) {
      fail(node, "output_padding " + format_sizes(g.output_padding) + " must be below the stride or dilation");
    }
  }

  std::string auto_pad = node.has_attr("auto_pad") ? node.attr("auto_pad").s() : "NOTSET";
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = ints_or(node, "pads", 2 * rank, 0);
    check_extents(node, "pads", pads);
    for (size_t i = 0; i < rank; ++i) {
      g.pads_begin[i] = pads[i];
      g.pads_end[i] = pads[rank + i];
      if (g.pads_begin[i] < 0 || g.pads_end[i] < 0) fail(node, "pads " + format_sizes(pads) + " must not be negative");
    }
  } else if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID") {
    fail(node, "auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }

  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  bool from_output_shape = kind == ConvKind::kTranspose && node.has_attr("output_shape");
  if (!same && !from_output_shape) return g;
  std::vector<int64_t> output_shape;
  if (from_output_shape) {
    output_shape = node.attr("output_shape").ints();
    if (output_shape.size() < rank) {
      fail(node, "output_shape " + format_sizes(output_shape) + " is shorter than the spatial rank");
    }
    check_extents(node, "output_shape", output_shape);
  }
  for (size_t i = 0; i < rank; ++i) {
    int64_t total = 0;
    if (kind == ConvKind::kForward) {
      // SAME: output ceil(in / stride); pad what that takes.
      int64_t out = (input_spatial[i] + g.strides[i] - 1) / g.strides[i];
      total = std::max<int64_t>(0, (out - 1) * g.strides[i] + g.kernel_extent(i) - input_spatial[i]);
    } else {
      // output_shape when given (pads are then ignored), else in * stride.
      int64_t out = from_output_shape ? output_shape[output_shape.size() - rank + i] : input_spatial[i] * g.strides[i];
      total = g.strides[i] * (input_spatial[i] - 1) + g.output_padding[i] + g.kernel_extent(i) - out;
      if (total < 0) {
        // A larger output than the transpose covers: the extra rows and
        // columns go at the end and hold only the bias, as output_padding's do.
        g.output_padding[i] -= total;
        total = 0;
      }
    }
    // The odd pixel goes at the end for SAME_UPPER, at the start otherwise (ONNX).
    g.pads_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    g.pads_end[i] = total - g.pads_begin[i];
  }
  return g;
}

}  // namespace weir
