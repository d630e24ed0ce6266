// InProcessRanks — the N ranks of an in-process world running one plan:
// N Sessions of the same plan (no copies of the graph or the kernels), each
// the rank of its world, run together one step at a time, rank r on a thread
// of its own (rank 0 on the caller's).
//
//   auto plan = weir::compile(*per_rank_step);       // one rank's program
//   weir::InProcessRanks ranks(plan, 4);              // ranks on cpu:0 .. cpu:3
//   std::vector<std::vector<weir::Tensor>> out = ranks.run(per_rank_feeds);  // [rank][output]
//   ranks.session(2).state("w");                      // rank 2's copy of a parameter
//
// When a step fails on one rank, its world is aborted, every rank's run
// throws, and run() rethrows the error of the rank it started on (the
// others only say that rank failed). The world stays aborted: the ranks
// refuse further steps, as ranks of a multi-process job would.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/in_process_world.h"
#include "runtime/session.h"

namespace weir {

class InProcessRanks {
 public:
  // `options.world` must be unset: each rank gets its own of a new world,
  // whose collectives wait `options.collective_timeout` (world.timeout is
  // ignored).
  InProcessRanks(std::shared_ptr<const Plan> plan, int ranks, SessionOptions options = {},
                 InProcessWorldOptions world = {});

  int size() const { return static_cast<int>(sessions_.size()); }
  Session& session(int rank) { return *sessions_.at(static_cast<size_t>(rank)); }
  const Session& session(int rank) const { return *sessions_.at(static_cast<size_t>(rank)); }

  // Runs one step on every rank, rank r with feeds[r]; returns each rank's outputs.
  std::vector<std::vector<Tensor>> run(const std::vector<std::map<std::string, Tensor>>& feeds,
                                       const RunOptions& options = {});

 private:
  std::vector<std::unique_ptr<Session>> sessions_;
};

// Runs body(rank) for rank 0 .. ranks-1 at once, rank 0 on the calling
// thread. When some throw, rethrows the error that started the failure: the
// first one, by rank, that is not a kCommunication error (a peer's abort),
// else the first by rank.
void run_on_ranks(int ranks, const std::function<void(int rank)>& body);

}  // namespace weir
