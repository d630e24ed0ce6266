#include "ops/cuda/integer_arithmetic_kernels.h"

#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/integer_arithmetic_device.h"
#include "ops/elementwise/binary_kernels.h"

namespace weir {

namespace {

using cuda::IntegerOp;

class IntegerBinaryCudaKernel final : public OpKernel {
 public:
  IntegerBinaryCudaKernel(const Node& node, IntegerOp op) : op_(op), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> out_sizes = binary_output_sizes(ctx, a, b, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    const bool wide = dtype_ == DType::kInt64;
    Tensor& out = ctx.allocate_output(0, dtype_, out_sizes, KernelContext::Fill::kUninitialized);
    if (op_ == IntegerOp::kDiv || op_ == IntegerOp::kMod || op_ == IntegerOp::kFmod) check_divisor(ctx, b, wide, stream);
    if (out.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(out_sizes, a.sizes(), b.sizes());
    if (!indexing) ctx.fail("broadcasting " + a.type_string() + " with " + b.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_integer_binary(op_, wide, a.raw_data(), b.raw_data(), out.raw_data(), out.num_elements(), *indexing,
                                stream);
    cuda::check_launch(ctx, "integer_binary");
  }

 private:
  // The CPU's check, made on the device and read once its work is done.
  static void check_divisor(KernelContext& ctx, const Tensor& divisor, bool wide, cudaStream_t stream) {
    if (divisor.num_elements() == 0) return;
    // The launch's own: its check reads it after the run.
    Tensor first_zero = Tensor::uninitialized(DType::kInt64, {1}, ctx.allocator());
    cuda::launch_find_zero_divisor(wide, divisor.raw_data(), divisor.num_elements(), first_zero.data<int64_t>(), stream);
    cuda::check_launch(ctx, "find_zero_divisor");
    const Node& node = ctx.node();
    cuda::check_device_values(ctx, first_zero, [&node](const std::vector<int64_t>& found) {
      if (found[0] >= 0) fail_node(node, "integer division by zero (divisor element " + std::to_string(found[0]) + ")");
    });
  }

  IntegerOp op_;
  DType dtype_;
};

}  // namespace

void register_integer_arithmetic_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kInt32, DType::kInt64};
  auto add = [&](const char* op_type, IntegerOp op) {
    registry.add(op_type, DeviceType::kCuda, types,
                 [op](const Node& node) { return std::make_unique<IntegerBinaryCudaKernel>(node, op); });
  };
  add("Add", IntegerOp::kAdd);
  add("Sub", IntegerOp::kSub);
  add("Mul", IntegerOp::kMul);
  add("Div", IntegerOp::kDiv);
  registry.add("Mod", DeviceType::kCuda, types, [](const Node& node) {
    const bool fmod = node.has_attr("fmod") && node.attr("fmod").i() != 0;
    return std::make_unique<IntegerBinaryCudaKernel>(node, fmod ? IntegerOp::kFmod : IntegerOp::kMod);
  });
}

}  // namespace weir
