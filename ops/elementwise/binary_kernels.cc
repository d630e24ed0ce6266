#include "ops/elementwise/binary_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/scalar_ops.h"
#include "ops/threading.h"

namespace weir {

namespace {

using elementwise::AddOp;
using elementwise::DivOp;
using elementwise::MaxOp;
using elementwise::MinOp;
using elementwise::MulOp;
using elementwise::SubOp;
using elementwise::Wide;

// Integer powers by squaring (wrapping like Mul); a negative exponent gives
// 1/base^n truncated: 1 for base 1, +-1 for base -1, else 0.
struct PowOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) return a == 1 ? C(1) : (a == C(-1) ? ((b & 1) ? a : C(1)) : C(0));
      }
      Wide<C> result = 1, base = static_cast<Wide<C>>(a);
      for (auto e = static_cast<Wide<C>>(b); e != 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<C>(result);
    } else {
      return std::pow(a, b);
    }
  }
};
// Mod with fmod=0: the remainder takes the divisor's sign (Python's %).
struct ModOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return C(0);  // min % -1 overflows in C++
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      if (r != C(0) && ((r < C(0)) != (b < C(0)))) r += b;
      return r;
    }
  }
};
// Mod with fmod=1: the remainder takes the dividend's sign (C's fmod).
struct FmodOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return C(0);
      }
      return static_cast<C>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
// BitShift on unsigned integers. A shift by the width or more gives 0 (C++
// leaves it undefined; no bit of A survives it).
struct ShiftLeftOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_unsigned_v<C>) {
      if (b >= sizeof(C) * 8) return C(0);
      return static_cast<C>(static_cast<Wide<C>>(a) << b);
    } else {
      return a;  // not registered: BitShift takes unsigned types only
    }
  }
};
struct ShiftRightOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_unsigned_v<C>) {
      if (b >= sizeof(C) * 8) return C(0);
      return static_cast<C>(a >> b);
    } else {
      return a;
    }
  }
};

template <typename Op>
constexpr bool kChecksZeroDivisor = std::is_same_v<Op, DivOp> || std::is_same_v<Op, ModOp> || std::is_same_v<Op, FmodOp>;

template <typename Op>
class BinaryKernel final : public OpKernel {
 public:
  explicit BinaryKernel(const Node& node) : dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> out_sizes = binary_output_sizes(ctx, a, b, dtype_);
    Tensor& out = ctx.allocate_output(0, dtype_, out_sizes, KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(out_sizes, a.sizes(), b.sizes());
    dispatch_dtype(dtype_, [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("bool is not an arithmetic type");
      } else {
        if constexpr (kChecksZeroDivisor<Op> && std::is_integral_v<T>) check_no_zero<T>(ctx, b);
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        parallel_for(plan.num_elements(), kElementwiseGrain,
                     [&](int64_t begin, int64_t end) { run<T>(plan, begin, end, pa, pb, po); });
      }
    });
  }

 private:
  template <typename T>
  static void check_no_zero(const KernelContext& ctx, const Tensor& divisor) {
    const T* data = divisor.data<T>();
    for (int64_t i = 0; i < divisor.num_elements(); ++i) {
      if (data[i] == 0) ctx.fail("integer division by zero (divisor element " + std::to_string(i) + ")");
    }
  }


 public:
  template <typename T>
  static void run(const BroadcastPlan& plan, int64_t begin, int64_t end, const T* a, const T* b, T* out) {
    const int64_t sa = plan.inner_stride_a();
    const int64_t sb = plan.inner_stride_b();
    plan.for_each_in(begin, end, [&](int64_t out_offset, int64_t a_offset, int64_t b_offset, int64_t count) {
      const T* pa = a + a_offset;
      const T* pb = b + b_offset;
      T* po = out + out_offset;
      // The common unit-stride cases get their own loops so they vectorize.
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < count; ++i) po[i] = store<T>(Op::apply(load(pa[i]), load(pb[i])));
      } else if (sa == 1) {
        const ComputeType<T> vb = load(*pb);
        for (int64_t i = 0; i < count; ++i) po[i] = store<T>(Op::apply(load(pa[i]), vb));
      } else if (sb == 1) {
        const ComputeType<T> va = load(*pa);
        for (int64_t i = 0; i < count; ++i) po[i] = store<T>(Op::apply(va, load(pb[i])));
      } else {
        const T value = store<T>(Op::apply(load(*pa), load(*pb)));
        for (int64_t i = 0; i < count; ++i) po[i] = value;
      }
    });
  }

 private:
  DType dtype_;
};

// Max / Min / Sum / Mean over any number of inputs, broadcast together,
// folded left to right into the output itself: the output is where the
// memory planner placed it, and the fold needs no temporaries (the sizes
// an input broadcasts to do not change the values).
template <typename Op>
class VariadicKernel final : public OpKernel {
 public:
  explicit VariadicKernel(bool mean = false) : mean_(mean) {}

