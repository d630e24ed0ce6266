#include "distributed/ps/async_communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace weir::ps {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kBarrierTable = "__weir_barrier";

std::string seconds_text(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

// One push_* call, copied.
struct QueuedPush {
  std::vector<int64_t> ids;   // sparse only
  std::vector<float> values;  // gradient rows (sparse) or the gradient (dense)
  float lr = 0;
  int64_t period = 0;         // half-async: the barrier period it belongs to
  Clock::time_point queued_at;
};

struct TableState {
  ParameterTableConfig config;
  std::deque<QueuedPush> queue;
  bool sending = false;      // a sender is pushing a merge of this table (one at a time, in order)
  int64_t queued = 0;        // pushes ever queued
  int64_t acknowledged = 0;  // of those, pushes the remote acknowledged
  // Dense tables: this worker's copy (pull_dense answers from it).
  bool has_copy = false;
  std::vector<float> copy;
  uint64_t copy_generation = 0;  // bumped when set_dense/load/the first pull replace the copy
};

struct MergedPush {
  std::vector<int64_t> ids;
  std::vector<float> values;
  float lr = 0;
};

// Paddle's merge_add: dense gradients summed; sparse rows of equal ids
// added, each distinct id once (in the order ids first appear).
MergedPush merge(std::vector<QueuedPush>& pushes, const ParameterTableConfig& config) {
  MergedPush merged;
  merged.lr = pushes.back().lr;
  if (!config.sparse) {
    merged.values = std::move(pushes.front().values);
    for (size_t p = 1; p < pushes.size(); ++p) {
      for (size_t i = 0; i < merged.values.size(); ++i) merged.values[i] += pushes[p].values[i];
    }
    return merged;
  }
  const auto width = static_cast<size_t>(config.width);
  std::unordered_map<int64_t, size_t> slot;
  for (const QueuedPush& push : pushes) {
    for (size_t i = 0; i < push.ids.size(); ++i) {
      const float* row = push.values.data() + i * width;
      auto [it, added] = slot.emplace(push.ids[i], merged.ids.size());
      if (added) {
        merged.ids.push_back(push.ids[i]);
        merged.values.insert(merged.values.end(), row, row + width);
      } else {
        float* into = merged.values.data() + it->second * width;
        for (size_t j = 0; j < width; ++j) into[j] += row[j];
      }
    }
  }
  return merged;
}

}  // namespace

class AsyncCommunicator::Impl {
 public:
  Impl(std::shared_ptr<ParameterClient> remote, AsyncCommunicatorOptions options)
      : remote_(std::move(remote)), options_(options) {
    if (remote_ == nullptr) throw Error(ErrorKind::kInvalidArgument, "an async communicator needs a remote parameter client");
    auto expect = [](bool ok, const std::string& what) {
      if (!ok) throw Error(ErrorKind::kInvalidArgument, "async communicator options: " + what);
    };
    expect(options.send_queue_size >= 1, "send_queue_size must be at least 1, got " + std::to_string(options.send_queue_size));
    expect(options.max_merge_var_num >= 1,
           "max_merge_var_num must be at least 1, got " + std::to_string(options.max_merge_var_num));
    expect(options.thread_pool_size >= 1, "thread_pool_size must be at least 1, got " + std::to_string(options.thread_pool_size));
    expect(options.pull_dense_every_sends >= 0,
           "pull_dense_every_sends must be 0 or more, got " + std::to_string(options.pull_dense_every_sends));
    expect(options.send_wait.count() >= 0, "send_wait must not be negative");
    expect(options.timeout.count() > 0, "timeout must be positive");
    expect(options.workers >= 1 && options.worker >= 0 && options.worker < options.workers,
           "worker " + std::to_string(options.worker) + " of " + std::to_string(options.workers) + " workers");
    if (options.half_async) {
      ParameterTableConfig barrier;
      barrier.name = kBarrierTable;
      barrier.width = 1;
      barrier.rule = TableRule::kSgd;
      barrier.sync_workers = options.workers;
      try {
        remote_->create_table(barrier);
      } catch (const Error& e) {
        throw Error(e.kind(), "the half-async barrier of " + std::to_string(options.workers) + " workers: " + e.message());
      }
    }
    for (int i = 0; i < options.thread_pool_size; ++i) threads_.emplace_back([this] { sender_loop(); });
    threads_.emplace_back([this] { receive_loop(); });
  }

