// AsyncCommunicator — a ParameterClient that queues a worker's pushes and
// sends them from background threads, merged (Paddle's async communicator,
// DISTRIBUTED.md §6): asynchronous parameter-server training where the
// trainer never waits for a push to reach the servers.
//
//   auto remote = weir::ps::connect_parameter_servers({.endpoints = endpoints, .worker = rank});
//   auto client = weir::ps::make_async_communicator(remote, {.max_merge_var_num = 20});
//   client->create_table(config);                                 // forwarded (asynchronous table)
//   client->push_sparse("emb", ids, grads.data(), 16, lr, 0);     // queued; returns at once
//   client->pull_dense("fc.w", w.data(), w.size(), 0);            // this worker's copy, no network wait
//   client->flush();                                              // every push so far is on the servers
//
// Each table has a bounded queue (send_queue_size pushes); a full queue
// blocks push_* (back-pressure). Sender threads take up to
// max_merge_var_num pushes of one table and merge them into ONE remote
// push: dense gradients summed; sparse ids concatenated and rows of equal
// ids added, each distinct id sent once; the merged push has the latest
// push's lr. Merging sums (Paddle's merge_add): k merged SGD pushes move a
// parameter as far as k separate ones; for Adagrad/Adam, or pushes with
// different lr, the merged push is one optimizer step, not k.
//
// pull_sparse goes straight to the remote. pull_dense returns a local copy
// of the dense table, initialised from the remote by the first pull (or by
// set_dense) and refreshed by a receive thread after every
// pull_dense_every_sends sends.
//
// Errors of the background threads (a dead server) are kept, and every
// later call except bytes_pushed/num_servers/description throws them
// (same kind and message). Waits on the trainer's side (a full queue, the
// half-async barrier, flush) end by `timeout`.
//
// What it does not do: it does not order pushes of different tables, it
// does not apply a worker's own pushes to its dense copies (they appear
// when the servers have them and the receive thread pulled them), and it
// does not cancel a remote call in flight: a sender inside a remote call
// (or the half-async barrier's pull) returns when that call ends, which
// the remote's own call deadline bounds. The destructor first tries to
// send what is queued (at most `timeout`, nothing when an error is kept),
// then stops the threads.
#pragma once

#include <chrono>
#include <memory>

#include "core/parameter_client.h"

namespace weir::ps {

struct AsyncCommunicatorOptions {
  int send_queue_size = 16;     // pushes each table's queue holds; a full queue blocks push_* (back-pressure)
  int max_merge_var_num = 20;   // pushes of one table merged into one RPC at most
  int thread_pool_size = 1;     // sender threads
  std::chrono::milliseconds send_wait{5};  // how long a sender waits for more pushes to merge before sending what it has
  int pull_dense_every_sends = 1;  // the receive thread pulls dense tables after this many sends of any table (0: never by itself)
  // Half-async: a barrier of all workers after every max_merge_var_num
  // pushes of this worker (across tables; see AsyncCommunicator). The
  // barrier is a hidden dense table "__weir_barrier" with synchronous rounds
  // of `workers`, so the remote must be connected as worker `worker`.
  bool half_async = false;
  int workers = 1, worker = 0;  // for half-async's barrier
  std::chrono::milliseconds timeout{60000};  // any wait: a full queue, flush, the barrier
};

// The half-async barrier (options.half_async): push i of this worker (i
// counted from 0 over every table) belongs to period i / max_merge_var_num;
// a merged push never mixes periods, and no push of period p + 1 is sent
// before barrier p, which every worker enters once all of its pushes of
// period p were acknowledged and it has a push of period p + 1 to send.
// The trainer waits too: a push of period p + 2 blocks in push_* until
// barrier p is passed, so the trainer computes at most one period past the
// last barrier (Paddle's half-async trainers wait at the barrier); full
// queues alone would let it run send_queue_size steps past the servers.
// Counting pushes (the trainer's sends), not RPCs, keeps the number of
// barriers the same on workers that push equally often, however their
// pushes happen to merge, so no worker waits at a barrier the others never
// reach. Barrier r is push_dense(0, round r) then pull_dense(round r + 1) of
// "__weir_barrier".
class AsyncCommunicator final : public ParameterClient {
 public:
  // Starts the sender and receive threads; in half-async mode also creates
  // the barrier table. Throws kInvalidArgument for options outside their
  // ranges or a null remote.
  AsyncCommunicator(std::shared_ptr<ParameterClient> remote, AsyncCommunicatorOptions options);
  ~AsyncCommunicator() override;
  AsyncCommunicator(const AsyncCommunicator&) = delete;
  AsyncCommunicator& operator=(const AsyncCommunicator&) = delete;

  // Forwarded with sync_workers 0 (asynchronous on the servers).
  void create_table(const ParameterTableConfig& config) override;
  void pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                   int64_t round) override;
  // Copies the gradients into the table's queue; round is ignored.
  void push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients, int64_t width,
                   float lr, int64_t round) override;
  void pull_dense(const std::string& table, float* values, int64_t size, int64_t round) override;
  void push_dense(const std::string& table, const float* gradient, int64_t size, float lr, int64_t round) override;
  // Forwarded, then the local copy is pulled from the remote (with
  // only_if_unset the servers may keep an earlier value). Pushes still
  // queued are not flushed first.
  void set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset = false) override;
  // save, load, end_pass and stop_servers flush first; load also drops the
  // dense copies (the next pull fetches them).
  void save(const std::filesystem::path& directory) override;
  void load(const std::filesystem::path& directory) override;
  int64_t end_pass(int max_unseen_passes) override;
  void stop_servers() override;
  // Returns once every push queued before the call was acknowledged by the
  // remote; kCommunication past `timeout`, naming the tables still waiting.
  void flush() override;
  // The remote's: bytes that actually went to the servers.
  int64_t bytes_pushed() const override;
  int num_servers() const override;
  std::string description() const override;

  // Counters (tests, logs).
  int64_t pushes_queued() const;    // push_sparse/push_dense calls accepted
  int64_t rpcs_sent() const;        // merged pushes the remote acknowledged
  int64_t barriers_passed() const;  // half-async barriers this worker passed
  int64_t dense_refreshes() const;  // rounds of the receive thread pulling the dense copies

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// make_shared of the above, as a ParameterClient.
std::shared_ptr<ParameterClient> make_async_communicator(std::shared_ptr<ParameterClient> remote,
                                                         AsyncCommunicatorOptions options);

}  // namespace weir::ps
