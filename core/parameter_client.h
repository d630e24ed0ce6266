// ParameterClient — how a worker reaches the parameter servers that hold its
// tables (Paddle's parameter-server mode): graph ops call it through the
// kernel context, distributed/ps/ implements it over gRPC.
//
//   weir::ParameterTableConfig embedding{.name = "emb", .sparse = true, .width = 16,
//                                        .rule = weir::TableRule::kAdagrad};
//   client->create_table(embedding);                           // every worker; same config or an error
//   client->pull_sparse("emb", ids, rows.data(), 16, round);    // rows of `ids`, created on first touch
//   client->push_sparse("emb", ids, grads.data(), 16, lr, round);
//
// Tables are dense (a flat vector of `width` floats, sliced over the
// servers) or sparse (rows of `width` floats keyed by 64-bit ids, hashed to
// shards spread over the servers). The servers apply the table's optimizer
// rule to what workers push.
//
// Synchronous training (config.sync_workers = W > 0): a push names the round
// it belongs to (the worker's step); the servers apply a round once all W
// workers pushed it, the mean of their gradients, summed in worker order. A
// pull with round r waits until rounds 0 .. r-1 are applied, so every step's
// gradients are applied before any worker reads the next step's parameters.
// Asynchronous training (sync_workers 0): pushes apply as they come, pulls
// never wait, and round is ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace weir {

// The per-row optimizer rule a table applies to pushed gradients.
// kDelta adds what is pushed (Geo-SGD's parameter deltas).
enum class TableRule { kSgd, kAdagrad, kAdam, kDelta };

const char* table_rule_name(TableRule rule);
// "sgd", "adagrad", "adam", "delta"; throws kInvalidArgument naming the choices.
TableRule parse_table_rule(const std::string& name);

// How a row (sparse) or the table (dense) starts. Row `id`'s values depend
// on (seed, id) alone, so a row is the same whichever server creates it.
struct TableInitializer {
  enum class Kind { kZeros, kUniform, kNormal };
  Kind kind = Kind::kZeros;
  double scale = 0.0;   // uniform: [-scale, scale); normal: standard deviation
  uint64_t seed = 0;
};

// Fills `row` (`width` floats) with the initial values of row `id`.
void initial_table_row(const TableInitializer& init, int64_t id, float* row, int64_t width);

struct ParameterTableConfig {
  std::string name;
  bool sparse = false;
  int64_t width = 0;           // sparse: floats per row; dense: floats in the table
  TableRule rule = TableRule::kSgd;
  double epsilon = 0.0;        // 0: the rule's default (Adagrad 1e-6, Adam 1e-8)
  double beta1 = 0.9, beta2 = 0.999;
  TableInitializer init{};
  int64_t admit_after = 1;     // sparse: a row is created at its N-th lookup (count_filter_entry)
  int shard_num = 1000;        // sparse: shards the ids hash to, spread over the servers
  int sync_workers = 0;        // > 0: synchronous rounds of this many workers; 0: asynchronous
};

class ParameterClient {
 public:
  virtual ~ParameterClient() = default;

  // Creates the table on every server, or checks that the one there has
  // this configuration (kInvalidArgument naming the field that differs).
  virtual void create_table(const ParameterTableConfig& config) = 0;

  // Sparse rows: `rows` holds ids.size() × width floats. Ids may repeat
  // (each gets the row); ids below their admission count get zeros.
  virtual void pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                           int64_t round) = 0;
  // Gradients of rows: ids.size() × width floats; equal ids are added.
  virtual void push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients,
                           int64_t width, float lr, int64_t round) = 0;

  // A dense table's `size` floats.
  virtual void pull_dense(const std::string& table, float* values, int64_t size, int64_t round) = 0;
  virtual void push_dense(const std::string& table, const float* gradient, int64_t size, float lr, int64_t round) = 0;
  // Sets a dense table's values. With `only_if_unset`, each server's slice
  // takes them only if nothing set, pushed or loaded it before: every
  // worker offers the same initial value and the first one wins, so no
  // worker has to wait for another before its first pull.
  virtual void set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset = false) = 0;

  // Every server writes its part of every table under `directory` (each
  // file atomically) or reads it back.
  virtual void save(const std::filesystem::path& directory) = 0;
  virtual void load(const std::filesystem::path& directory) = 0;
  // Ends a pass over the data: sparse rows not looked up in the last
  // `max_unseen_passes` passes are dropped. Returns the rows dropped.
  virtual int64_t end_pass(int max_unseen_passes) = 0;

  // Asks every server to exit: the job is done (the launcher's worker 0
  // calls it after training).
  virtual void stop_servers() = 0;

  // Returns once every push made so far has reached the servers (a client
  // that queues pushes, distributed/ps/async_communicator.h); a client that
  // sends each push before returning has nothing to do.
  virtual void flush() {}

  // Bytes of gradients and ids this client has sent to the servers so far
  // (payload, not framing): what merging pushes saves.
  virtual int64_t bytes_pushed() const = 0;

  virtual int num_servers() const = 0;
  // What errors name: "parameter servers 127.0.0.1:7000,127.0.0.1:7001".
  virtual std::string description() const = 0;
};

// Tables whose names begin with this coordinate a job (barriers); servers
// neither save nor load them: they are no part of the model.
inline constexpr const char* kJobTablePrefix = "__";

// Returns once all `workers` workers have called it with this `generation`
// (0, 1, 2, ... in the order a job's barriers come), meeting on the servers
// through a synchronous one-float table; `servers` must send each push
// before returning (the gRPC client, not a communicator that merges pushes).
// A worker that never arrives makes the others fail when the servers' wait
// for the round times out, with an error naming `what` and the generation.
void wait_for_workers(ParameterClient& servers, int workers, int64_t generation, const std::string& what);

}  // namespace weir
