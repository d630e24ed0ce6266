#include "ops/reduce/reduce_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/cpu_clones.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise/broadcast.h"
#include "ops/reduce/reduce_axes.h"
#include "ops/tensor/indexing.h"
#include "ops/threading.h"

namespace weir {

namespace {

// The identity of the reduction, in the accumulator type; integer max/min
// start at the limits of the storage type T so empty sets give T's limits.
template <typename T, typename Acc>
Acc initial(Reduction kind) {
  switch (kind) {
    case Reduction::kProd: return Acc(1);
    case Reduction::kMax:
      if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
      else return static_cast<Acc>(std::numeric_limits<T>::lowest());
    case Reduction::kMin:
      if constexpr (std::is_floating_point_v<Acc>) return std::numeric_limits<Acc>::infinity();
      else return static_cast<Acc>(std::numeric_limits<T>::max());
    default: return Acc(0);
  }
}

template <typename Acc>
Acc wrapping_add(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}

template <typename Acc>
Acc wrapping_mul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

template <typename Acc>
bool is_nan(Acc value) {
  if constexpr (std::is_floating_point_v<Acc>) return std::isnan(value);
  else return false;
}

// Folds x into the accumulator; `shift` is the per-output max for LogSumExp.
template <typename Acc>
Acc accumulate(Reduction kind, Acc acc, Acc x, Acc shift) {
  switch (kind) {
    case Reduction::kSum:
    case Reduction::kMean:
    case Reduction::kLogSum: return wrapping_add(acc, x);
    // NaN propagates: once acc is NaN no comparison replaces it.
    case Reduction::kMax: return (x > acc || is_nan(x)) && !is_nan(acc) ? x : acc;
    case Reduction::kMin: return (x < acc || is_nan(x)) && !is_nan(acc) ? x : acc;
    case Reduction::kProd: return wrapping_mul(acc, x);
    case Reduction::kL1: return wrapping_add(acc, x < 0 ? Acc(0) - x : x);
    case Reduction::kL2:
    case Reduction::kSumSquare: return wrapping_add(acc, wrapping_mul(x, x));
    case Reduction::kLogSumExp:
      if constexpr (std::is_floating_point_v<Acc>) return acc + std::exp(x - shift);
      else return acc;
  }
  return acc;
}

template <typename Acc>
Acc finish(Reduction kind, Acc acc, int64_t count, Acc shift) {
  switch (kind) {
    case Reduction::kMean:
      if constexpr (std::is_floating_point_v<Acc>) return acc / static_cast<Acc>(count);
      else return count == 0 ? Acc(0) : acc / count;
    case Reduction::kL2:
      if constexpr (std::is_floating_point_v<Acc>) return std::sqrt(acc);
      else return static_cast<Acc>(std::sqrt(static_cast<double>(acc)));
    case Reduction::kLogSum:
      if constexpr (std::is_floating_point_v<Acc>) return std::log(acc);
      else return acc;
    case Reduction::kLogSumExp:
      if constexpr (std::is_floating_point_v<Acc>) return std::isinf(shift) ? shift : shift + std::log(acc);
      else return acc;
    default: return acc;
  }
}

// Sums `rows` rows of `width` (at most kSumColumns) f32 values, `stride`
// apart, into f64 sums: row after row, the general path's order, with the
// sums in registers. Compiled for AVX-512, AVX2 and the baseline, picked at
// load time: the build targets baseline x86-64, whose 2-lane f64 adds made
// SqueezeNet's 13x13x1000 global pool cost 26-33 us.
constexpr int64_t kSumColumns = 32;
WEIR_CPU_CLONES void sum_rows_f32(const float* in, int64_t rows,
                                                                               int64_t stride, int64_t width,
                                                                               double* sums) {
  double a[kSumColumns] = {};
  if (width == kSumColumns) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * stride;
      for (int64_t j = 0; j < kSumColumns; ++j) a[j] += static_cast<double>(row[j]);
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * stride;
      for (int64_t j = 0; j < width; ++j) a[j] += static_cast<double>(row[j]);
    }
  }
  std::copy(a, a + width, sums);
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const Node& node, Reduction kind) : axes_(ReduceAxes::of(node)), kind_(kind) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    ReduceAxes axes = axes_;
    if (ctx.has_input(1)) axes.axes = index_values(ctx, ctx.input(1), "axes");
    std::vector<bool> reduced = axes.resolve(x.rank(), [&](const std::string& message) { ctx.fail(message); });
    std::vector<int64_t> kept = ReduceAxes::kept_sizes(x.sizes(), reduced);
    Tensor& y = ctx.allocate_output(0, x.dtype(), axes.output_sizes(x.sizes(), reduced),
                                    KernelContext::Fill::kUninitialized);
    int64_t count = 1;
    for (size_t i = 0; i < reduced.size(); ++i) {
      if (reduced[i]) count *= x.sizes()[i];
    }
    if (middle_block(x, reduced, y)) return;
    BroadcastPlan plan(x.sizes(), x.sizes(), kept);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("cannot reduce bool");
      } else {
        using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
        const T* in = x.data<T>();
        // LogSumExp subtracts each output's maximum first: a max pass, then the sum.
        std::vector<Acc> shift(static_cast<size_t>(y.num_elements()), Acc(0));
        if (kind_ == Reduction::kLogSumExp) {
          shift.assign(shift.size(), initial<T, Acc>(Reduction::kMax));
          fold(plan, in, Reduction::kMax, shift, shift);
        }
        std::vector<Acc> acc(shift.size(), initial<T, Acc>(kind_));
        fold(plan, in, kind_, acc, shift);
        T* out = y.data<T>();
        for (size_t i = 0; i < acc.size(); ++i) {
          out[i] = store<T>(static_cast<ComputeType<T>>(finish(kind_, acc[i], count, shift[i])));
        }
      }
    });
  }

 private:
  // Sum, mean, max and min of f32/f64 over one contiguous block of axes with
  // kept axes inside it ([outer, R, inner], inner > 1: a global pool on
  // channels-last data, [N, H*W, C]): whole rows of `inner` accumulate into
  // a row of f64 sums, which vectorizes, with outer rows (and for a batch
  // of one, blocks of columns) split across threads. Same order of additions per output as the general path.
  bool middle_block(const Tensor& x, const std::vector<bool>& reduced, Tensor& y) const {
    if (kind_ != Reduction::kSum && kind_ != Reduction::kMean && kind_ != Reduction::kMax && kind_ != Reduction::kMin) return false;
    if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) return false;
    size_t first = reduced.size(), last = 0;
    for (size_t i = 0; i < reduced.size(); ++i) {
      if (reduced[i] && x.sizes()[i] != 1) {
        first = std::min(first, i);
        last = i;
      }
    }
    if (first == reduced.size()) return false;
    for (size_t i = first; i <= last; ++i) {
      if (!reduced[i] && x.sizes()[i] != 1) return false;
    }
    int64_t outer = 1, rows = 1, inner = 1;
    for (size_t i = 0; i < reduced.size(); ++i) (i < first ? outer : i <= last ? rows : inner) *= x.sizes()[i];
    if (inner < 2 || x.num_elements() == 0) return false;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        const Reduction kind = kind_;
        // Batch 1 has one outer row: columns are split too, so both threads work.
        const int64_t columns = outer >= 2 ? inner : std::min<int64_t>(inner, 256);
        const int64_t pieces = (inner + columns - 1) / columns;
        parallel_for(outer * pieces, 1, [&](int64_t begin, int64_t end) {
          std::vector<double> acc(static_cast<size_t>(columns));
          for (int64_t job = begin; job < end; ++job) {
            const int64_t o = job / pieces, j0 = (job % pieces) * columns, width = std::min(columns, inner - j0);
            const T* block = in + o * rows * inner + j0;
            T* dst = out + o * inner + j0;
            double* __restrict a = acc.data();
            if (kind == Reduction::kSum || kind == Reduction::kMean) {
              if constexpr (std::is_same_v<T, float>) {
                for (int64_t j = 0; j < width; j += kSumColumns) {
                  sum_rows_f32(block + j, rows, inner, std::min(kSumColumns, width - j), a + j);
                }
              } else {
                std::fill(acc.begin(), acc.end(), 0.0);
                for (int64_t r = 0; r < rows; ++r) {
                  const T* __restrict row = block + r * inner;
                  for (int64_t j = 0; j < width; ++j) a[j] += static_cast<double>(row[j]);
                }
              }
              const auto count = static_cast<double>(rows);
              for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<T>(kind == Reduction::kMean ? a[j] / count : a[j]);
            } else {
              std::fill(acc.begin(), acc.end(), initial<T, double>(kind));
              for (int64_t r = 0; r < rows; ++r) {
                const T* row = block + r * inner;
                for (int64_t j = 0; j < width; ++j) a[j] = accumulate(kind, a[j], static_cast<double>(row[j]), 0.0);
              }
              for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<T>(a[j]);
            }
          }
        });
      }
    });
    return true;
  }

  // acc[output] = accumulate(acc[output], x) over the input in order. `shift`
  // is read only by LogSumExp; the max pass may pass acc itself.
  template <typename T, typename Acc>
  static void fold(const BroadcastPlan& plan, const T* in, Reduction kind, std::vector<Acc>& acc,
                   const std::vector<Acc>& shift) {
    const int64_t stride = plan.inner_stride_b();
    plan.for_each([&](int64_t, int64_t x_offset, int64_t out_offset, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        auto slot = static_cast<size_t>(out_offset + i * stride);
        acc[slot] = accumulate(kind, acc[slot], static_cast<Acc>(load(in[x_offset + i])), shift[slot]);
      }
    });
  }

  ReduceAxes axes_;
  Reduction kind_;
};

