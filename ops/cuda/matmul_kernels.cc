#include "ops/cuda/matmul_kernels.h"

#include <optional>
#include <string>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cublaslt_matmul.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/matmul_device.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/linalg/gemm_attributes.h"
#include "ops/linalg/matmul_shapes.h"
#include "ops/node_attributes.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

using cuda::element_type;

class MatMulCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatmulShapes shapes = matmul_shapes(ctx, a, b);
    element_type(ctx, a);
    cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    // An empty inner dimension sums to zero: the only case the product does not overwrite.
    Tensor& out = ctx.allocate_output(0, a.dtype(), shapes.out_sizes,
                                      shapes.k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0 || shapes.k == 0) return;

    cuda::LtProblem p{.input = a.dtype(), .output = a.dtype(), .m = shapes.m, .n = shapes.n, .k = shapes.k};
    const auto* pa = static_cast<const char*>(a.raw_data());
    const auto* pb = static_cast<const char*>(b.raw_data());
    auto* pc = static_cast<char*>(out.raw_data());
    if (sizes_product(shapes.b_batch) == 1) {
      p.m *= sizes_product(shapes.a_batch);  // B is one matrix: fold A's batch into its rows, one large product
      matmul_.run(ctx, p, {.a = pa, .b = pb, .d = pc});
      return;
    }
    // Otherwise one strided-batch product per run of the batch broadcast:
    // along a run, A and B each advance by one matrix per item or stay (a
    // stride of 0). Equal batches, or one A for all of B, are a single run.
    BroadcastPlan plan(shapes.out_batch, shapes.a_batch, shapes.b_batch);
    const auto element = static_cast<int64_t>(dtype_size(a.dtype()));
    const int64_t a_bytes = p.m * p.k * element, b_bytes = p.k * p.n * element, c_bytes = p.m * p.n * element;
    plan.for_each([&](int64_t out_item, int64_t a_item, int64_t b_item, int64_t count) {
      cuda::LtProblem batched = p;
      batched.batch = count;
      batched.stride_a = plan.inner_stride_a() * p.m * p.k;
      batched.stride_b = plan.inner_stride_b() * p.k * p.n;
      batched.stride_d = p.m * p.n;
      const cuda::LtOperands first{.a = pa + a_item * a_bytes, .b = pb + b_item * b_bytes, .d = pc + out_item * c_bytes};
      if (matmul_.try_run(ctx, batched, first)) return;
      // cuBLASLt had no algorithm for this batch (a stride of 0, say): one product per item.
      for (int64_t i = 0; i < count; ++i) {
        matmul_.run(ctx, p,
                    {.a = pa + (a_item + i * plan.inner_stride_a()) * a_bytes,
                     .b = pb + (b_item + i * plan.inner_stride_b()) * b_bytes,
                     .d = pc + (out_item + i) * c_bytes});
      }
    });
  }

 private:
  cuda::LtMatmul matmul_;
};

class GemmCudaKernel final : public OpKernel {
 public:
  explicit GemmCudaKernel(const Node& node) : gemm_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const GemmSizes sizes = gemm_.sizes(ctx, a, b);
    element_type(ctx, a);
    const DType out_dtype = kernel_output_dtype(ctx, a.dtype());
    if (out_dtype != a.dtype() && ctx.has_input(2)) ctx.fail("a wider output_dtype than the inputs' takes no C");
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "A");
    cuda::require_on_device(ctx, b, "B");
    // The product overwrites every element, but for an empty inner dimension, whose sum is zero.
    Tensor& out = ctx.allocate_output(0, out_dtype, {sizes.m, sizes.n},
                                      sizes.k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    const bool add_c = ctx.has_input(2) && gemm_.beta != 0.0;
    if (add_c) {
      const Tensor& c = ctx.input(2);
      auto broadcast = broadcast_sizes(out.sizes(), c.sizes());
      if (c.dtype() != out.dtype() || !broadcast || *broadcast != out.sizes()) {
        ctx.fail("C " + c.type_string() + " does not broadcast to the product " + out.type_string());
      }
      cuda::require_on_device(ctx, c, "C");
    }
    if (out.num_elements() == 0) return;
    if (sizes.k > 0) {
      matmul_.run(ctx,
                  {.input = a.dtype(),
                   .output = out_dtype,
                   .m = sizes.m,
                   .n = sizes.n,
                   .k = sizes.k,
                   .transpose_a = gemm_.transpose_a,
                   .transpose_b = gemm_.transpose_b,
                   .alpha = static_cast<float>(gemm_.alpha)},
                  {.a = a.raw_data(), .b = b.raw_data(), .d = out.raw_data()});
    }
    // Then Y += beta * C, as the CPU kernel does it: after the product has
    // been rounded to Y's type, not folded into cuBLASLt's beta.
    if (add_c) {
      const Tensor& c = ctx.input(2);
      std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(out.sizes(), out.sizes(), c.sizes());
      cuda::launch_binary(cuda::BinaryOp::kAddScaled, cuda::checked_element_type(out_dtype), out.raw_data(),
                          c.raw_data(), out.raw_data(), out.num_elements(), *indexing, static_cast<float>(gemm_.beta),
                          stream);
      cuda::check_launch(ctx, "binary_kernel (Y + beta * C)");
    }
  }

 private:
  GemmAttributes gemm_;
  cuda::LtMatmul matmul_;
};

