// What every CUDA kernel of ops/cuda does around its device work: find the
// stream to enqueue on, check that its tensors live on the GPU, and turn a
// failed launch into an error naming the op and node.
//
//   cudaStream_t stream = cuda_stream(ctx);                 // the step's stream
//   require_on_device(ctx, ctx.input(0), "input 0");
//   my_kernel<<<blocks, threads, 0, stream>>>(...);
//   check_launch(ctx, "my_kernel");
//
// A CUDA kernel runs only inside a runtime that gives it a CUDA stream
// (KernelContext::stream(), from runtime/cuda_backend.h); run directly, as
// the CPU reference evaluator runs kernels, it fails naming the node.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "ops/cuda/device_scalar.h"
#include "ops/kernel.h"

namespace weir::cuda {

cudaStream_t cuda_stream(const KernelContext& ctx);
// Fails naming the node unless `tensor` lives on a CUDA device.
void require_on_device(const KernelContext& ctx, const Tensor& tensor, const char* what);
// Throws weir::Error(kDevice) naming the node when the last launch on this thread failed.
void check_launch(const KernelContext& ctx, const char* kernel);
// Fails naming the node and `what` ("<what> failed: cudaErrorX: ...") when
// `status` (of an enqueueing call: a memset, a copy, a CUB launch) is not
// cudaSuccess, clearing the thread's last error first so the next launch
// check does not report it again.
void check_cuda_status(const KernelContext& ctx, cudaError_t status, const char* what);
// Fails naming the node when `value` (a size handed to a 32-bit API) exceeds int.
int to_int(const KernelContext& ctx, int64_t value, const char* what);

// Input `index` as a scalar that device code reads (lr, a step): its
// pointer and element type; fails naming `name` as scalar_input() does
// when it is not one numeric element, or when it is not on the GPU.
DeviceScalar device_scalar(const KernelContext& ctx, size_t index, const char* name);

// A small input the kernel must read on the host (a shape, starts and ends,
// axes, a scalar): `tensor` as it is when it already lives in host memory,
// else a host copy made on the step's stream and waited for (at most a
// minute; a longer wait fails naming the node). The copy costs a round trip
// to the device, so read inputs this way only where the value decides what
// to launch.
Tensor host_copy(const KernelContext& ctx, const Tensor& tensor, const char* what);

// What a kernel's device work found, checked without the step waiting for
// it: `values`, a small i64 device tensor the work writes (kept alive by
// the check), is read back once the work is done and handed to `check`,
// which fails with fail_node (KernelContext::check_when_done).
void check_device_values(KernelContext& ctx, Tensor values, std::function<void(const std::vector<int64_t>&)> check);
// `count` integers (i64, or i32 when !wide) at `data` in the memory of GPU
// `device`, on the host; for a check, when the work that wrote them is
// done. A failed copy fails naming `node`.
std::vector<int64_t> read_device_integers(int device, const void* data, int64_t count, bool wide, const Node& node);

}  // namespace weir::cuda
