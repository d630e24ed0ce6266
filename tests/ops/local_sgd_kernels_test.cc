// LocalSGD's schedule on scripted loss and learning-rate sequences (when
// the ranks average, and adaptive LocalSGD's interval), against a plain
// reference written from the definition; the snapshot average in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/optimizer/local_sgd.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::run_op;

struct Reference {
  int64_t last = 0, k = 1;
  double loss0 = 0, lr0 = 0;
  bool started = false;
};

// One step of the schedule as DISTRIBUTED.md states it: average every step
// up to begin_step (step 1 at least), then when k steps have passed;
// adaptive k = clip(ceil(sqrt(lr0 * loss / (lr * loss0) * init_k)), 1, 16).
bool reference_step(Reference& r, int64_t step, int64_t begin_step, bool adaptive, int64_t init_k, double loss, double lr) {
  const bool average = step <= std::max<int64_t>(begin_step, 1) || step - r.last >= r.k;
  if (!average) return false;
  if (adaptive) {
    if (!r.started) {
      r.loss0 = loss;
      r.lr0 = lr;
      r.started = true;
    }
    double k = std::ceil(std::sqrt(r.lr0 * loss / (lr * r.loss0) * static_cast<double>(init_k)));
    r.k = static_cast<int64_t>(std::min(16.0, std::max(1.0, k)));
  }
  r.last = step;
  return true;
}

Tensor schedule_tensor(int64_t k) {
  Tensor schedule(DType::kFloat64, {4});
  std::fill(schedule.data<double>(), schedule.data<double>() + 4, 0.0);
  schedule.data<double>()[1] = static_cast<double>(k);
  return schedule;
}

// Runs the schedule ops for steps 1..losses.size(); returns the flags and
// the interval after each step.
void run_schedule(int64_t begin_step, bool adaptive, int64_t k, const std::vector<double>& losses,
                  const std::vector<double>& lrs, std::vector<bool>& flags, std::vector<int64_t>& intervals) {
  Tensor schedule = schedule_tensor(k);
  for (size_t i = 0; i < losses.size(); ++i) {
    const Tensor step = Tensor::scalar<int64_t>(static_cast<int64_t>(i + 1));
    const Tensor flag = run_op("LocalSgdSchedule", {schedule, step}, {{"begin_step", Attribute(begin_step)}})[0];
    std::vector<Tensor> inputs = {schedule, step, flag};
    std::map<std::string, Attribute> attributes;
    if (adaptive) {
      inputs.push_back(Tensor::scalar(static_cast<float>(losses[i])));
      inputs.push_back(Tensor::scalar(static_cast<float>(lrs[i])));
      attributes = {{"adaptive", Attribute(int64_t{1})}, {"init_k_steps", Attribute(k)}};
    }
    run_op("LocalSgdAdvance", inputs, attributes);
    flags.push_back(flag.data<bool>()[0]);
    intervals.push_back(static_cast<int64_t>(schedule.data<double>()[1]));
  }
}

TEST(LocalSgdKernels, FixedIntervalAveragesUpToBeginStepThenEveryK) {
  std::vector<bool> flags;
  std::vector<int64_t> intervals;
  const std::vector<double> none(14, 1.0);
  run_schedule(/*begin_step=*/3, false, /*k=*/4, none, none, flags, intervals);
  const std::vector<bool> want = {true, true, true, false, false, false, true, false, false, false, true, false, false, false};
  EXPECT_EQ(flags, want);
  for (int64_t k : intervals) EXPECT_EQ(k, 4);

  // begin_step 0 still averages the first step (every rank starts alike).
  flags.clear();
  run_schedule(0, false, 3, std::vector<double>(7, 1.0), std::vector<double>(7, 1.0), flags, intervals);
  EXPECT_EQ(flags, (std::vector<bool>{true, false, false, true, false, false, true}));
}

