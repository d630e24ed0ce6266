#include "ops/cuda/matmul_kernels.h"

#include <string>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cublas_library.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/elementwise/broadcast.h"
#include "ops/linalg/gemm_attributes.h"
#include "ops/linalg/matmul_shapes.h"
#include "ops/node_attributes.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

// One row-major product C[m, n] = alpha * op(A)[m, k] * op(B)[k, n], `batch`
// times, operand i of batch item j at pointer + j * stride (0: the same matrix).
struct RowMajorGemm {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  float alpha = 1.0f;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// cuBLAS is column-major; a row-major matrix is its transpose there, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: B comes first, and
// each operand's transpose flag is its own.
void run_gemm(const KernelContext& ctx, const RowMajorGemm& g, const float* a, const float* b, float* c,
              cudaStream_t stream) {
  const int m = cuda::to_int(ctx, g.m, "M");
  const int n = cuda::to_int(ctx, g.n, "N");
  const int k = cuda::to_int(ctx, g.k, "K");
  const int batch = cuda::to_int(ctx, g.batch, "the batch");
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_b = g.transpose_b ? k : n;
  const int ld_a = g.transpose_a ? m : k;
  const float beta = 0.0f;
  const cuda::CublasApi& api = cuda::cublas();
  cuda::CublasHandle handle(ctx.stream()->device().index);
  const std::string where = ctx.node().op_type() + " '" + ctx.node().name() + "': ";
  cuda::cublas_check(api.set_stream(handle.get(), stream), where + "cublasSetStream");
  if (batch == 1) {
    cuda::cublas_check(api.sgemm(handle.get(), op_b, op_a, n, m, k, &g.alpha, b, ld_b, a, ld_a, &beta, c, n),
                       where + "cublasSgemm");
  } else {
    cuda::cublas_check(api.sgemm_strided_batched(handle.get(), op_b, op_a, n, m, k, &g.alpha, b, ld_b, g.stride_b, a,
                                                 ld_a, g.stride_a, &beta, c, n, g.stride_c, batch),
                       where + "cublasSgemmStridedBatched");
  }
}

void require_f32(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32) {
    ctx.fail("the CUDA kernel takes f32 only, got " + a.type_string() + " and " + b.type_string());
  }
}

class MatMulCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatmulShapes shapes = matmul_shapes(ctx, a, b);
    require_f32(ctx, a, b);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    RowMajorGemm g{.m = shapes.m, .n = shapes.n, .k = shapes.k};
    // An empty inner dimension sums to zero: the only case the product does not overwrite.
    Tensor& out = ctx.allocate_output(0, DType::kFloat32, shapes.out_sizes,
                                      g.k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0 || g.k == 0) return;

    const auto* pa = static_cast<const float*>(a.raw_data());
    const auto* pb = static_cast<const float*>(b.raw_data());
    auto* pc = static_cast<float*>(out.raw_data());
    const int64_t items = sizes_product(shapes.out_batch);
    const int64_t a_items = sizes_product(shapes.a_batch);
    if (sizes_product(shapes.b_batch) == 1) {
      g.m *= a_items;  // B is one matrix: fold A's batch into its rows, one large product
      run_gemm(ctx, g, pa, pb, pc, stream);
    } else if ((a_items == items || a_items == 1) && sizes_product(shapes.b_batch) == items) {
      g.batch = items;  // B batched, A batched alike or one matrix for all
      g.stride_a = a_items == 1 ? 0 : g.m * g.k;
      g.stride_b = g.k * g.n;
      g.stride_c = g.m * g.n;
      run_gemm(ctx, g, pa, pb, pc, stream);
    } else {
      // General broadcast of batch axes: one product per output batch item.
      BroadcastPlan plan(shapes.out_batch, shapes.a_batch, shapes.b_batch);
      const int64_t a_step = g.m * g.k, b_step = g.k * g.n, c_step = g.m * g.n;
      plan.for_each([&](int64_t out_item, int64_t a_item, int64_t b_item, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          run_gemm(ctx, g, pa + (a_item + i * plan.inner_stride_a()) * a_step,
                   pb + (b_item + i * plan.inner_stride_b()) * b_step, pc + (out_item + i) * c_step, stream);
        }
      });
    }
  }
};

class GemmCudaKernel final : public OpKernel {
 public:
  explicit GemmCudaKernel(const Node& node) : gemm_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const GemmSizes sizes = gemm_.sizes(ctx, a, b);
    require_f32(ctx, a, b);
    if (kernel_output_dtype(ctx, a.dtype()) != a.dtype()) ctx.fail("a wider output_dtype is not supported on CUDA yet");
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "A");
    cuda::require_on_device(ctx, b, "B");
    RowMajorGemm g{.m = sizes.m,
                   .n = sizes.n,
                   .k = sizes.k,
                   .transpose_a = gemm_.transpose_a,
                   .transpose_b = gemm_.transpose_b,
                   .alpha = static_cast<float>(gemm_.alpha)};
    const bool add_c = ctx.has_input(2) && gemm_.beta != 0.0;
    if (add_c) {
      const Tensor& c = ctx.input(2);
      auto broadcast = broadcast_sizes({g.m, g.n}, c.sizes());
      if (c.dtype() != a.dtype() || !broadcast || *broadcast != std::vector<int64_t>{g.m, g.n}) {
        ctx.fail("C " + c.type_string() + " does not broadcast to the product f32[" + std::to_string(g.m) + "," +
                 std::to_string(g.n) + "]");
      }
      cuda::require_on_device(ctx, c, "C");
    }
    Tensor& out = ctx.allocate_output(0, a.dtype(), {g.m, g.n},
                                      g.k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    if (g.k > 0) {
      run_gemm(ctx, g, static_cast<const float*>(a.raw_data()), static_cast<const float*>(b.raw_data()),
               static_cast<float*>(out.raw_data()), stream);
    }
    // Then Y += beta * C, as the CPU kernel does it (after the product, not folded into cuBLAS's beta).
    if (add_c) {
      const Tensor& c = ctx.input(2);
      std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(out.sizes(), out.sizes(), c.sizes());
      cuda::launch_binary(cuda::BinaryOp::kAddScaled, cuda::ElementType::kFloat32, out.raw_data(), c.raw_data(),
                          out.raw_data(), out.num_elements(), *indexing, static_cast<float>(gemm_.beta), stream);
      cuda::check_launch(ctx, "binary_kernel (Y + beta * C)");
    }
  }

 private:
  GemmAttributes gemm_;
};

}  // namespace

void register_matmul_cuda_kernels(KernelRegistry& registry) {
  registry.add("MatMul", DeviceType::kCuda, {DType::kFloat32}, [](const Node&) { return std::make_unique<MatMulCudaKernel>(); });
  registry.add("Gemm", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<GemmCudaKernel>(node); });
}

}  // namespace weir
