#include "core/cuda/cuda_pinned_allocator.h"

#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda/cuda_device.h"
#include "core/error.h"

namespace weir {

void* CudaPinnedAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  // cudaHostAlloc returns page-aligned memory.
  if (alignment > 4096) {
    throw Error(ErrorKind::kInvalidArgument, "pinned host allocations are page aligned; " + std::to_string(alignment) +
                                                 " was asked for");
  }
  const CudaDeviceScope current(device_index_, "pinning host memory");
  void* ptr = nullptr;
  // Portable: pinned for every device's context, not only the current one's.
  cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error(ErrorKind::kOutOfMemory, "could not pin " + std::to_string(bytes) + " bytes of host memory");
  }
  cuda_check(status, "cudaHostAlloc");
  counters_.on_allocate(bytes);
  return ptr;
}

void CudaPinnedAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  try {
    const CudaDeviceScope current(device_index_, "unpinning host memory");
    cudaFreeHost(ptr);  // a failure here (driver shutting down) has nothing left to save
  } catch (const Error&) {
    cudaFreeHost(ptr);  // the device cannot be made current: free it from wherever this thread is
  }
  counters_.on_deallocate(bytes);
}

}  // namespace weir
