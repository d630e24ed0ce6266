#include "ops/optimizer/loss_scaling.h"

#include <atomic>
#include <cmath>

#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/scalar_input.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<DType> kGradTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

void check_scalar(InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* type = ctx.input_type(index);
  if (type != nullptr && type->shape.is_static() && type->shape.num_elements() != 1) {
    ctx.fail(std::string(name) + " must be a scalar, got " + type->shape.to_string());
  }
}

class UnscaleGradientsKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    if (ctx.num_outputs() != ctx.num_inputs()) ctx.fail("needs the found_inf output plus one output per gradient");
    const double scale = scalar_input(ctx, 0, "scale");
    if (!(scale > 0) || !std::isfinite(scale)) ctx.fail("the loss scale must be positive and finite, got " + std::to_string(scale));
    const double inverse = 1.0 / scale;
    bool found = false;
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor& grad = ctx.input(i);
      Tensor& out = ctx.allocate_output(i, grad.dtype(), grad.sizes(), KernelContext::Fill::kUninitialized);
      dispatch_dtype(grad.dtype(), [&]<typename T>() {
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          using C = ComputeType<T>;
          const T* in = grad.data<T>();
          T* o = out.data<T>();
          const C factor = static_cast<C>(inverse);
          std::atomic<bool> bad{false};
          parallel_for(grad.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
            bool local = false;
            for (int64_t k = begin; k < end; ++k) {
              C v = load(in[k]);
              // v - v is NaN exactly when v is Inf or NaN; no branch per element.
              local |= (v - v) != (v - v);
              o[k] = store<T>(v * factor);
            }
            if (local) bad.store(true, std::memory_order_relaxed);
          });
          found = found || bad.load();
        } else {
          ctx.fail("gradient " + std::to_string(i - 1) + " is " + grad.type_string() + "; expected a float type");
        }
      });
    }
    ctx.allocate_output(0, DType::kBool, {}, KernelContext::Fill::kUninitialized).data<bool>()[0] = found;
  }
};

class UpdateLossScaleKernel final : public OpKernel {
 public:
  explicit UpdateLossScaleKernel(const Node& node) : schedule_(loss_scale_schedule(node)) {}

  void compute(KernelContext& ctx) override {
    check_loss_scale_inputs(ctx);
    const Tensor& scale = ctx.input(0);
    const Tensor& good = ctx.input(1);
    const Tensor& found_inf = ctx.input(2);
    const bool overflow = found_inf.data<bool>()[0];
    float& s = scale.data<float>()[0];
    int64_t& n = good.data<int64_t>()[0];
    if (overflow) {
      s = static_cast<float>(std::max(schedule_.min_scale, s * schedule_.backoff_factor));
      n = 0;
    } else if (++n >= schedule_.growth_interval) {
      s = static_cast<float>(std::min(schedule_.max_scale, s * schedule_.growth_factor));
      n = 0;
    }
    ctx.set_output(0, scale);
    if (ctx.num_outputs() > 1) ctx.set_output(1, good);
  }

 private:
  LossScaleSchedule schedule_;
};

}  // namespace

LossScaleSchedule loss_scale_schedule(const Node& node) {
  LossScaleSchedule schedule;
  schedule.growth_factor = float_attr(node, "growth_factor", 2.0);
  schedule.backoff_factor = float_attr(node, "backoff_factor", 0.5);
  schedule.growth_interval = int_attr(node, "growth_interval", 2000);
  schedule.min_scale = float_attr(node, "min_scale", 1.0);
  schedule.max_scale = float_attr(node, "max_scale", 16777216.0);
  if (schedule.growth_interval < 1) {
    throw Error(ErrorKind::kInvalidArgument, "UpdateLossScale '" + node.name() + "': growth_interval must be at least 1");
  }
  return schedule;
}

void check_loss_scale_inputs(const KernelContext& ctx) {
  const Tensor& scale = ctx.input(0);
  const Tensor& good = ctx.input(1);
  const Tensor& found_inf = ctx.input(2);
  if (scale.dtype() != DType::kFloat32 || scale.num_elements() != 1) ctx.fail("scale must be an f32 scalar, got " + scale.type_string());
  if (good.dtype() != DType::kInt64 || good.num_elements() != 1) ctx.fail("good_steps must be an i64 scalar, got " + good.type_string());
  if (found_inf.dtype() != DType::kBool || found_inf.num_elements() != 1) {
    ctx.fail("found_inf must be a bool scalar, got " + found_inf.type_string());
  }
}

void register_loss_scaling_schemas(OpRegistry& registry) {
  OpSchema unscale("UnscaleGradients");
  unscale.input("scale", "S")
      .input("grads", "T", Arity::kVariadic)
      .output("found_inf", "B")
      .output("unscaled", "T", Arity::kVariadic)
      .type_constraint("S", {DType::kFloat32})
      .type_constraint("T", kGradTypes)
      .type_constraint("B", {DType::kBool})
      .infer([](InferenceContext& ctx) {
        check_scalar(ctx, 0, "scale");
        if (ctx.num_outputs() != ctx.num_inputs()) {
          ctx.fail("has " + std::to_string(ctx.num_outputs()) + " outputs; expected found_inf plus one per gradient (" +
                   std::to_string(ctx.num_inputs() - 1) + ")");
        }
        ctx.set_output_type(0, {DType::kBool, Shape{}});
        for (size_t i = 1; i < ctx.num_inputs(); ++i) {
          if (const TensorType* grad = ctx.input_type(i)) ctx.set_output_type(i, *grad);
        }
      })
      .doc("grads / scale, and found_inf: whether any gradient holds an Inf or NaN (dynamic loss scaling)");
  registry.add(std::move(unscale));

  OpSchema update("UpdateLossScale");
  update.input("scale", "S")
      .input("good_steps", "I")
      .input("found_inf", "B")
      .output("scale_out", "S")
      .output("good_steps_out", "I", Arity::kOptional)
      .type_constraint("S", {DType::kFloat32})
      .type_constraint("I", {DType::kInt64})
      .type_constraint("B", {DType::kBool})
      .attr("growth_factor", AttrType::kFloat, Attribute(2.0))
      .attr("backoff_factor", AttrType::kFloat, Attribute(0.5))
      .attr("growth_interval", AttrType::kInt, Attribute(int64_t{2000}))
      .attr("min_scale", AttrType::kFloat, Attribute(1.0))
      .attr("max_scale", AttrType::kFloat, Attribute(16777216.0))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        for (size_t i = 0; i < 3; ++i) check_scalar(ctx, i, i == 0 ? "scale" : i == 1 ? "good_steps" : "found_inf");
        if (const TensorType* scale = ctx.input_type(0)) ctx.set_output_type(0, *scale);
        if (ctx.num_outputs() > 1) {
          if (const TensorType* good = ctx.input_type(1)) ctx.set_output_type(1, *good);
        }
      })
      .doc("dynamic loss scale, in place: on found_inf scale *= backoff_factor (>= min_scale) and good_steps = 0; "
           "else after growth_interval clean steps scale *= growth_factor (<= max_scale)");
  registry.add(std::move(update));
}

void register_loss_scaling_cpu_kernels(KernelRegistry& registry) {
  registry.add("UnscaleGradients", DeviceType::kCpu, {DType::kFloat32},
               [](const Node&) { return std::make_unique<UnscaleGradientsKernel>(); });
  registry.add("UpdateLossScale", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<UpdateLossScaleKernel>(node); });
}

}  // namespace weir
