#include "core/cuda/cuda_device.h"

#include <cuda.h>

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

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw Error(ErrorKind::kDevice, std::string(what) + " failed: " + cudaGetErrorName(status) + ": " +
                                      cudaGetErrorString(status));
}

}  // namespace weir
