// cuDNN, opened on first use instead of linked (core/cuda/cuda_library.h), as
// cuBLASLt is (cublaslt_library.h): its engine libraries are close to a gigabyte, which
// no CPU-only process should load. Only the legacy convolution API is used
// (descriptors, cudnnGet*Algorithm_v7, cudnnConvolution{Forward,
// BackwardData,BackwardFilter}), which cuDNN 9 still declares and exports
// from its libcudnn.so.9 shim.
//
//   cuda::CudnnHandle handle(device_index);               // a pooled handle of that device
//   cuda::cudnn_check(cuda::cudnn().set_stream(handle.get(), stream), "cudnnSetStream");
//   cuda::TensorDescriptor x(CUDNN_DATA_FLOAT, {n, c, h, w});
//
// The library is found as libcudnn.so.<major of the headers built against>
// on the loader's path, then in the toolkit directory the build was
// configured with (cuda::CudaLibrary).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/cuda/pooled_handle.h"

namespace weir::cuda {

struct CudnnApi {
  decltype(&cudnnCreate) create;
  decltype(&cudnnSetStream) set_stream;
  decltype(&cudnnGetErrorString) error_string;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnSetTensorNdDescriptor) set_tensor_nd;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnSetFilterNdDescriptor) set_filter_nd;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&cudnnCreateConvolutionDescriptor) create_convolution;
  decltype(&cudnnSetConvolutionNdDescriptor) set_convolution_nd;
  decltype(&cudnnSetConvolutionGroupCount) set_group_count;
  decltype(&cudnnSetConvolutionMathType) set_math_type;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_convolution;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithms;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forward_workspace;
  decltype(&cudnnConvolutionForward) forward;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) backward_data_algorithms;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) backward_data_workspace;
  decltype(&cudnnConvolutionBackwardData) backward_data;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) backward_filter_algorithms;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) backward_filter_workspace;
  decltype(&cudnnConvolutionBackwardFilter) backward_filter;
};

// The functions, loaded on the first call; throws weir::Error(kUnsupported)
// naming the library and the loader's message when it cannot be loaded.
const CudnnApi& cudnn();

// Throws weir::Error(kDevice) "<what> failed: CUDNN_STATUS_... (<code>)" unless `status` is success.
void cudnn_check(cudnnStatus_t status, const std::string& what);

// A new cuDNN handle of cuda:`device_index` (current); throws naming the device.
cudnnHandle_t create_cudnn_handle(int device_index);

// A pooled cuDNN handle of one device (ops/cuda/pooled_handle.h).
using CudnnHandle = PooledHandle<cudnnHandle_t, create_cudnn_handle>;

// Owning descriptors. Sizes are checked against int (the API's type) by the
// caller; strides are those of a dense row-major tensor, or, where
// channels_last, of [N, spatial..., C] memory (sizes stay [N, C, spatial...]).
class TensorDescriptor {
 public:
  TensorDescriptor(cudnnDataType_t type, const std::vector<int>& sizes, bool channels_last = false);
  ~TensorDescriptor();
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return descriptor_; }

 private:
  cudnnTensorDescriptor_t descriptor_ = nullptr;
};

class FilterDescriptor {
 public:
  // Sizes [K, C/group, kernel...]; memory in that order (CUDNN_TENSOR_NCHW)
  // or [K, kernel..., C/group] (CUDNN_TENSOR_NHWC).
  FilterDescriptor(cudnnDataType_t type, const std::vector<int>& sizes, cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);
  ~FilterDescriptor();
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return descriptor_; }

 private:
  cudnnFilterDescriptor_t descriptor_ = nullptr;
};

class ConvolutionDescriptor {
 public:
  // Cross-correlation (ONNX's Conv) with f32 accumulation (compute type
  // CUDNN_DATA_FLOAT whatever the data's type). `math`: CUDNN_FMA_MATH for
  // f32 data (no TF32 tensor cores, so f32 results match the CPU's to f32
  // rounding); CUDNN_TENSOR_OP_MATH lets f16/bf16 data use tensor cores.
  ConvolutionDescriptor(const std::vector<int>& pads, const std::vector<int>& strides, const std::vector<int>& dilations,
                        int groups, cudnnMathType_t math = CUDNN_FMA_MATH);
  ~ConvolutionDescriptor();
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return descriptor_; }

 private:
  cudnnConvolutionDescriptor_t descriptor_ = nullptr;
};

}  // namespace weir::cuda