  void compute(KernelContext& ctx) override {
    const Tensor& first = ctx.input(0);
    const std::vector<int64_t> sizes = variadic_output_sizes(ctx);
    if (ctx.num_inputs() == 1 && !mean_) {
      ctx.set_output(0, first);
      return;
    }
    Tensor* result = &ctx.allocate_output(0, first.dtype(), sizes, KernelContext::Fill::kUninitialized);
    // The fold reads input i after writing the output for inputs before it:
    // an output over any input but exactly input 0 (which is read only at
    // the element being written) folds into a fresh tensor instead.
    Tensor fresh;
    if (variadic_output_overlaps_an_input(ctx, *result)) {
      fresh = Tensor::uninitialized(first.dtype(), sizes, ctx.allocator());
      result = &fresh;
    }
    Tensor& acc = *result;
    dispatch_dtype(first.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* po = acc.data<T>();
        if (ctx.num_inputs() == 1) std::copy(first.data<T>(), first.data<T>() + first.num_elements(), po);  // Mean of one
        for (size_t i = 1; i < ctx.num_inputs(); ++i) {
          // Input 0 the first time, the sum so far (the output, read and
          // written at the same element) after.
          const Tensor& left = i == 1 ? first : acc;
          const Tensor& next = ctx.input(i);
          BroadcastPlan plan(sizes, left.sizes(), next.sizes());
          const T* pa = left.data<T>();
          const T* pb = next.data<T>();
          parallel_for(plan.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
            BinaryKernel<Op>::template run<T>(plan, begin, end, pa, pb, po);
          });
        }
      }
    });
    if (mean_) {  // Mean: the sum over the count, in place
      double count = static_cast<double>(ctx.num_inputs());
      dispatch_dtype(acc.dtype(), [&]<typename T>() {
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          T* out = acc.data<T>();
          for (int64_t i = 0; i < acc.num_elements(); ++i) out[i] = store<T>(load(out[i]) / static_cast<ComputeType<T>>(count));
        } else {
          ctx.fail("Mean needs a floating-point input, got " + acc.type_string());
        }
      });
    }
    if (fresh.defined()) ctx.set_output(0, fresh);
  }

 private:
  bool mean_;
};

template <typename Op>
KernelFactory factory() {
  return [](const Node& node) { return std::make_unique<BinaryKernel<Op>>(node); };
}

}  // namespace

std::vector<int64_t> binary_output_sizes(KernelContext& ctx, const Tensor& a, const Tensor& b, DType dtype) {
  if (a.dtype() != dtype || b.dtype() != dtype) {
    ctx.fail("inputs are " + std::string(dtype_name(a.dtype())) + " and " + std::string(dtype_name(b.dtype())) +
             "; this kernel was built for " + std::string(dtype_name(dtype)));
  }
  std::optional<std::vector<int64_t>> sizes = broadcast_sizes(a.sizes(), b.sizes());
  if (!sizes) ctx.fail("cannot broadcast " + a.type_string() + " with " + b.type_string());
  return std::move(*sizes);
}

std::vector<int64_t> variadic_output_sizes(const KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  std::vector<int64_t> sizes = first.sizes();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& next = ctx.input(i);
    if (next.dtype() != first.dtype()) {
      ctx.fail("input " + std::to_string(i) + " is " + next.type_string() + "; input 0 is " + first.type_string());
    }
    auto folded = broadcast_sizes(sizes, next.sizes());
    if (!folded) {
      ctx.fail("cannot broadcast " + std::string(dtype_name(first.dtype())) + format_sizes(sizes) + " with input " +
               std::to_string(i) + " " + next.type_string());
    }
    sizes = std::move(*folded);
  }
  return sizes;
}

bool variadic_output_overlaps_an_input(const KernelContext& ctx, const Tensor& out) {
  const auto* begin = static_cast<const char*>(out.raw_data());
  const char* end = begin + out.nbytes();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    const auto* in_begin = static_cast<const char*>(in.raw_data());
    const char* in_end = in_begin + in.nbytes();
    if (in_begin >= end || in_end <= begin) continue;
    if (i == 0 && in_begin == begin && in.sizes() == out.sizes()) continue;
    return true;
  }
  return false;
}

void register_binary_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType>& numeric = kNumericDTypes;
  registry.add("Add", DeviceType::kCpu, numeric, factory<AddOp>());
  registry.add("Sub", DeviceType::kCpu, numeric, factory<SubOp>());
  registry.add("Mul", DeviceType::kCpu, numeric, factory<MulOp>());
  registry.add("Div", DeviceType::kCpu, numeric, factory<DivOp>());
  registry.add("Pow", DeviceType::kCpu, numeric, factory<PowOp>());
  registry.add("Mod", DeviceType::kCpu, numeric, [](const Node& node) -> std::unique_ptr<OpKernel> {
    bool fmod = node.has_attr("fmod") && node.attr("fmod").i() != 0;
    if (fmod) return std::make_unique<BinaryKernel<FmodOp>>(node);
    if (is_floating(kernel_dtype(node))) {
      throw Error(ErrorKind::kInvalidArgument, "Mod '" + node.name() + "': floating-point inputs need fmod=1")
          .with_node(node.name());
    }
    return std::make_unique<BinaryKernel<ModOp>>(node);
  });
  registry.add("BitShift", DeviceType::kCpu, {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64},
               [](const Node& node) -> std::unique_ptr<OpKernel> {
                 if (node.attr("direction").s() == "LEFT") return std::make_unique<BinaryKernel<ShiftLeftOp>>(node);
                 return std::make_unique<BinaryKernel<ShiftRightOp>>(node);
               });
  registry.add("Max", DeviceType::kCpu, numeric, [](const Node&) { return std::make_unique<VariadicKernel<MaxOp>>(); });
  registry.add("Min", DeviceType::kCpu, numeric, [](const Node&) { return std::make_unique<VariadicKernel<MinOp>>(); });
  registry.add("Sum", DeviceType::kCpu, numeric, [](const Node&) { return std::make_unique<VariadicKernel<AddOp>>(); });
  registry.add("Mean", DeviceType::kCpu, kFloatDTypes,
               [](const Node&) { return std::make_unique<VariadicKernel<AddOp>>(/*mean=*/true); });
}

}  // namespace weir