// dY broadcast back over the reduced axes (BroadcastReduced), or only where X
// equals the reduced Y (ReduceExtremumGrad).
class ReduceBackwardKernel final : public OpKernel {
 public:
  ReduceBackwardKernel(const Node& node, bool extremum)
      : axes_(ReduceAxes::of(node)), mean_(reduce_backward_mean(node)), extremum_(extremum) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const ReduceBackwardShape shape = reduce_backward_shape(ctx, axes_, extremum_);
    const std::vector<int64_t>& kept = shape.kept;
    const int64_t count = shape.count;
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(x.sizes(), x.sizes(), kept);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool has no gradient");
      } else {
        const T* g = dy.data<T>();
        T* out = dx.data<T>();
        const T* xs = extremum_ ? x.data<T>() : nullptr;
        const T* ys = extremum_ ? ctx.input(2).data<T>() : nullptr;
        const int64_t stride = plan.inner_stride_b();
        plan.for_each([&](int64_t position, int64_t, int64_t slot_offset, int64_t run) {
          for (int64_t i = 0; i < run; ++i) {
            int64_t slot = slot_offset + i * stride;
            ComputeType<T> value = load(g[slot]);
            if (mean_) value = value / static_cast<ComputeType<T>>(count);
            if (extremum_ && !(load(xs[position + i]) == load(ys[slot]))) value = 0;
            out[position + i] = store<T>(value);
          }
        });
      }
    });
  }

 private:
  ReduceAxes axes_;
  bool mean_;
  bool extremum_;
};