TEST(LocalSgdKernels, AdaptiveIntervalFollowsTheScriptedLossAndLearningRate) {
  // A loss that falls, a learning rate that drops twice: the interval
  // shrinks with the loss and grows when the learning rate falls.
  std::vector<double> losses, lrs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  for (int i = 0; i < 60; ++i) {
    losses.push_back(2.3 * std::pow(0.97, i) * noise(rng));
    lrs.push_back(i < 20 ? 0.1 : i < 40 ? 0.01 : 0.0005);
  }
  for (int64_t init_k : {1, 4, 16}) {
    for (int64_t begin_step : {1, 5}) {
      std::vector<bool> flags;
      std::vector<int64_t> intervals;
      run_schedule(begin_step, true, init_k, losses, lrs, flags, intervals);
      Reference reference;
      reference.k = init_k;
      int averages = 0;
      for (size_t i = 0; i < losses.size(); ++i) {
        const bool want = reference_step(reference, static_cast<int64_t>(i + 1), begin_step, true, init_k,
                                         static_cast<float>(losses[i]), static_cast<float>(lrs[i]));
        ASSERT_EQ(flags[i], want) << "init_k " << init_k << " begin " << begin_step << " step " << i + 1;
        ASSERT_EQ(intervals[i], reference.k) << "init_k " << init_k << " begin " << begin_step << " step " << i + 1;
        averages += want;
      }
      EXPECT_LT(averages, 60);
      // After the last drop of the learning rate the interval is at its cap or near it.
      EXPECT_GE(intervals.back(), 4) << "init_k " << init_k;
    }
  }
}

TEST(LocalSgdKernels, IntervalHelperClipsAndIgnoresBadFigures) {
  EXPECT_EQ(adaptive_local_sgd_steps(2.0, 0.1, 2.0, 0.1, 4, 3), 2);          // ceil(sqrt(4))
  EXPECT_EQ(adaptive_local_sgd_steps(2.0, 0.1, 2.0, 1e-6, 4, 3), 16);        // clipped above
  EXPECT_EQ(adaptive_local_sgd_steps(2.0, 0.1, 1e-9, 0.1, 1, 3), 1);         // clipped below
  EXPECT_EQ(adaptive_local_sgd_steps(2.0, 0.1, std::nan(""), 0.1, 1, 3), 3); // a NaN loss keeps k
  EXPECT_EQ(adaptive_local_sgd_steps(0.0, 0.1, 1.0, 0.1, 1, 5), 5);          // no reference loss
}

TEST(LocalSgdKernels, AverageWritesTheSnapshotDifferenceInPlaceOnlyWhenCommunicating) {
  const std::vector<int64_t> sizes = {3, 5};
  auto tensor = [&](uint32_t seed) { return Tensor::from_vector(testing::random_floats(15, seed, -1.0f, 1.0f), sizes); };
  for (bool communicate : {false, true}) {
    Tensor param = tensor(1), snapshot = tensor(2), delta = tensor(3);
    const Tensor param0 = param.clone(), snapshot0 = snapshot.clone();
    std::vector<Tensor> out = run_op("LocalSgdAverage", {param, snapshot, delta, Tensor::scalar(communicate)}, {}, 2);
    for (int64_t i = 0; i < 15; ++i) {
      const float want = communicate ? snapshot0.data<float>()[i] - delta.data<float>()[i] : param0.data<float>()[i];
      EXPECT_EQ(param.data<float>()[i], want);
      EXPECT_EQ(snapshot.data<float>()[i], communicate ? want : snapshot0.data<float>()[i]);
      EXPECT_EQ(out[0].data<float>()[i], want);
    }
  }
}

TEST(LocalSgdKernels, BadInputsAreRefused) {
  const Tensor step = Tensor::scalar<int64_t>(1);
  EXPECT_NE(testing::error_of("LocalSgdSchedule", {Tensor(DType::kFloat64, {3}), step}).find("f64[4]"), std::string::npos);
  EXPECT_NE(testing::error_of("LocalSgdSchedule", {schedule_tensor(1), Tensor::scalar<int64_t>(0)}).find("at least 1"),
            std::string::npos);
  EXPECT_NE(testing::error_of("LocalSgdAdvance", {schedule_tensor(1), step, Tensor::scalar(true)},
                              {{"adaptive", Attribute(int64_t{1})}})
                .find("mean loss"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
