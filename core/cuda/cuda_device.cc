#include "core/cuda/cuda_device.h"

#include <cuda.h>

#include <string>

#include "core/error.h"

namespace weir {

int cuda_device_count() { return query_cuda_device_count().count; }

CudaDeviceCount query_cuda_device_count() {
  CudaDeviceCount result;
  cudaError_t status = cudaGetDeviceCount(&result.count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    result.count = 0;
    result.error = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  }
  return result;
}

std::string cuda_device_name(int index) {
  cudaDeviceProp properties{};
  cuda_check(cudaGetDeviceProperties(&properties, index), "cudaGetDeviceProperties");
  return properties.name;
}

bool cuda_thread_has_context() {
  // cuCtxGetCurrent through the runtime's entry-point query: no link to the driver library.
  using GetCurrent = CUresult (*)(CUcontext*);
  static const GetCurrent get_current = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &function, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return GetCurrent{nullptr};
    }
    return reinterpret_cast<GetCurrent>(function);
  }();
  if (get_current == nullptr) return true;
  CUcontext context = nullptr;
  return get_current(&context) != CUDA_SUCCESS || context != nullptr;
}

CudaDeviceScope::CudaDeviceScope(int index, const std::string& where) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ == index) return;
  // A thread without a context reads as device 0: it gets nothing back
  // (setting device 0 would create a context there).
  restore_ = previous_ >= 0 && cuda_thread_has_context();
  const cudaError_t status = cudaSetDevice(index);
  if (status != cudaSuccess) {
    cudaGetLastError();
    restore_ = false;
    throw Error(ErrorKind::kDevice, where + ": cudaSetDevice(" + std::to_string(index) + ") failed: " +
                                        cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }
}

CudaDeviceScope::~CudaDeviceScope() {
  if (restore_) cudaSetDevice(previous_);
}

void cuda_clear_not_ready() {
  if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
}

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw Error(ErrorKind::kDevice, std::string(what) + " failed: " + cudaGetErrorName(status) + ": " +
                                      cudaGetErrorString(status));
}

}  // namespace weir