  // Sends what is queued (at most `timeout`; nothing once an error is
  // kept), then stops the threads. A thread inside a remote call returns
  // when the call ends.
  ~Impl() {
    {
      std::unique_lock lock(mutex_);
      if (!error_) {
        ++flush_requests_;
        changed_.notify_all();
        changed_.wait_until(lock, Clock::now() + options_.timeout, [&] { return error_.has_value() || all_sent_locked(); });
        --flush_requests_;
      }
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

  void create_table(const ParameterTableConfig& config) {
    {
      std::lock_guard lock(mutex_);
      throw_if_failed_locked();
    }
    if (config.name == kBarrierTable) {
      throw Error(ErrorKind::kInvalidArgument, std::string("table name '") + kBarrierTable + "' is reserved for the half-async barrier");
    }
    ParameterTableConfig remote_config = config;
    remote_config.sync_workers = 0;
    remote_->create_table(remote_config);
    std::lock_guard lock(mutex_);
    auto [it, added] = tables_.try_emplace(config.name);
    if (added) {
      it->second = std::make_unique<TableState>();
      it->second->config = remote_config;
      order_.push_back(it->second.get());
    }
  }

  void pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width) {
    {
      std::lock_guard lock(mutex_);
      throw_if_failed_locked();
      table_locked(table, true, width);
    }
    remote_->pull_sparse(table, ids, rows, width, 0);
  }

  void push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients, int64_t width, float lr) {
    QueuedPush push;
    push.ids.assign(ids.begin(), ids.end());
    if (!ids.empty()) push.values.assign(gradients, gradients + ids.size() * static_cast<size_t>(std::max<int64_t>(width, 0)));
    push.lr = lr;
    enqueue(table, true, width, std::move(push));
  }

  void push_dense(const std::string& table, const float* gradient, int64_t size, float lr) {
    QueuedPush push;
    if (size > 0) push.values.assign(gradient, gradient + size);
    push.lr = lr;
    enqueue(table, false, size, std::move(push));
  }

  void pull_dense(const std::string& table, float* values, int64_t size) {
    TableState* t = nullptr;
    {
      std::lock_guard lock(mutex_);
      throw_if_failed_locked();
      t = &table_locked(table, false, size);
      if (t->has_copy) {
        std::copy(t->copy.begin(), t->copy.end(), values);
        return;
      }
    }
    std::vector<float> fetched(static_cast<size_t>(size));
    remote_->pull_dense(table, fetched.data(), size, 0);
    std::lock_guard lock(mutex_);
    if (!t->has_copy) install_copy_locked(*t, std::move(fetched));
    std::copy(t->copy.begin(), t->copy.end(), values);
  }

