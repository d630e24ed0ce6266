#include "distributed/ps/sync_rounds.h"

#include <algorithm>

#include "core/error.h"

namespace weir::ps {

SyncRounds::SyncRounds(std::string table, int workers) : table_(std::move(table)), workers_(workers) {}

int64_t SyncRounds::applied() const {
  std::lock_guard lock(mutex_);
  return applied_;
}

void SyncRounds::add(int worker, int64_t round, Push push, const std::function<void(std::vector<Push>&)>& apply) {
  std::unique_lock lock(mutex_);
  if (worker < 0 || worker >= workers_) {
    throw Error(ErrorKind::kInvalidArgument, "table '" + table_ + "' trains synchronously with " + std::to_string(workers_) +
                                                 " workers; a push came from worker " + std::to_string(worker));
  }
  if (round < applied_) {
    throw Error(ErrorKind::kInvalidArgument, "worker " + std::to_string(worker) + " pushed round " + std::to_string(round) +
                                                 " of table '" + table_ + "', which is already applied (" +
                                                 std::to_string(applied_) + " rounds)");
  }
  std::vector<Push>& pushes = pending_[round];
  pushes.resize(static_cast<size_t>(workers_));
  if (pushes[static_cast<size_t>(worker)].present) {
    throw Error(ErrorKind::kInvalidArgument, "worker " + std::to_string(worker) + " pushed round " + std::to_string(round) +
                                                 " of table '" + table_ + "' twice");
  }
  push.present = true;
  pushes[static_cast<size_t>(worker)] = std::move(push);
  if (applying_) return;  // the thread applying rounds takes this one when it is complete
  applying_ = true;
  try {
    for (;;) {
      auto next = pending_.find(applied_);
      if (next == pending_.end() ||
          !std::all_of(next->second.begin(), next->second.end(), [](const Push& p) { return p.present; })) {
        break;
      }
      std::vector<Push> complete = std::move(next->second);
      pending_.erase(next);
      lock.unlock();
      apply(complete);
      lock.lock();
      ++applied_;
      applied_changed_.notify_all();
    }
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    applying_ = false;
    throw;
  }
  applying_ = false;
}

void SyncRounds::wait_applied(int64_t rounds, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (applied_changed_.wait_until(lock, deadline, [&] { return applied_ >= rounds; })) return;
  std::string missing;
  auto next = pending_.find(applied_);
  for (int w = 0; w < workers_; ++w) {
    if (next == pending_.end() || !next->second[static_cast<size_t>(w)].present) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(w);
    }
  }
  throw Error(ErrorKind::kCommunication, "table '" + table_ + "': round " + std::to_string(applied_) +
                                             " is still waiting for the push of worker(s) " + missing +
                                             " (a pull wants " + std::to_string(rounds) + " rounds applied)");
}

}  // namespace weir::ps
