// Parameter servers and their gRPC client on 127.0.0.1: sparse ids routed
// to the servers of their shards and dense tables sliced over them, the
// same rows a single table computes; synchronous rounds of two workers
// applying the mean of their gradients before either reads the next step;
// save and load through the servers; and every failure a clear error in
// bounded time (an unknown table, another configuration, a server nobody
// runs, a server that died).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <future>
#include <thread>

#include "core/error.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"
#include "tests/distributed/ps/in_process_servers.h"
#include "tests/test_util.h"
#include "distributed/ps/sparse_table.h"
#include "tests/distributed/process_group.h"

namespace weir::ps {
namespace {

using namespace std::chrono_literals;

using Servers = InProcessServers;

ParameterTableConfig sparse_table(int64_t width, TableRule rule, int sync_workers = 0) {
  ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = width;
  config.rule = rule;
  config.init = {TableInitializer::Kind::kNormal, 0.01, 3};
  config.shard_num = 10;
  config.sync_workers = sync_workers;
  return config;
}

using weir::testing::error_of;

TEST(ParameterServer, SparseRowsAreRoutedToTheirShardsServersAndMatchOneTable) {
  Servers servers(2);
  auto client = servers.client();
  const auto config = sparse_table(4, TableRule::kAdagrad);
  client->create_table(config);
  SparseTable reference(config);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 200; ++i) ids.push_back(i * 37 - 1000);
  ids.push_back(ids[5]);   // repeated ids get the row each time, and their gradients add
  std::vector<float> rows(ids.size() * 4), expected(rows.size()), grads(rows.size());
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  for (int step = 0; step < 3; ++step) {
    client->pull_sparse("emb", ids, rows.data(), 4, 0);
    reference.pull(ids, expected.data());
    EXPECT_EQ(rows, expected) << "step " << step;
    client->push_sparse("emb", ids, grads.data(), 4, 0.1f, 0);
    reference.push(ids, grads.data(), 0.1f);
  }
  const int64_t on_first = servers.servers[0]->sparse_rows("emb"), on_second = servers.servers[1]->sparse_rows("emb");
  EXPECT_EQ(on_first + on_second, 200);
  EXPECT_GT(on_first, 50) << "the shards spread the rows over both servers";
  EXPECT_GT(on_second, 50);
}

TEST(ParameterServer, DenseTablesAreSlicedOverTheServers) {
  Servers servers(3);
  auto client = servers.client();
  ParameterTableConfig config;
  config.name = "fc.weight";
  config.width = 11;
  config.rule = TableRule::kSgd;
  client->create_table(config);
  std::vector<float> init(11), grad(11, 1.0f), out(11);
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>(i);
  client->set_dense("fc.weight", init.data(), 11);
  client->push_dense("fc.weight", grad.data(), 11, 0.5f, 0);
  client->pull_dense("fc.weight", out.data(), 11, 0);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], static_cast<float>(i) - 0.5f);
}

