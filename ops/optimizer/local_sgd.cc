#include "ops/optimizer/local_sgd.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/scalar_input.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

constexpr int64_t kScheduleSize = 4;  // last average, k, loss0, lr0

double* schedule_of(const KernelContext& ctx, size_t index) {
  return check_local_sgd_schedule(ctx, index).data<double>();
}

bool flag_of(const KernelContext& ctx, size_t index) { return check_local_sgd_flag(ctx, index).data<bool>()[0]; }

class ScheduleKernel final : public OpKernel {
 public:
  explicit ScheduleKernel(const Node& node) : begin_step_(int_attr(node, "begin_step", 1)) {}

  void compute(KernelContext& ctx) override {
    const double* schedule = schedule_of(ctx, 0);
    const int64_t step = step_input(ctx, 1);
    Tensor& out = ctx.allocate_output(0, DType::kBool, {}, KernelContext::Fill::kUninitialized);
    out.data<bool>()[0] = local_sgd_communicates(step, static_cast<int64_t>(schedule[0]),
                                                 static_cast<int64_t>(schedule[1]), begin_step_);
  }

 private:
  int64_t begin_step_;
};

class AdvanceKernel final : public OpKernel {
 public:
  explicit AdvanceKernel(const Node& node)
      : adaptive_(int_attr(node, "adaptive", 0) != 0), init_k_steps_(int_attr(node, "init_k_steps", 1)) {}

  void compute(KernelContext& ctx) override {
    double* schedule = schedule_of(ctx, 0);
    const int64_t step = step_input(ctx, 1);
    const bool communicated = flag_of(ctx, 2);
    ctx.set_output(0, ctx.input(0));
    if (!communicated) return;
    if (adaptive_) {
      if (ctx.num_inputs() < 5) ctx.fail("adaptive LocalSGD needs the world's mean loss and the learning rate");
      const double loss = scalar_input(ctx, 3, "loss");
      const double lr = scalar_input(ctx, 4, "lr");
      if (schedule[0] == 0) {  // the first average: the reference loss and learning rate
        schedule[2] = loss;
        schedule[3] = lr;
      }
      schedule[1] = static_cast<double>(adaptive_local_sgd_steps(schedule[2], schedule[3], loss, lr, init_k_steps_,
                                                                 static_cast<int64_t>(schedule[1])));
    }
    schedule[0] = static_cast<double>(step);
  }

 private:
  bool adaptive_;
  int64_t init_k_steps_;
};

class AverageKernel final : public OpKernel {
 public:
  explicit AverageKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    check_local_sgd_average_inputs(ctx);
    const Tensor& param = ctx.input(0);
    const Tensor& snapshot = ctx.input(1);
    const Tensor& delta = ctx.input(2);
    ctx.set_output(0, param);
    ctx.set_output(1, snapshot);
    if (!ctx.input(3).data<bool>()[0]) return;  // the flag, checked above
    float* p = param.data<float>();
    float* s = snapshot.data<float>();
    const float* d = delta.data<float>();
    parallel_for(param.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) s[i] = p[i] = s[i] - d[i];
    });
  }
};

void check_schedule(InferenceContext& ctx) {
  if (const TensorType* t = ctx.input_type(0); t != nullptr && t->shape.is_static() &&
                                               t->shape.num_elements() != kScheduleSize) {
    ctx.fail("the schedule must be the f64[4] state (last average, k, loss0, lr0), got " + t->to_string());
  }
}

}  // namespace

const Tensor& check_local_sgd_schedule(const KernelContext& ctx, size_t index) {
  const Tensor& schedule = ctx.input(index);
  if (schedule.dtype() != DType::kFloat64 || schedule.num_elements() != kScheduleSize) {
    ctx.fail("the schedule must be the f64[4] state (last average, k, loss0, lr0), got " + schedule.type_string());
  }
  return schedule;
}

const Tensor& check_local_sgd_flag(const KernelContext& ctx, size_t index) {
  const Tensor& flag = ctx.input(index);
  if (flag.dtype() != DType::kBool || flag.num_elements() != 1) {
    ctx.fail("communicate must be a bool scalar, got " + flag.type_string());
  }
  return flag;
}

void check_local_sgd_average_inputs(const KernelContext& ctx) {
  const Tensor& param = ctx.input(0);
  const Tensor& snapshot = ctx.input(1);
  const Tensor& delta = ctx.input(2);
  for (const Tensor* t : {&snapshot, &delta}) {
    if (t->dtype() != DType::kFloat32 || t->sizes() != param.sizes() || param.dtype() != DType::kFloat32) {
      ctx.fail("averages f32 values of one shape; the parameter is " + param.type_string() + ", the snapshot " +
               snapshot.type_string() + " and the averaged difference " + delta.type_string());
    }
  }
  check_local_sgd_flag(ctx, 3);
}

