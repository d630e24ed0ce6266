#include "ops/cuda/cudnn_library.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "core/error.h"

namespace weir::cuda {

namespace {

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr) {
    throw Error(ErrorKind::kUnsupported, std::string("cuDNN has no ") + name + ": " + dlerror());
  }
}

CudnnApi load_cudnn() {
  const std::string name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string first_error = library == nullptr ? dlerror() : "";
#ifdef WEIR_CUDA_LIBRARY_DIR
  // The shim finds its sub-libraries (libcudnn_cnn, _ops, _graph, the
  // engines) by its RUNPATH, $ORIGIN, wherever it was opened from.
  if (library == nullptr) library = dlopen((std::string(WEIR_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (library == nullptr) {
    throw Error(ErrorKind::kUnsupported, "CUDA convolutions need cuDNN, and " + name + " could not be loaded (" +
                                             first_error + "); put cuDNN's lib directory on LD_LIBRARY_PATH");
  }
  // Never closed: kernels hold handles and descriptors from it for the life of the process.
  CudnnApi api{};
  resolve(library, "cudnnCreate", api.create);
  resolve(library, "cudnnSetStream", api.set_stream);
  resolve(library, "cudnnGetErrorString", api.error_string);
  resolve(library, "cudnnCreateTensorDescriptor", api.create_tensor);
  resolve(library, "cudnnSetTensorNdDescriptor", api.set_tensor_nd);
  resolve(library, "cudnnDestroyTensorDescriptor", api.destroy_tensor);
  resolve(library, "cudnnCreateFilterDescriptor", api.create_filter);
  resolve(library, "cudnnSetFilterNdDescriptor", api.set_filter_nd);
  resolve(library, "cudnnDestroyFilterDescriptor", api.destroy_filter);
  resolve(library, "cudnnCreateConvolutionDescriptor", api.create_convolution);
  resolve(library, "cudnnSetConvolutionNdDescriptor", api.set_convolution_nd);
  resolve(library, "cudnnSetConvolutionGroupCount", api.set_group_count);
  resolve(library, "cudnnSetConvolutionMathType", api.set_math_type);
  resolve(library, "cudnnDestroyConvolutionDescriptor", api.destroy_convolution);
  resolve(library, "cudnnGetConvolutionForwardAlgorithm_v7", api.forward_algorithms);
  resolve(library, "cudnnGetConvolutionForwardWorkspaceSize", api.forward_workspace);
  resolve(library, "cudnnConvolutionForward", api.forward);
  resolve(library, "cudnnGetConvolutionBackwardDataAlgorithm_v7", api.backward_data_algorithms);
  resolve(library, "cudnnGetConvolutionBackwardDataWorkspaceSize", api.backward_data_workspace);
  resolve(library, "cudnnConvolutionBackwardData", api.backward_data);
  resolve(library, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", api.backward_filter_algorithms);
  resolve(library, "cudnnGetConvolutionBackwardFilterWorkspaceSize", api.backward_filter_workspace);
  resolve(library, "cudnnConvolutionBackwardFilter", api.backward_filter);
  return api;
}

struct HandlePool {
  std::mutex mutex;
  std::map<int, std::vector<cudnnHandle_t>> free;  // by device index
};

HandlePool& handle_pool() {
  static auto* pool = new HandlePool();  // never destroyed, like the handles in it
  return *pool;
}

std::vector<int> dense_strides(const std::vector<int>& sizes) {
  std::vector<int> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
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

CudnnHandle::CudnnHandle(int device_index) : device_index_(device_index) {
  const CudnnApi& api = cudnn();
  {
    HandlePool& pool = handle_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    std::vector<cudnnHandle_t>& free = pool.free[device_index];
    if (!free.empty()) {
      handle_ = free.back();
      free.pop_back();
      return;
    }
  }
  cudnn_check(api.create(&handle_), "cudnnCreate on cuda:" + std::to_string(device_index));
}

CudnnHandle::~CudnnHandle() {
  HandlePool& pool = handle_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free[device_index_].push_back(handle_);
}

TensorDescriptor::TensorDescriptor(cudnnDataType_t type, const std::vector<int>& sizes) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_tensor(&descriptor_), "cudnnCreateTensorDescriptor");
  std::vector<int> strides = dense_strides(sizes);
  cudnnStatus_t status = api.set_tensor_nd(descriptor_, type, static_cast<int>(sizes.size()), sizes.data(), strides.data());
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_tensor(descriptor_);
    cudnn_check(status, "cudnnSetTensorNdDescriptor");
  }
}

TensorDescriptor::~TensorDescriptor() { cudnn().destroy_tensor(descriptor_); }

FilterDescriptor::FilterDescriptor(cudnnDataType_t type, const std::vector<int>& sizes) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_filter(&descriptor_), "cudnnCreateFilterDescriptor");
  cudnnStatus_t status =
      api.set_filter_nd(descriptor_, type, CUDNN_TENSOR_NCHW, static_cast<int>(sizes.size()), sizes.data());
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_filter(descriptor_);
    cudnn_check(status, "cudnnSetFilterNdDescriptor");
  }
}

FilterDescriptor::~FilterDescriptor() { cudnn().destroy_filter(descriptor_); }

ConvolutionDescriptor::ConvolutionDescriptor(const std::vector<int>& pads, const std::vector<int>& strides,
                                             const std::vector<int>& dilations, int groups) {
  const CudnnApi& api = cudnn();
  cudnn_check(api.create_convolution(&descriptor_), "cudnnCreateConvolutionDescriptor");
  auto set = [&]() -> std::pair<cudnnStatus_t, const char*> {
    cudnnStatus_t status = api.set_convolution_nd(descriptor_, static_cast<int>(pads.size()), pads.data(), strides.data(),
                                                  dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (status != CUDNN_STATUS_SUCCESS) return {status, "cudnnSetConvolutionNdDescriptor"};
    status = api.set_group_count(descriptor_, groups);
    if (status != CUDNN_STATUS_SUCCESS) return {status, "cudnnSetConvolutionGroupCount"};
    return {api.set_math_type(descriptor_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType"};
  };
  auto [status, call] = set();
  if (status != CUDNN_STATUS_SUCCESS) {
    api.destroy_convolution(descriptor_);
    cudnn_check(status, call);
  }
}

ConvolutionDescriptor::~ConvolutionDescriptor() { cudnn().destroy_convolution(descriptor_); }

}  // namespace weir::cuda
