// CUDA device queries and error checking for the CUDA backend.
//
//   if (weir::cuda_device_count() == 0) { /* no GPU: skip */ }
//   weir::cuda_check(cudaSetDevice(0), "cudaSetDevice");   // throws weir::Error(kDevice)
//   std::string name = weir::cuda_device_name(0);          // "NVIDIA H100 80GB HBM3"
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace weir {

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws).
int cuda_device_count();
// The same, with what cudaGetDeviceCount said when it failed
// ("cudaErrorNoDevice: no CUDA-capable device is detected"), for errors
// that tell a user why a device is missing; `error` is empty on success.
struct CudaDeviceCount {
  int count = 0;
  std::string error;
};
CudaDeviceCount query_cuda_device_count();
std::string cuda_device_name(int index);
// Throws weir::Error(kDevice) with CUDA's message when `status` is an error.
void cuda_check(cudaError_t status, const char* what);

// After a query (cudaEventQuery, cudaStreamQuery) answered cudaErrorNotReady:
// the runtime records it as the thread's last error like any other (PyTorch
// clears it too, pytorch/pytorch#18584), and the next cudaGetLastError, a
// launch check on this thread, would report it. Clears it only when it is
// still the last error, so an earlier real one is not lost.
void cuda_clear_not_ready();

// Whether the calling thread has a CUDA context current: it selected a
// device, or made a call that created one. For a thread that has none the
// runtime reports device 0, and since CUDA 12 cudaSetDevice creates the
// device's context at once: a scope that made another device current gives
// such a thread back nothing, since "restoring" device 0 would cost a context
// there (in every process of a multi-GPU job). True when it cannot tell.
bool cuda_thread_has_context();

// Makes cuda:`index` current for its life, then gives the calling thread
// back the device it had, if it had one (see cuda_thread_has_context):
// for code any thread may reach (a Storage's destructor recording a
// stream, a data loader's worker pinning a batch), which must not leave
// that thread's later CUDA calls on another device. Throws
// weir::Error(kDevice) naming `where` when the device cannot be made current.
class CudaDeviceScope {
 public:
  CudaDeviceScope(int index, const std::string& where);
  ~CudaDeviceScope();
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool restore_ = false;  // this scope changed the device of a thread that had one
};

}  // namespace weir