bool local_sgd_communicates(int64_t step, int64_t last_step, int64_t k_steps, int64_t begin_step) {
  return step <= std::max<int64_t>(begin_step, 1) || step - last_step >= std::max<int64_t>(k_steps, 1);
}

int64_t adaptive_local_sgd_steps(double loss0, double lr0, double loss, double lr, int64_t init_k_steps,
                                 int64_t current_k_steps) {
  const double ratio = lr0 * loss / (lr * loss0);
  if (!(loss0 > 0) || !(lr0 > 0) || !(loss > 0) || !(lr > 0) || !std::isfinite(ratio)) return current_k_steps;
  const double k = std::ceil(std::sqrt(ratio * static_cast<double>(init_k_steps)));
  return static_cast<int64_t>(std::clamp(k, 1.0, static_cast<double>(kMaxAdaptiveLocalSgdSteps)));
}

void register_local_sgd_schemas(OpRegistry& registry) {
  OpSchema schedule("LocalSgdSchedule");
  schedule.input("schedule", "D")
      .input("step", "I")
      .output("communicate", "B")
      .type_constraint("D", {DType::kFloat64})
      .type_constraint("I", {DType::kInt64, DType::kInt32})
      .type_constraint("B", {DType::kBool})
      .attr("begin_step", AttrType::kInt, Attribute(int64_t{1}))
      .traits(OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        check_schedule(ctx);
        check_scalar_input(ctx, 1, "step");
        ctx.set_output_type(0, {DType::kBool, Shape{}});
      })
      .doc("whether this step averages the ranks' parameters: every step up to max(begin_step, 1), then once k "
           "steps have passed since the last average (schedule: f64[4] last average, k, loss0, lr0)");
  registry.add(std::move(schedule));

  OpSchema advance("LocalSgdAdvance");
  advance.input("schedule", "D")
      .input("step", "I")
      .input("communicate", "B")
      .input("loss", "S", Arity::kOptional)
      .input("lr", "S", Arity::kOptional)
      .output("schedule_out", "D")
      .type_constraint("D", {DType::kFloat64})
      .type_constraint("I", {DType::kInt64, DType::kInt32})
      .type_constraint("B", {DType::kBool})
      .type_constraint("S", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .attr("adaptive", AttrType::kInt, Attribute(int64_t{0}))
      .attr("init_k_steps", AttrType::kInt, Attribute(int64_t{1}))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful | OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        check_schedule(ctx);
        check_scalar_input(ctx, 1, "step");
        check_scalar_input(ctx, 2, "communicate");
        if (const TensorType* t = ctx.input_type(0)) ctx.set_output_type(0, *t);
      })
      .doc("on a step that averaged: records it, and (adaptive) sets k = clip(ceil(sqrt(lr0 * loss / (lr * loss0) "
           "* init_k_steps)), 1, 16) from the world's mean loss; schedule in place");
  registry.add(std::move(advance));

  OpSchema average("LocalSgdAverage");
  average.input("param", "T")
      .input("snapshot", "T")
      .input("averaged_delta", "T")
      .input("communicate", "B")
      .output("param_out", "T")
      .output("snapshot_out", "T")
      .type_constraint("T", {DType::kFloat32})
      .type_constraint("B", {DType::kBool})
      .traits(OpTrait::kSideEffects | OpTrait::kStateful | OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        const TensorType* param = ctx.input_type(0);
        for (size_t i = 1; i < 3; ++i) {
          const TensorType* other = ctx.input_type(i);
          if (param != nullptr && other != nullptr && param->shape.is_static() && other->shape.is_static() &&
              param->shape != other->shape) {
            ctx.fail("input " + std::to_string(i) + " is " + other->to_string() + "; the parameter is " + param->to_string());
          }
        }
        check_scalar_input(ctx, 3, "communicate");
        if (param != nullptr) ctx.set_output_type(0, *param);
        if (const TensorType* snapshot = ctx.input_type(1)) ctx.set_output_type(1, *snapshot);
      })
      .doc("when communicate: param = snapshot - averaged_delta and snapshot = param (the ranks' average, "
           "averaged_delta being the world's mean of snapshot - param); in place");
  registry.add(std::move(average));
}

void register_local_sgd_cpu_kernels(KernelRegistry& registry) {
  registry.add("LocalSgdSchedule", DeviceType::kCpu, {DType::kFloat64},
               [](const Node& node) { return std::make_unique<ScheduleKernel>(node); });
  registry.add("LocalSgdAdvance", DeviceType::kCpu, {DType::kFloat64},
               [](const Node& node) { return std::make_unique<AdvanceKernel>(node); });
  registry.add("LocalSgdAverage", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<AverageKernel>(node); });
}

}  // namespace weir
