#include "ops/linalg/matmul_kernels.h"

#include <algorithm>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/node_attributes.h"
#include "ops/elementwise/broadcast.h"
#include "ops/linalg/dnnl_matmul.h"
#include "ops/linalg/gemm_attributes.h"
#include "ops/linalg/matmul_shapes.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

// C[m, n] (+)= alpha * sum_k op(A)[m, k] * op(B)[k, n], accumulating in
// f64 for floating types and i64 (wrapping on store) for integers.
template <typename T>
void reference_matmul(const MatmulProblem& p, const T* a, const T* b, T* c) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      Acc sum = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        Acc x = static_cast<Acc>(load(a[p.transpose_a ? k * p.m + i : i * p.k + k]));
        Acc y = static_cast<Acc>(load(b[p.transpose_b ? j * p.k + k : k * p.n + j]));
        if constexpr (std::is_integral_v<T>) {
          sum = static_cast<Acc>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        } else {
          sum += x * y;
        }
      }
      if constexpr (std::is_integral_v<T>) {
        // Gemm's alpha is a float even for integer inputs; scale, then truncate.
        int64_t scaled = p.alpha == 1.0f ? sum : static_cast<int64_t>(p.alpha * static_cast<double>(sum));
        c[i * p.n + j] = static_cast<T>(static_cast<uint64_t>(scaled));
      } else {
        c[i * p.n + j] = store<T>(static_cast<ComputeType<T>>(p.alpha * sum));
      }
    }
  }
}

// Runs `problem` (batch included) on the right backend for its dtype.
void run_matmul(DnnlMatmul& dnnl_matmul, const MatmulProblem& problem, const void* a, const void* b, void* c) {
  if (DnnlMatmul::supports(problem.dtype)) {
    dnnl_matmul.run(problem, a, b, c);
    return;
  }
  dispatch_dtype(problem.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = static_cast<const T*>(a);
      const T* pb = static_cast<const T*>(b);
      T* pc = static_cast<T*>(c);
      for (int64_t i = 0; i < problem.batch; ++i) {
        reference_matmul<T>(problem, pa + i * problem.m * problem.k, pb + i * problem.k * problem.n,
                            pc + i * problem.m * problem.n);
      }
    }
  });
}

class MatMulKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatmulShapes shapes = matmul_shapes(ctx, a, b);
    MatmulProblem p{.dtype = a.dtype(), .m = shapes.m, .k = shapes.k, .n = shapes.n};
    Tensor& out = ctx.allocate_output(0, a.dtype(), shapes.out_sizes);

    const size_t element = dtype_size(a.dtype());
    const auto* pa = static_cast<const char*>(a.raw_data());
    const auto* pb = static_cast<const char*>(b.raw_data());
    auto* pc = static_cast<char*>(out.raw_data());
    const int64_t items = sizes_product(shapes.out_batch);
    if (sizes_product(shapes.b_batch) == 1) {
      // B is one matrix: fold A's batch into its rows, one large product.
      p.m *= sizes_product(shapes.a_batch);
      run_matmul(matmul_, p, pa, pb, pc);
    } else if (sizes_product(shapes.a_batch) == items && sizes_product(shapes.b_batch) == items) {
      p.batch = items;  // same batch on both sides
      run_matmul(matmul_, p, pa, pb, pc);
    } else {
      // General broadcast of batch axes: one product per output batch item.
      BroadcastPlan plan(shapes.out_batch, shapes.a_batch, shapes.b_batch);
      const int64_t a_step = p.m * p.k, b_step = p.k * p.n, c_step = p.m * p.n;
      plan.for_each([&](int64_t out_item, int64_t a_item, int64_t b_item, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          run_matmul(matmul_, p, pa + (a_item + i * plan.inner_stride_a()) * a_step * element,
                     pb + (b_item + i * plan.inner_stride_b()) * b_step * element,
                     pc + (out_item + i) * c_step * element);
        }
      });
    }
  }

 private:
  DnnlMatmul matmul_;
};

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const Node& node) : gemm_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const GemmSizes sizes = gemm_.sizes(ctx, a, b);
    MatmulProblem p{.dtype = a.dtype(),
                    .m = sizes.m,
                    .k = sizes.k,
                    .n = sizes.n,
                    .transpose_a = gemm_.transpose_a,
                    .transpose_b = gemm_.transpose_b,
                    .alpha = static_cast<float>(gemm_.alpha)};
    DType out_dtype = kernel_output_dtype(ctx, a.dtype());
    if (out_dtype != a.dtype()) {
      if (ctx.has_input(2)) ctx.fail("a wider output_dtype than the inputs' takes no C");
      p.c_dtype = out_dtype;
    }
    // The product overwrites every element, but for an empty inner dimension, whose sum is zero.
    Tensor& out = ctx.allocate_output(0, out_dtype, {p.m, p.n},
                                      p.k == 0 ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    run_matmul(matmul_, p, a.raw_data(), b.raw_data(), out.raw_data());
    if (ctx.has_input(2) && gemm_.beta != 0.0) add_scaled_c(ctx, ctx.input(2), out);
  }

 private:
  // out += beta * C, with C broadcast to [m, n].
  void add_scaled_c(const KernelContext& ctx, const Tensor& c, Tensor& out) const {
    auto broadcast = broadcast_sizes(out.sizes(), c.sizes());
    if (c.dtype() != out.dtype() || !broadcast || *broadcast != out.sizes()) {
      ctx.fail("C " + c.type_string() + " does not broadcast to the product " + out.type_string());
    }
    BroadcastPlan plan(out.sizes(), out.sizes(), c.sizes());
    dispatch_dtype(out.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* y = out.data<T>();
        const T* pc = c.data<T>();
        const auto beta = static_cast<ComputeType<T>>(gemm_.beta);
        plan.for_each([&](int64_t offset, int64_t, int64_t c_offset, int64_t count) {
          for (int64_t i = 0; i < count; ++i) {
            y[offset + i] = store<T>(load(y[offset + i]) + beta * load(pc[c_offset + i * plan.inner_stride_b()]));
          }
        });
      }
    });
  }

  GemmAttributes gemm_;
  DnnlMatmul matmul_;
};