// Two workers, two servers, synchronous rounds: after each round every
// worker reads the rows and weights that the mean of both workers'
// gradients gives, whichever worker pushes first.
TEST(ParameterServer, SynchronousRoundsApplyTheMeanOfTheWorkersBeforeAnyPull) {
  Servers servers(2);
  const auto config = sparse_table(3, TableRule::kSgd, 2);
  ParameterTableConfig dense;
  dense.name = "bias";
  dense.width = 5;
  dense.rule = TableRule::kAdagrad;
  dense.sync_workers = 2;
  SparseTable reference(config);
  std::vector<float> reference_bias(5, 0.0f), bias_accumulator(5, 0.0f);
  constexpr int kSteps = 4;
  auto gradient_of = [](int worker, int step, size_t i) { return 0.01f * static_cast<float>((worker + 1) * (step + 2)) + 0.001f * static_cast<float>(i); };
  auto ids_of = [](int worker) { return std::vector<int64_t>{worker, 100, 7 + worker * 3, 100}; };
  // The reference: one table, pushes of the mean.
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int64_t> all;
    std::vector<float> grads;
    for (int w = 0; w < 2; ++w) {
      for (int64_t id : ids_of(w)) all.push_back(id);
      for (size_t i = 0; i < 4 * 3; ++i) grads.push_back(gradient_of(w, step, i) * 0.5f);
    }
    std::vector<float> rows(all.size() * 3);
    reference.pull(all, rows.data());
    reference.push(all, grads.data(), 0.1f);
    for (size_t i = 0; i < 5; ++i) {
      const double g = (gradient_of(0, step, i) + gradient_of(1, step, i)) * 0.5f;
      bias_accumulator[i] += static_cast<float>(g * g);
      reference_bias[i] -= static_cast<float>(0.1 * g / (std::sqrt(static_cast<double>(bias_accumulator[i])) + 1e-6));
    }
  }
  std::vector<std::vector<float>> final_rows(2), final_bias(2);
  auto worker = [&](int w) {
    auto client = servers.client(w);
    client->create_table(config);
    client->create_table(dense);
    const std::vector<int64_t> ids = ids_of(w);
    std::vector<float> rows(ids.size() * 3), grads(ids.size() * 3), bias(5), bias_grad(5);
    for (int step = 0; step < kSteps; ++step) {
      client->pull_sparse("emb", ids, rows.data(), 3, step);
      client->pull_dense("bias", bias.data(), 5, step);
      if (w == 1) std::this_thread::sleep_for(20ms);   // worker 1 pushes last
      for (size_t i = 0; i < grads.size(); ++i) grads[i] = gradient_of(w, step, i);
      for (size_t i = 0; i < 5; ++i) bias_grad[i] = gradient_of(w, step, i);
      client->push_sparse("emb", ids, grads.data(), 3, 0.1f, step);
      client->push_dense("bias", bias_grad.data(), 5, 0.1f, step);
    }
    final_rows[static_cast<size_t>(w)].resize(rows.size());
    client->pull_sparse("emb", ids, final_rows[static_cast<size_t>(w)].data(), 3, kSteps);
    final_bias[static_cast<size_t>(w)].resize(5);
    client->pull_dense("bias", final_bias[static_cast<size_t>(w)].data(), 5, kSteps);
  };
  auto a = std::async(std::launch::async, worker, 0), b = std::async(std::launch::async, worker, 1);
  a.get();
  b.get();
  for (int w = 0; w < 2; ++w) {
    const std::vector<int64_t> ids = ids_of(w);
    std::vector<float> expected(ids.size() * 3);
    reference.pull(ids, expected.data());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(final_rows[static_cast<size_t>(w)][i], expected[i], 1e-6) << "worker " << w << " element " << i;
    }
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(final_bias[static_cast<size_t>(w)][i], reference_bias[i], 1e-6);
  }
}

// set_dense with only_if_unset: of two workers offering different initial
// values the first wins on every server's slice, and a table already pushed
// keeps its trained value.
TEST(ParameterServer, SetDenseOnlyIfUnsetKeepsTheFirstValueAndPushedTables) {
  Servers servers(2);
  auto first = servers.client(0), second = servers.client(1);
  ParameterTableConfig config;
  config.name = "w";
  config.width = 5;
  ParameterTableConfig pushed = config;
  pushed.name = "v";
  for (const auto& client : {first, second}) {
    client->create_table(config);
    client->create_table(pushed);
  }
  const std::vector<float> a = {1, 2, 3, 4, 5}, b = {9, 9, 9, 9, 9}, ones(5, 1.0f);
  std::vector<float> out(5);
  first->set_dense("w", a.data(), 5, /*only_if_unset=*/true);
  second->set_dense("w", b.data(), 5, /*only_if_unset=*/true);
  second->pull_dense("w", out.data(), 5, 0);
  EXPECT_EQ(out, a);
  first->push_dense("v", ones.data(), 5, 1.0f, 0);
  second->set_dense("v", b.data(), 5, /*only_if_unset=*/true);
  second->pull_dense("v", out.data(), 5, 0);
  EXPECT_EQ(out, std::vector<float>(5, -1.0f));
}

TEST(ParameterServer, SavedTablesLoadBackOnEveryServer) {
  Servers servers(2);
  auto client = servers.client();
  const auto config = sparse_table(2, TableRule::kAdam);
  client->create_table(config);
  ParameterTableConfig dense;
  dense.name = "w";
  dense.width = 3;
  client->create_table(dense);
  const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> grads(16, 0.5f), saved(16), after(16), w = {1, 2, 3}, w_out(3);
  client->pull_sparse("emb", ids, saved.data(), 2, 0);
  client->push_sparse("emb", ids, grads.data(), 2, 0.1f, 0);
  client->set_dense("w", w.data(), 3);
  client->pull_sparse("emb", ids, saved.data(), 2, 0);
  const auto directory = testing::fresh_store_directory("ps_save");
  client->save(directory);
  client->push_sparse("emb", ids, grads.data(), 2, 0.1f, 0);
  const std::vector<float> changed = {9, 9, 9};
  client->set_dense("w", changed.data(), 3);
  client->load(directory);
  client->pull_sparse("emb", ids, after.data(), 2, 0);
  client->pull_dense("w", w_out.data(), 3, 0);
  EXPECT_EQ(after, saved);
  EXPECT_EQ(w_out, w);
  const std::string missing = error_of([&] { client->load(directory / "nothing"); }, ErrorKind::kIo);
  EXPECT_NE(missing.find("nothing"), std::string::npos) << missing;
  EXPECT_NE(missing.find("parameter server"), std::string::npos) << missing;
  // The job's barrier table is no part of the model: not saved.
  wait_for_workers(*client, 1, 0, "after saving");
  client->save(directory);
  EXPECT_TRUE(std::filesystem::exists(directory / "w"));
  EXPECT_FALSE(std::filesystem::exists(directory / "__weir_job_barrier"));
}

