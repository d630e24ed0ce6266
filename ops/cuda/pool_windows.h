// The window arithmetic of the CUDA pooling kernels (pool_device.cu), as
// functions that compile for the device and for the host alike, so the
// host tests (tests/cuda/pool_windows_test.cc) check this very code
// against the CPU kernels on machines without a GPU. Values are read
// through a `load(offset) -> float` callable, so no element type appears.
//
// The windows are those of ops/nn/pool_kernels.cc: taps outside the input
// are skipped; a window's first maximal tap (in kernel order, a NaN
// winning) is its maximum; count_include_pad counts the taps inside the
// padded input, which with ceil_mode may be fewer than the kernel's.
#pragma once

#include <cstdint>

#include "ops/cuda/host_device.h"

namespace weir::cuda {

// [planes, in...] pooled to [planes, out...]; three spatial axes (unused ones 1, window 1, stride 1, no pads).
struct PoolWindows {
  int64_t planes = 0;
  int spatial_rank = 0;  // the node's, for Indices' storage_order
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1}, dilations[3] = {1, 1, 1}, pads_begin[3] = {0, 0, 0}, pads_end[3] = {0, 0, 0};

  WEIR_HOST_DEVICE int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  WEIR_HOST_DEVICE int64_t out_plane() const { return out[0] * out[1] * out[2]; }
};

namespace pool {

WEIR_HOST_DEVICE inline void output_coordinates(const PoolWindows& w, int64_t o, int64_t (&c)[3]) {
  c[2] = o % w.out[2];
  o /= w.out[2];
  c[1] = o % w.out[1];
  c[0] = o / w.out[1];
}

WEIR_HOST_DEVICE inline void input_coordinates(const PoolWindows& w, int64_t offset, int64_t (&c)[3]) {
  c[2] = offset % w.in[2];
  offset /= w.in[2];
  c[1] = offset % w.in[1];
  c[0] = offset / w.in[1];
}

// Calls visit(tap) for every tap of window `o` inside the input, in kernel order.
template <typename Visit>
WEIR_HOST_DEVICE void for_each_tap(const PoolWindows& w, const int64_t (&o)[3], Visit&& visit) {
  for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
    const int64_t i0 = o[0] * w.strides[0] - w.pads_begin[0] + k0 * w.dilations[0];
    if (i0 < 0 || i0 >= w.in[0]) continue;
    for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
      const int64_t i1 = o[1] * w.strides[1] - w.pads_begin[1] + k1 * w.dilations[1];
      if (i1 < 0 || i1 >= w.in[1]) continue;
      for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
        const int64_t i2 = o[2] * w.strides[2] - w.pads_begin[2] + k2 * w.dilations[2];
        if (i2 < 0 || i2 >= w.in[2]) continue;
        visit((i0 * w.in[1] + i1) * w.in[2] + i2);
      }
    }
  }
}

// The first maximal tap of window `o` (a NaN winning), or -1 when no tap lies inside the input.
template <typename Load>
WEIR_HOST_DEVICE int64_t first_max(const PoolWindows& w, const Load& load, const int64_t (&o)[3]) {
  int64_t best = -1;
  float best_value = 0.0f;
  for_each_tap(w, o, [&](int64_t tap) {
    const float value = load(tap);
    const bool value_nan = value != value, best_nan = best_value != best_value;
    if (best < 0 || value > best_value || (value_nan && !best_nan)) {
      best = tap;
      best_value = value;
    }
  });
  return best;
}

// The divisor of window `o`: its taps inside the padded input when
// include_pad, else those inside the input.
WEIR_HOST_DEVICE inline int64_t divisor(const PoolWindows& w, const int64_t (&o)[3], bool include_pad) {
  int64_t inside = 1, padded = 1;
  for (int a = 0; a < 3; ++a) {
    const int64_t lo = o[a] * w.strides[a] - w.pads_begin[a];
    int64_t in_input = 0, in_padding = 0;
    for (int64_t k = 0; k < w.kernel[a]; ++k) {
      const int64_t i = lo + k * w.dilations[a];
      if (i < w.in[a] + w.pads_end[a]) ++in_padding;
      if (i >= 0 && i < w.in[a]) ++in_input;
    }
    inside *= in_input;
    padded *= in_padding;
  }
  return include_pad ? padded : inside;
}

