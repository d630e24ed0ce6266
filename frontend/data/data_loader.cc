#include "frontend/data/data_loader.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/splitmix.h"

namespace weir {

namespace {

uint64_t mix(uint64_t x) { return splitmix64_mix(x + 0x9E3779B97F4A7C15ULL); }

}  // namespace

TensorDataset::TensorDataset(std::vector<Tensor> fields) : fields_(std::move(fields)) {
  if (fields_.empty()) throw Error(ErrorKind::kInvalidArgument, "TensorDataset needs at least one field");
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].rank() == 0) {
      throw Error(ErrorKind::kInvalidArgument, "TensorDataset field " + std::to_string(i) + " is a scalar; examples run along axis 0");
    }
    int64_t n = fields_[i].sizes()[0];
    if (i == 0) size_ = n;
    if (n != size_) {
      throw Error(ErrorKind::kInvalidArgument, "TensorDataset field " + std::to_string(i) + " has " + std::to_string(n) +
                                                   " examples; field 0 has " + std::to_string(size_));
    }
  }
}

std::vector<Tensor> TensorDataset::batch(const std::vector<int64_t>& indices) const {
  std::vector<Tensor> out;
  for (const Tensor& field : fields_) {
    std::vector<int64_t> sizes = field.sizes();
    sizes[0] = static_cast<int64_t>(indices.size());
    Tensor b = Tensor::uninitialized(field.dtype(), sizes);
    size_t row = size_ > 0 ? field.nbytes() / static_cast<size_t>(size_) : 0;
    const char* src = static_cast<const char*>(field.raw_data());
    char* dst = static_cast<char*>(b.raw_data());
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] < 0 || indices[i] >= size_) {
        throw Error(ErrorKind::kInvalidArgument, "example index " + std::to_string(indices[i]) + " is out of range [0, " +
                                                     std::to_string(size_) + ")");
      }
      // std::copy, not memcpy: a field with no elements may have no storage (a
      // null pointer), and memcpy of null is undefined even for 0 bytes.
      std::copy(src + static_cast<size_t>(indices[i]) * row, src + static_cast<size_t>(indices[i] + 1) * row, dst + i * row);
    }
    out.push_back(std::move(b));
  }
  return out;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (!dataset_) throw Error(ErrorKind::kInvalidArgument, "DataLoader: no dataset");
  if (options_.batch_size <= 0) throw Error(ErrorKind::kInvalidArgument, "DataLoader: batch size must be positive");
  if (options_.shards < 1 || options_.shard < 0 || options_.shard >= options_.shards) {
    throw Error(ErrorKind::kInvalidArgument, "DataLoader: shard " + std::to_string(options_.shard) + " of " +
                                                 std::to_string(options_.shards) + " does not exist (shards are 0 .. " +
                                                 std::to_string(options_.shards - 1) + ")");
  }
  if (options_.shards > 1 && (options_.batch_size % options_.shards != 0 || !options_.drop_last)) {
    throw Error(ErrorKind::kInvalidArgument, "DataLoader: a batch of " + std::to_string(options_.batch_size) +
                                                 " does not split into " + std::to_string(options_.shards) +
                                                 " equal shards (the batch must divide evenly, with drop_last)");
  }
  if (options_.num_workers < 1) options_.num_workers = 1;
  if (options_.queue_depth < 1) options_.queue_depth = 1;
}

DataLoader::~DataLoader() { stop(); }

int64_t DataLoader::batches_per_epoch() const {
  int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (!options_.shuffle) return order;
  // Fisher-Yates with a fixed generator recipe, so the order is the same on
  // every platform (std::shuffle's is not specified).
  uint64_t state = mix(options_.seed ^ mix(static_cast<uint64_t>(epoch)));
  for (size_t i = order.size(); i > 1; --i) {
    state = mix(state);
    size_t j = static_cast<size_t>(state % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

void DataLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
  queues_.clear();
  error_ = nullptr;
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  stop();
  order_ = epoch_order(epoch);
  end_batch_ = batches_per_epoch();
  first_batch_ = std::min(std::max<int64_t>(first_batch, 0), end_batch_);
  next_batch_ = first_batch_;
  queues_.assign(static_cast<size_t>(options_.num_workers), Queue{});
  next_queue_ = 0;
  for (int w = 0; w < options_.num_workers; ++w) {
    threads_.emplace_back([this, w] { worker(w, first_batch_ + w, end_batch_); });
  }
}

void DataLoader::worker(int index, int64_t first, int64_t end) {
  const int64_t stride = options_.num_workers;
  for (int64_t b = first; b < end; b += stride) {
    std::vector<Tensor> batch;
    try {
      const int64_t share = options_.batch_size / options_.shards;
      int64_t begin = b * options_.batch_size + options_.shard * share;
      int64_t stop_at = std::min<int64_t>(begin + (options_.shards > 1 ? share : options_.batch_size),
                                          static_cast<int64_t>(order_.size()));
      std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + stop_at);
      batch = dataset_->batch(indices);
      if (options_.batch_memory != nullptr) {
        for (Tensor& field : batch) {
          if (field.storage() != nullptr && field.storage()->allocator() == options_.batch_memory) continue;  // there already
          Tensor moved = Tensor::uninitialized(field.dtype(), field.sizes(), *options_.batch_memory);
          if (field.nbytes() > 0) std::memcpy(moved.raw_data(), field.raw_data(), field.nbytes());
          field = std::move(moved);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    Queue& queue = queues_[static_cast<size_t>(index)];
    cv_.wait(lock, [&] { return stopping_ || static_cast<int>(queue.batches.size()) < options_.queue_depth; });
    if (stopping_) return;
    queue.batches.push_back(std::move(batch));
    cv_.notify_all();
  }
}

std::optional<std::vector<Tensor>> DataLoader::next() {
  if (!options_.ordered) return next_unordered();
  if (next_batch_ >= end_batch_) return std::nullopt;
  std::unique_lock<std::mutex> lock(mutex_);
  Queue& queue = queues_[static_cast<size_t>((next_batch_ - first_batch_) % options_.num_workers)];
  cv_.wait(lock, [&] { return !queue.batches.empty() || error_ != nullptr; });
  if (queue.batches.empty()) std::rethrow_exception(error_);
  std::vector<Tensor> batch = std::move(queue.batches.front());
  queue.batches.pop_front();
  ++next_batch_;
  cv_.notify_all();
  return batch;
}

std::optional<std::vector<Tensor>> DataLoader::next_unordered() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Claim one of the batches still to come before waiting: the workers make
  // exactly end_batch_ - first_batch_ batches, so every claimant's wait ends
  // with one of them (or an error), and a caller past the last claim returns
  // at once instead of waiting for a batch another caller will take.
  if (next_batch_ >= end_batch_) return std::nullopt;
  ++next_batch_;
  const size_t count = queues_.size();
  size_t found = count;
  cv_.wait(lock, [&] {
    for (size_t k = 0; k < count && found == count; ++k) {
      if (!queues_[(next_queue_ + k) % count].batches.empty()) found = (next_queue_ + k) % count;
    }
    return found < count || error_ != nullptr;
  });
  // A worker failed and no batch is ready: the epoch cannot be completed.
  if (found == count) std::rethrow_exception(error_);
  Queue& queue = queues_[found];
  std::vector<Tensor> batch = std::move(queue.batches.front());
  queue.batches.pop_front();
  next_queue_ = (found + 1) % count;
  cv_.notify_all();  // the worker of `queue` may be waiting for room
  return batch;
}

}  // namespace weir