TEST(ParameterServer, WorkersMeetingOnTheServersWaitForEachOtherAndTimeOutNamingTheBarrier) {
  ParameterServer server({.wait_limit = 2s});
  auto connect = [&](int worker) {
    return connect_parameter_servers({.endpoints = {server.endpoint()}, .worker = worker, .connect_timeout = 5s});
  };
  auto first = connect(0), second = connect(1);
  for (int64_t generation = 0; generation < 3; ++generation) {
    std::atomic<bool> met{false};
    std::thread early([&] {
      wait_for_workers(*first, 2, generation, "in the test");
      met = true;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(met.load()) << "barrier " << generation << " let a worker through alone";
    wait_for_workers(*second, 2, generation, "in the test");
    early.join();
    EXPECT_TRUE(met.load());
  }
  const std::string e = error_of([&] { wait_for_workers(*first, 2, 3, "before saving"); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find("waiting for all 2 workers before saving (barrier 3)"), std::string::npos) << e;
  EXPECT_NE(e.find("worker(s) 1"), std::string::npos) << e;
}

TEST(ParameterServer, UnknownTablesAndOtherConfigurationsAreClearErrors) {
  Servers servers(2);
  auto client = servers.client(), other = servers.client(1);
  client->create_table(sparse_table(4, TableRule::kSgd));
  std::vector<float> rows(8);
  const std::vector<int64_t> ids = {1, 2};
  std::string e = error_of([&] { other->pull_sparse("emb", ids, rows.data(), 4, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("table 'emb' was not created through this client"), std::string::npos) << e;
  e = error_of([&] { other->create_table(sparse_table(8, TableRule::kSgd)); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("row width 4 vs 8"), std::string::npos) << e;
  EXPECT_NE(e.find(servers.endpoints()[0]), std::string::npos) << "names the server: " << e;
  e = error_of([&] { client->pull_sparse("emb", ids, rows.data(), 3, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("rows of 4 floats; the call has 3"), std::string::npos) << e;
  e = error_of([&] { client->pull_dense("emb", rows.data(), 4, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("is sparse"), std::string::npos) << e;
}

TEST(ParameterServer, AServerNobodyRunsIsAnErrorNamingItInBoundedTime) {
  const int port = testing::unused_port();
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of(
      [&] { connect_parameter_servers({.endpoints = {endpoint}, .connect_timeout = 500ms}); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find(endpoint), std::string::npos) << e;
  EXPECT_NE(e.find("could not connect within 0.5 s"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_THROW(parse_server_endpoints("127.0.0.1:7000,nohost"), Error);
  EXPECT_THROW(parse_server_endpoints("127.0.0.1:99999"), Error);
  EXPECT_EQ(parse_server_endpoints("a:1,b:2"), (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(ParameterServer, AServerThatDiesFailsTheNextCallNamingIt) {
  Servers servers(2);
  auto client = servers.client();
  client->create_table(sparse_table(2, TableRule::kSgd));
  const std::string dead = servers.endpoints()[1];
  servers.servers[1]->shutdown();
  std::vector<int64_t> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  std::vector<float> rows(80);
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { client->pull_sparse("emb", ids, rows.data(), 2, 0); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find("parameter server 1 of 2 (" + dead + ")"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

TEST(ParameterServer, ASynchronousPullWithoutTheOtherWorkersPushTimesOutNamingIt) {
  ParameterServer server({.wait_limit = 300ms});
  auto client = connect_parameter_servers({.endpoints = {server.endpoint()}, .worker = 0, .connect_timeout = 5s});
  client->create_table(sparse_table(2, TableRule::kSgd, 2));
  const std::vector<int64_t> ids = {1};
  std::vector<float> row(2), grad(2, 1.0f);
  client->push_sparse("emb", ids, grad.data(), 2, 0.1f, 0);
  const std::string e = error_of([&] { client->pull_sparse("emb", ids, row.data(), 2, 1); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find("waiting for the push of worker(s) 1"), std::string::npos) << e;
}

}  // namespace
}  // namespace weir::ps
