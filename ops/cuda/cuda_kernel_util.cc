#include "ops/cuda/cuda_kernel_util.h"

#include <chrono>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/stream.h"

namespace weir::cuda {

cudaStream_t cuda_stream(const KernelContext& ctx) {
  Stream* stream = ctx.stream();
  if (stream == nullptr || stream->device().type != DeviceType::kCuda || stream->native_handle() == nullptr) {
    ctx.fail("a CUDA kernel needs a CUDA stream to enqueue on (run it through a session or the CUDA backend), got " +
             (stream == nullptr ? std::string("none") : stream->device().to_string() + " stream " + stream->id().to_string()));
  }
  return static_cast<cudaStream_t>(stream->native_handle());
}

void require_on_device(const KernelContext& ctx, const Tensor& tensor, const char* what) {
  if (tensor.device().type != DeviceType::kCuda) {
    ctx.fail(std::string(what) + " " + tensor.type_string() + " is on " + tensor.device().to_string() +
             "; a CUDA kernel reads GPU memory only");
  }
}

void check_launch(const KernelContext& ctx, const char* kernel) {
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  const Node& node = ctx.node();
  throw Error(ErrorKind::kDevice, node.op_type() + " '" + node.name() + "': launching " + kernel + " on " +
                                      ctx.stream()->device().to_string() + " stream " + ctx.stream()->id().to_string() +
                                      " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status))
      .with_node(node.name());
}

void check_cuda_status(const KernelContext& ctx, cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  ctx.fail(std::string(what) + " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

DeviceScalar device_scalar(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1) ctx.fail(std::string(name) + " must be a scalar, got " + t.type_string());
  require_on_device(ctx, t, name);
  DeviceScalar scalar{t.raw_data(), ScalarType::kFloat32};
  switch (t.dtype()) {
    case DType::kFloat32: break;
    case DType::kFloat64: scalar.type = ScalarType::kFloat64; break;
    case DType::kFloat16: scalar.type = ScalarType::kFloat16; break;
    case DType::kBFloat16: scalar.type = ScalarType::kBFloat16; break;
    case DType::kInt32: scalar.type = ScalarType::kInt32; break;
    case DType::kInt64: scalar.type = ScalarType::kInt64; break;
    default: ctx.fail(std::string(name) + " must be numeric, got " + t.type_string());
  }
  return scalar;
}

int to_int(const KernelContext& ctx, int64_t value, const char* what) {
  if (value > std::numeric_limits<int>::max()) {
    ctx.fail(std::string(what) + " " + std::to_string(value) + " exceeds the 32-bit sizes cuBLAS takes");
  }
  return static_cast<int>(value);
}

Tensor host_copy(const KernelContext& ctx, const Tensor& tensor, const char* what) {
  if (!tensor.defined() || tensor.device().type == DeviceType::kCpu) return tensor;
  cudaStream_t stream = cuda_stream(ctx);
  Tensor host(tensor.dtype(), tensor.sizes());
  if (tensor.nbytes() == 0) return host;
  cudaError_t status = cudaMemcpyAsync(host.raw_data(), tensor.raw_data(), tensor.nbytes(), cudaMemcpyDeviceToHost, stream);
  if (status != cudaSuccess) {
    cudaGetLastError();
    ctx.fail(std::string("copying ") + what + " " + tensor.type_string() + " to the host failed: " +
             cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }
  ctx.stream()->record()->synchronize(std::chrono::minutes(1), ctx.node().op_type() + " '" + ctx.node().name() +
                                                                   "' reading " + what + " on the host");
  return host;
}

std::vector<int64_t> read_device_integers(int device, const void* data, int64_t count, bool wide, const Node& node) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  if (count == 0) return values;
  std::vector<int32_t> narrow(wide ? 0 : static_cast<size_t>(count));
  void* host = wide ? static_cast<void*>(values.data()) : static_cast<void*>(narrow.data());
  const size_t bytes = static_cast<size_t>(count) * (wide ? sizeof(int64_t) : sizeof(int32_t));
  // A plain copy: the work that wrote the values is done (the check runs
  // after it), and Weir's streams do not wait on the default stream.
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaMemcpy(host, data, bytes, cudaMemcpyDeviceToHost);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorKind::kDevice, node.op_type() + " '" + node.name() + "': reading what its device work found failed: " +
                                        cudaGetErrorName(status) + ": " + cudaGetErrorString(status))
        .with_node(node.name());
  }
  if (!wide) {
    for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = narrow[static_cast<size_t>(i)];
  }
  return values;
}

void check_device_values(KernelContext& ctx, Tensor values, std::function<void(const std::vector<int64_t>&)> check) {
  require_on_device(ctx, values, "a device check's values");
  if (values.dtype() != DType::kInt64) ctx.fail("a device check reads i64 values, got " + values.type_string());
  const Node& node = ctx.node();  // the plan's: it outlives the run
  ctx.check_when_done([&node, values = std::move(values), check = std::move(check)] {
    check(read_device_integers(values.device().index, values.raw_data(), values.num_elements(), true, node));
  });
}

}  // namespace weir::cuda