// FusedMatMul: activation(A B + bias), A's batch folded into its rows.
class FusedMatMulKernel final : public OpKernel {
 public:
  explicit FusedMatMulKernel(const Node& node)
      : activation_(FusedActivation::from_node(node)),
        constant_b_(node.num_inputs() > 1 && node.input(1) != nullptr && node.input(1)->is_constant()) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const FusedMatmulShapes shapes = fused_matmul_shapes(ctx, a, b, bias);
    MatmulProblem p{.dtype = a.dtype(), .m = shapes.m, .k = shapes.k, .n = shapes.n};
    const DType out_dtype = kernel_output_dtype(ctx, a.dtype());
    Tensor& out = ctx.allocate_output(0, out_dtype, shapes.out_sizes, KernelContext::Fill::kZeros);
    if (p.m == 0 || p.n == 0) return;
    if (out_dtype != a.dtype()) {
      // A wide output (f32 from bf16/f16): oneDNN sums in f32 and writes it unrounded.
      if (!DnnlMatmul::supports(p.dtype) || p.k == 0) {
        ctx.fail("writes " + std::string(dtype_name(out_dtype)) + " from " + a.type_string() + " only through oneDNN, with K > 0");
      }
      p.c_dtype = out_dtype;
    }
    if (DnnlMatmul::supports(p.dtype) && p.k > 0) {
      p.bias = bias != nullptr;
      p.activation = activation_;
      p.constant_b = constant_b_;
      matmul_.run(p, a.raw_data(), b.raw_data(), out.raw_data(), bias != nullptr ? bias->raw_data() : nullptr);
      return;
    }
    if (p.k > 0) run_matmul(matmul_, p, a.raw_data(), b.raw_data(), out.raw_data());
    dispatch_dtype(p.dtype, [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* y = out.data<T>();
        const T* pb = bias != nullptr ? bias->data<T>() : nullptr;
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.n; ++j) {
            ComputeType<T> v = load(y[i * p.n + j]);
            if (pb != nullptr) v = v + load(pb[j]);
            y[i * p.n + j] = store<T>(activation_.apply(v));
          }
        }
      }
    });
  }

  std::vector<PackedConstant> packed_constants() const override { return matmul_.packed_weights(); }
  void adopt_packed_constants(std::vector<PackedConstant> packs) override {
    matmul_.adopt_packed_weights(std::move(packs));
  }

 private:
  FusedActivation activation_;
  bool constant_b_;
  DnnlMatmul matmul_;
};

}  // namespace

void register_matmul_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                    DType::kInt32,   DType::kInt64};
  registry.add("MatMul", DeviceType::kCpu, types, [](const Node&) { return std::make_unique<MatMulKernel>(); });
  registry.add("Gemm", DeviceType::kCpu, types, [](const Node& node) { return std::make_unique<GemmKernel>(node); });
  registry.add("FusedMatMul", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16},
               [](const Node& node) { return std::make_unique<FusedMatMulKernel>(node); });
}

}  // namespace weir
