#include "ops/nn/hardmax.h"

#include <cmath>
#include <type_traits>

#include "core/graph.h"
#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

class HardmaxKernel final : public OpKernel {
 public:
  explicit HardmaxKernel(const Node& node) : axis_(int_attr(node, "axis", -1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input " + x.type_string() + " needs at least 1 axis");
    AxisSplit split = split_at(ctx, x.sizes(), axis_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (x.num_elements() == 0) return;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        const T zero = store<T>(ComputeType<T>(0)), one = store<T>(ComputeType<T>(1));
        for_each_line(split, [&](int64_t base, int64_t stride) {
          int64_t best = 0;
          ComputeType<T> best_value = load(in[base]);
          for (int64_t j = 1; j < split.n && !std::isnan(best_value); ++j) {
            ComputeType<T> value = load(in[base + j * stride]);
            if (value > best_value || std::isnan(value)) {
              best = j;
              best_value = value;
            }
          }
          for (int64_t j = 0; j < split.n; ++j) out[base + j * stride] = j == best ? one : zero;
        });
      } else {
        ctx.fail("needs a floating-point type, got " + x.type_string());
      }
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_hardmax_schema(OpRegistry& registry) {
  OpSchema hardmax("Hardmax");
  hardmax.input("input", "T")
      .output("output", "T")
      .type_constraint("T", kFloatDTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{-1}))
      .infer([](InferenceContext& ctx) {
        const TensorType* input = ctx.input_type(0);
        if (input == nullptr) return;
        if (input->shape.has_rank()) {
          if (input->shape.rank() == 0) ctx.fail("input " + input->shape.to_string() + " needs at least 1 axis");
          normalize_axis(ctx.attr_int("axis"), input->shape.rank(), ctx);
        }
        ctx.set_output_type(0, *input);
      })
      // Piecewise constant: no gradient flows through it.
      .gradient([](GradientContext&) {})
      .doc("1 at the first maximum of each line along `axis` (a NaN counts as the largest), 0 elsewhere");
  registry.add(std::move(hardmax));
}

void register_hardmax_cpu_kernel(KernelRegistry& registry) {
  registry.add("Hardmax", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<HardmaxKernel>(node); });
}

}  // namespace weir
