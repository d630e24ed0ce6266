// Sparse-table throughput of the parameter server (distributed/ps/): rows
// looked up and updated per second, for tables of 10^6 and 10^7 rows of 8
// floats (Adagrad), in batches of 4096 uniformly random ids:
//   path=table: SparseTable directly, 1 and 2 threads (the shards' locks);
//   path=grpc:  through the gRPC client to 2 servers in this process over
//               127.0.0.1 (each batch one pull or push RPC per server).
// The table rows in the same run are the baseline of the gRPC ones. Prints
// one line per measurement (docs/perf.md):
//   rows=R width=W op=lookup|update path=table|grpc threads=T rows_per_s=X
//   weir_ps_table_bench [ROWS...]   (default 1000000 10000000)
#include <fmt/format.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"
#include "distributed/ps/sparse_table.h"

namespace {

constexpr int64_t kWidth = 8;
constexpr size_t kBatch = 4096;
constexpr double kSeconds = 1.5;

weir::ParameterTableConfig config_of() {
  weir::ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = kWidth;
  config.rule = weir::TableRule::kAdagrad;
  config.init = {weir::TableInitializer::Kind::kUniform, 0.01, 1};
  return config;
}

// Runs `batch(rng)` on `threads` threads for kSeconds; rows per second.
template <typename Batch>
double rows_per_second(int threads, Batch batch) {
  std::vector<int64_t> done(static_cast<size_t>(threads));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < kSeconds) {
        batch(rng);
        done[static_cast<size_t>(t)] += kBatch;
      }
    });
  }
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t total = 0;
  for (int64_t d : done) total += d;
  return static_cast<double>(total) / elapsed;
}

void report(int64_t rows, const char* op, const char* path, int threads, double rate) {
  fmt::print("rows={} width={} op={} path={} threads={} rows_per_s={:.0f}\n", rows, kWidth, op, path, threads, rate);
  std::fflush(stdout);
}

void bench(int64_t rows) {
  const auto config = config_of();
  weir::ps::SparseTable table(config);
  {
    // Every row created first, so lookups measure reads, not creation.
    std::vector<int64_t> ids(kBatch);
    std::vector<float> out(kBatch * kWidth);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t first = 0; first < rows; first += static_cast<int64_t>(kBatch)) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(kBatch), rows - first));
      for (size_t i = 0; i < n; ++i) ids[i] = first + static_cast<int64_t>(i);
      table.pull({ids.data(), n}, out.data());
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report(rows, "create", "table", 1, static_cast<double>(rows) / elapsed);
  }
  auto random_ids = [rows](std::mt19937_64& rng, std::vector<int64_t>& ids) {
    std::uniform_int_distribution<int64_t> pick(0, rows - 1);
    for (int64_t& id : ids) id = pick(rng);
  };
  for (int threads : {1, 2}) {
    report(rows, "lookup", "table", threads, rows_per_second(threads, [&](std::mt19937_64& rng) {
             thread_local std::vector<int64_t> ids(kBatch);
             thread_local std::vector<float> out(kBatch * kWidth);
             random_ids(rng, ids);
             table.pull(ids, out.data());
           }));
    report(rows, "update", "table", threads, rows_per_second(threads, [&](std::mt19937_64& rng) {
             thread_local std::vector<int64_t> ids(kBatch);
             thread_local std::vector<float> grads(kBatch * kWidth, 0.01f);
             random_ids(rng, ids);
             table.push(ids, grads.data(), 0.01f);
           }));
  }

  weir::ps::ParameterServer a({}), b({});
  auto client = weir::ps::connect_parameter_servers({.endpoints = {a.endpoint(), b.endpoint()}});
  client->create_table(config);
  std::vector<int64_t> ids(kBatch);
  std::vector<float> out(kBatch * kWidth);
  for (int64_t first = 0; first < rows; first += static_cast<int64_t>(kBatch)) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(kBatch), rows - first));
    for (size_t i = 0; i < n; ++i) ids[i] = first + static_cast<int64_t>(i);
    client->pull_sparse("emb", std::span<const int64_t>(ids.data(), n), out.data(), kWidth, 0);
  }
  report(rows, "lookup", "grpc", 1, rows_per_second(1, [&](std::mt19937_64& rng) {
           random_ids(rng, ids);
           client->pull_sparse("emb", ids, out.data(), kWidth, 0);
         }));
  std::vector<float> grads(kBatch * kWidth, 0.01f);
  report(rows, "update", "grpc", 1, rows_per_second(1, [&](std::mt19937_64& rng) {
           random_ids(rng, ids);
           client->push_sparse("emb", ids, grads.data(), kWidth, 0.01f, 0);
         }));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoll(argv[i]));
  if (sizes.empty()) sizes = {1000000, 10000000};
  for (int64_t rows : sizes) bench(rows);
  return 0;
}
