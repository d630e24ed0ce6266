// One convolution problem in the form every conv kernel works on, and the
// direct (reference) loops that compute it.
//
// A problem is a forward convolution from "in" [N, C, in...] to "out"
// [N, K, out...] with weight [K, C/group, kernel...]. Conv reads it forwards;
// ConvTranspose is its backward-data direction (its input is the problem's
// "out", its output the problem's "in"), which is why one description serves
// Conv, ConvTranspose and their gradients. Spatial axes are always three:
// 1-D and 2-D problems pad with axes of size 1.
//
// The direct loops are the reference for tests and the kernels for dtypes
// oneDNN lacks (f64); they accumulate in ComputeType.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "ops/nn/conv_geometry.h"

namespace weir {

// Which gradient of the forward problem a computation produces.
enum class ConvDirection { kForward, kBackwardData, kBackwardWeights };

struct ConvProblem {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  size_t spatial_rank = 0;  // as the node has it: 1, 2 or 3
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> strides{1, 1, 1}, dilations{1, 1, 1}, pads_begin{0, 0, 0}, pads_end{0, 0, 0};

  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_volume() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Multiply-adds of one forward pass (each direction costs the same).
  int64_t macs() const { return batch * out_channels * out_plane() * (in_channels / group) * kernel_volume(); }

  std::vector<int64_t> in_sizes() const;      // [N, C, in...]
  std::vector<int64_t> out_sizes() const;     // [N, K, out...]
  std::vector<int64_t> weight_sizes() const;  // [K, C/group, kernel...]
};

// The problem of a Conv (kind kForward) or ConvTranspose (kTranspose) node
// whose forward input X has `x_sizes` and weight W has `w_sizes`. Throws
// weir::Error(kShape) naming the node on a rank or channel mismatch, e.g.
// "Conv 'conv1': input channels 3 do not match weight channels 4 (groups=1)".
ConvProblem conv_problem(const Node& node, ConvKind kind, const std::vector<int64_t>& x_sizes,
                         const std::vector<int64_t>& w_sizes);

// FusedConv's `layout` attribute: "NCHW" (the default: [N, C, spatial...])
// or "NHWC" (channels last: [N, spatial..., C], any spatial rank). Throws
// weir::Error(kInvalidArgument) naming the node on anything else.
bool conv_layout_is_channels_last(const Node& node);

// out = conv(in, weight) + bias (bias may be null).
template <typename T>
void conv_forward_direct(const ConvProblem& p, const T* in, const T* weight, const T* bias, T* out);
// d_in = the gradient of sum(conv(in, weight) * d_out) with respect to in.
template <typename T>
void conv_backward_data_direct(const ConvProblem& p, const T* d_out, const T* weight, T* d_in);
// d_weight = the gradient of sum(conv(in, weight) * d_out) with respect to weight.
template <typename T>
void conv_backward_weights_direct(const ConvProblem& p, const T* d_out, const T* in, T* d_weight);

}  // namespace weir