// The cuBLASLt epilogue computing exactly bias and `activation` after the
// product, if there is one: its Relu is the CPU's, and its bias must be of
// D's type. Not its GELU, which is not the CPU's GeluTanh in bf16 (see
// LtEpilogue): the GELUs run in our epilogue kernel.
std::optional<cuda::LtEpilogue> lt_epilogue_for(const FusedActivation& activation, bool bias, bool bias_of_d_type) {
  if (bias && !bias_of_d_type) return std::nullopt;
  switch (activation.kind) {
    case FusedActivation::Kind::kNone: return bias ? cuda::LtEpilogue::kBias : cuda::LtEpilogue::kNone;
    case FusedActivation::Kind::kRelu: return bias ? cuda::LtEpilogue::kReluBias : cuda::LtEpilogue::kRelu;
    default: return std::nullopt;
  }
}

cuda::MatmulEpilogue own_epilogue(const FusedActivation& activation) {
  using K = FusedActivation::Kind;
  using A = cuda::MatmulActivation;
  A kind = A::kNone;
  switch (activation.kind) {
    case K::kNone: kind = A::kNone; break;
    case K::kRelu: kind = A::kRelu; break;
    case K::kLeakyRelu: kind = A::kLeakyRelu; break;
    case K::kClip: kind = A::kClip; break;
    case K::kSigmoid: kind = A::kSigmoid; break;
    case K::kTanh: kind = A::kTanh; break;
    case K::kSilu: kind = A::kSilu; break;
    case K::kGelu: kind = A::kGelu; break;
    case K::kGeluTanh: kind = A::kGeluTanh; break;
  }
  return {.activation = kind, .alpha = activation.alpha, .beta = activation.beta};
}

// FusedMatMul: activation(A B + bias), A's batch folded into its rows. The
// product, bias and activation are computed in f32 and rounded once, as the
// CPU's oneDNN primitive does: in cuBLASLt's epilogue where it has the
// activation, else by a kernel of our own reading the f32 product.
class FusedMatMulCudaKernel final : public OpKernel {
 public:
  explicit FusedMatMulCudaKernel(const Node& node) : activation_(FusedActivation::from_node(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const FusedMatmulShapes shapes = fused_matmul_shapes(ctx, a, b, bias);
    const cuda::ElementType in_type = element_type(ctx, a);
    const DType out_dtype = kernel_output_dtype(ctx, a.dtype());
    const cuda::ElementType out_type = cuda::checked_element_type(out_dtype);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "A");
    cuda::require_on_device(ctx, b, "B");
    if (bias != nullptr) cuda::require_on_device(ctx, *bias, "bias");
    const int64_t m = shapes.m, n = shapes.n, k = shapes.k;
    // The product overwrites every element unless K is 0 (then it is zeros, which the bias and activation start from).
    Tensor& out = ctx.allocate_output(0, out_dtype, shapes.out_sizes,
                                      k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (m == 0 || n == 0) return;
    const void* bias_data = bias != nullptr ? bias->raw_data() : nullptr;
    const std::optional<cuda::LtEpilogue> epilogue = lt_epilogue_for(activation_, bias != nullptr, out_dtype == a.dtype());
    if (k > 0 && epilogue.has_value() &&
        matmul_.try_run(ctx, {.input = a.dtype(), .output = out_dtype, .m = m, .n = n, .k = k, .epilogue = *epilogue},
                        {.a = a.raw_data(), .b = b.raw_data(), .d = out.raw_data(), .bias = bias_data})) {
      return;
    }
    // Else (no such epilogue, or no algorithm with it) the product, then our kernel.
    if (k == 0 && bias == nullptr && activation_.none()) return;  // zeros
    // The f32 product our kernel reads: the output itself when it is f32,
    // else scratch of this launch.
    cuda::LaunchScratch wide_product;
    void* product = out.raw_data();
    cuda::ElementType product_type = out_type;
    if (k > 0) {
      if (out_dtype != DType::kFloat32) {
        wide_product = cuda::LaunchScratch(ctx, {static_cast<size_t>(m * n) * sizeof(float)});
        product = wide_product.part(0);
        product_type = cuda::ElementType::kFloat32;
      }
      matmul_.run(ctx, {.input = a.dtype(), .output = DType::kFloat32, .m = m, .n = n, .k = k},
                  {.a = a.raw_data(), .b = b.raw_data(), .d = product});
    }
    cuda::launch_bias_activation(product_type, product, in_type, bias_data, out_type, out.raw_data(), m, n,
                                 own_epilogue(activation_), stream);
    cuda::check_launch(ctx, "bias_activation_kernel");
  }

 private:
  FusedActivation activation_;
  cuda::LtMatmul matmul_;
};

}  // namespace

void register_matmul_cuda_kernels(KernelRegistry& registry) {
  // What the CPU registers among the types these kernels compute.
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("MatMul", DeviceType::kCuda, types, [](const Node&) { return std::make_unique<MatMulCudaKernel>(); });
  registry.add("Gemm", DeviceType::kCuda, types, [](const Node& node) { return std::make_unique<GemmCudaKernel>(node); });
  registry.add("FusedMatMul", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<FusedMatMulCudaKernel>(node); });
}

}  // namespace weir
