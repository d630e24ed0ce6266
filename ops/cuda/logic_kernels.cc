#include "ops/cuda/logic_kernels.h"

#include <string>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/logic_device.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/logic_kernels.h"

namespace weir {

namespace {

using cuda::CompareOp;
using cuda::CompareType;

CompareType compare_type(const KernelContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CompareType::kFloat32;
    case DType::kFloat16: return CompareType::kFloat16;
    case DType::kBFloat16: return CompareType::kBFloat16;
    case DType::kInt32: return CompareType::kInt32;
    case DType::kInt64: return CompareType::kInt64;
    case DType::kBool: return CompareType::kBool;
    default: ctx.fail("the CUDA kernel does not take " + std::string(dtype_name(dtype)));
  }
}

class CompareCudaKernel final : public OpKernel {
 public:
  explicit CompareCudaKernel(CompareOp op) : op_(op) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> sizes = comparison_sizes(ctx, a, b);
    const CompareType type = compare_type(ctx, a.dtype());
    const bool logical = op_ == CompareOp::kAnd || op_ == CompareOp::kOr || op_ == CompareOp::kXor;
    if (op_ != CompareOp::kEqual && logical != (type == CompareType::kBool)) {
      ctx.fail(std::string(logical ? "needs bool inputs" : "needs numeric inputs") + ", got " + a.type_string());
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    Tensor& out = ctx.allocate_output(0, DType::kBool, sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(sizes, a.sizes(), b.sizes());
    if (!indexing) ctx.fail("broadcasting " + a.type_string() + " with " + b.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_compare(op_, type, a.raw_data(), b.raw_data(), out.data<bool>(), out.num_elements(), *indexing, stream);
    cuda::check_launch(ctx, "compare_kernel");
  }

 private:
  CompareOp op_;
};

class NotCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kBool) ctx.fail("needs bool, got " + x.type_string());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_not(x.data<bool>(), y.data<bool>(), y.num_elements(), stream);
    cuda::check_launch(ctx, "not_kernel");
  }
};

class WhereCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& condition = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const std::vector<int64_t> sizes = where_sizes(ctx, condition, x, y);
    const size_t element_size = dtype_size(x.dtype());
    if (element_size != 1 && element_size != 2 && element_size != 4 && element_size != 8) {
      ctx.fail("the CUDA kernel does not take " + x.type_string());
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, condition, "condition");
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, y, "Y");
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    std::optional<cuda::MultiBroadcastIndexing> indexing =
        cuda::broadcast_indexing(sizes, {condition.sizes(), x.sizes(), y.sizes()});
    if (!indexing) ctx.fail("broadcasting the inputs to " + format_sizes(sizes) + " needs more axes than the GPU kernel takes");
    cuda::launch_where(condition.data<bool>(), x.raw_data(), y.raw_data(), out.raw_data(), out.num_elements(),
                       static_cast<int>(element_size), *indexing, stream);
    cuda::check_launch(ctx, "where_kernel");
  }
};

void add_compare(KernelRegistry& registry, const char* op_type, const std::vector<DType>& types, CompareOp op) {
  registry.add(op_type, DeviceType::kCuda, types, [op](const Node&) { return std::make_unique<CompareCudaKernel>(op); });
}

}  // namespace

void register_logic_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> numbers = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64};
  std::vector<DType> comparable = numbers;
  comparable.push_back(DType::kBool);
  add_compare(registry, "Equal", comparable, CompareOp::kEqual);
  add_compare(registry, "Less", numbers, CompareOp::kLess);
  add_compare(registry, "Greater", numbers, CompareOp::kGreater);
  add_compare(registry, "LessOrEqual", numbers, CompareOp::kLessOrEqual);
  add_compare(registry, "GreaterOrEqual", numbers, CompareOp::kGreaterOrEqual);
  add_compare(registry, "And", {DType::kBool}, CompareOp::kAnd);
  add_compare(registry, "Or", {DType::kBool}, CompareOp::kOr);
  add_compare(registry, "Xor", {DType::kBool}, CompareOp::kXor);
  registry.add("Not", DeviceType::kCuda, {DType::kBool}, [](const Node&) { return std::make_unique<NotCudaKernel>(); });
  // Where's kernel key is its first input, the bool condition.
  registry.add("Where", DeviceType::kCuda, {DType::kBool}, [](const Node&) { return std::make_unique<WhereCudaKernel>(); });
}

}  // namespace weir