// The mean of window `o` (its sum when the divisor is 0).
template <typename Load>
WEIR_HOST_DEVICE float average(const PoolWindows& w, const Load& load, const int64_t (&o)[3], bool include_pad) {
  float sum = 0.0f;
  for_each_tap(w, o, [&](int64_t tap) { sum += load(tap); });
  const int64_t count = divisor(w, o, include_pad);
  return count > 0 ? sum / static_cast<float>(count) : sum;
}

// Indices' offset of tap `best` within its plane: row-major, or
// column-major when column_major (storage_order 1); -1 stays -1.
WEIR_HOST_DEVICE inline int64_t index_offset(const PoolWindows& w, int64_t best, bool column_major) {
  if (!column_major || best < 0 || w.spatial_rank == 1) return best;
  const int64_t i2 = best % w.in[2], rest = best / w.in[2], i1 = rest % w.in[1], i0 = rest / w.in[1];
  return w.spatial_rank == 2 ? i1 * w.in[0] + i0 : (i2 * w.in[1] + i1) * w.in[0] + i0;
}

// Calls visit(o, output offset) for every window containing input
// coordinate `c`, in ascending output order: along each axis the window
// index falls as the tap index rises, so taps are walked from the last.
template <typename Visit>
WEIR_HOST_DEVICE void for_each_window_containing(const PoolWindows& w, const int64_t (&c)[3], Visit&& visit) {
  for (int64_t k0 = w.kernel[0] - 1; k0 >= 0; --k0) {
    const int64_t t0 = c[0] + w.pads_begin[0] - k0 * w.dilations[0];
    if (t0 < 0 || t0 % w.strides[0] != 0 || t0 / w.strides[0] >= w.out[0]) continue;
    for (int64_t k1 = w.kernel[1] - 1; k1 >= 0; --k1) {
      const int64_t t1 = c[1] + w.pads_begin[1] - k1 * w.dilations[1];
      if (t1 < 0 || t1 % w.strides[1] != 0 || t1 / w.strides[1] >= w.out[1]) continue;
      for (int64_t k2 = w.kernel[2] - 1; k2 >= 0; --k2) {
        const int64_t t2 = c[2] + w.pads_begin[2] - k2 * w.dilations[2];
        if (t2 < 0 || t2 % w.strides[2] != 0 || t2 / w.strides[2] >= w.out[2]) continue;
        const int64_t o[3] = {t0 / w.strides[0], t1 / w.strides[1], t2 / w.strides[2]};
        visit(o, (o[0] * w.out[1] + o[1]) * w.out[2] + o[2]);
      }
    }
  }
}

// MaxPoolGrad's dx at input offset `tap` of a plane: the sum of the
// gradients of the windows whose first maximum it is, in window order.
template <typename LoadX, typename LoadDy>
WEIR_HOST_DEVICE float max_pool_grad(const PoolWindows& w, const LoadX& load_x, const LoadDy& load_dy, int64_t tap) {
  int64_t c[3];
  input_coordinates(w, tap, c);
  float sum = 0.0f;
  for_each_window_containing(w, c, [&](const int64_t (&o)[3], int64_t offset) {
    if (first_max(w, load_x, o) == tap) sum += load_dy(offset);
  });
  return sum;
}

// AveragePoolGrad's dx at input offset `tap` of a plane: the sum of each
// containing window's gradient over its divisor, in window order.
template <typename LoadDy>
WEIR_HOST_DEVICE float average_pool_grad(const PoolWindows& w, const LoadDy& load_dy, int64_t tap, bool include_pad) {
  int64_t c[3];
  input_coordinates(w, tap, c);
  float sum = 0.0f;
  for_each_window_containing(w, c, [&](const int64_t (&o)[3], int64_t offset) {
    const int64_t count = divisor(w, o, include_pad);
    if (count > 0) sum += load_dy(offset) / static_cast<float>(count);
  });
  return sum;
}

}  // namespace pool

}  // namespace weir::cuda
