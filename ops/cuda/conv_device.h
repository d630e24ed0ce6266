// The device side of the CUDA convolution kernels (conv_device.cu): what
// cuDNN does not do for them. The convolutions themselves run in f32 through
// cuDNN (cudnn_conv.h); these kernels bring f16/bf16 and channels-last data
// into that form and back, pad inputs whose pads cuDNN cannot express
// (asymmetric ones), apply FusedConv's bias, addend and activation, and sum
// ConvGradBias. Plain arguments only, so the OpKernels around them are
// ordinary C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/conv_elements.h"
#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// Spatial sizes of one [planes, d0, d1, d2] tensor (unused axes are 1).
struct Spatial3 {
  int64_t size[3] = {1, 1, 1};
  int64_t volume() const { return size[0] * size[1] * size[2]; }
};

// dst[p][i] = src[p][i + offset] per spatial axis, zero where that falls
// outside src, for `planes` planes of dst's sizes: a negative offset pads
// (dst larger), a positive one crops. Converts src_type to dst_type (f32
// computation, round to nearest even). count = planes * dst.volume() > 0.
void launch_shifted_copy(ElementType src_type, const void* src, const Spatial3& src_sizes, ElementType dst_type,
                         void* dst, const Spatial3& dst_sizes, const int64_t offset[3], int64_t planes,
                         cudaStream_t stream);

// dst [N, C, plane] f32 from src [N, plane, C] (channels last) of `type`.
void launch_channels_first_f32(ElementType type, const void* src, float* dst, int64_t batch, int64_t channels,
                               int64_t plane, cudaStream_t stream);

// dst [N, plane, C] from src [N, C, plane], both of `type` (a weight
// [K, C/group, kernel...] to cuDNN's KRSC).
void launch_channels_last(ElementType type, const void* src, void* dst, int64_t batch, int64_t channels, int64_t plane,
                          cudaStream_t stream);

// y = activation(sums + bias[k] + z): sums (the convolution's) are
// `sums_type` (f32, or the data's type where cuDNN wrote them in it),
// [N, K, plane], or in y's layout where sums_in_y_layout; y, z and bias (z
// and bias may be null) are `type`, y and z [N, K, plane] or, when
// channels_last, [N, plane, K]. z may be y's memory; sums may be y's memory
// when they are in y's layout and type. The additions and the activation
// are in f32, rounded once to `type`, as the CPU kernel's.
void launch_conv_epilogue(ElementType type, ElementType sums_type, const void* sums, bool sums_in_y_layout,
                          const void* bias, const void* z, void* y, int64_t batch, int64_t channels, int64_t plane,
                          bool channels_last, ConvActivation activation, float alpha, float beta, cudaStream_t stream);

// db[k] = sum of dy[n, k, s] over n and s, in f32; dy is `type`, db
// `db_type` (f32 for a wide gradient). channels > 0.
void launch_conv_bias_grad(ElementType type, const void* dy, ElementType db_type, void* db, int64_t batch,
                           int64_t channels, int64_t plane, cudaStream_t stream);

}  // namespace weir::cuda
