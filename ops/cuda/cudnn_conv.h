// One convolution problem in one direction through cuDNN, in f32: the
// descriptors and the algorithm, chosen once (cuDNN's heuristics, no
// benchmarking runs: a kernel only enqueues work) and kept by the OpKernel
// for as long as its input shapes stay the same.
//
//   cuda::CudnnConv conv(problem, ConvDirection::kForward, handle, where);
//   workspace = ...conv.workspace_bytes()...;
//   conv.run(handle, x, w, y, workspace);      // x in conv.geometry().problem's (padded) sizes
//
// The algorithm is the first of cuDNN's ranked list that runs without TF32
// tensor cores (f32 results then match the CPU's to f32 rounding) and, for
// the two gradient directions, is deterministic (the same inputs give the
// same bits, as on the CPU).
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "ops/cuda/cudnn_conv_geometry.h"
#include "ops/cuda/cudnn_library.h"

namespace weir::cuda {

class CudnnConv {
 public:
  // Throws weir::Error naming `where` when a size exceeds cuDNN's 32-bit
  // limits or cuDNN has no algorithm for the problem.
  CudnnConv(const ConvProblem& problem, ConvDirection direction, cudnnHandle_t handle, const std::string& where);

  const CudnnConvGeometry& geometry() const { return geometry_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  int algorithm() const { return algorithm_; }

  // Forward: a = in, b = weight, out = out. Backward data: a = d_out,
  // b = weight, out = d_in. Backward weights: a = d_out, b = in,
  // out = d_weight. f32 device memory in geometry().problem's sizes;
  // `workspace` holds workspace_bytes(). Enqueues on the handle's stream.
  void run(cudnnHandle_t handle, const float* a, const float* b, float* out, void* workspace) const;

 private:
  CudnnConvGeometry geometry_;
  ConvDirection direction_;
  std::string where_;
  std::unique_ptr<TensorDescriptor> in_, out_;
  std::unique_ptr<FilterDescriptor> filter_;
  std::unique_ptr<ConvolutionDescriptor> convolution_;
  int algorithm_ = 0;
  size_t workspace_bytes_ = 0;
};

}  // namespace weir::cuda
