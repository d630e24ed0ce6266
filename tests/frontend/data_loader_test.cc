// The data loader's unordered mode: several trainer threads calling next()
// at once on one loader get every batch of the epoch exactly once between
// them, the same batches as the ordered loader, all of them end (nullopt)
// when the epoch is done, and a worker's error ends every caller's wait.
// (The ordered mode's tests are in training_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "frontend/data/data_loader.h"

namespace weir {
namespace {

// n examples whose one field is the example's index.
std::shared_ptr<TensorDataset> indexed(int64_t n) {
  Tensor x(DType::kInt64, {n, 1});
  for (int64_t i = 0; i < n; ++i) x.data<int64_t>()[i] = i;
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x});
}

std::vector<int64_t> indices_of(const std::vector<Tensor>& batch) {
  const Tensor& x = batch[0];
  return std::vector<int64_t>(x.data<int64_t>(), x.data<int64_t>() + x.num_elements());
}

// Runs `threads` threads calling next() until each sees nullopt; returns
// the batches (as example indices) every thread got, and how many nullopts.
struct Drained {
  std::vector<std::vector<int64_t>> batches;
  int ends = 0;
};
Drained drain(DataLoader& loader, int threads) {
  Drained out;
  std::mutex mutex;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<std::vector<int64_t>> mine;
      while (auto batch = loader.next()) mine.push_back(indices_of(*batch));
      // Past the end, every further call is nullopt at once too.
      const bool still_ended = !loader.next().has_value();
      std::lock_guard<std::mutex> lock(mutex);
      out.batches.insert(out.batches.end(), mine.begin(), mine.end());
      out.ends += still_ended ? 1 : 0;
    });
  }
  for (std::thread& thread : pool) thread.join();
  return out;
}

TEST(DataLoader, UnorderedGivesEveryBatchOnceToConcurrentCallers) {
  auto data = indexed(1000);
  const DataLoaderOptions ordered_options{.batch_size = 7, .shuffle = true, .drop_last = false, .seed = 3,
                                          .num_workers = 3, .queue_depth = 2};
  DataLoader ordered(data, ordered_options);
  ordered.start_epoch(1);
  std::vector<std::vector<int64_t>> expected;
  while (auto batch = ordered.next()) expected.push_back(indices_of(*batch));
  ASSERT_EQ(expected.size(), 143u);
  std::sort(expected.begin(), expected.end());

  DataLoaderOptions unordered_options = ordered_options;
  unordered_options.ordered = false;
  DataLoader unordered(data, unordered_options);
  for (int64_t first : {0, 100}) {  // a whole epoch, and one resumed at batch 100
    unordered.start_epoch(1, first);
    Drained got = drain(unordered, 4);
    EXPECT_EQ(got.ends, 4) << "every caller sees the end";
    std::vector<int64_t> examples;
    for (const auto& batch : got.batches) examples.insert(examples.end(), batch.begin(), batch.end());
    std::sort(examples.begin(), examples.end());
    EXPECT_TRUE(std::adjacent_find(examples.begin(), examples.end()) == examples.end()) << "an example came twice";
    std::sort(got.batches.begin(), got.batches.end());
    if (first == 0) {
      EXPECT_EQ(examples.size(), 1000u);
      EXPECT_EQ(got.batches, expected) << "the same batches as the ordered loader";
    } else {
      EXPECT_EQ(got.batches.size(), 43u);
    }
  }
  // One caller alone also drains it.
  unordered.start_epoch(1);
  Drained alone = drain(unordered, 1);
  std::sort(alone.batches.begin(), alone.batches.end());
  EXPECT_EQ(alone.batches, expected);
}

// A dataset whose batch holding example 500 fails.
class FailingDataset final : public Dataset {
 public:
  int64_t size() const override { return 1000; }
  std::vector<Tensor> batch(const std::vector<int64_t>& indices) const override {
    if (std::find(indices.begin(), indices.end(), 500) != indices.end()) {
      throw Error(ErrorKind::kIo, "example 500 is unreadable");
    }
    return {Tensor(DType::kInt64, {static_cast<int64_t>(indices.size())})};
  }
};

TEST(DataLoader, UnorderedCallersAllEndWhenAWorkerFails) {
  DataLoader loader(std::make_shared<FailingDataset>(),
                    {.batch_size = 10, .shuffle = false, .num_workers = 3, .queue_depth = 1, .ordered = false});
  loader.start_epoch(0);
  std::atomic<int> errors = 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) {
    pool.emplace_back([&] {
      try {
        while (loader.next()) {
        }
      } catch (const Error&) {
        ++errors;
      }
    });
  }
  for (std::thread& thread : pool) thread.join();  // no caller is left waiting
  EXPECT_GE(errors.load(), 1);
}

// A dataset whose batches are one tensor made in `memory`: memory a batch is
// already in is not copied again.
class MadeIn final : public Dataset {
 public:
  explicit MadeIn(Allocator& memory) : batch_(Tensor(DType::kFloat32, {2, 3}, memory)) {}
  int64_t size() const override { return 8; }
  std::vector<Tensor> batch(const std::vector<int64_t>&) const override { return {batch_}; }
  const Tensor& tensor() const { return batch_; }

 private:
  Tensor batch_;
};

// batch_memory: every field of every batch is made there (pinned memory for
// a GPU; a counting host allocator here), with the dataset's values.
TEST(DataLoader, BatchesAreMadeInTheGivenMemory) {
  CpuAllocator pinned;
  auto data = indexed(12);
  DataLoader plain(data, {.batch_size = 4, .seed = 3, .num_workers = 2});
  DataLoader made(data, {.batch_size = 4, .seed = 3, .num_workers = 2, .batch_memory = &pinned});
  for (DataLoader* loader : {&plain, &made}) loader->start_epoch(0);
  int batches = 0;
  while (auto batch = made.next()) {
    auto expected = plain.next();
    ASSERT_TRUE(expected.has_value());
    ASSERT_EQ(batch->size(), 1u);
    EXPECT_EQ((*batch)[0].storage()->allocator(), &pinned);
    EXPECT_TRUE((*batch)[0].bitwise_equal((*expected)[0]));
    EXPECT_GT(pinned.stats().bytes_in_use, 0);
    ++batches;
  }
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(pinned.stats().bytes_in_use, 0) << "every batch made there went back";

  auto already = std::make_shared<MadeIn>(pinned);
  DataLoader same(already, {.batch_size = 4, .num_workers = 1, .batch_memory = &pinned});
  same.start_epoch(0);
  auto batch = same.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ((*batch)[0].raw_data(), already->tensor().raw_data()) << "not copied again";
}

}  // namespace
}  // namespace weir
