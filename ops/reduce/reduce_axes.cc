#include "ops/reduce/reduce_axes.h"

namespace weir {

ReduceAxes ReduceAxes::of(const Node& node) {
  ReduceAxes result;
  if (node.has_attr("axes")) result.axes = node.attr("axes").ints();
  if (node.has_attr("keepdims")) result.keepdims = node.attr("keepdims").i() != 0;
  if (node.has_attr("noop_with_empty_axes")) result.noop_with_empty_axes = node.attr("noop_with_empty_axes").i() != 0;
  return result;
}

std::vector<bool> ReduceAxes::resolve(int64_t rank, const std::function<void(const std::string&)>& fail) const {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop_with_empty_axes);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    }
    size_t index = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (reduced[index]) fail("axis " + std::to_string(axis) + " is listed twice");
    reduced[index] = true;
  }
  return reduced;
}

std::vector<int64_t> ReduceAxes::kept_sizes(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) {
  std::vector<int64_t> kept = sizes;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (reduced[i]) kept[i] = 1;
  }
  return kept;
}

std::vector<int64_t> ReduceAxes::output_sizes(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(sizes[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace weir
