#include "ops/cuda/elementwise_kernels.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "ops/cuda/activation_params.h"
#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/elementwise/binary_kernels.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/prelu.h"

namespace weir {

namespace {

using cuda::BinaryOp;
using cuda::ElementType;
using cuda::UnaryOp;
using cuda::UnaryParams;

class BinaryCudaKernel final : public OpKernel {
 public:
  BinaryCudaKernel(const Node& node, BinaryOp op) : op_(op), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> out_sizes = binary_output_sizes(ctx, a, b, dtype_);
    const ElementType type = cuda::element_type(ctx, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    Tensor& out = ctx.allocate_output(0, dtype_, out_sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(out_sizes, a.sizes(), b.sizes());
    if (!indexing) ctx.fail("broadcasting " + a.type_string() + " with " + b.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_binary(op_, type, a.raw_data(), b.raw_data(), out.raw_data(), out.num_elements(), *indexing, 1.0f,
                        stream);
    cuda::check_launch(ctx, "binary_kernel");
  }

 private:
  BinaryOp op_;
  DType dtype_;
};

class UnaryCudaKernel final : public OpKernel {
 public:
  UnaryCudaKernel(const Node& node, UnaryOp op, UnaryParams params = {})
      : op_(op), params_(params), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != dtype_) {
      ctx.fail("input is " + std::string(dtype_name(x.dtype())) + "; this kernel was built for " +
               std::string(dtype_name(dtype_)));
    }
    const ElementType type = cuda::element_type(ctx, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_unary(op_, type, x.raw_data(), y.raw_data(), y.num_elements(), stream, params_);
    cuda::check_launch(ctx, "unary_kernel");
  }

 private:
  UnaryOp op_;
  UnaryParams params_;
  DType dtype_;
};

// PRelu(X, slope): slope broadcast unidirectionally to X.
class PReluCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    check_prelu_slope(ctx, x, slope);
    const ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, slope, "slope");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(x.sizes(), x.sizes(), slope.sizes());
    if (!indexing) ctx.fail("broadcasting " + slope.type_string() + " to " + x.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_binary(BinaryOp::kPRelu, type, x.raw_data(), slope.raw_data(), y.raw_data(), y.num_elements(), *indexing,
                        1.0f, stream);
    cuda::check_launch(ctx, "binary_kernel");
  }
};

// Clip(input, min?, max?): the bounds are read where they live, in device
// memory by the kernel (no round trip) or on the host.
class ClipCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    cuda::ClipBounds bounds = cuda::clip_bounds(ctx, 1);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_clip(type, x.raw_data(), y.raw_data(), y.num_elements(), bounds.values, bounds.low, bounds.high,
                      stream);
    cuda::check_launch(ctx, "clip_kernel");
  }
};

// Max / Min / Sum / Mean over any number of inputs, broadcast together.
// Up to MultiBroadcastIndexing::kMaxOperands inputs are folded in one pass;
// more continue from the output in further passes (input 0 of each is the
// output so far, read at the element being written).
class VariadicCudaKernel final : public OpKernel {
 public:
  VariadicCudaKernel(BinaryOp op, bool mean) : op_(op), mean_(mean) {}

  void compute(KernelContext& ctx) override {
    const Tensor& first = ctx.input(0);
    const std::vector<int64_t> sizes = variadic_output_sizes(ctx);
    if (ctx.num_inputs() == 1 && !mean_) {
      ctx.set_output(0, first);
      return;
    }
    const ElementType type = cuda::element_type(ctx, first.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) cuda::require_on_device(ctx, ctx.input(i), "an input");
    Tensor* result = &ctx.allocate_output(0, first.dtype(), sizes, KernelContext::Fill::kUninitialized);
    // A pass reads every input at the element it writes; an output that
    // overlaps an input in any other way (and any input a later pass reads)
    // gets a fresh tensor instead, as on the CPU.
    Tensor fresh;
    if (variadic_output_overlaps_an_input(ctx, *result)) {
      fresh = Tensor::uninitialized(first.dtype(), sizes, ctx.allocator());
      result = &fresh;
    }
    if (result->num_elements() > 0) {
      constexpr size_t kMax = cuda::MultiBroadcastIndexing::kMaxOperands;
      size_t next = 0;  // the first input not folded yet
      while (next < ctx.num_inputs()) {
        std::vector<const void*> data;
        std::vector<std::vector<int64_t>> operand_sizes;
        if (next > 0) {  // continue from the output so far
          data.push_back(result->raw_data());
          operand_sizes.push_back(sizes);
        }
        while (next < ctx.num_inputs() && data.size() < kMax) {
          data.push_back(ctx.input(next).raw_data());
          operand_sizes.push_back(ctx.input(next).sizes());
          ++next;
        }
        std::optional<cuda::MultiBroadcastIndexing> indexing = cuda::broadcast_indexing(sizes, operand_sizes);
        if (!indexing) ctx.fail("broadcasting the inputs to " + format_sizes(sizes) + " needs more axes than the GPU kernel takes");
        const bool last = next == ctx.num_inputs();
        const float divisor = mean_ && last ? static_cast<float>(ctx.num_inputs()) : 0.0f;
        cuda::launch_variadic(op_, type, data.data(), result->raw_data(), result->num_elements(), *indexing, divisor,
                              stream);
        cuda::check_launch(ctx, "variadic_kernel");
      }
    }
    if (fresh.defined()) ctx.set_output(0, fresh);
  }

