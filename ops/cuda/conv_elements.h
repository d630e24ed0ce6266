// The per-element arithmetic of the CUDA convolution helpers
// (conv_device.cu), as functions that compile for the device and the host,
// so host tests (tests/cuda/cudnn_conv_geometry_test.cc) check this very
// code without a GPU: where a shifted copy reads, where the epilogue finds
// an output element's convolution value and channel, and the activations.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/cuda/host_device.h"

namespace weir::cuda {

// FusedActivation's kinds (ops/elementwise/fused_activation.h), in its order.
enum class ConvActivation { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kSilu, kGelu, kGeluTanh };

namespace conv {

// A copy between [planes, src...] and [planes, dst...] (three spatial axes):
// dst coordinate d reads src coordinate d + offset.
struct Shift {
  int64_t src[3] = {1, 1, 1}, dst[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
};

// The src offset dst element `i` reads, or -1 where that falls outside src (a zero).
WEIR_HOST_DEVICE inline int64_t shifted_source(const Shift& shift, int64_t i) {
  const int64_t dst_plane = shift.dst[0] * shift.dst[1] * shift.dst[2];
  const int64_t src_plane = shift.src[0] * shift.src[1] * shift.src[2];
  const int64_t plane = i / dst_plane;
  int64_t rest = i % dst_plane;
  const int64_t d2 = rest % shift.dst[2];
  rest /= shift.dst[2];
  const int64_t d1 = rest % shift.dst[1];
  const int64_t d0 = rest / shift.dst[1];
  const int64_t s0 = d0 + shift.offset[0], s1 = d1 + shift.offset[1], s2 = d2 + shift.offset[2];
  if (s0 < 0 || s0 >= shift.src[0] || s1 < 0 || s1 >= shift.src[1] || s2 < 0 || s2 >= shift.src[2]) return -1;
  return plane * src_plane + (s0 * shift.src[1] + s1) * shift.src[2] + s2;
}

// Element `i` of [N, C, plane] comes from this element of [N, plane, C].
WEIR_HOST_DEVICE inline int64_t channels_last_source(int64_t i, int64_t channels, int64_t plane) {
  const int64_t s = i % plane, rest = i / plane, c = rest % channels, n = rest / channels;
  return (n * plane + s) * channels + c;
}

// Element `i` of [N, plane, C] (channels last) comes from this element of
// [N, C, plane]: the inverse of channels_last_source.
WEIR_HOST_DEVICE inline int64_t channels_first_source(int64_t i, int64_t channels, int64_t plane) {
  const int64_t c = i % channels, rest = i / channels, s = rest % plane, n = rest / plane;
  return (n * channels + c) * plane + s;
}

// Output element `i` (of [N, K, plane], or [N, plane, K] when
// channels_last) is convolution element (return value) of [N, K, plane],
// in channel `k`.
WEIR_HOST_DEVICE inline int64_t epilogue_source(int64_t i, int64_t channels, int64_t plane, bool channels_last,
                                                int64_t& k) {
  if (!channels_last) {
    k = (i / plane) % channels;
    return i;
  }
  k = i % channels;
  const int64_t rest = i / channels, s = rest % plane, n = rest / plane;
  return (n * channels + k) * plane + s;
}

// FusedActivation::apply in f32.
struct Activation {
  ConvActivation kind = ConvActivation::kNone;
  float alpha = 0.0f, beta = 0.0f;

  WEIR_HOST_DEVICE float apply(float x) const {
    switch (kind) {
      case ConvActivation::kNone: return x;
      case ConvActivation::kRelu: return x > 0.0f ? x : 0.0f;
      case ConvActivation::kLeakyRelu: return x >= 0.0f ? x : alpha * x;
      case ConvActivation::kClip: return fminf(fmaxf(x, alpha), beta);
      case ConvActivation::kSigmoid: return 1.0f / (1.0f + expf(-x));
      case ConvActivation::kTanh: return tanhf(x);
      case ConvActivation::kSilu: return x / (1.0f + expf(-x));
      case ConvActivation::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
      case ConvActivation::kGeluTanh:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    }
    return x;
  }
};

}  // namespace conv

}  // namespace weir::cuda
