#include "ops/reduce/along_axis_kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

int64_t int_attr(const Node& node, const char* name, int64_t fallback) {
  return node.has_attr(name) ? node.attr(name).i() : fallback;
}

template <typename V>
bool is_nan(V value) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(value);
  else return false;
}

// a > b in an order where NaN is above every number (and equal to NaN).
template <typename V>
bool greater(V a, V b) {
  if (is_nan(a)) return !is_nan(b);
  if (is_nan(b)) return false;
  return a > b;
}

// ArgMax / ArgMin: NaN wins (as NumPy's argmax and argmin return it).
class ArgExtremumKernel final : public OpKernel {
 public:
  ArgExtremumKernel(const Node& node, bool max)
      : axis_(int_attr(node, "axis", 0)),
        keepdims_(int_attr(node, "keepdims", 1) != 0),
        last_(int_attr(node, "select_last_index", 0) != 0),
        max_(max) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    AxisSplit split = split_at(ctx, x.sizes(), axis_);
    int64_t axis = resolve_axis(ctx, axis_, x.sizes().size());
    std::vector<int64_t> sizes = x.sizes();
    if (keepdims_) sizes[static_cast<size_t>(axis)] = 1;
    else sizes.erase(sizes.begin() + axis);
    if (split.n == 0 && split.outer * split.inner > 0) ctx.fail("cannot take the index of an extremum over an empty axis");
    Tensor& y = ctx.allocate_output(0, DType::kInt64, sizes, KernelContext::Fill::kUninitialized);
    int64_t* out = y.data<int64_t>();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool has no order");
      } else {
        const T* in = x.data<T>();
        for_each_line(split, [&](int64_t base, int64_t stride) {
          ComputeType<T> best = load(in[base]);
          int64_t chosen = 0;
          for (int64_t j = 1; j < split.n; ++j) {
            ComputeType<T> v = load(in[base + j * stride]);
            bool better = max_ ? greater(v, best) : (is_nan(v) && !is_nan(best)) || (!is_nan(best) && v < best);
            bool tie = !greater(v, best) && !greater(best, v);
            if (better || (last_ && tie)) {
              best = v;
              chosen = j;
            }
          }
          // Line (o, i) starts at o * n * inner + i; its result sits at o * inner + i.
          int64_t o = base / (split.n * split.inner), i = base % split.inner;
          out[o * split.inner + i] = chosen;
        });
      }
    });
  }

 private:
  int64_t axis_;
  bool keepdims_, last_, max_;
};

class CumSumKernel final : public OpKernel {
 public:
  explicit CumSumKernel(const Node& node)
      : exclusive_(int_attr(node, "exclusive", 0) != 0), reverse_(int_attr(node, "reverse", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axis = index_values(ctx, ctx.input(1), "axis");
    if (axis.size() != 1) ctx.fail("axis must hold one value, got " + ctx.input(1).type_string());
    AxisSplit split = split_at(ctx, x.sizes(), axis[0]);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("cannot sum bool");
      } else {
        using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;  // unsigned: integers wrap
        using Signed = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        for_each_line(split, [&](int64_t base, int64_t stride) {
          Acc sum = 0;
          for (int64_t step = 0; step < split.n; ++step) {
            int64_t offset = base + (reverse_ ? split.n - 1 - step : step) * stride;
            auto value = static_cast<Acc>(load(in[offset]));
            if (!exclusive_) sum += value;
            out[offset] = store<T>(static_cast<ComputeType<T>>(static_cast<Signed>(sum)));
            if (exclusive_) sum += value;
          }
        });
      }
    });
  }

 private:
  bool exclusive_, reverse_;
};

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const Node& node) : axis_(int_attr(node, "axis", -1)), largest_(int_attr(node, "largest", 1) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> k_values = index_values(ctx, ctx.input(1), "K");
    AxisSplit split = split_at(ctx, x.sizes(), axis_);
    if (k_values.size() != 1 || k_values[0] < 0 || k_values[0] > split.n) {
      ctx.fail("K " + format_sizes(k_values) + " must be one value in [0, " + std::to_string(split.n) + "], the size of axis " +
               std::to_string(axis_) + " of " + x.type_string());
    }
    int64_t k = k_values[0];
    std::vector<int64_t> sizes = x.sizes();
    sizes[static_cast<size_t>(resolve_axis(ctx, axis_, sizes.size()))] = k;
    Tensor& values = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    Tensor& indices = ctx.allocate_output(1, DType::kInt64, sizes, KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool has no order");
      } else {
        const T* in = x.data<T>();
        T* out = values.data<T>();
        int64_t* chosen = indices.data<int64_t>();
        for_each_line(split, [&](int64_t base, int64_t stride) {
          std::vector<int64_t> order(static_cast<size_t>(split.n));
          std::iota(order.begin(), order.end(), 0);
          auto at = [&](int64_t j) { return load(in[base + j * stride]); };
          // Best first; equal values in index order, which makes the order total.
          auto precedes = [&](int64_t a, int64_t b) {
            auto va = at(a), vb = at(b);
            bool a_first = largest_ ? greater(va, vb) : greater(vb, va);
            bool b_first = largest_ ? greater(vb, va) : greater(va, vb);
            return a_first || (!b_first && a < b);
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), precedes);
          int64_t o = base / (split.n * split.inner), i = base % split.inner;
          int64_t out_base = o * k * split.inner + i;
          for (int64_t j = 0; j < k; ++j) {
            out[out_base + j * split.inner] = in[base + order[static_cast<size_t>(j)] * stride];
            chosen[out_base + j * split.inner] = order[static_cast<size_t>(j)];
          }
        });
      }
    });
  }

 private:
  int64_t axis_;
  bool largest_;
};

}  // namespace

void register_along_axis_cpu_kernels(KernelRegistry& registry) {
  registry.add("ArgMax", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<ArgExtremumKernel>(node, true); });
  registry.add("ArgMin", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<ArgExtremumKernel>(node, false); });
  registry.add("CumSum", DeviceType::kCpu,
               {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64},
               [](const Node& node) { return std::make_unique<CumSumKernel>(node); });
  registry.add("TopK", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<TopKKernel>(node); });
}

}  // namespace weir