 private:
  BinaryOp op_;
  bool mean_;
};

// IsNaN and IsInf (detect_negative, detect_positive): bool outputs.
class FloatClassCudaKernel final : public OpKernel {
 public:
  FloatClassCudaKernel(const Node& node, cuda::FloatClass what)
      : what_(what),
        negative_(!node.has_attr("detect_negative") || node.attr("detect_negative").i() != 0),
        positive_(!node.has_attr("detect_positive") || node.attr("detect_positive").i() != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (!is_floating(x.dtype())) ctx.fail("needs a floating-point input, got " + x.type_string());
    const ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_float_class(what_, negative_, positive_, type, x.raw_data(), y.data<bool>(), y.num_elements(), stream);
    cuda::check_launch(ctx, "float_class_kernel");
  }

 private:
  cuda::FloatClass what_;
  bool negative_, positive_;
};

void add_binary(KernelRegistry& registry, const char* op_type, BinaryOp op) {
  registry.add(op_type, DeviceType::kCuda, cuda::kFloatTypes,
               [op](const Node& node) { return std::make_unique<BinaryCudaKernel>(node, op); });
}

void add_unary(KernelRegistry& registry, const char* op_type, UnaryOp op) {
  registry.add(op_type, DeviceType::kCuda, cuda::kFloatTypes,
               [op](const Node& node) { return std::make_unique<UnaryCudaKernel>(node, op); });
}

void add_variadic(KernelRegistry& registry, const char* op_type, BinaryOp op, bool mean) {
  registry.add(op_type, DeviceType::kCuda, cuda::kFloatTypes,
               [op, mean](const Node&) { return std::make_unique<VariadicCudaKernel>(op, mean); });
}

}  // namespace

void register_elementwise_cuda_kernels(KernelRegistry& registry) {
  add_binary(registry, "Add", BinaryOp::kAdd);
  add_binary(registry, "Sub", BinaryOp::kSub);
  add_binary(registry, "Mul", BinaryOp::kMul);
  add_binary(registry, "Div", BinaryOp::kDiv);
  add_binary(registry, "Pow", BinaryOp::kPow);
  registry.add("Mod", DeviceType::kCuda, cuda::kFloatTypes, [](const Node& node) -> std::unique_ptr<OpKernel> {
    const bool fmod = node.has_attr("fmod") && node.attr("fmod").i() != 0;
    if (!fmod) {  // every type this kernel takes is floating-point, as the CPU's message says
      throw Error(ErrorKind::kInvalidArgument, "Mod '" + node.name() + "': floating-point inputs need fmod=1")
          .with_node(node.name());
    }
    return std::make_unique<BinaryCudaKernel>(node, BinaryOp::kFmod);
  });
  add_variadic(registry, "Max", BinaryOp::kMax, /*mean=*/false);
  add_variadic(registry, "Min", BinaryOp::kMin, /*mean=*/false);
  add_variadic(registry, "Sum", BinaryOp::kAdd, /*mean=*/false);
  add_variadic(registry, "Mean", BinaryOp::kAdd, /*mean=*/true);

  add_unary(registry, "Neg", UnaryOp::kNeg);
  add_unary(registry, "Relu", UnaryOp::kRelu);
  add_unary(registry, "Sigmoid", UnaryOp::kSigmoid);
  add_unary(registry, "Tanh", UnaryOp::kTanh);
  add_unary(registry, "Exp", UnaryOp::kExp);
  add_unary(registry, "Log", UnaryOp::kLog);
  add_unary(registry, "Sqrt", UnaryOp::kSqrt);
  add_unary(registry, "Abs", UnaryOp::kAbs);
  add_unary(registry, "Sign", UnaryOp::kSign);
  add_unary(registry, "Floor", UnaryOp::kFloor);
  add_unary(registry, "Ceil", UnaryOp::kCeil);
  add_unary(registry, "Round", UnaryOp::kRound);
  for (const std::string& name : cuda::activation_names()) {
    registry.add(name, DeviceType::kCuda, cuda::kFloatTypes, [name](const Node& node) {
      cuda::Activation activation = cuda::activation_of(name, node);
      return std::make_unique<UnaryCudaKernel>(node, activation.op, activation.params);
    });
  }
  registry.add("PRelu", DeviceType::kCuda, cuda::kFloatTypes, [](const Node&) { return std::make_unique<PReluCudaKernel>(); });
  registry.add("Clip", DeviceType::kCuda, cuda::kFloatTypes, [](const Node&) { return std::make_unique<ClipCudaKernel>(); });
  registry.add("IsNaN", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<FloatClassCudaKernel>(node, cuda::FloatClass::kNaN); });
  registry.add("IsInf", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<FloatClassCudaKernel>(node, cuda::FloatClass::kInf); });
}

}  // namespace weir