  void set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset) {
    TableState* t = nullptr;
    {
      std::lock_guard lock(mutex_);
      throw_if_failed_locked();
      t = &table_locked(table, false, size);
    }
    remote_->set_dense(table, values, size, only_if_unset);
    std::vector<float> copy(static_cast<size_t>(size));
    if (only_if_unset) {
      remote_->pull_dense(table, copy.data(), size, 0);   // an earlier value may have won
    } else {
      std::copy(values, values + size, copy.begin());
    }
    std::lock_guard lock(mutex_);
    install_copy_locked(*t, std::move(copy));
  }

  void load(const std::filesystem::path& directory) {
    flush();
    remote_->load(directory);
    std::lock_guard lock(mutex_);
    for (TableState* t : order_) {
      t->has_copy = false;
      t->copy.clear();
      ++t->copy_generation;
    }
  }

  void flush() {
    std::unique_lock lock(mutex_);
    throw_if_failed_locked();
    std::vector<std::pair<const TableState*, int64_t>> targets;
    for (const TableState* t : order_) {
      if (t->acknowledged < t->queued) targets.emplace_back(t, t->queued);
    }
    if (targets.empty()) return;
    ++flush_requests_;
    changed_.notify_all();
    const bool done = changed_.wait_until(lock, Clock::now() + options_.timeout, [&] {
      if (error_) return true;
      return std::all_of(targets.begin(), targets.end(), [](const auto& target) { return target.first->acknowledged >= target.second; });
    });
    --flush_requests_;
    throw_if_failed_locked();
    if (!done) {
      std::string waiting;
      for (const auto& [t, target] : targets) {
        if (t->acknowledged >= target) continue;
        waiting += (waiting.empty() ? "" : ", ") + std::string("table '") + t->config.name + "' (" +
                   std::to_string(target - t->acknowledged) + " pushes)";
      }
      throw Error(ErrorKind::kCommunication, "async communicator: flush timed out after " + seconds_text(options_.timeout) +
                                                 " with pushes not yet acknowledged: " + waiting + "; " +
                                                 sender_status_locked());
    }
  }

  int64_t pushes_queued() const {
    std::lock_guard lock(mutex_);
    return pushes_queued_;
  }
  int64_t rpcs_sent() const {
    std::lock_guard lock(mutex_);
    return rpcs_sent_;
  }
  int64_t barriers_passed() const {
    std::lock_guard lock(mutex_);
    return barriers_passed_;
  }
  int64_t dense_refreshes() const {
    std::lock_guard lock(mutex_);
    return dense_refreshes_;
  }

  ParameterClient& remote() const { return *remote_; }

 private:
  void throw_if_failed_locked() const {
    if (error_) throw Error(*error_);
  }

  void keep_error_locked(Error error) {
    if (!error_) error_ = std::move(error);
  }

  TableState& table_locked(const std::string& name, bool sparse, int64_t width) const {
    auto found = tables_.find(name);
    if (found == tables_.end()) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' was not created through this async communicator (" +
                                                   remote_->description() + "); create_table it first");
    }
    const ParameterTableConfig& config = found->second->config;
    if (config.sparse != sparse) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' is " + (config.sparse ? "sparse" : "dense") +
                                                   "; the call is for a " + (sparse ? "sparse" : "dense") + " table");
    }
    if (config.width != width) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' has " + (sparse ? "rows of " : "") +
                                                   std::to_string(config.width) + " floats; the call has " + std::to_string(width));
    }
    return *found->second;
  }

  static void install_copy_locked(TableState& t, std::vector<float> values) {
    t.copy = std::move(values);
    t.has_copy = true;
    ++t.copy_generation;
  }

  std::string barrier_name(int64_t r) const {
    return "the half-async barrier " + std::to_string(r) + " (worker " + std::to_string(options_.worker) + " of " +
           std::to_string(options_.workers) + ")";
  }

  // What the sender is doing, for an error of a caller that waited on it.
  std::string sender_status_locked() const {
    if (barrier_running_) return "the sender waits at " + barrier_name(barriers_passed_) + " for the other workers";
    if (in_flight_ > 0) return "the sender is waiting for " + remote_->description();
    return "the sender has not sent them yet";
  }

  void enqueue(const std::string& table, bool sparse, int64_t width, QueuedPush push) {
    std::unique_lock lock(mutex_);
    throw_if_failed_locked();
    TableState& t = table_locked(table, sparse, width);
    const auto capacity = static_cast<size_t>(options_.send_queue_size);
    // Both waits release the lock: after either, the queue and the push's
    // period are looked at again (another trainer thread may have pushed).
    while (true) {
      if (t.queue.size() >= capacity) {
        const bool room = changed_.wait_until(lock, Clock::now() + options_.timeout,
                                              [&] { return error_.has_value() || t.queue.size() < capacity; });
        throw_if_failed_locked();
        if (!room) {
          throw Error(ErrorKind::kCommunication, "async communicator: the send queue of table '" + table +
                                                     "' stayed full (" + std::to_string(capacity) + " pushes) for " +
                                                     seconds_text(options_.timeout) + "; " + sender_status_locked());
        }
      }
      push.period = options_.half_async ? pushes_queued_ / options_.max_merge_var_num : 0;
      if (push.period <= barriers_passed_ + 1) break;
      // Half-async: the trainer waits for barrier r, so it runs at most one
      // period past the last barrier. Stopped by full queues alone, it would
      // compute send_queue_size steps past what the servers hold (the
      // barriers slow the sender down): staler than async, by however far
      // the scheduler let the sender fall behind.
      const int64_t r = push.period - 2;
      const bool passed = changed_.wait_until(lock, Clock::now() + options_.timeout,
                                              [&] { return error_.has_value() || barriers_passed_ > r; });
      throw_if_failed_locked();
      if (!passed) {
        throw Error(ErrorKind::kCommunication, "async communicator: a push to table '" + table + "' waited " +
                                                   seconds_text(options_.timeout) + " for " + barrier_name(r) + "; " +
                                                   sender_status_locked());
      }
    }
    push.queued_at = Clock::now();
    t.queue.push_back(std::move(push));
    ++t.queued;
    ++pushes_queued_;
    changed_.notify_all();
  }

  bool all_sent_locked() const {
    if (in_flight_ > 0) return false;
    return std::all_of(order_.begin(), order_.end(), [](const TableState* t) { return t->queue.empty(); });
  }

  int64_t current_period_locked() const { return options_.half_async ? barriers_passed_ : 0; }

  // Whether a sender should send table `t` (its front push is of the
  // current period) now rather than wait for more pushes to merge.
  bool ready_locked(const TableState& t, Clock::time_point now) const {
    if (flush_requests_ > 0) return true;
    const auto enough = static_cast<size_t>(std::min(options_.max_merge_var_num, options_.send_queue_size));
    if (t.queue.size() >= enough) return true;
    if (now >= t.queue.front().queued_at + options_.send_wait) return true;
    // Half-async: every push of this period is queued; no more can join the merge.
    const int64_t period_end = (barriers_passed_ + 1) * options_.max_merge_var_num;
    return options_.half_async && pushes_queued_ >= period_end;
  }

  // A table to send now, taking turns; otherwise lowers `wake` to when one
  // will be ready.
  TableState* pick_locked(Clock::time_point now, Clock::time_point& wake) {
    const size_t n = order_.size();
    for (size_t k = 0; k < n; ++k) {
      TableState* t = order_[(next_pick_ + k) % n];
      if (t->sending || t->queue.empty() || t->queue.front().period != current_period_locked()) continue;
      if (ready_locked(*t, now)) {
        next_pick_ = (next_pick_ + k + 1) % n;
        return t;
      }
      wake = std::min(wake, t->queue.front().queued_at + options_.send_wait);
    }
    return nullptr;
  }

  bool barrier_due_locked() const {
    if (!options_.half_async || barrier_running_ || in_flight_ > 0) return false;
    const int64_t period_end = (barriers_passed_ + 1) * options_.max_merge_var_num;
    return pushes_acknowledged_ >= period_end && pushes_queued_ > period_end;
  }

  void sender_loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (error_) {
        changed_.wait_for(lock, std::chrono::seconds(1));
        continue;
      }
      if (barrier_due_locked()) {
        run_barrier(lock);
        continue;
      }
      const auto now = Clock::now();
      auto wake = now + std::chrono::seconds(1);
      TableState* t = pick_locked(now, wake);
      if (t == nullptr) {
        changed_.wait_until(lock, wake);
        continue;
      }
      send(lock, *t);
    }
  }

  // Takes up to max_merge_var_num pushes of `t` (one period), merges them
  // and pushes the merge to the remote, the lock released meanwhile.
  void send(std::unique_lock<std::mutex>& lock, TableState& t) {
    std::vector<QueuedPush> batch;
    const int64_t period = t.queue.front().period;
    while (!t.queue.empty() && batch.size() < static_cast<size_t>(options_.max_merge_var_num) &&
           t.queue.front().period == period) {
      batch.push_back(std::move(t.queue.front()));
      t.queue.pop_front();
    }
    t.sending = true;
    ++in_flight_;
    changed_.notify_all();   // room in the queue
    const ParameterTableConfig config = t.config;
    lock.unlock();
    std::optional<Error> failure;
    bool sent = false;
    try {
      MergedPush merged = merge(batch, config);
      if (config.sparse && !merged.ids.empty()) {
        remote_->push_sparse(config.name, merged.ids, merged.values.data(), config.width, merged.lr, 0);
        sent = true;
      } else if (!config.sparse) {
        remote_->push_dense(config.name, merged.values.data(), config.width, merged.lr, 0);
        sent = true;
      }
    } catch (const Error& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure = Error(ErrorKind::kCommunication, "async communicator: sending to table '" + config.name + "' failed: " + e.what());
    }
    lock.lock();
    t.sending = false;
    --in_flight_;
    if (failure) {
      keep_error_locked(std::move(*failure));
    } else {
      t.acknowledged += static_cast<int64_t>(batch.size());
      pushes_acknowledged_ += static_cast<int64_t>(batch.size());
      if (sent) ++rpcs_sent_;
    }
    changed_.notify_all();
  }

  // Barrier r: this worker's push of round r, then a pull of round r + 1,
  // which the servers answer once every worker pushed round r.
  void run_barrier(std::unique_lock<std::mutex>& lock) {
    barrier_running_ = true;
    const int64_t r = barriers_passed_;
    lock.unlock();
    std::optional<Error> failure;
    try {
      const float zero = 0.0f;
      float out = 0.0f;
      remote_->push_dense(kBarrierTable, &zero, 1, 0.0f, r);
      remote_->pull_dense(kBarrierTable, &out, 1, r + 1);
    } catch (const Error& e) {
      failure = Error(e.kind(), barrier_name(r) + ": " + e.message());
    } catch (const std::exception& e) {
      failure = Error(ErrorKind::kCommunication, barrier_name(r) + ": " + e.what());
    }
    lock.lock();
    barrier_running_ = false;
    if (failure) {
      keep_error_locked(std::move(*failure));
    } else {
      ++barriers_passed_;
    }
    changed_.notify_all();
  }

  // Pulls every dense copy from the remote after each
  // pull_dense_every_sends sends; a copy replaced meanwhile (set_dense,
  // load) keeps its new value.
  void receive_loop() {
    struct Job {
      TableState* table;
      std::string name;
      int64_t size;
      uint64_t generation;
      std::vector<float> values;
    };
    const int64_t every = options_.pull_dense_every_sends;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (error_ || every <= 0 || rpcs_sent_ - refreshed_at_sends_ < every) {
        changed_.wait_for(lock, std::chrono::seconds(1));
        continue;
      }
      refreshed_at_sends_ = rpcs_sent_;
      std::vector<Job> jobs;
      for (TableState* t : order_) {
        if (!t->config.sparse && t->has_copy) jobs.push_back({t, t->config.name, t->config.width, t->copy_generation, {}});
      }
      lock.unlock();
      std::optional<Error> failure;
      try {
        for (Job& job : jobs) {
          job.values.resize(static_cast<size_t>(job.size));
          remote_->pull_dense(job.name, job.values.data(), job.size, 0);
        }
      } catch (const Error& e) {
        failure = e;
      } catch (const std::exception& e) {
        failure = Error(ErrorKind::kCommunication, std::string("async communicator: pulling dense tables failed: ") + e.what());
      }
      lock.lock();
      if (failure) {
        keep_error_locked(std::move(*failure));
      } else {
        for (Job& job : jobs) {
          if (job.table->copy_generation == job.generation) job.table->copy = std::move(job.values);
        }
        ++dense_refreshes_;
      }
      changed_.notify_all();
    }
  }

  const std::shared_ptr<ParameterClient> remote_;
  const AsyncCommunicatorOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;   // queues, acknowledgements, barriers, errors, stop: waiters recheck
  std::map<std::string, std::unique_ptr<TableState>> tables_;
  std::vector<TableState*> order_;    // creation order; senders take turns
  size_t next_pick_ = 0;
  std::optional<Error> error_;        // the first failure of a background thread
  bool stopping_ = false;
  int flush_requests_ = 0;            // > 0: send everything now
  int in_flight_ = 0;                 // merged pushes being sent
  int64_t pushes_acknowledged_ = 0;
  bool barrier_running_ = false;
  int64_t refreshed_at_sends_ = 0;
  int64_t pushes_queued_ = 0;
  int64_t rpcs_sent_ = 0;
  int64_t barriers_passed_ = 0;
  int64_t dense_refreshes_ = 0;
  std::vector<std::thread> threads_;
};

