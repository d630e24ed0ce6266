// Intra-op threading: parallel_for covers every index exactly once and
// carries exceptions back; kernels give bit-identical results on 1 and on
// several threads; broadcast loops can be split anywhere.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "core/error.h"
#include "ops/elementwise/broadcast.h"
#include "ops/threading.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

// Restores the default thread count when a test ends.
struct ThreadCountGuard {
  ~ThreadCountGuard() { set_intra_op_threads(0); }
};

TEST(Threading, ParallelForCoversEveryIndexOnce) {
  ThreadCountGuard guard;
  set_intra_op_threads(4);  // more threads than cores is allowed when asked for
  for (int64_t count : {0, 1, 7, 1000, 100003}) {
    for (int64_t grain : {1, 64, 1 << 20}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
      parallel_for(count, grain, [&](int64_t begin, int64_t end) {
        ASSERT_LE(0, begin);
        ASSERT_LE(end, count);
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << count << " " << grain << " " << i;
    }
  }
}

// One OpenMP runtime serves Weir's loops and oneDNN's primitives: the one the
// build chose. Two runtimes would mean two thread pools on the same cores.
TEST(Threading, OneOpenMpRuntimeRunsWeirAndOneDnn) {
  const std::string runtime = openmp_runtime();
  EXPECT_EQ(runtime.rfind(WEIR_OPENMP_LIBRARY ".so", 0), 0u) << runtime;
  // oneDNN calls GOMP_parallel; Weir's threading.cc calls these.
  EXPECT_EQ(library_defining("omp_get_thread_num"), runtime);
  EXPECT_EQ(library_defining("omp_set_num_threads"), runtime);
  EXPECT_EQ(library_defining("omp_get_num_threads"), runtime);
}

TEST(Threading, ExceptionsReachTheCaller) {
  ThreadCountGuard guard;
  set_intra_op_threads(2);
  // Every range throws, so the test holds however many threads OpenMP grants.
  EXPECT_THROW(parallel_for(1 << 20, 1, [](int64_t, int64_t) { throw Error(ErrorKind::kInternal, "from a worker"); }),
               Error);
}

TEST(Threading, ThreadCountIsSettableAndDefaultsToTheCores) {
  ThreadCountGuard guard;
  EXPECT_GE(available_cores(), 1);
  EXPECT_EQ(intra_op_threads(), available_cores());
  set_intra_op_threads(1);
  EXPECT_EQ(intra_op_threads(), 1);
  int calls = 0;
  parallel_for(1 << 20, 1, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1 << 20);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(set_intra_op_threads(-1), Error);
}

TEST(Threading, KernelsGiveTheSameBitsOnOneAndSeveralThreads) {
  ThreadCountGuard guard;
  using testing::make_tensor;
  using testing::random_values;
  struct Pair {
    std::vector<int64_t> a, b;
  };
  for (const Pair& pair : {Pair{{300, 1000}, {1000}}, Pair{{300, 1, 7}, {1, 100, 7}}, Pair{{70001}, {70001}}}) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kInt32}) {
      Tensor a = make_tensor(dtype, random_values(dtype, testing::count_of(pair.a), 1), pair.a);
      Tensor b = make_tensor(dtype, random_values(dtype, testing::count_of(pair.b), 2), pair.b);
      set_intra_op_threads(1);
      Tensor serial = testing::run_op("Mul", {a, b})[0];
      Tensor serial_tanh = dtype == DType::kInt32 ? Tensor() : testing::run_op("Tanh", {serial})[0];
      set_intra_op_threads(3);
      EXPECT_TRUE(testing::run_op("Mul", {a, b})[0].bitwise_equal(serial)) << dtype_name(dtype);
      if (serial_tanh.defined()) {
        EXPECT_TRUE(testing::run_op("Tanh", {serial})[0].bitwise_equal(serial_tanh));
      }
    }
  }
}

TEST(BroadcastPlan, SplitRangesVisitTheSameElementsAsOneRange) {
  std::mt19937 engine(3);
  const std::vector<int64_t> out = {3, 4, 5, 6}, a = {4, 1, 6}, b = {3, 1, 5, 1};
  BroadcastPlan plan(out, a, b);
  std::vector<std::pair<int64_t, int64_t>> whole;
  plan.for_each([&](int64_t, int64_t ao, int64_t bo, int64_t count) {
    for (int64_t i = 0; i < count; ++i) whole.emplace_back(ao + i * plan.inner_stride_a(), bo + i * plan.inner_stride_b());
  });
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<int64_t> cut(0, plan.num_elements());
    int64_t first = cut(engine), second = cut(engine);
    std::vector<int64_t> bounds = {0, std::min(first, second), std::max(first, second), plan.num_elements()};
    std::vector<std::pair<int64_t, int64_t>> pieces;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      int64_t expected_position = bounds[i];
      plan.for_each_in(bounds[i], bounds[i + 1], [&](int64_t position, int64_t ao, int64_t bo, int64_t count) {
        EXPECT_EQ(position, expected_position);
        expected_position += count;
        for (int64_t j = 0; j < count; ++j) pieces.emplace_back(ao + j * plan.inner_stride_a(), bo + j * plan.inner_stride_b());
      });
    }
    ASSERT_EQ(pieces, whole) << "cuts at " << bounds[1] << ", " << bounds[2];
  }
}

}  // namespace
}  // namespace weir
