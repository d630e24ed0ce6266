// The CUDA backend: a device's streams are non-blocking cudaStream_t, its
// events cudaEvent_t, its memory the process's cudaMalloc allocator for the
// device (cached by the session, runtime/caching_allocator.h).
//
//   weir::CachingAllocator& memory = weir::device_caching_allocator(weir::Device::cuda(0), &weir::cuda_device_memory(0));
//   std::unique_ptr<weir::Backend> gpu = weir::make_cuda_backend(weir::Device::cuda(0), memory);
//   weir::Stream& compute = gpu->stream({weir::StreamKind::kCompute, 0});
//   compute.launch([&] { my_kernel<<<blocks, threads, 0, (cudaStream_t)compute.native_handle()>>>(...); })
//       ->synchronize(std::chrono::seconds(10), "my_kernel");
//
// launch(work) runs `work` at once on the calling thread, with the device
// made current; `work` enqueues device work on native_handle(), and the
// returned event completes when the device has done it. Nothing here waits
// without a limit: Event::synchronize polls cudaEventQuery until its timeout,
// and failures are weir::Error(kDevice) naming the device and the stream.
//
// Copies. Host memory that is pageable (an ordinary Tensor) goes straight to
// cudaMemcpyAsync, not through a pinned staging buffer of ours: for pageable
// memory the driver stages through its own pinned buffers and returns once
// the host side is done (host to device: the source has been read; device to
// host: the copy is complete), which is what a staging buffer of ours would
// cost too, with one more memcpy. Host memory the driver knows as pinned
// (cudaHostAlloc, cudaHostRegister) is copied asynchronously, by DMA:
// host_allocator() is the process's cached pinned memory for this device
// (core/cuda/cuda_pinned_allocator.h: pinned with the device current, so
// no thread creates a context on device 0), where a session puts the outputs it
// copies back and where feeds are best made (Session::feed_allocator: the
// trainers' data loaders and graph-runner bench put them there).
//
// This header needs no CUDA headers; it exists only in builds with CUDA
// (WEIR_HAVE_CUDA). runtime/device_support.h is the build-independent check.
#pragma once

#include <chrono>
#include <memory>

#include "core/allocator.h"
#include "core/backend.h"

namespace weir {

// The backend of `device` (cuda:N), allocating from `allocator` (memory of
// that device). Stream::wait on a foreign event (a CPU backend's) blocks the
// caller for at most `wait_timeout`, as the CPU backend does.
std::unique_ptr<Backend> make_cuda_backend(Device device, Allocator& allocator,
                                           std::chrono::milliseconds wait_timeout = std::chrono::minutes(10));

// The process's raw cudaMalloc allocator of cuda:`index` (core/cuda/cuda_allocator.h),
// created on first use and never destroyed, so tensors made from it (and the
// caching allocator over it) stay valid for the whole process. Throws
// weir::Error(kDevice) when the device does not exist.
Allocator& cuda_device_memory(int index);

// Throws weir::Error(kDevice) unless cuda:`device.index` can be used:
// "cuda:0: no CUDA device (cudaGetDeviceCount returned cudaErrorNoDevice: ...)"
// or "cuda:3: no such CUDA device (2 found)".
void require_cuda_device(const Device& device);

}  // namespace weir
