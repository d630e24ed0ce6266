// Datasets and the data loader: shuffled batches assembled by reader
// threads, each feeding its own bounded queue.
//
//   auto data = std::make_shared<weir::TensorDataset>(std::vector<weir::Tensor>{images, labels});
//   weir::DataLoader loader(data, {.batch_size = 64, .shuffle = true, .seed = 7, .num_workers = 2});
//   loader.start_epoch(0);
//   while (auto batch = loader.next()) { /* (*batch)[0]: images, (*batch)[1]: labels */ }
//
// Batch b of an epoch is assembled by worker b % num_workers into that
// worker's queue, and next() takes the batches in order from the queues in
// turn, so the sequence of batches depends only on (seed, epoch), never on
// thread timing. start_epoch(e, k) resumes epoch e at its k-th batch (what a
// checkpoint restore does).
//
// Sharded (one rank of a data-parallel world of processes): with shards = N
// and shard = r, every batch of batch_size examples is cut into N equal
// shares of rows and this loader assembles only share r, rows
// [r*batch_size/N, (r+1)*batch_size/N) of the batch a loader without shards
// would give; every rank uses the same seed, so the ranks' shares together
// are exactly that batch.
//
// Unordered (ordered = false, for trainer threads that share one loader,
// Hogwild-style): next() may be called from several threads at once, and it
// takes a batch from whichever worker queue has one, looking first at the
// queue after the one it last took from, so a worker whose queue is always
// ready cannot starve the others (their queues would fill and stall them).
// The epoch still yields each of its batches exactly once, each batch is the
// same as in ordered mode (only the order in which they come out depends on
// thread timing), and once the epoch is exhausted next() returns nullopt to
// every caller. A call first claims one of the epoch's remaining batches
// under the lock and only then waits, so at most as many callers wait as
// batches are still to come: every wait ends with a batch or a worker's
// error, never with a caller stranded after the last batch went elsewhere.
// In both modes start_epoch() and the destructor must not overlap next().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace weir {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The examples at `indices`, stacked along a new first axis, one tensor per field.
  virtual std::vector<Tensor> batch(const std::vector<int64_t>& indices) const = 0;
};

// Fields held in memory, examples along axis 0 of each.
class TensorDataset final : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> fields);
  int64_t size() const override { return size_; }
  std::vector<Tensor> batch(const std::vector<int64_t>& indices) const override;

 private:
  std::vector<Tensor> fields_;
  int64_t size_ = 0;
};

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = true;  // a final partial batch is dropped (graphs have a static batch size)
  uint64_t seed = 0;
  int num_workers = 2;
  int queue_depth = 4;  // batches each worker may have ready
  int shards = 1;       // the batch's row shares (data-parallel ranks); needs drop_last and an even split
  int shard = 0;        // the share this loader gives, 0 .. shards-1
  bool ordered = true;  // false: batches in the order workers finish them, next() callable from several threads
  // Where the workers put each batch (a copy of what the dataset assembled,
  // made off the training thread): a session's feed_allocator(), pinned
  // host memory for a GPU, whose copies of the batch then run by DMA.
  // nullptr, or the memory the dataset assembled them in: its own tensors.
  Allocator* batch_memory = nullptr;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t batches_per_epoch() const;
  const DataLoaderOptions& options() const { return options_; }
  // The example order of `epoch`: a seeded permutation (identity without shuffling).
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch, or nullopt at the end of the epoch. A worker's error is rethrown here.
  // Ordered: one thread at a time. Unordered: any number of threads at once.
  std::optional<std::vector<Tensor>> next();

 private:
  struct Queue {
    std::deque<std::vector<Tensor>> batches;
  };
  void stop();
  void worker(int index, int64_t first_batch, int64_t end_batch);
  std::optional<std::vector<Tensor>> next_unordered();

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::vector<int64_t> order_;
  int64_t next_batch_ = 0;  // ordered: the next batch to give; unordered: batches claimed so far (under mutex_)
  int64_t end_batch_ = 0;
  int64_t first_batch_ = 0;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Queue> queues_;
  size_t next_queue_ = 0;  // unordered: where the next look for a ready batch starts
  std::exception_ptr error_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weir
