// LocalSGD (Stich 2019; Fleet's localsgd and adaptive_localsgd): each rank
// runs its own optimizer step every step, and the ranks average their
// parameters only now and then, through a snapshot S of the parameters at
// the last average. passes/collectives/local_sgd.h builds the graph:
//
//   communicate = LocalSgdSchedule(schedule, step)                 when to average
//   delta       = Sub(snapshot, param)                             after the update
//   avg_delta   = AllReduce(delta, avg, skip = !communicate)
//   LocalSgdAverage(param, snapshot, avg_delta, communicate)       param = S - avg_delta; S = param
//   LocalSgdAdvance(schedule, step, communicate[, global_loss, lr]) the next average
//
// The schedule is a persistent f64 [4]: (the step of the last average, k,
// loss0, lr0). LocalSgdSchedule says whether step `step` (from 1) averages:
// every step up to max(begin_step, 1), then when k steps have passed since
// the last average. LocalSgdAdvance, on a step that averaged, records it
// and, adaptive, sets the next interval from the world's mean loss and the
// learning rate:
//
//   k = clip(ceil(sqrt(lr0 * loss / (lr * loss0) * init_k_steps)), 1, 16)
//
// with loss0 and lr0 those of the first average (step 1). A loss or
// learning rate that is not positive and finite leaves k as it was.
#pragma once

#include <cstdint>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// The largest interval adaptive LocalSGD sets.
inline constexpr int64_t kMaxAdaptiveLocalSgdSteps = 16;

// Whether step `step` averages, given the last average and the interval.
bool local_sgd_communicates(int64_t step, int64_t last_step, int64_t k_steps, int64_t begin_step);
// Adaptive LocalSGD's next interval.
int64_t adaptive_local_sgd_steps(double loss0, double lr0, double loss, double lr, int64_t init_k_steps,
                                 int64_t current_k_steps);

// What every backend's kernels check, failing naming the input: input
// `index` is the f64[4] schedule (returned); input `index` is the bool
// scalar communicate flag (returned); LocalSgdAverage's param, snapshot and
// averaged_delta are f32 of one shape and its flag a bool scalar.
const Tensor& check_local_sgd_schedule(const KernelContext& ctx, size_t index);
const Tensor& check_local_sgd_flag(const KernelContext& ctx, size_t index);
void check_local_sgd_average_inputs(const KernelContext& ctx);

void register_local_sgd_schemas(OpRegistry& registry);
void register_local_sgd_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
