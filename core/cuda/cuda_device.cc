#include "core/cuda/cuda_device.h"

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

void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw Error(ErrorKind::kDevice, std::string(what) + " failed: " + cudaGetErrorName(status) + ": " +
                                      cudaGetErrorString(status));
}

}  // namespace weir
