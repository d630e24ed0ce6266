#include "ops/linalg/det.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

double lu_determinant(std::vector<double>& a, int64_t n, std::vector<int64_t>& pivots) {
  pivots.assign(static_cast<size_t>(n), 0);
  auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * n + c)]; };
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    // Partial pivoting: the largest magnitude in column k at or below row k.
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::fabs(at(r, k)) > std::fabs(at(pivot, k))) pivot = r;
    }
    pivots[static_cast<size_t>(k)] = pivot;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(at(k, c), at(pivot, c));
      det = -det;
    }
    double diagonal = at(k, k);
    det *= diagonal;
    if (diagonal == 0.0) continue;  // singular (or NaN propagates): the column below is already zero
    for (int64_t r = k + 1; r < n; ++r) {
      double factor = at(r, k) / diagonal;
      at(r, k) = factor;
      if (factor == 0.0) continue;
      for (int64_t c = k + 1; c < n; ++c) at(r, c) -= factor * at(k, c);
    }
  }
  return det;
}

std::vector<double> cofactor_matrix(const std::vector<double>& a, int64_t n) {
  auto size = static_cast<size_t>(n * n);
  std::vector<double> cofactors(size);
  if (n == 1) {
    cofactors[0] = 1.0;
    return cofactors;
  }
  std::vector<double> lu = a;
  std::vector<int64_t> pivots;
  double det = lu_determinant(lu, n, pivots);
  bool invertible = true;
  for (int64_t k = 0; k < n; ++k) invertible = invertible && lu[static_cast<size_t>(k * n + k)] != 0.0;
  if (invertible && std::isfinite(det)) {
    // Column j of inverse(A): solve L U x = P e_j. Then C = det * inverse(A)^T.
    std::vector<double> x(static_cast<size_t>(n));
    auto lu_at = [&](int64_t r, int64_t c) { return lu[static_cast<size_t>(r * n + c)]; };
    auto x_at = [&](int64_t r) -> double& { return x[static_cast<size_t>(r)]; };
    for (int64_t j = 0; j < n; ++j) {
      std::fill(x.begin(), x.end(), 0.0);
      x_at(j) = 1.0;
      for (int64_t k = 0; k < n; ++k) std::swap(x_at(k), x_at(pivots[static_cast<size_t>(k)]));
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < r; ++c) x_at(r) -= lu_at(r, c) * x_at(c);
      }
      for (int64_t r = n; r-- > 0;) {
        for (int64_t c = r + 1; c < n; ++c) x_at(r) -= lu_at(r, c) * x_at(c);
        x_at(r) /= lu_at(r, r);
      }
      // inverse[r][j] = x[r], so C[j][r] = det * x[r].
      for (int64_t r = 0; r < n; ++r) cofactors[static_cast<size_t>(j * n + r)] = det * x_at(r);
    }
    return cofactors;
  }
  // Singular: each cofactor from its minor.
  std::vector<double> minor(static_cast<size_t>((n - 1) * (n - 1)));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      size_t m = 0;
      for (int64_t r = 0; r < n; ++r) {
        if (r == i) continue;
        for (int64_t c = 0; c < n; ++c) {
          if (c != j) minor[m++] = a[static_cast<size_t>(r * n + c)];
        }
      }
      double sign = (i + j) % 2 == 0 ? 1.0 : -1.0;
      cofactors[static_cast<size_t>(i * n + j)] = sign * lu_determinant(minor, n - 1, pivots);
    }
  }
  return cofactors;
}

namespace {

// X as `count` matrices of n x n; fails unless X is [*, n, n].
struct Matrices {
  int64_t count = 0, n = 0;
};

Matrices matrices_of(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() < 2 || x.sizes()[x.sizes().size() - 1] != x.sizes()[x.sizes().size() - 2]) {
    ctx.fail("input " + x.type_string() + " must be [*, M, M]: square matrices in the last two axes");
  }
  Matrices m;
  m.n = x.sizes().back();
  m.count = 1;
  for (size_t a = 0; a + 2 < x.sizes().size(); ++a) m.count *= x.sizes()[a];
  return m;
}

template <typename T>
std::vector<double> load_matrix(const T* data, int64_t index, int64_t n) {
  std::vector<double> a(static_cast<size_t>(n * n));
  const T* src = data + index * n * n;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(load(src[i]));
  return a;
}

class DetKernel final : public OpKernel {
 public:
  explicit DetKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Matrices m = matrices_of(ctx, x);
    std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end() - 2);
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    bool supported = false;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(m.count, 1, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> pivots;
          for (int64_t b = begin; b < end; ++b) {
            std::vector<double> a = load_matrix(in, b, m.n);
            out[b] = store<T>(static_cast<ComputeType<T>>(lu_determinant(a, m.n, pivots)));
          }
        });
      }
    });
    if (!supported) ctx.fail("supports floating-point inputs, got " + x.type_string());
  }
};

// DetGrad(dY, X): dX[b] = dY[b] * cofactor(X[b]).
class DetGradKernel final : public OpKernel {
 public:
  explicit DetGradKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    Matrices m = matrices_of(ctx, x);
    if (dy.dtype() != x.dtype() || dy.num_elements() != m.count || dy.rank() + 2 != x.rank()) {
      ctx.fail("dY " + dy.type_string() + " does not match the determinants of " + x.type_string());
    }
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    bool supported = false;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        const T* in = x.data<T>();
        const T* grad = dy.data<T>();
        T* out = dx.data<T>();
        parallel_for(m.count, 1, [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b) {
            std::vector<double> cofactors = cofactor_matrix(load_matrix(in, b, m.n), m.n);
            auto g = static_cast<double>(load(grad[b]));
            T* dst = out + b * m.n * m.n;
            for (size_t i = 0; i < cofactors.size(); ++i) dst[i] = store<T>(static_cast<ComputeType<T>>(g * cofactors[i]));
          }
        });
      }
    });
    if (!supported) ctx.fail("supports floating-point inputs, got " + x.type_string());
  }
};

void infer_det(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    return;
  }
  const std::vector<Dim>& dims = x->shape.dims();
  if (dims.size() < 2) ctx.fail("input " + x->shape.to_string() + " must be [*, M, M]");
  const Dim& rows = dims[dims.size() - 2];
  const Dim& columns = dims.back();
  if (rows.is_static() && columns.is_static() && rows.size() != columns.size()) {
    ctx.fail("input " + x->shape.to_string() + " must be [*, M, M]: square matrices in the last two axes");
  }
  ctx.set_output_type(0, {x->dtype, Shape(std::vector<Dim>(dims.begin(), dims.end() - 2))});
}

}  // namespace

void register_det_schemas(OpRegistry& registry) {
  OpSchema det("Det");
  det.input("X", "T").output("Y", "T")
      .type_constraint("T", kFloatDTypes)
      .infer(infer_det)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("DetGrad", {grad, ctx.node().input(0)})[0]);
      })
      .doc("the determinant of each matrix of the last two axes, by LU with partial pivoting in f64");
  registry.add(std::move(det));

  OpSchema det_grad("DetGrad");
  det_grad.input("dY", "T").input("X", "T").output("dX", "T")
      .type_constraint("T", kFloatDTypes)
      .infer(infer_gradient_like_input_1)
      .doc("Det's backward: dY times each matrix's cofactor matrix (det(X) inverse(X)^T when invertible)");
  registry.add(std::move(det_grad));
}

void register_det_cpu_kernels(KernelRegistry& registry) {
  registry.add("Det", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<DetKernel>(node); });
  registry.add("DetGrad", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<DetGradKernel>(node); });
}

}  // namespace weir
