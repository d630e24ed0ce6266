#include "ops/cuda/cudnn_library.h"

#include <string>
#include <vector>

#include "core/cuda/cuda_library.h"
#include "core/error.h"

namespace weir::cuda {

namespace {

CudnnApi load_cudnn() {
  const CudaLibrary library("cuDNN", "libcudnn.so." + std::to_string(CUDNN_MAJOR), "CUDA convolutions need cuDNN",
                            "cuDNN's lib directory");
  // Never closed: kernels hold handles and descriptors from it for the life of the process.
  CudnnApi api{};
  library.resolve("cudnnCreate", api.create);
  library.resolve("cudnnSetStream", api.set_stream);
  library.resolve("cudnnGetErrorString", api.error_string);
  library.resolve("cudnnCreateTensorDescriptor", api.create_tensor);
  library.resolve("cudnnSetTensorNdDescriptor", api.set_tensor_nd);
  library.resolve("cudnnDestroyTensorDescriptor", api.destroy_tensor);
  library.resolve("cudnnCreateFilterDescriptor", api.create_filter);
  library.resolve("cudnnSetFilterNdDescriptor", api.set_filter_nd);
  library.resolve("cudnnDestroyFilterDescriptor", api.destroy_filter);
  library.resolve("cudnnCreateConvolutionDescriptor", api.create_convolution);
  library.resolve("cudnnSetConvolutionNdDescriptor", api.set_convolution_nd);
  library.resolve("cudnnSetConvolutionGroupCount", api.set_group_count);
  library.resolve("cudnnSetConvolutionMathType", api.set_math_type);
  library.resolve("cudnnDestroyConvolutionDescriptor", api.destroy_convolution);
  library.resolve("cudnnGetConvolutionForwardAlgorithm_v7", api.forward_algorithms);
  library.resolve("cudnnGetConvolutionForwardWorkspaceSize", api.forward_workspace);
  library.resolve("cudnnConvolutionForward", api.forward);
  library.resolve("cudnnGetConvolutionBackwardDataAlgorithm_v7", api.backward_data_algorithms);
  library.resolve("cudnnGetConvolutionBackwardDataWorkspaceSize", api.backward_data_workspace);
  library.resolve("cudnnConvolutionBackwardData", api.backward_data);
  library.resolve("cudnnGetConvolutionBackwardFilterAlgorithm_v7", api.backward_filter_algorithms);
  library.resolve("cudnnGetConvolutionBackwardFilterWorkspaceSize", api.backward_filter_workspace);
  library.resolve("cudnnConvolutionBackwardFilter", api.backward_filter);
  return api;
}

std::vector<int> dense_strides(const std::vector<int>& sizes) {
  std::vector<int> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return strides;
}

// Strides of [N, C, spatial...] sizes laid out as [N, spatial..., C].
std::vector<int> channels_last_strides(const std::vector<int>& sizes) {
  std::vector<int> strides(sizes.size(), 1);
  if (sizes.size() < 3) return dense_strides(sizes);
  int stride = sizes[1];  // C is innermost
  for (size_t i = sizes.size(); i-- > 2;) {
    strides[i] = stride;
    stride *= sizes[i];
  }
  strides[0] = stride;
  return strides;
}

}  // namespace

const CudnnApi& cudnn() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const CudnnApi api = load_cudnn();
  return api;
}

void cudnn_check(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  // cudnnGetErrorString gives the status's name ("CUDNN_STATUS_BAD_PARAM"); the code finds the finer sub-status.
  throw Error(ErrorKind::kDevice, what + " failed: " + cudnn().error_string(status) + " (" +
                                      std::to_string(static_cast<int>(status)) + ")");
}

cudnnHandle_t create_cudnn_handle(int device_index) {
  cudnnHandle_t handle = nullptr;
  cudnn_check(cudnn().create(&handle), "cudnnCreate on cuda:" + std::to_string(device_index));
  return handle;
}

TensorDescriptor::TensorDescriptor(cudnnDataType_t type, const std::vector<int>& sizes, bool channels_last) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_tensor(&descriptor_), "cudnnCreateTensorDescriptor");
  std::vector<int> strides = channels_last ? channels_last_strides(sizes) : dense_strides(sizes);
  cudnnStatus_t status = api.set_tensor_nd(descriptor_, type, static_cast<int>(sizes.size()), sizes.data(), strides.data());
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_tensor(descriptor_);
    cudnn_check(status, "cudnnSetTensorNdDescriptor");
  }
}

TensorDescriptor::~TensorDescriptor() { cudnn().destroy_tensor(descriptor_); }

FilterDescriptor::FilterDescriptor(cudnnDataType_t type, const std::vector<int>& sizes, cudnnTensorFormat_t format) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_filter(&descriptor_), "cudnnCreateFilterDescriptor");
  cudnnStatus_t status = api.set_filter_nd(descriptor_, type, format, static_cast<int>(sizes.size()), sizes.data());
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_filter(descriptor_);
    cudnn_check(status, "cudnnSetFilterNdDescriptor");
  }
}

FilterDescriptor::~FilterDescriptor() { cudnn().destroy_filter(descriptor_); }

ConvolutionDescriptor::ConvolutionDescriptor(const std::vector<int>& pads, const std::vector<int>& strides,
                                             const std::vector<int>& dilations, int groups, cudnnMathType_t math) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_convolution(&descriptor_), "cudnnCreateConvolutionDescriptor");
  auto set = [&]() -> std::pair<cudnnStatus_t, const char*> {
    cudnnStatus_t status = api.set_convolution_nd(descriptor_, static_cast<int>(pads.size()), pads.data(), strides.data(),
                                                  dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (status != CUDNN_STATUS_SUCCESS) return {status, "cudnnSetConvolutionNdDescriptor"};
    status = api.set_group_count(descriptor_, groups);
    if (status != CUDNN_STATUS_SUCCESS) return {status, "cudnnSetConvolutionGroupCount"};
    return {api.set_math_type(descriptor_, math), "cudnnSetConvolutionMathType"};
  };
  auto [status, call] = set();
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_convolution(descriptor_);
    cudnn_check(status, call);
  }
}

ConvolutionDescriptor::~ConvolutionDescriptor() { cudnn().destroy_convolution(descriptor_); }

}  // namespace weir::cuda
