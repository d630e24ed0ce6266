// A communicator over Gloo's TCP transport: the ranks are processes (on one
// host or several), rendezvous goes through a store, and the collectives
// are Gloo's (ring allreduce, its allgather, broadcast, barrier, unbound
// buffers for send/recv).
//
//   weir::GlooGroupOptions options{.store_directory = "/shared/job42", .timeout = std::chrono::seconds(30)};
//   std::shared_ptr<weir::Communicator> comm = weir::make_gloo_communicator(rank, size, options);
//   comm->all_reduce(grad, reduced, weir::ReduceOp::kAvg, {.tag = "grad/w"});
//
// Rendezvous: each rank publishes its address in the store under the
// group's namespace (`job`, then the subgroup's ranks), and every pair
// connects; a rank missing past the timeout fails naming the store. The
// store is Weir's TCP store served by rank 0 (distributed/tcp_store.h) or
// Gloo's FileStore on a directory every rank sees; a FileStore key written
// twice aborts it, so each job needs its own directory or `job` name.
//
// Calls follow core/communicator.h: every rank of a group calls the same
// collectives in the same order (Gloo tags them by a per-group counter).
// Reductions run in the tensor's dtype: sum, max and min are Gloo's for
// f32, f64 and integers; f16 and bf16 reduce through f32 element by
// element; avg is the sum divided by the group size. reduce_scatter is an
// allreduce of which each rank keeps its part (Debian's Gloo has no
// new-style reduce-scatter). A Gloo error (a dead peer, a timeout) is
// weir::Error(kCommunication) naming the call, the tag and the rank; after
// one, Gloo's context is unusable, so the communicator refuses further
// calls, as it does after abort(). abort() cannot wake a call blocked in
// Gloo: that call ends at its timeout.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/communicator.h"

namespace weir {

struct GlooGroupOptions {
  // Where the ranks meet: a TCP store that rank 0 serves on `master_port`
  // and every rank reaches at master_addr:master_port (hosts without a
  // shared filesystem), or, when master_port is 0, a FileStore directory
  // every rank sees.
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string store_directory{};        // shared by the ranks; fresh per job (or per `job`)
  std::string job = "weir";             // the job's namespace in the store
  std::string hostname = "127.0.0.1";   // the address this rank listens on
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // rendezvous, and calls without their own
};

// Rank `rank` of a group of `size` processes; returns once every rank has
// connected (throws weir::Error(kCommunication) naming the store otherwise).
std::shared_ptr<Communicator> make_gloo_communicator(int rank, int size, const GlooGroupOptions& options);

}  // namespace weir
