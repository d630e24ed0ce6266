#include "core/cuda/cuda_pinned_allocator.h"

#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda/cuda_device.h"
#include "core/error.h"

namespace weir {

namespace {

// Makes cuda:`index` current for its life and gives the thread back its
// device after, if it had one (cuda_thread_has_context).
class PinningDevice {
 public:
  explicit PinningDevice(int index) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != index || !cuda_thread_has_context()) {
      const bool had_device = previous_ >= 0 && cuda_thread_has_context();
      cuda_check(cudaSetDevice(index), "cudaSetDevice (to pin host memory)");
      restore_ = had_device && previous_ != index;
    }
  }
  ~PinningDevice() {
    if (restore_) cudaSetDevice(previous_);
  }
  PinningDevice(const PinningDevice&) = delete;
  PinningDevice& operator=(const PinningDevice&) = delete;

 private:
  int previous_ = -1;
  bool restore_ = false;
};

}  // namespace

void* CudaPinnedAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  // cudaHostAlloc returns page-aligned memory.
  if (alignment > 4096) {
    throw Error(ErrorKind::kInvalidArgument, "pinned host allocations are page aligned; " + std::to_string(alignment) +
                                                 " was asked for");
  }
  const PinningDevice current(device_index_);
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
    const PinningDevice current(device_index_);
    cudaFreeHost(ptr);  // a failure here (driver shutting down) has nothing left to save
  } catch (const Error&) {
    cudaFreeHost(ptr);  // the device cannot be made current: free it from wherever this thread is
  }
  counters_.on_deallocate(bytes);
}

}  // namespace weir
