#include "ops/elementwise/logic_kernels.h"

#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/threading.h"

namespace weir {

namespace {

struct EqualOp { template <typename C> static bool apply(C a, C b) { return a == b; } };
struct LessOp { template <typename C> static bool apply(C a, C b) { return a < b; } };
struct GreaterOp { template <typename C> static bool apply(C a, C b) { return a > b; } };
struct LessOrEqualOp { template <typename C> static bool apply(C a, C b) { return a <= b; } };
struct GreaterOrEqualOp { template <typename C> static bool apply(C a, C b) { return a >= b; } };
struct AndOp { template <typename C> static bool apply(C a, C b) { return a && b; } };
struct OrOp { template <typename C> static bool apply(C a, C b) { return a || b; } };
struct XorOp { template <typename C> static bool apply(C a, C b) { return a != b; } };

// out[i] = Op(a, b) as bool, with NumPy broadcasting.
template <typename Op>
class BoolResultKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> sizes = comparison_sizes(ctx, a, b);
    Tensor& out = ctx.allocate_output(0, DType::kBool, sizes, KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(sizes, a.sizes(), b.sizes());
    dispatch_dtype(a.dtype(), [&]<typename T>() {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      bool* po = out.data<bool>();
      parallel_for(plan.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
        plan.for_each_in(begin, end, [&](int64_t o, int64_t ao, int64_t bo, int64_t count) {
          for (int64_t i = 0; i < count; ++i) {
            po[o + i] = Op::apply(load(pa[ao + i * plan.inner_stride_a()]), load(pb[bo + i * plan.inner_stride_b()]));
          }
        });
      });
    });
  }
};

class NotKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kBool) ctx.fail("needs bool, got " + x.type_string());
    Tensor& y = ctx.allocate_output(0, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
    const bool* in = x.data<bool>();
    bool* out = y.data<bool>();
    for (int64_t i = 0; i < x.num_elements(); ++i) out[i] = !in[i];
  }
};

class WhereKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& condition = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const std::vector<int64_t> sizes = where_sizes(ctx, condition, x, y);
    // Three operands: expand the condition to the output first, then walk X and Y.
    std::vector<char> expanded(static_cast<size_t>(Shape::from_sizes(sizes).num_elements()));
    BroadcastPlan condition_plan(sizes, condition.sizes(), condition.sizes());
    const bool* c = condition.data<bool>();
    condition_plan.for_each([&](int64_t o, int64_t co, int64_t, int64_t count) {
      for (int64_t i = 0; i < count; ++i) expanded[static_cast<size_t>(o + i)] = c[co + i * condition_plan.inner_stride_a()];
    });
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(sizes, x.sizes(), y.sizes());
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out.data<T>();
      plan.for_each([&](int64_t o, int64_t xo, int64_t yo, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          po[o + i] = expanded[static_cast<size_t>(o + i)] ? px[xo + i * plan.inner_stride_a()] : py[yo + i * plan.inner_stride_b()];
        }
      });
    });
  }
};

template <typename Kernel>
KernelFactory factory() {
  return [](const Node&) { return std::make_unique<Kernel>(); };
}

}  // namespace

std::vector<int64_t> comparison_sizes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) ctx.fail("inputs are " + a.type_string() + " and " + b.type_string());
  auto sizes = broadcast_sizes(a.sizes(), b.sizes());
  if (!sizes) ctx.fail("cannot broadcast " + a.type_string() + " with " + b.type_string());
  return *sizes;
}

std::vector<int64_t> where_sizes(const KernelContext& ctx, const Tensor& condition, const Tensor& x, const Tensor& y) {
  if (condition.dtype() != DType::kBool || x.dtype() != y.dtype()) {
    ctx.fail("needs a bool condition and X, Y of one dtype, got " + condition.type_string() + ", " + x.type_string() +
             ", " + y.type_string());
  }
  auto xy = broadcast_sizes(x.sizes(), y.sizes());
  auto sizes = xy ? broadcast_sizes(condition.sizes(), *xy) : std::nullopt;
  if (!sizes) ctx.fail("cannot broadcast " + condition.type_string() + ", " + x.type_string() + " and " + y.type_string());
  return *sizes;
}

void register_logic_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType>& numeric = kNumericDTypes;
  std::vector<DType> comparable = numeric;
  comparable.push_back(DType::kBool);
  registry.add("Equal", DeviceType::kCpu, comparable, factory<BoolResultKernel<EqualOp>>());
  registry.add("Less", DeviceType::kCpu, numeric, factory<BoolResultKernel<LessOp>>());
  registry.add("Greater", DeviceType::kCpu, numeric, factory<BoolResultKernel<GreaterOp>>());
  registry.add("LessOrEqual", DeviceType::kCpu, numeric, factory<BoolResultKernel<LessOrEqualOp>>());
  registry.add("GreaterOrEqual", DeviceType::kCpu, numeric, factory<BoolResultKernel<GreaterOrEqualOp>>());
  registry.add("And", DeviceType::kCpu, {DType::kBool}, factory<BoolResultKernel<AndOp>>());
  registry.add("Or", DeviceType::kCpu, {DType::kBool}, factory<BoolResultKernel<OrOp>>());
  registry.add("Xor", DeviceType::kCpu, {DType::kBool}, factory<BoolResultKernel<XorOp>>());
  registry.add("Not", DeviceType::kCpu, {DType::kBool}, factory<NotKernel>());
  // Where's kernel key is its first input, the bool condition.
  registry.add("Where", DeviceType::kCpu, {DType::kBool}, factory<WhereKernel>());
}

}  // namespace weir
