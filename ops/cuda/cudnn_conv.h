// One convolution problem in one direction through cuDNN: the descriptors
// and the algorithm, chosen once (cuDNN's heuristics, no benchmarking runs:
// a kernel only enqueues work) and kept by the OpKernel for as long as its
// input shapes stay the same.
//
//   cuda::CudnnConv conv(problem, ConvDirection::kForward, {CUDNN_DATA_HALF, true}, handle, where);
//   if (!conv.usable()) ...widen to f32 instead...;
//   workspace = ...conv.workspace_bytes()...;
//   conv.run(handle, x, w, y, workspace);      // x in conv.geometry().problem's (padded) sizes
//
// All three operands have the format's data type; the accumulation is f32
// (the convolution descriptor's compute type) for every type:
// - f32: FMA math, and the algorithm is the first of cuDNN's ranked list
//   that runs without TF32 tensor cores, so f32 results match the CPU's to
//   f32 rounding;
// - f32 widened from f16 or bf16 (exact_in_tf32): TF32 tensor cores
//   allowed (default math), since values of at most 10 fraction bits are
//   TF32 values and their products exact; never a conversion to f16;
// - f16, bf16: tensor-op math (f16 x f16 and bf16 x bf16 products are exact
//   in f32), only the GEMM-based algorithms (FFT and Winograd transform the
//   operands at reduced precision), the result rounded once to the type.
// For the two gradient directions the algorithm is deterministic where
// cuDNN has one (the same inputs give the same bits, as on the CPU).
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "ops/cuda/cudnn_conv_geometry.h"
#include "ops/cuda/cudnn_library.h"

namespace weir::cuda {

// How the operands are stored.
struct CudnnConvFormat {
  cudnnDataType_t data = CUDNN_DATA_FLOAT;  // CUDNN_DATA_FLOAT, _HALF or _BFLOAT16
  // The input and output sides [N, spatial..., C] and the weight
  // [K, kernel..., C/group] (cuDNN's NHWC and KRSC: tensor cores' own
  // layout); else [N, C, spatial...] and [K, C/group, kernel...].
  bool channels_last = false;
  // f32 data that were f16 or bf16 (AMP's wide weight gradients): TF32's
  // tensor cores multiply them exactly, so they may run there.
  bool exact_in_tf32 = false;

  bool operator==(const CudnnConvFormat&) const = default;
};

class CudnnConv {
 public:
  // Throws weir::Error naming `where` when a size exceeds cuDNN's 32-bit
  // limits, or, for f32, when cuDNN has no algorithm for the problem.
  CudnnConv(const ConvProblem& problem, ConvDirection direction, CudnnConvFormat format, cudnnHandle_t handle,
            const std::string& where);

  // False when cuDNN has no algorithm for a 16-bit format (its heuristics
  // list none that runs): the caller widens to f32 instead. Always true for f32.
  bool usable() const { return algorithm_ >= 0; }
  const CudnnConvGeometry& geometry() const { return geometry_; }
  CudnnConvFormat format() const { return format_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  int algorithm() const { return algorithm_; }

  // Forward: a = in, b = weight, out = out. Backward data: a = d_out,
  // b = weight, out = d_in. Backward weights: a = d_out, b = in,
  // out = d_weight. Device memory of the format's type and layout in
  // geometry().problem's sizes; `workspace` holds workspace_bytes().
  // Enqueues on the handle's stream. Requires usable().
  void run(cudnnHandle_t handle, const void* a, const void* b, void* out, void* workspace) const;

 private:
  CudnnConvGeometry geometry_;
  ConvDirection direction_;
  CudnnConvFormat format_;
  std::string where_;
  std::unique_ptr<TensorDescriptor> in_, out_;
  std::unique_ptr<FilterDescriptor> filter_;
  std::unique_ptr<ConvolutionDescriptor> convolution_;
  int algorithm_ = 0;
  size_t workspace_bytes_ = 0;
};

}  // namespace weir::cuda
