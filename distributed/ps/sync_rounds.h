// SyncRounds — the barrier of synchronous parameter-server training on one
// table of one server: it keeps each worker's push for each round and
// applies a round once all workers pushed it, rounds in order, the workers'
// pushes in worker order (so the sum is the same however they arrive).
//
//   weir::ps::SyncRounds rounds("emb", 2);
//   rounds.add(worker, round, std::move(push), [&](std::vector<Push>& by_worker) { ... });
//   rounds.wait_applied(round, deadline);   // a pull of `round` waits for rounds 0 .. round-1
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace weir::ps {

// One worker's push: gradient floats (and, for a sparse table, their ids).
struct Push {
  std::vector<int64_t> ids;
  std::vector<float> values;
  float lr = 0;
  bool present = false;
};

class SyncRounds {
 public:
  SyncRounds(std::string table, int workers);

  // Keeps `push` as `worker`'s part of `round`. When that completes the
  // next round (and maybe later ones), applies them here, in order: `apply`
  // gets the round's pushes indexed by worker. Throws kInvalidArgument for
  // a worker outside 0 .. W-1, a round already applied, or a second push of
  // one worker to one round.
  void add(int worker, int64_t round, Push push, const std::function<void(std::vector<Push>&)>& apply);

  // Returns once `rounds` rounds are applied; throws kCommunication past
  // `deadline`, naming the round and the workers it still waits for.
  void wait_applied(int64_t rounds, std::chrono::steady_clock::time_point deadline);

  int64_t applied() const;
  int workers() const { return workers_; }

 private:
  std::string table_;
  int workers_;
  mutable std::mutex mutex_;
  std::condition_variable applied_changed_;
  std::map<int64_t, std::vector<Push>> pending_;   // round -> pushes by worker
  int64_t applied_ = 0;                             // rounds 0 .. applied_-1 are applied
  bool applying_ = false;                           // a thread is applying rounds
};

}  // namespace weir::ps