AsyncCommunicator::AsyncCommunicator(std::shared_ptr<ParameterClient> remote, AsyncCommunicatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(remote), options)) {}

AsyncCommunicator::~AsyncCommunicator() = default;

void AsyncCommunicator::create_table(const ParameterTableConfig& config) { impl_->create_table(config); }

void AsyncCommunicator::pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                                    int64_t /*round*/) {
  impl_->pull_sparse(table, ids, rows, width);
}

void AsyncCommunicator::push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients,
                                    int64_t width, float lr, int64_t /*round*/) {
  impl_->push_sparse(table, ids, gradients, width, lr);
}

void AsyncCommunicator::pull_dense(const std::string& table, float* values, int64_t size, int64_t /*round*/) {
  impl_->pull_dense(table, values, size);
}

void AsyncCommunicator::push_dense(const std::string& table, const float* gradient, int64_t size, float lr,
                                   int64_t /*round*/) {
  impl_->push_dense(table, gradient, size, lr);
}

void AsyncCommunicator::set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset) {
  impl_->set_dense(table, values, size, only_if_unset);
}

void AsyncCommunicator::save(const std::filesystem::path& directory) {
  impl_->flush();
  impl_->remote().save(directory);
}

void AsyncCommunicator::load(const std::filesystem::path& directory) { impl_->load(directory); }

int64_t AsyncCommunicator::end_pass(int max_unseen_passes) {
  impl_->flush();
  return impl_->remote().end_pass(max_unseen_passes);
}

void AsyncCommunicator::stop_servers() {
  impl_->flush();
  impl_->remote().stop_servers();
}

void AsyncCommunicator::flush() { impl_->flush(); }

int64_t AsyncCommunicator::bytes_pushed() const { return impl_->remote().bytes_pushed(); }

int AsyncCommunicator::num_servers() const { return impl_->remote().num_servers(); }

std::string AsyncCommunicator::description() const { return impl_->remote().description(); }

int64_t AsyncCommunicator::pushes_queued() const { return impl_->pushes_queued(); }
int64_t AsyncCommunicator::rpcs_sent() const { return impl_->rpcs_sent(); }
int64_t AsyncCommunicator::barriers_passed() const { return impl_->barriers_passed(); }
int64_t AsyncCommunicator::dense_refreshes() const { return impl_->dense_refreshes(); }

std::shared_ptr<ParameterClient> make_async_communicator(std::shared_ptr<ParameterClient> remote,
                                                         AsyncCommunicatorOptions options) {
  return std::make_shared<AsyncCommunicator>(std::move(remote), options);
}

}  // namespace weir::ps