// dX = dY * (product of the other elements of X's reduced set). Per set, the
// product of its nonzero elements and how many zeros it holds decide each
// element's cofactor, so zeros in X never divide (the Y / x shortcut would).
class ReduceProdGradKernel final : public OpKernel {
 public:
  explicit ReduceProdGradKernel(const Node& node) : axes_(ReduceAxes::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    std::vector<bool> reduced = axes_.resolve(x.rank(), [&](const std::string& message) { ctx.fail(message); });
    std::vector<int64_t> kept = ReduceAxes::kept_sizes(x.sizes(), reduced);
    int64_t outputs = 1;
    for (int64_t size : kept) outputs *= size;
    if (dy.num_elements() != outputs || dy.dtype() != x.dtype()) {
      ctx.fail("dY " + dy.type_string() + " does not match the reduction of X " + x.type_string());
    }
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(x.sizes(), x.sizes(), kept);
    const int64_t stride = plan.inner_stride_b();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool has no gradient");
      } else {
        using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
        const T* xs = x.data<T>();
        std::vector<Acc> nonzero_product(static_cast<size_t>(outputs), Acc(1));
        std::vector<int64_t> zeros(static_cast<size_t>(outputs), 0);
        plan.for_each([&](int64_t position, int64_t, int64_t slot_offset, int64_t run) {
          for (int64_t i = 0; i < run; ++i) {
            auto slot = static_cast<size_t>(slot_offset + i * stride);
            auto value = static_cast<Acc>(load(xs[position + i]));
            if (value == Acc(0)) ++zeros[slot];
            else nonzero_product[slot] = wrapping_mul(nonzero_product[slot], value);
          }
        });
        const T* g = dy.data<T>();
        T* out = dx.data<T>();
        plan.for_each([&](int64_t position, int64_t, int64_t slot_offset, int64_t run) {
          for (int64_t i = 0; i < run; ++i) {
            auto slot = static_cast<size_t>(slot_offset + i * stride);
            auto value = static_cast<Acc>(load(xs[position + i]));
            Acc cofactor = Acc(0);
            if (zeros[slot] == 0) cofactor = nonzero_product[slot] / value;
            else if (zeros[slot] == 1 && value == Acc(0)) cofactor = nonzero_product[slot];
            auto grad = static_cast<Acc>(load(g[slot]));
            out[position + i] = store<T>(static_cast<ComputeType<T>>(wrapping_mul(grad, cofactor)));
          }
        });
      }
    });
  }

 private:
  ReduceAxes axes_;
};

}  // namespace

