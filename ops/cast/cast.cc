#include "ops/cast/cast.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/threading.h"

namespace weir {

namespace {

template <typename To, typename From>
To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return load(value) != ComputeType<From>(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return store<To>(static_cast<ComputeType<To>>(value ? 1 : 0));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<ComputeType<From>>) {
    auto x = static_cast<double>(load(value));
    if (std::isnan(x)) return To(0);
    if (x <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else if constexpr (std::is_integral_v<To>) {
    return static_cast<To>(value);  // integer to integer: modular (defined since C++20)
  } else {
    return store<To>(static_cast<ComputeType<To>>(load(value)));
  }
}

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const Node& node) : to_(cast_target(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == to_) {
      ctx.set_output(0, x);
      return;
    }
    Tensor& y = ctx.allocate_output(0, to_, x.sizes(), KernelContext::Fill::kUninitialized);
    cast_elements(x.dtype(), x.raw_data(), to_, y.raw_data(), x.num_elements());
  }

 private:
  DType to_;
};

}  // namespace

DType cast_target(const Node& node) {
  const auto to = static_cast<DType>(node.attr("to").i());
  if (!is_valid_dtype(static_cast<int32_t>(to))) {
    throw Error(ErrorKind::kInvalidArgument, "Cast 'to' = " + std::to_string(node.attr("to").i()) +
                                                 " is not a Weir dtype code").with_node(node.name());
  }
  return to;
}

void cast_elements(DType from, const void* in, DType to, void* out, int64_t count) {
  dispatch_dtype(from, [&]<typename From>() {
    dispatch_dtype(to, [&]<typename To>() {
      const From* source = static_cast<const From*>(in);
      To* destination = static_cast<To*>(out);
      parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) destination[i] = convert<To>(source[i]);
      });
    });
  });
}

void register_cast_schema(OpRegistry& registry) {
  OpSchema cast("Cast");
  cast.input("input", "T1")
      .output("output", "T2")
      .type_constraint("T1", {std::begin(kAllDTypes), std::end(kAllDTypes)})
      .type_constraint("T2", {std::begin(kAllDTypes), std::end(kAllDTypes)})
      .required_attr("to", AttrType::kInt)
      .traits(OpTrait::kElementwise | OpTrait::kViewOfInput)
      .infer([](InferenceContext& ctx) {
        int64_t to = ctx.attr_int("to");
        if (!is_valid_dtype(static_cast<int32_t>(to))) ctx.fail("'to' = " + std::to_string(to) + " is not a Weir dtype code");
        if (const TensorType* input = ctx.input_type(0)) ctx.set_output_type(0, TensorType{static_cast<DType>(to), input->shape});
      })
      .gradient([](GradientContext& ctx) {
        // Between floating types the gradient casts back; other casts are flat.
        Value* grad = ctx.output_grad(0);
        DType from = ctx.node().input(0)->dtype();
        if (grad == nullptr || !is_floating(from) || !is_floating(ctx.node().output(0)->dtype())) return;
        ctx.set_input_grad(0, ctx.emit("Cast", {grad}, 1, {{"to", Attribute(static_cast<int64_t>(from))}})[0]);
      })
      .doc("Converts elements to dtype `to`; float to integer truncates and saturates, NaN gives 0");
  registry.add(std::move(cast));
}

void register_cast_cpu_kernel(KernelRegistry& registry) {
  registry.add("Cast", DeviceType::kCpu, {std::begin(kAllDTypes), std::end(kAllDTypes)},
               [](const Node& node) { return std::make_unique<CastKernel>(node); });
}

}  // namespace weir
