#include "ops/cuda/tensor_kernels.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/shape.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/host_input.h"
#include "ops/cuda/strided_copy.h"
#include "ops/cuda/tensor_device.h"
#include "ops/dtype_sets.h"
#include "ops/tensor/shape_slice.h"
#include "ops/tensor/tensor_kernels.h"

namespace weir {

namespace {

// A view op whose shape or axes inputs decide the view: those inputs are
// read on the host (cuda::host_input) and the op's CPU kernel, created from
// the same registry, computes the view of the device tensor, so sizes,
// checks and messages are the CPU's exactly. The CPU kernels of Reshape,
// Squeeze and Unsqueeze read no element of their data input.
class HostShapeInputsKernel final : public OpKernel {
 public:
  HostShapeInputsKernel(const Node& node, size_t first_host_input) : first_host_input_(first_host_input) {
    const KernelRegistry* registry = KernelRegistry::creating();
    if (registry == nullptr) {
      throw Error(ErrorKind::kInternal, node.op_type() + " '" + node.name() +
                                            "': the CUDA view kernel must be created through a KernelRegistry")
          .with_node(node.name());
    }
    cpu_kernel_ = registry->create(node, DeviceType::kCpu);
  }

  void compute(KernelContext& ctx) override {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) {
        inputs.emplace_back();
      } else if (i >= first_host_input_) {
        const std::string what = "input " + std::to_string(i);
        inputs.push_back(cuda::host_input(ctx, i, what.c_str()));
      } else {
        inputs.push_back(ctx.input(i));
      }
    }
    KernelContext host(ctx.node(), std::move(inputs), ctx.allocator());
    host.set_backend(ctx.backend());
    host.set_stream(ctx.stream());
    cpu_kernel_->compute(host);
    for (size_t o = 0; o < ctx.num_outputs(); ++o) ctx.set_output(o, host.output(o));
  }

 private:
  size_t first_host_input_;
  std::unique_ptr<OpKernel> cpu_kernel_;
};

// Writes host values into a device i64 tensor, in stream order.
void write_values(const KernelContext& ctx, Tensor& out, const std::vector<int64_t>& values) {
  auto* dst = static_cast<int64_t*>(out.raw_data());
  for (size_t begin = 0; begin < values.size(); begin += cuda::kMaxWrittenValues) {
    const size_t count = std::min(values.size() - begin, static_cast<size_t>(cuda::kMaxWrittenValues));
    cuda::launch_write_i64(dst + begin, values.data() + begin, static_cast<int>(count), cuda::cuda_stream(ctx));
    cuda::check_launch(ctx, "write_i64_kernel");
  }
}

class ShapeCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const std::vector<int64_t>& sizes = ctx.input(0).sizes();
    auto [start, end] = shape_slice(ctx.node(), static_cast<int64_t>(sizes.size()));
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, DType::kInt64, {end - start}, KernelContext::Fill::kUninitialized);
    write_values(ctx, out, std::vector<int64_t>(sizes.begin() + start, sizes.begin() + end));
  }
};

class SizeCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, DType::kInt64, {}, KernelContext::Fill::kUninitialized);
    write_values(ctx, out, {ctx.input(0).num_elements()});
  }
};

class TransposeCudaKernel final : public OpKernel {
 public:
  explicit TransposeCudaKernel(const Node& node) {
    if (node.has_attr("perm")) perm_ = node.attr("perm").ints();
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const TransposeView view = transpose_view(ctx, perm_, x);
    const std::vector<int64_t>& out_sizes = view.sizes;
    const std::vector<int64_t>& strides = view.strides;
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    const size_t element = dtype_size(x.dtype());
    if (tiled(ctx, x, y, out_sizes, strides, element, stream)) return;
    cuda::copy_strided(ctx, element, x.raw_data(), y.raw_data(), out_sizes, strides, cuda::dense_strides(out_sizes),
                       "Transpose");
  }

 private:
  // A batch of 2-D transposes goes through shared-memory tiles when both
  // sides are longer than a few elements: a tile of 32 x 3 would leave most
  // of the block idle, and the plain gather does as well there.
  static bool tiled(const KernelContext& ctx, const Tensor& x, Tensor& y, const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& strides, size_t element, cudaStream_t stream) {
    std::optional<cuda::TransposeTiles> tiles = cuda::transpose_tiles(sizes, strides, /*min_side=*/8);
    if (!tiles) return false;
    cuda::launch_transpose_tiled(element, x.raw_data(), y.raw_data(), tiles->batch, tiles->rows, tiles->cols, stream);
    cuda::check_launch(ctx, "transpose_tiled_kernel");
    return true;
  }

  std::vector<int64_t> perm_;
};

}  // namespace

void register_tensor_cuda_kernels(KernelRegistry& registry) {
  registry.add("Transpose", DeviceType::kCuda, kAnyDTypes,
               [](const Node& node) { return std::make_unique<TransposeCudaKernel>(node); });
  registry.add("Shape", DeviceType::kCuda, kAnyDTypes, [](const Node&) { return std::make_unique<ShapeCudaKernel>(); });
  registry.add("Size", DeviceType::kCuda, kAnyDTypes, [](const Node&) { return std::make_unique<SizeCudaKernel>(); });
  // Input 1 (Reshape's shape, Squeeze's and Unsqueeze's axes) is read on the host.
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze"}) {
    registry.add(op, DeviceType::kCuda, kAnyDTypes,
                 [](const Node& node) { return std::make_unique<HostShapeInputsKernel>(node, 1); });
  }
}

}  // namespace weir
