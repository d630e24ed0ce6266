#include "core/cuda/cuda_device.h"

#include "core/error.h"

namespace weir {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
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
