// Channels-last data ([N, spatial..., C]) as the channels-last ops
// (FusedConv with layout NHWC, ChannelsLastPool) read it: the problem is
// still described channels-first ([N, C, spatial...]), so these move the
// channel axis between position 1 and the end. Rank < 3 passes unchanged.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace weir {

template <typename T>
std::vector<T> channels_first_order(std::vector<T> axes) {
  if (axes.size() >= 3) std::rotate(axes.begin() + 1, axes.end() - 1, axes.end());
  return axes;
}

template <typename T>
std::vector<T> channels_last_order(std::vector<T> axes) {
  if (axes.size() >= 3) std::rotate(axes.begin() + 1, axes.begin() + 2, axes.end());
  return axes;
}

inline Shape channels_first_order(const Shape& shape) {
  return shape.has_rank() ? Shape(channels_first_order(shape.dims())) : shape;
}

inline Shape channels_last_order(const Shape& shape) {
  return shape.has_rank() ? Shape(channels_last_order(shape.dims())) : shape;
}

}  // namespace weir
