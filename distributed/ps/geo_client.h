// GeoClient — a ParameterClient for Geo-SGD (Paddle's a_sync with k_steps
// > 0, DISTRIBUTED.md §6): each worker trains its own copy of the tables
// with the tables' optimizer rules and, every k pushes of a table, sends
// the table's change since the last exchange, divided by the number of
// workers, for the servers to add.
//
//   auto remote = weir::ps::connect_parameter_servers({.endpoints = endpoints, .worker = rank});
//   auto client = weir::ps::make_geo_client(remote, {.k_steps = 100, .workers = 4});
//   client->create_table(config);            // local rule config.rule; the servers' table adds deltas
//   client->pull_sparse("emb", ids, rows.data(), 16, 0);   // local rows (missing ones fetched)
//   client->push_sparse("emb", ids, grads.data(), 16, lr, 0);   // applied locally; every k-th also exchanges
//   client->flush();                          // end of training: the servers get every pending delta
//
// Per table the client keeps `latest` (what training reads and updates),
// `old` (what it last agreed with the servers) and the rule's optimizer
// state. An exchange sends delta = (latest − old) / workers, sets
// old += delta (the servers add delta: the remote table has rule kDelta),
// pulls the server value and sets latest += server − old, old = server.
//
// Sparse tables keep a cache of rows. A pull answers cached rows locally and
// fetches the missing ones from the remote in one call (latest = old =
// server). A push adds the gradients of equal ids, then applies the rule to
// each row (fetching rows not cached). An exchange sends the deltas of the
// rows pushed since the last exchange (one remote push_sparse) and re-pulls
// every row pulled or pushed since then. Rows neither pulled nor pushed
// since the last exchange are dropped from the cache at the exchange: the
// cache holds the working set, and a row coming back is fetched fresh
// instead of being served stale. A dropped row has latest == old, so no
// value is lost; its local optimizer state is kept aside and comes back
// with it (an Adagrad accumulator restarted at zero would take a full
// lr-sized step each time a rare id reappears).
//
// Thread safety: calls may come from several threads; each table has a lock
// (an exchange holds it during its remote calls), and waiting for it longer
// than `timeout` is a kCommunication error naming the table.
//
// What it does not do: admission counts (admit_after) see only the cache's
// fetches, not every lookup; round is ignored (Geo-SGD is asynchronous).
#pragma once

#include <chrono>
#include <memory>

#include "core/parameter_client.h"

namespace weir::ps {

struct GeoClientOptions {
  int k_steps = 100;   // pushes of a table between its exchanges
  int workers = 1;     // deltas are divided by this
  std::chrono::milliseconds timeout{60000};   // waiting for a table another thread is using
};

class GeoClient final : public ParameterClient {
 public:
  // Throws kInvalidArgument for k_steps or workers below 1 or a null remote.
  GeoClient(std::shared_ptr<ParameterClient> remote, GeoClientOptions options);
  ~GeoClient() override;
  GeoClient(const GeoClient&) = delete;
  GeoClient& operator=(const GeoClient&) = delete;

  // Keeps config.rule as the local rule; creates the remote table with rule
  // kDelta and sync_workers 0 (everything else equal).
  void create_table(const ParameterTableConfig& config) override;
  void pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                   int64_t round) override;
  void push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients, int64_t width,
                   float lr, int64_t round) override;
  // The local `latest`; the first pull fetches it from the remote.
  void pull_dense(const std::string& table, float* values, int64_t size, int64_t round) override;
  // Applies the local rule; every k_steps-th push of the table exchanges.
  void push_dense(const std::string& table, const float* gradient, int64_t size, float lr, int64_t round) override;
  // Forwarded; then latest = old = the server's value (pending changes of
  // the table are discarded).
  void set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset = false) override;
  // save, end_pass and stop_servers flush first; load drops the local
  // copies (the next pull fetches them).
  void save(const std::filesystem::path& directory) override;
  void load(const std::filesystem::path& directory) override;
  int64_t end_pass(int max_unseen_passes) override;
  void stop_servers() override;
  // Exchanges every table with changes since its last exchange now.
  void flush() override;
  int64_t bytes_pushed() const override;   // the remote's
  int num_servers() const override;
  std::string description() const override;

  // Counters (tests, logs).
  int64_t exchanges() const;                          // exchanges of all tables
  int64_t cached_rows(const std::string& table) const;   // -1: no such sparse table

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// make_shared of the above, as a ParameterClient.
std::shared_ptr<ParameterClient> make_geo_client(std::shared_ptr<ParameterClient> remote, GeoClientOptions options);

}  // namespace weir::ps
