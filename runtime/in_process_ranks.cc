#include "runtime/in_process_ranks.h"

#include <exception>
#include <thread>

#include "core/error.h"

namespace weir {

void run_on_ranks(int ranks, const std::function<void(int rank)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  auto guarded = [&](int rank) {
    try {
      body(rank);
    } catch (...) {
      errors[static_cast<size_t>(rank)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < ranks; ++r) threads.emplace_back(guarded, r);
  guarded(0);
  for (std::thread& thread : threads) thread.join();
  std::exception_ptr first, cause;
  for (const std::exception_ptr& error : errors) {
    if (!error) continue;
    if (!first) first = error;
    if (cause) continue;
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCommunication) cause = error;
    } catch (...) {
      cause = error;
    }
  }
  if (cause) std::rethrow_exception(cause);
  if (first) std::rethrow_exception(first);
}

InProcessRanks::InProcessRanks(std::shared_ptr<const Plan> plan, int ranks, SessionOptions options,
                               InProcessWorldOptions world) {
  if (options.world) {
    throw Error(ErrorKind::kInvalidArgument, "InProcessRanks makes its own world; SessionOptions::world must be unset");
  }
  world.timeout = options.collective_timeout;
  std::vector<std::shared_ptr<World>> worlds = make_in_process_world(ranks, world);
  sessions_.resize(static_cast<size_t>(ranks));
  // The sessions exchange their collective lists as they start: together.
  run_on_ranks(ranks, [&](int rank) {
    SessionOptions mine = options;
    mine.world = worlds[static_cast<size_t>(rank)];
    try {
      sessions_[static_cast<size_t>(rank)] = std::make_unique<Session>(plan, mine);
    } catch (const std::exception& e) {
      // The peers may be waiting in the start-up exchange for this rank.
      mine.world->abort("rank " + std::to_string(rank) + " could not start: " + e.what());
      throw;
    }
  });
}

std::vector<std::vector<Tensor>> InProcessRanks::run(const std::vector<std::map<std::string, Tensor>>& feeds,
                                                     const RunOptions& options) {
  if (feeds.size() != sessions_.size()) {
    throw Error(ErrorKind::kInvalidArgument, "InProcessRanks::run: " + std::to_string(feeds.size()) + " feeds for " +
                                                 std::to_string(sessions_.size()) + " ranks");
  }
  std::vector<std::vector<Tensor>> outputs(sessions_.size());
  run_on_ranks(size(), [&](int rank) {
    const auto r = static_cast<size_t>(rank);
    // One profiler records one rank (the first): its events are one timeline.
    RunOptions mine = options;
    if (rank != 0) mine.profiler = nullptr;
    outputs[r] = sessions_[r]->run(feeds[r], mine);
  });
  return outputs;
}

}  // namespace weir
