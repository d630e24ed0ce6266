#include "core/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include "core/cuda/cuda_device.h"
#include "core/error.h"

namespace weir {

CudaAllocator::CudaAllocator(int device_index) : device_index_(device_index) {
  int count = cuda_device_count();
  if (device_index < 0 || device_index >= count) {
    throw Error(ErrorKind::kDevice, "cuda:" + std::to_string(device_index) + " does not exist (" +
                                        std::to_string(count) + " CUDA devices found)");
  }
}

void* CudaAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  // cudaMalloc aligns to at least 256 bytes.
  if (alignment > 256) {
    throw Error(ErrorKind::kInvalidArgument, "CUDA allocations are 256-byte aligned; " +
                                                 std::to_string(alignment) + " was asked for");
  }
  // Any thread may ask (a cache miss): it keeps its own device afterwards.
  const CudaDeviceScope scope(device_index_, "allocating on " + device().to_string());
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error(ErrorKind::kOutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes on " +
                                             device().to_string());
  }
  cuda_check(status, "cudaMalloc");
  counters_.on_allocate(bytes);
  return ptr;
}

void CudaAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  try {
    // Any thread may free (a Storage's last owner): it keeps its own device.
    const CudaDeviceScope scope(device_index_, "freeing on " + device().to_string());
    cudaFree(ptr);  // a failure here (driver shutting down) has nothing left to save
  } catch (const Error&) {
    // The device cannot be made current (driver shutting down): nothing to free it with.
  }
  counters_.on_deallocate(bytes);
}

void copy_tensor(const Tensor& source, const Tensor& destination) {
  if (source.dtype() != destination.dtype() || source.sizes() != destination.sizes()) {
    throw Error(ErrorKind::kInvalidArgument, "cannot copy " + source.type_string() + " into " +
                                                 destination.type_string());
  }
  if (source.nbytes() == 0) return;
  cuda_check(cudaMemcpy(destination.raw_data(), source.raw_data(), source.nbytes(), cudaMemcpyDefault),
             "cudaMemcpy");
  // cudaMemcpy may return before a copy into device memory has landed (from
  // pageable memory once it is staged; device to device at once), and work on
  // Weir's non-blocking streams is not ordered after the default stream's.
  cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize after cudaMemcpy");
}

Tensor copy_to_host(const Tensor& source) {
  Tensor host(source.dtype(), source.sizes());
  copy_tensor(source, host);
  return host;
}

Tensor copy_to_device(const Tensor& source, Allocator& device_allocator) {
  Tensor device(source.dtype(), source.sizes(), device_allocator);
  copy_tensor(source, device);
  return device;
}

}  // namespace weir