ReduceBackwardShape reduce_backward_shape(const KernelContext& ctx, const ReduceAxes& axes, bool extremum) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  ReduceBackwardShape shape;
  shape.reduced = axes.resolve(x.rank(), [&](const std::string& message) { ctx.fail(message); });
  shape.kept = ReduceAxes::kept_sizes(x.sizes(), shape.reduced);
  for (int64_t size : shape.kept) shape.outputs *= size;
  if (dy.num_elements() != shape.outputs) {
    ctx.fail("dY " + dy.type_string() + " does not match the reduction of X " + x.type_string());
  }
  if (extremum && (ctx.input(2).num_elements() != shape.outputs || ctx.input(2).dtype() != x.dtype())) {
    ctx.fail("Y " + ctx.input(2).type_string() + " does not match the reduction of X " + x.type_string());
  }
  shape.count = shape.outputs == 0 ? 0 : x.num_elements() / shape.outputs;
  return shape;
}

bool reduce_backward_mean(const Node& node) { return node.has_attr("mean") && node.attr("mean").i() != 0; }

const std::vector<ReduceOpEntry>& reduce_ops() {
  static const std::vector<ReduceOpEntry> ops = {
      {"ReduceSum", Reduction::kSum, false},         {"ReduceMean", Reduction::kMean, false},
      {"ReduceMax", Reduction::kMax, false},         {"ReduceMin", Reduction::kMin, false},
      {"ReduceProd", Reduction::kProd, false},       {"ReduceL1", Reduction::kL1, false},
      {"ReduceL2", Reduction::kL2, true},            {"ReduceSumSquare", Reduction::kSumSquare, false},
      {"ReduceLogSum", Reduction::kLogSum, true},    {"ReduceLogSumExp", Reduction::kLogSumExp, true}};
  return ops;
}

const std::vector<DType>& reduce_floating_types() {
  static const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  return types;
}

const std::vector<DType>& reduce_numeric_types() {
  static const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                           DType::kInt32,   DType::kInt64};
  return types;
}

void register_reduce_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType>& numeric = reduce_numeric_types();
  for (const ReduceOpEntry& op : reduce_ops()) {
    Reduction kind = op.reduction;
    registry.add(op.name, DeviceType::kCpu, op.floating_only ? reduce_floating_types() : numeric,
                 [kind](const Node& node) { return std::make_unique<ReduceKernel>(node, kind); });
  }
  registry.add("BroadcastReduced", DeviceType::kCpu, numeric,
               [](const Node& node) { return std::make_unique<ReduceBackwardKernel>(node, /*extremum=*/false); });
  registry.add("ReduceExtremumGrad", DeviceType::kCpu, numeric,
               [](const Node& node) { return std::make_unique<ReduceBackwardKernel>(node, /*extremum=*/true); });
  registry.add("ReduceProdGrad", DeviceType::kCpu, numeric,
               [](const Node& node) { return std::make_unique<ReduceProdGradKernel>(node); });
}

}  // namespace weir
