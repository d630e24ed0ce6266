#include "ops/optimizer/gradient_merge.h"

#include "core/error.h"
#include "ops/node_attributes.h"
#include "ops/threading.h"

namespace weir {

namespace {

class GradientMergeKernel final : public OpKernel {
 public:
  explicit GradientMergeKernel(const Node& node) : scale_(static_cast<float>(float_attr(node, "scale", 1.0))) {}

  void compute(KernelContext& ctx) override {
    check_gradient_merge_inputs(ctx);
    const Tensor& accumulator = ctx.input(0);
    const Tensor& grad = ctx.input(1);
    const Tensor& apply = ctx.input(2);
    const bool applying = apply.data<bool>()[0];
    Tensor& merged = ctx.allocate_output(0, DType::kFloat32, grad.sizes(), KernelContext::Fill::kUninitialized);
    float* acc = accumulator.data<float>();
    const float* g = grad.data<float>();
    float* out = merged.data<float>();
    const float scale = scale_;
    parallel_for(grad.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      if (applying) {
        for (int64_t i = begin; i < end; ++i) {
          out[i] = (acc[i] + g[i]) * scale;
          acc[i] = 0;
        }
      } else {
        for (int64_t i = begin; i < end; ++i) out[i] = acc[i] += g[i];
      }
    });
  }

 private:
  float scale_;
};

}  // namespace

void check_gradient_merge_inputs(const KernelContext& ctx) {
  const Tensor& accumulator = ctx.input(0);
  const Tensor& grad = ctx.input(1);
  const Tensor& apply = ctx.input(2);
  if (accumulator.dtype() != DType::kFloat32 || grad.dtype() != DType::kFloat32) {
    ctx.fail("accumulates f32 gradients, got accumulator " + accumulator.type_string() + " and gradient " +
             grad.type_string());
  }
  if (accumulator.sizes() != grad.sizes()) {
    ctx.fail("the accumulator is " + accumulator.type_string() + " and the gradient " + grad.type_string() +
             "; they must have the same shape");
  }
  if (apply.dtype() != DType::kBool || apply.num_elements() != 1) {
    ctx.fail("apply must be a bool scalar, got " + apply.type_string());
  }
}

void register_gradient_merge_schemas(OpRegistry& registry) {
  OpSchema merge("GradientMerge");
  merge.input("accumulator", "T")
      .input("grad", "T")
      .input("apply", "B")
      .output("merged", "T")
      .type_constraint("T", {DType::kFloat32})
      .type_constraint("B", {DType::kBool})
      .attr("scale", AttrType::kFloat, Attribute(1.0))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        const TensorType* acc = ctx.input_type(0);
        const TensorType* grad = ctx.input_type(1);
        if (acc != nullptr && grad != nullptr && acc->shape.is_static() && grad->shape.is_static() &&
            acc->shape != grad->shape) {
          ctx.fail("the accumulator is " + acc->to_string() + " and the gradient " + grad->to_string() +
                   "; they must have the same shape");
        }
        if (const TensorType* apply = ctx.input_type(2); apply != nullptr && apply->shape.is_static() &&
                                                          apply->shape.num_elements() != 1) {
          ctx.fail("apply must be a bool scalar, got " + apply->to_string());
        }
        if (grad != nullptr) ctx.set_output_type(0, *grad);
      })
      .doc("gradient merge, accumulator in place: apply false: accumulator += grad; apply true: merged = "
           "(accumulator + grad) * scale and accumulator = 0");
  registry.add(std::move(merge));
}

void register_gradient_merge_cpu_kernels(KernelRegistry& registry) {
  registry.add("GradientMerge", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<GradientMergeKernel>(node); });
}

}  // namespace weir
