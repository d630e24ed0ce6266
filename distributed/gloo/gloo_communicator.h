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
// Reductions (GlooAllreduce::kRankOrder, the default) give bitwise the
// in-process world's results: reduce_scatter sends part r of every rank's
// input to rank r with Gloo's alltoallv, and rank r reduces the parts in
// rank order (ops/comm/rank_order_reduction.h; Debian's Gloo has no
// new-style reduce-scatter); all_reduce is that reduce-scatter followed by
// Gloo's ring allgatherv, the same 2(N-1)/N bytes per rank as a ring
// allreduce. kRing and kBcube use Gloo's allreduce instead (its sum, max
// and min for f32, f64 and integers; f16 and bf16 through f32; avg the sum
// divided by the group size), whose order of addition depends on the
// chunk: with more than two ranks the last bits differ from one rank order.
//
// Failures: a Gloo error (a dead peer, a timeout) is
// weir::Error(kCommunication) naming the call, the tag and the rank, and
// which ranks are gone: each rank listens on a liveness beacon
// (distributed/liveness_beacon.h) whose address it publishes at
// rendezvous, and after an error the others probe them (a call on unbound
// buffers that lasts over 250 ms is probed for while it waits, since Gloo
// does not wake a send waiting on a dead peer). Ranks that were
// started with other world sizes, or a second process claiming a rank of
// the job's namespace (two jobs sharing it), are refused at rendezvous.
// After an error Gloo's context is unusable, so the communicator refuses
// further calls, as it does after abort(). abort() cannot wake a call
// blocked in Gloo: that call ends at its timeout. The first group made
// ignores SIGPIPE (unless the process handles it), so a write to a dead
// peer is an error, not the end of this process.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/communicator.h"

namespace weir {

// How all_reduce combines the ranks' tensors.
enum class GlooAllreduce {
  kRankOrder,  // reduce-scatter in rank order + ring allgather: the in-process world's bits
  kRing,       // Gloo's ring allreduce
  kBcube,      // Gloo's bcube allreduce
};

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
  GlooAllreduce allreduce = GlooAllreduce::kRankOrder;
};

// Rank `rank` of a group of `size` processes; returns once every rank has
// connected (throws weir::Error(kCommunication) naming the store otherwise).
std::shared_ptr<Communicator> make_gloo_communicator(int rank, int size, const GlooGroupOptions& options);

}  // namespace weir
