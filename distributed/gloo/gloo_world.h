// A world of processes over Gloo: this process is one rank, its program runs
// on this host's CPU, and the ranks meet through the TCP store rank 0
// serves at the launch environment's master address (or a FileStore
// directory every rank sees).
//
//   weir::LaunchEnvironment launch = weir::read_launch_environment(weir::process_environment());
//   std::shared_ptr<weir::World> world = weir::make_gloo_world(launch, {.timeout = std::chrono::seconds(30)});
//   weir::SessionOptions options;
//   options.world = world;                       // runtime/session.h: this process's rank
//   weir::Session session(plan, options);
//
// Groups are Gloo subgroups of the world's communicator (cached per rank
// list). abort() refuses every later collective; one blocked in Gloo ends
// at its timeout (Gloo cannot be interrupted).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/world.h"
#include "distributed/gloo/gloo_communicator.h"
#include "distributed/launch_environment.h"

namespace weir {

struct GlooWorldOptions {
  std::string job = "weir";             // the job's namespace in the store
  std::string hostname = "127.0.0.1";   // the address this rank listens on for its peers
  std::string store_directory{};        // non-empty: a FileStore there instead of the TCP store
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // rendezvous, and collectives without their own
  GlooAllreduce allreduce = GlooAllreduce::kRankOrder;          // distributed/gloo/gloo_communicator.h
};

// Returns once every rank has connected; throws weir::Error(kCommunication)
// naming the store's address otherwise.
std::shared_ptr<World> make_gloo_world(const LaunchEnvironment& launch, const GlooWorldOptions& options = {});

}  // namespace weir
