// The clients that wrap a remote ParameterClient, against parameter servers
// on 127.0.0.1 (or a fake remote that holds pushes): the async communicator
// (queued pushes merged into fewer RPCs with the same result, back-pressure
// of a full queue, Hogwild threads, dense copies refreshed by its receive
// thread, a dead server's error kept and rethrown, half-async barriers) and
// the Geo-SGD client (local training, deltas every k steps, against a
// double-precision model of the rule).
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "distributed/ps/async_communicator.h"
#include "distributed/ps/geo_client.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"
#include "tests/distributed/ps/in_process_servers.h"
#include "tests/test_util.h"
#include "tests/distributed/process_group.h"

namespace weir::ps {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using Servers = InProcessServers;

ParameterTableConfig sparse_table(const std::string& name, int64_t width, TableInitializer init = {}) {
  ParameterTableConfig config;
  config.name = name;
  config.sparse = true;
  config.width = width;
  config.rule = TableRule::kSgd;
  config.init = init;
  config.shard_num = 10;
  return config;
}

ParameterTableConfig dense_table(const std::string& name, int64_t width) {
  ParameterTableConfig config;
  config.name = name;
  config.width = width;
  config.rule = TableRule::kSgd;
  return config;
}

std::shared_ptr<AsyncCommunicator> communicator(std::shared_ptr<ParameterClient> remote, AsyncCommunicatorOptions options) {
  return std::dynamic_pointer_cast<AsyncCommunicator>(make_async_communicator(std::move(remote), options));
}

using weir::testing::error_of;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A remote without servers: pulls answer zeros; while closed, each push
// waits (at most 10 s, so no test hangs) before it is taken.
class GatedRemote final : public ParameterClient {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Whether `n` pushes reached the remote within `limit`.
  bool wait_entered(int n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return entered_ >= n; });
  }
  double sum_pushed() const {
    std::lock_guard lock(mutex_);
    return sum_;
  }

  void create_table(const ParameterTableConfig&) override {}
  void pull_sparse(const std::string&, std::span<const int64_t> ids, float* rows, int64_t width, int64_t) override {
    std::fill(rows, rows + ids.size() * static_cast<size_t>(width), 0.0f);
  }
  void push_sparse(const std::string&, std::span<const int64_t> ids, const float* gradients, int64_t width, float,
                   int64_t) override {
    take(gradients, static_cast<int64_t>(ids.size()) * width);
  }
  void pull_dense(const std::string&, float* values, int64_t size, int64_t) override { std::fill(values, values + size, 0.0f); }
  void push_dense(const std::string&, const float* gradient, int64_t size, float, int64_t) override { take(gradient, size); }
  void set_dense(const std::string&, const float*, int64_t, bool) override {}
  void save(const std::filesystem::path&) override {}
  void load(const std::filesystem::path&) override {}
  int64_t end_pass(int) override { return 0; }
  void stop_servers() override {}
  int64_t bytes_pushed() const override { return 0; }
  int num_servers() const override { return 1; }
  std::string description() const override { return "the gated test remote"; }

 private:
  void take(const float* values, int64_t n) {
    std::unique_lock lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait_for(lock, 10s, [&] { return open_; });
    for (int64_t i = 0; i < n; ++i) sum_ += values[i];
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int entered_ = 0;
  double sum_ = 0;
};

// Forwards to a real client and counts the dense pulls made on each thread.
class WatchedRemote final : public ParameterClient {
 public:
  explicit WatchedRemote(std::shared_ptr<ParameterClient> inner) : inner_(std::move(inner)) {}
  int dense_pulls_on(std::thread::id thread) const {
    std::lock_guard lock(mutex_);
    auto found = dense_pulls_.find(thread);
    return found == dense_pulls_.end() ? 0 : found->second;
  }
  int dense_pulls_elsewhere(std::thread::id thread) const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& [id, count] : dense_pulls_) n += id == thread ? 0 : count;
    return n;
  }

  void create_table(const ParameterTableConfig& config) override { inner_->create_table(config); }
  void pull_sparse(const std::string& t, std::span<const int64_t> ids, float* rows, int64_t width, int64_t round) override {
    inner_->pull_sparse(t, ids, rows, width, round);
  }
  void push_sparse(const std::string& t, std::span<const int64_t> ids, const float* g, int64_t width, float lr,
                   int64_t round) override {
    inner_->push_sparse(t, ids, g, width, lr, round);
  }
  void pull_dense(const std::string& t, float* values, int64_t size, int64_t round) override {
    {
      std::lock_guard lock(mutex_);
      ++dense_pulls_[std::this_thread::get_id()];
    }
    inner_->pull_dense(t, values, size, round);
  }
  void push_dense(const std::string& t, const float* g, int64_t size, float lr, int64_t round) override {
    inner_->push_dense(t, g, size, lr, round);
  }
  void set_dense(const std::string& t, const float* v, int64_t size, bool only_if_unset) override {
    inner_->set_dense(t, v, size, only_if_unset);
  }
  void save(const std::filesystem::path& d) override { inner_->save(d); }
  void load(const std::filesystem::path& d) override { inner_->load(d); }
  int64_t end_pass(int n) override { return inner_->end_pass(n); }
  void stop_servers() override { inner_->stop_servers(); }
  int64_t bytes_pushed() const override { return inner_->bytes_pushed(); }
  int num_servers() const override { return inner_->num_servers(); }
  std::string description() const override { return inner_->description(); }

 private:
  std::shared_ptr<ParameterClient> inner_;
  mutable std::mutex mutex_;
  std::map<std::thread::id, int> dense_pulls_;
};

// ---------------------------------------------------------------- async

// Eight pushes of a sparse table with overlapping ids, queued while the
// sender waits for more, go out as one RPC that leaves the same rows as the
// eight pushes sent one by one, in fewer bytes.
TEST(AsyncCommunicator, MergesQueuedSparsePushesIntoOneRpcWithTheSameRows) {
  Servers servers(2);
  auto plain = servers.client();
  auto comm = communicator(servers.client(), {.send_wait = 30s, .timeout = 20s});
  const TableInitializer init{TableInitializer::Kind::kNormal, 0.1, 3};
  plain->create_table(sparse_table("emb_plain", 4, init));
  plain->create_table(sparse_table("emb_merged", 4, init));
  comm->create_table(sparse_table("emb_merged", 4, init));
  const std::vector<int64_t> all_ids = {0, 1, 2, 10, 20, 21};
  std::vector<float> rows(all_ids.size() * 4), merged_rows(rows.size());
  plain->pull_sparse("emb_plain", all_ids, rows.data(), 4, 0);
  comm->pull_sparse("emb_merged", all_ids, merged_rows.data(), 4, 0);
  ASSERT_EQ(rows, merged_rows) << "both tables start from the same rows";

  const int64_t plain_before = plain->bytes_pushed(), comm_before = comm->bytes_pushed();
  for (int p = 0; p < 8; ++p) {
    const std::vector<int64_t> ids = {p % 3, 10, 20 + p % 2, 10};
    std::vector<float> grads(ids.size() * 4);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.25f * static_cast<float>((p + static_cast<int>(i)) % 5) - 0.5f;
    plain->push_sparse("emb_plain", ids, grads.data(), 4, 0.5f, 0);
    comm->push_sparse("emb_merged", ids, grads.data(), 4, 0.5f, 0);
  }
  EXPECT_EQ(comm->rpcs_sent(), 0) << "the sender waits for more pushes to merge";
  comm->flush();
  EXPECT_EQ(comm->pushes_queued(), 8);
  EXPECT_EQ(comm->rpcs_sent(), 1);
  plain->pull_sparse("emb_plain", all_ids, rows.data(), 4, 0);
  plain->pull_sparse("emb_merged", all_ids, merged_rows.data(), 4, 0);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_NEAR(merged_rows[i], rows[i], 1e-6) << "element " << i;
  const int64_t plain_bytes = plain->bytes_pushed() - plain_before, merged_bytes = comm->bytes_pushed() - comm_before;
  EXPECT_EQ(merged_bytes, 6 * (8 + 4 * 4)) << "each of the 6 distinct ids once";
  EXPECT_LT(merged_bytes, plain_bytes);
  RecordProperty("unmerged_rpcs", 8);
  RecordProperty("unmerged_bytes", static_cast<int>(plain_bytes));
  RecordProperty("merged_rpcs", static_cast<int>(comm->rpcs_sent()));
  RecordProperty("merged_bytes", static_cast<int>(merged_bytes));
}

// Eight queued dense pushes go out as one RPC of their sum: the same
// values as eight separate SGD pushes.
TEST(AsyncCommunicator, MergesQueuedDensePushesIntoTheirSum) {
  Servers servers(2);
  auto plain = servers.client();
  auto comm = communicator(servers.client(), {.send_wait = 30s, .timeout = 20s});
  plain->create_table(dense_table("w_plain", 7));
  plain->create_table(dense_table("w_merged", 7));
  comm->create_table(dense_table("w_merged", 7));
  std::vector<float> init(7);
  for (size_t i = 0; i < init.size(); ++i) init[i] = 0.3f * static_cast<float>(i) - 1.0f;
  plain->set_dense("w_plain", init.data(), 7);
  comm->set_dense("w_merged", init.data(), 7);
  const int64_t plain_before = plain->bytes_pushed(), comm_before = comm->bytes_pushed();
  for (int p = 0; p < 8; ++p) {
    std::vector<float> grad(7);
    for (size_t i = 0; i < grad.size(); ++i) grad[i] = 0.125f * static_cast<float>((3 * p + static_cast<int>(i)) % 7) - 0.25f;
    plain->push_dense("w_plain", grad.data(), 7, 0.1f, 0);
    comm->push_dense("w_merged", grad.data(), 7, 0.1f, 0);
  }
  comm->flush();
  EXPECT_EQ(comm->rpcs_sent(), 1);
  std::vector<float> expected(7), merged(7);
  plain->pull_dense("w_plain", expected.data(), 7, 0);
  plain->pull_dense("w_merged", merged.data(), 7, 0);
  for (size_t i = 0; i < merged.size(); ++i) EXPECT_NEAR(merged[i], expected[i], 1e-6) << "element " << i;
  EXPECT_EQ(comm->bytes_pushed() - comm_before, 7 * 4);
  EXPECT_EQ(plain->bytes_pushed() - plain_before, 8 * 7 * 4);
}

// With send_queue_size 2 and a remote that holds the first push: two more
// pushes fill the queue, the next blocks until the remote answers, and
// every gradient arrives.
TEST(AsyncCommunicator, AFullQueueBlocksThePusherUntilTheRemoteAnswers) {
  auto remote = std::make_shared<GatedRemote>();
  auto comm = communicator(remote, {.send_queue_size = 2, .send_wait = 0ms, .timeout = 20s});
  comm->create_table(sparse_table("emb", 2));
  const std::vector<int64_t> ids = {1};
  const std::vector<float> grad = {1.0f, 1.0f};
  comm->push_sparse("emb", ids, grad.data(), 2, 0.1f, 0);
  ASSERT_TRUE(remote->wait_entered(1, 10s)) << "the sender took the first push";
  comm->push_sparse("emb", ids, grad.data(), 2, 0.1f, 0);
  comm->push_sparse("emb", ids, grad.data(), 2, 0.1f, 0);
  auto blocked = std::async(std::launch::async, [&] { comm->push_sparse("emb", ids, grad.data(), 2, 0.1f, 0); });
  EXPECT_EQ(blocked.wait_for(300ms), std::future_status::timeout) << "a push into a full queue waits";
  EXPECT_EQ(comm->pushes_queued(), 3);
  remote->open();
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  blocked.get();
  comm->flush();
  EXPECT_EQ(comm->pushes_queued(), 4);
  EXPECT_EQ(remote->sum_pushed(), 8.0);
}

// A queue still full after `timeout` fails the push, naming the table.
TEST(AsyncCommunicator, AQueueFullPastTheTimeoutFailsNamingTheTable) {
  auto remote = std::make_shared<GatedRemote>();
  auto comm = communicator(remote, {.send_queue_size = 2, .send_wait = 0ms, .timeout = 200ms});
  comm->create_table(dense_table("fc.bias", 3));
  const std::vector<float> grad = {1, 2, 3};
  comm->push_dense("fc.bias", grad.data(), 3, 0.1f, 0);
  ASSERT_TRUE(remote->wait_entered(1, 10s));
  comm->push_dense("fc.bias", grad.data(), 3, 0.1f, 0);
  comm->push_dense("fc.bias", grad.data(), 3, 0.1f, 0);
  const auto start = Clock::now();
  const std::string e = error_of([&] { comm->push_dense("fc.bias", grad.data(), 3, 0.1f, 0); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find("send queue of table 'fc.bias' stayed full (2 pushes) for 0.2 s"), std::string::npos) << e;
  EXPECT_NE(e.find("the gated test remote"), std::string::npos) << "says what the sender waits for: " << e;
  EXPECT_GE(seconds_since(start), 0.15);
  EXPECT_LT(seconds_since(start), 5.0);
  const std::string flush_error = error_of([&] { comm->flush(); }, ErrorKind::kCommunication);
  EXPECT_NE(flush_error.find("flush timed out after 0.2 s"), std::string::npos) << flush_error;
  EXPECT_NE(flush_error.find("table 'fc.bias' (3 pushes)"), std::string::npos) << flush_error;
  remote->open();   // lets the communicator drain and stop
}

// Four trainer threads pull and push through one communicator (two
// senders): after flush the servers' SGD tables hold the sum of every push,
// exactly.
TEST(AsyncCommunicator, HogwildThreadsPushesAllReachTheServers) {
  Servers servers(2);
  auto remote = servers.client();
  auto comm = communicator(remote, {.thread_pool_size = 2, .send_wait = 1ms, .timeout = 30s});
  comm->create_table(sparse_table("emb", 2));
  comm->create_table(dense_table("w", 3));
  constexpr int kThreads = 4, kPushes = 200;
  auto sparse_grads = [](int t, int i) { return std::vector<float>{1, static_cast<float>(t + 1), static_cast<float>(i % 3), 1, 1, 0}; };
  auto sparse_ids = [](int t, int i) { return std::vector<int64_t>{t, 100 + i % 5, 100 + i % 5}; };
  auto dense_grad = [](int t, int i) { return std::vector<float>{1, static_cast<float>(t), static_cast<float>(i % 4)}; };
  std::map<int64_t, std::vector<double>> expected_rows;
  std::vector<double> expected_w(3, 0.0);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPushes; ++i) {
      const auto ids = sparse_ids(t, i);
      const auto grads = sparse_grads(t, i);
      for (size_t k = 0; k < ids.size(); ++k) {
        auto& row = expected_rows[ids[k]];
        row.resize(2, 0.0);
        for (size_t j = 0; j < 2; ++j) row[j] -= grads[k * 2 + j];
      }
      const auto grad = dense_grad(t, i);
      for (size_t j = 0; j < 3; ++j) expected_w[j] -= grad[j];
    }
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPushes; ++i) {
        const auto ids = sparse_ids(t, i);
        const auto grads = sparse_grads(t, i);
        const auto grad = dense_grad(t, i);
        std::vector<float> rows(ids.size() * 2), w(3);
        comm->pull_sparse("emb", ids, rows.data(), 2, 0);   // a step: the rows exist once pulled
        comm->pull_dense("w", w.data(), 3, 0);
        comm->push_sparse("emb", ids, grads.data(), 2, 1.0f, 0);
        comm->push_dense("w", grad.data(), 3, 1.0f, 0);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  comm->flush();
  EXPECT_EQ(comm->pushes_queued(), 2 * kThreads * kPushes);
  for (const auto& [id, row] : expected_rows) {
    std::vector<float> got(2);
    const std::vector<int64_t> one = {id};
    remote->pull_sparse("emb", one, got.data(), 2, 0);
    EXPECT_EQ(got[0], static_cast<float>(row[0])) << "id " << id;
    EXPECT_EQ(got[1], static_cast<float>(row[1])) << "id " << id;
  }
  std::vector<float> w(3);
  remote->pull_dense("w", w.data(), 3, 0);
  for (size_t j = 0; j < 3; ++j) EXPECT_EQ(w[j], static_cast<float>(expected_w[j]));
  RecordProperty("pushes", static_cast<int>(comm->pushes_queued()));
  RecordProperty("rpcs", static_cast<int>(comm->rpcs_sent()));
}

// pull_dense answers from the worker's copy: the caller's thread pulls from
// the remote only for a table's first pull, and the receive thread brings
// in what the sends changed.
TEST(AsyncCommunicator, PullDenseReturnsTheCopyThatTheReceiveThreadRefreshes) {
  Servers servers(2);
  auto remote = std::make_shared<WatchedRemote>(servers.client());
  auto comm = communicator(remote, {.send_wait = 1ms, .pull_dense_every_sends = 1, .timeout = 20s});
  comm->create_table(dense_table("w", 6));
  comm->create_table(dense_table("b", 2));
  const auto me = std::this_thread::get_id();
  std::vector<float> init = {0, 1, 2, 3, 4, 5}, out(6), b(2);
  comm->set_dense("w", init.data(), 6);
  comm->pull_dense("w", out.data(), 6, 0);
  EXPECT_EQ(out, init);
  comm->pull_dense("b", b.data(), 2, 0);
  comm->pull_dense("b", b.data(), 2, 0);
  EXPECT_EQ(remote->dense_pulls_on(me), 1) << "only the first pull of 'b' went to the servers";

  const std::vector<float> grad(6, 1.0f);
  comm->push_dense("w", grad.data(), 6, 0.5f, 0);
  std::vector<float> expected(6);
  for (size_t i = 0; i < 6; ++i) expected[i] = init[i] - 0.5f;
  const auto start = Clock::now();
  while (out != expected && Clock::now() - start < 10s) {
    comm->pull_dense("w", out.data(), 6, 0);
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(out, expected) << "the receive thread refreshed the copy";
  EXPECT_EQ(remote->dense_pulls_on(me), 1) << "the caller never waited for the network";
  EXPECT_GE(remote->dense_pulls_elsewhere(me), 1);
  EXPECT_GE(comm->dense_refreshes(), 1);
}

// A server that dies fails the sender; the next call on the communicator
// throws that error naming the server, every later call too, and
// destroying the communicator returns promptly.
TEST(AsyncCommunicator, ADeadServerFailsTheNextCallNamingItAndDestructionDoesNotHang) {
  Servers servers(2);
  auto comm = communicator(servers.client(), {.send_wait = 1ms, .timeout = 10s});
  comm->create_table(sparse_table("emb", 2));
  std::vector<int64_t> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const std::vector<float> grads(80, 0.5f);
  comm->push_sparse("emb", ids, grads.data(), 2, 0.1f, 0);
  comm->flush();
  const std::string dead = servers.endpoints()[1];
  servers.servers[1]->shutdown();
  const auto start = Clock::now();
  std::string e;
  while (e.empty() && Clock::now() - start < 15s) {
    try {
      comm->push_sparse("emb", ids, grads.data(), 2, 0.1f, 0);
      comm->flush();
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kCommunication) << error.what();
      e = error.what();
    }
  }
  EXPECT_NE(e.find("parameter server 1 of 2 (" + dead + ")"), std::string::npos) << e;
  EXPECT_LT(seconds_since(start), 10.0);
  std::vector<float> rows(80);
  EXPECT_EQ(error_of([&] { comm->pull_sparse("emb", ids, rows.data(), 2, 0); }, ErrorKind::kCommunication), e)
      << "the error is kept";
  const auto destroy = Clock::now();
  comm.reset();
  EXPECT_LT(seconds_since(destroy), 5.0);
}

// Half-async, two workers, a barrier every 2 pushes: while worker 1 stalls,
// worker 0 sends its first 2 pushes, waits at barrier 0 and its pushes
// block once its queue is full; once worker 1 trains, both finish, never
// more than one barrier apart, and the servers hold every push.
// Worker `worker` of 2 in half-async mode, a barrier every 2 pushes and
// room for `queue` pushes, its dense table "w" [2] created.
std::shared_ptr<AsyncCommunicator> half_async_worker(Servers& servers, int worker, int queue) {
  AsyncCommunicatorOptions options;
  options.send_queue_size = queue;
  options.max_merge_var_num = 2;
  options.send_wait = 1ms;
  options.half_async = true;
  options.workers = 2;
  options.worker = worker;
  options.timeout = 20s;
  std::shared_ptr<AsyncCommunicator> comm = communicator(servers.client(worker), options);
  comm->create_table(dense_table("w", 2));
  return comm;
}

// A worker's training: `pushes` gradients {1, worker + 1} of "w", then a flush.
void push_gradients(AsyncCommunicator& comm, int worker, int pushes) {
  const std::vector<float> grad = {1.0f, static_cast<float>(worker + 1)};
  for (int i = 0; i < pushes; ++i) comm.push_dense("w", grad.data(), 2, 1.0f, 0);
  comm.flush();
}

// Once both workers have pushed 10 gradients: 4 barriers passed each, and
// the servers hold every push (w = -(10 * {1, 1} + 10 * {1, 2})).
void expect_every_push_applied(Servers& servers, const std::vector<std::shared_ptr<AsyncCommunicator>>& comms) {
  EXPECT_EQ(comms[0]->barriers_passed(), 4);
  EXPECT_EQ(comms[1]->barriers_passed(), 4);
  auto reader = servers.client();
  reader->create_table(dense_table("w", 2));
  std::vector<float> w(2);
  reader->pull_dense("w", w.data(), 2, 0);
  EXPECT_EQ(w, (std::vector<float>{-20.0f, -30.0f}));
}

TEST(AsyncCommunicator, HalfAsyncWorkersStayWithinOneBarrierOfEachOther) {
  Servers servers(2);
  const std::vector<std::shared_ptr<AsyncCommunicator>> comms = {half_async_worker(servers, 0, 2),
                                                                 half_async_worker(servers, 1, 2)};
  constexpr int kPushes = 10;
  auto train = [&](int worker) { push_gradients(*comms[static_cast<size_t>(worker)], worker, kPushes); };
  auto first = std::async(std::launch::async, train, 0);
  EXPECT_EQ(first.wait_for(500ms), std::future_status::timeout) << "worker 0 waits for worker 1";
  EXPECT_EQ(comms[0]->barriers_passed(), 0);
  EXPECT_EQ(comms[0]->pushes_queued(), 4) << "2 pushes sent, 2 queued behind the barrier, the 5th blocked";
  EXPECT_GE(comms[0]->rpcs_sent(), 1);
  EXPECT_LE(comms[0]->rpcs_sent(), 2);
  auto second = std::async(std::launch::async, train, 1);
  int violations = 0;
  const auto start = Clock::now();
  while ((first.wait_for(0ms) != std::future_status::ready || second.wait_for(0ms) != std::future_status::ready) &&
         Clock::now() - start < 30s) {
    // Each difference read in the order that can only understate it.
    const int64_t a0 = comms[0]->barriers_passed(), a1 = comms[1]->barriers_passed();
    const int64_t b1 = comms[1]->barriers_passed(), b0 = comms[0]->barriers_passed();
    if (a0 - a1 > 1 || b1 - b0 > 1) ++violations;
    std::this_thread::sleep_for(1ms);
  }
  first.get();
  second.get();
  EXPECT_EQ(violations, 0);
  expect_every_push_applied(servers, comms);
}

// Half-async, a barrier every 2 pushes and room for 16 in the queue: while
// worker 1 stalls, worker 0's trainer waits at the barrier, not at a full
// queue (it would compute 16 steps past the servers): it queues the 2
// pushes of the period after barrier 0, and its 5th push blocks. Throughout,
// no worker has queued more than the periods of its last barrier and the
// next.
TEST(AsyncCommunicator, AHalfAsyncTrainerWaitsAtTheBarrierWithRoomInItsQueue) {
  Servers servers(1);
  const std::vector<std::shared_ptr<AsyncCommunicator>> comms = {half_async_worker(servers, 0, 16),
                                                                 half_async_worker(servers, 1, 16)};
  constexpr int kPushes = 10;
  auto train = [&](int worker) { push_gradients(*comms[static_cast<size_t>(worker)], worker, kPushes); };
  auto first = std::async(std::launch::async, train, 0);
  EXPECT_EQ(first.wait_for(500ms), std::future_status::timeout) << "worker 0 waits for worker 1";
  EXPECT_EQ(comms[0]->barriers_passed(), 0);
  EXPECT_EQ(comms[0]->pushes_queued(), 4) << "the pushes of periods 0 and 1 queued, the 5th waits for barrier 0";
  auto second = std::async(std::launch::async, train, 1);
  int violations = 0;
  const auto start = Clock::now();
  while ((first.wait_for(0ms) != std::future_status::ready || second.wait_for(0ms) != std::future_status::ready) &&
         Clock::now() - start < 30s) {
    for (const auto& comm : comms) {
      // Queued first, so that a barrier passed in between can only
      // understate the excess.
      const int64_t queued = comm->pushes_queued();
      if (queued > (comm->barriers_passed() + 2) * 2) ++violations;
    }
    std::this_thread::sleep_for(1ms);
  }
  first.get();
  second.get();
  EXPECT_EQ(violations, 0);
  expect_every_push_applied(servers, comms);
}

// A half-async worker whose peer never comes fails at the barrier (the
// servers' wait limit), and the next call says so.
TEST(AsyncCommunicator, AHalfAsyncBarrierNobodyElseReachesIsAnErrorNamingIt) {
  ParameterServer server({.wait_limit = 300ms});
  auto remote = connect_parameter_servers({.endpoints = {server.endpoint()}, .worker = 0, .connect_timeout = 5s});
  AsyncCommunicatorOptions options;
  options.max_merge_var_num = 2;
  options.send_wait = 1ms;
  options.half_async = true;
  options.workers = 2;
  options.timeout = 10s;
  auto comm = communicator(remote, options);
  comm->create_table(dense_table("w", 2));
  const std::vector<float> grad = {1, 1};
  for (int i = 0; i < 3; ++i) comm->push_dense("w", grad.data(), 2, 1.0f, 0);
  const auto start = Clock::now();
  const std::string e = error_of([&] { comm->flush(); }, ErrorKind::kCommunication);
  EXPECT_NE(e.find("the half-async barrier 0 (worker 0 of 2)"), std::string::npos) << e;
  EXPECT_NE(e.find("waiting for the push of worker(s) 1"), std::string::npos) << e;
  EXPECT_LT(seconds_since(start), 5.0);
}

// save and end_pass send what is queued first.
TEST(AsyncCommunicator, EndPassAndSaveFlushFirst) {
  Servers servers(1);
  auto remote = servers.client();
  auto comm = communicator(remote, {.send_wait = 30s, .timeout = 20s});
  comm->create_table(dense_table("w", 2));
  const std::vector<float> grad = {1, 2};
  std::vector<float> w(2);
  comm->push_dense("w", grad.data(), 2, 1.0f, 0);
  comm->end_pass(/*max_unseen_passes=*/100);
  remote->pull_dense("w", w.data(), 2, 0);
  EXPECT_EQ(w, (std::vector<float>{-1, -2}));
  comm->push_dense("w", grad.data(), 2, 1.0f, 0);
  comm->save(testing::fresh_store_directory("async_save"));
  remote->pull_dense("w", w.data(), 2, 0);
  EXPECT_EQ(w, (std::vector<float>{-2, -4}));
}

// Calls on tables the communicator does not know are errors at the call,
// not later in the sender.
TEST(AsyncCommunicator, UnknownTablesAndWidthsFailAtTheCall) {
  auto comm = communicator(std::make_shared<GatedRemote>(), {});
  comm->create_table(sparse_table("emb", 4));
  const std::vector<int64_t> ids = {1};
  std::vector<float> grads(4);
  std::string e = error_of([&] { comm->push_sparse("nope", ids, grads.data(), 4, 0.1f, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("table 'nope' was not created through this async communicator"), std::string::npos) << e;
  e = error_of([&] { comm->push_sparse("emb", ids, grads.data(), 3, 0.1f, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("rows of 4 floats; the call has 3"), std::string::npos) << e;
  e = error_of([&] { comm->push_dense("emb", grads.data(), 4, 0.1f, 0); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("is sparse"), std::string::npos) << e;
  e = error_of([&] { communicator(std::make_shared<GatedRemote>(), {.send_queue_size = 0}); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(e.find("send_queue_size"), std::string::npos) << e;
}

// ------------------------------------------------------------------- geo

// A double-precision model of Geo-SGD with SGD as the local rule: the
// servers' values and each worker's latest and old.
struct GeoModel {
  struct Worker {
    std::map<int64_t, std::vector<double>> latest, old;
    std::vector<double> dense_latest, dense_old;
    int sparse_pushes = 0, dense_pushes = 0;
    std::vector<int64_t> touched;
  };
  GeoModel(int num_workers, int k, int64_t width, TableInitializer init)
      : k_(k), width_(width), init_(init), workers_(num_workers) {}

  std::vector<double>& server_row(int64_t id) {
    auto [it, added] = server_rows.try_emplace(id);
    if (added) {
      std::vector<float> row(static_cast<size_t>(width_));
      initial_table_row(init_, id, row.data(), width_);
      it->second.assign(row.begin(), row.end());
    }
    return it->second;
  }
  const std::vector<double>& pull(int w, int64_t id) {
    Worker& worker = worker_of(w);
    if (worker.latest.find(id) == worker.latest.end()) worker.latest[id] = worker.old[id] = server_row(id);
    return worker.latest[id];
  }
  void push(int w, const std::vector<int64_t>& ids, const std::vector<float>& grads, double lr) {
    Worker& worker = worker_of(w);
    for (size_t i = 0; i < ids.size(); ++i) {
      auto& row = worker.latest.at(ids[i]);
      for (size_t j = 0; j < row.size(); ++j) row[j] -= lr * grads[i * row.size() + j];
    }
    if (++worker.sparse_pushes % k_ == 0) exchange_sparse(w);
  }
  void exchange_sparse(int w) {
    Worker& worker = worker_of(w);
    for (auto& [id, latest] : worker.latest) {
      auto& old = worker.old[id];
      auto& server = server_row(id);
      for (size_t j = 0; j < latest.size(); ++j) {
        const double delta = (latest[j] - old[j]) / workers_;
        old[j] += delta;
        server[j] += delta;
      }
    }
    for (auto& [id, latest] : worker.latest) {
      auto& old = worker.old[id];
      const auto& server = server_row(id);
      for (size_t j = 0; j < latest.size(); ++j) {
        latest[j] += server[j] - old[j];
        old[j] = server[j];
      }
    }
  }
  const std::vector<double>& pull_dense(int w) {
    Worker& worker = worker_of(w);
    if (worker.dense_latest.empty()) worker.dense_latest = worker.dense_old = server_dense;
    return worker.dense_latest;
  }
  void push_dense(int w, const std::vector<float>& grad, double lr) {
    Worker& worker = worker_of(w);
    for (size_t j = 0; j < grad.size(); ++j) worker.dense_latest[j] -= lr * grad[j];
    if (++worker.dense_pushes % k_ == 0) exchange_dense(w);
  }
  void exchange_dense(int w) {
    Worker& worker = worker_of(w);
    for (size_t j = 0; j < server_dense.size(); ++j) {
      const double delta = (worker.dense_latest[j] - worker.dense_old[j]) / workers_;
      worker.dense_old[j] += delta;
      server_dense[j] += delta;
      worker.dense_latest[j] += server_dense[j] - worker.dense_old[j];
      worker.dense_old[j] = server_dense[j];
    }
  }
  Worker& worker_of(int w) {
    if (workers.size() <= static_cast<size_t>(w)) workers.resize(static_cast<size_t>(w) + 1);
    return workers[static_cast<size_t>(w)];
  }

  std::map<int64_t, std::vector<double>> server_rows;
  std::vector<double> server_dense;
  std::vector<Worker> workers;

 private:
  int k_;
  int64_t width_;
  TableInitializer init_;
  int workers_;
};

// Two Geo workers with k = 3 take six steps each, alternating in one
// thread; a seventh push of worker 0 then flush. The servers' values and
// each worker's reads follow the double-precision model of the rule.
TEST(GeoClient, TwoWorkersFollowTheGeoSgdRule) {
  Servers servers(2);
  constexpr int kWorkers = 2, kK = 3, kSteps = 6;
  constexpr int64_t kWidth = 3, kDense = 5;
  constexpr float kLr = 0.1f;
  const TableInitializer init{TableInitializer::Kind::kUniform, 0.5, 7};
  std::vector<std::shared_ptr<GeoClient>> geo;
  for (int w = 0; w < kWorkers; ++w) {
    geo.push_back(std::dynamic_pointer_cast<GeoClient>(
        make_geo_client(servers.client(w), {.k_steps = kK, .workers = kWorkers, .timeout = 20s})));
    geo.back()->create_table(sparse_table("emb", kWidth, init));
    geo.back()->create_table(dense_table("w", kDense));
  }
  GeoModel model(kWorkers, kK, kWidth, init);
  const std::vector<float> w_init = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f};
  geo[0]->set_dense("w", w_init.data(), kDense);
  const std::vector<float> other = {9, 9, 9, 9, 9};
  geo[1]->set_dense("w", other.data(), kDense, /*only_if_unset=*/true);   // worker 0's value stays
  model.server_dense.assign(w_init.begin(), w_init.end());
  model.pull_dense(0);
  model.pull_dense(1);

  auto ids_of = [](int w) { return w == 0 ? std::vector<int64_t>{1, 2, 5, 2} : std::vector<int64_t>{2, 5, 9}; };
  auto grad = [](int w, int step, size_t i) { return 0.1f * static_cast<float>((w * 7 + step * 3 + static_cast<int>(i)) % 11) - 0.5f; };
  auto expect_worker = [&](int w, const std::string& when) {
    const auto ids = ids_of(w);
    std::vector<float> rows(ids.size() * kWidth), dense(kDense);
    geo[static_cast<size_t>(w)]->pull_sparse("emb", ids, rows.data(), kWidth, 0);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto& expected = model.pull(w, ids[i]);
      for (size_t j = 0; j < kWidth; ++j) {
        EXPECT_NEAR(rows[i * kWidth + j], expected[j], 1e-5) << when << ": worker " << w << " id " << ids[i];
      }
    }
    geo[static_cast<size_t>(w)]->pull_dense("w", dense.data(), kDense, 0);
    const auto& expected = model.pull_dense(w);
    for (size_t j = 0; j < kDense; ++j) EXPECT_NEAR(dense[j], expected[j], 1e-5) << when << ": worker " << w << " w";
  };
  auto step = [&](int w, int s) {
    expect_worker(w, "step " + std::to_string(s));
    const auto ids = ids_of(w);
    std::vector<float> grads(ids.size() * kWidth), dense_grad(kDense);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = grad(w, s, i);
    for (size_t i = 0; i < dense_grad.size(); ++i) dense_grad[i] = grad(w, s + 5, i);
    geo[static_cast<size_t>(w)]->push_sparse("emb", ids, grads.data(), kWidth, kLr, 0);
    geo[static_cast<size_t>(w)]->push_dense("w", dense_grad.data(), kDense, kLr, 0);
    model.push(w, ids, grads, kLr);
    model.push_dense(w, dense_grad, kLr);
  };
  for (int s = 0; s < kSteps; ++s) {
    for (int w = 0; w < kWorkers; ++w) step(w, s);
  }
  EXPECT_EQ(geo[0]->exchanges(), 4) << "2 tables x 2 exchanges";
  EXPECT_EQ(geo[1]->exchanges(), 4);

  auto expect_servers = [&](const std::string& when) {
    auto reader = servers.client();
    ParameterTableConfig emb = sparse_table("emb", kWidth, init), w = dense_table("w", kDense);
    emb.rule = w.rule = TableRule::kDelta;
    reader->create_table(emb);
    reader->create_table(w);
    for (const auto& [id, expected] : model.server_rows) {
      std::vector<float> row(kWidth);
      const std::vector<int64_t> one = {id};
      reader->pull_sparse("emb", one, row.data(), kWidth, 0);
      for (size_t j = 0; j < kWidth; ++j) EXPECT_NEAR(row[j], expected[j], 1e-5) << when << ": server row " << id;
    }
    std::vector<float> dense(kDense);
    reader->pull_dense("w", dense.data(), kDense, 0);
    for (size_t j = 0; j < kDense; ++j) EXPECT_NEAR(dense[j], model.server_dense[j], 1e-5) << when << ": server w";
  };
  expect_servers("after 6 steps");
  expect_worker(0, "after 6 steps");
  expect_worker(1, "after 6 steps");

  // A seventh push stays local until flush sends its delta.
  step(0, kSteps);
  geo[0]->flush();
  model.exchange_sparse(0);
  model.exchange_dense(0);
  EXPECT_EQ(geo[0]->exchanges(), 6);
  expect_servers("after flush");
  expect_worker(0, "after flush");
}

// One worker exchanging every step (workers = 1, k = 1) trains the servers'
// tables as plain SGD pushes do.
TEST(GeoClient, OneWorkerExchangingEveryStepIsPlainSgdOnTheServers) {
  Servers servers(2);
  auto plain = servers.client();
  auto geo = make_geo_client(servers.client(), {.k_steps = 1, .workers = 1, .timeout = 20s});
  const TableInitializer init{TableInitializer::Kind::kNormal, 0.1, 11};
  geo->create_table(sparse_table("emb_geo", 4, init));
  geo->create_table(dense_table("w_geo", 6));
  plain->create_table(sparse_table("emb_sgd", 4, init));
  plain->create_table(dense_table("w_sgd", 6));
  ParameterTableConfig emb_geo = sparse_table("emb_geo", 4, init), w_geo = dense_table("w_geo", 6);
  emb_geo.rule = w_geo.rule = TableRule::kDelta;
  plain->create_table(emb_geo);
  plain->create_table(w_geo);
  const std::vector<float> w_init = {1, 2, 3, 4, 5, 6};
  geo->set_dense("w_geo", w_init.data(), 6);
  plain->set_dense("w_sgd", w_init.data(), 6);
  const std::vector<int64_t> ids = {3, 8, 3, 40};
  std::vector<float> rows(16), grads(16), dense(6), dense_grad(6);
  for (int s = 0; s < 5; ++s) {
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.05f * static_cast<float>((s * 5 + static_cast<int>(i)) % 9) - 0.2f;
    for (size_t i = 0; i < dense_grad.size(); ++i) dense_grad[i] = 0.1f * static_cast<float>((s + static_cast<int>(i)) % 4);
    geo->pull_sparse("emb_geo", ids, rows.data(), 4, 0);
    plain->pull_sparse("emb_sgd", ids, rows.data(), 4, 0);
    geo->push_sparse("emb_geo", ids, grads.data(), 4, 0.3f, 0);
    plain->push_sparse("emb_sgd", ids, grads.data(), 4, 0.3f, 0);
    geo->pull_dense("w_geo", dense.data(), 6, 0);
    geo->push_dense("w_geo", dense_grad.data(), 6, 0.3f, 0);
    plain->push_dense("w_sgd", dense_grad.data(), 6, 0.3f, 0);
  }
  std::vector<float> expected(16), got(16), expected_w(6), got_w(6);
  plain->pull_sparse("emb_sgd", ids, expected.data(), 4, 0);
  plain->pull_sparse("emb_geo", ids, got.data(), 4, 0);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << "element " << i;
  plain->pull_dense("w_sgd", expected_w.data(), 6, 0);
  plain->pull_dense("w_geo", got_w.data(), 6, 0);
  for (size_t i = 0; i < got_w.size(); ++i) EXPECT_NEAR(got_w[i], expected_w[i], 1e-6) << "element " << i;
}

// At an exchange the cache drops the rows that period did not touch; a
// dropped row comes back fresh from the servers (with another worker's
// delta in it).
TEST(GeoClient, RowsUntouchedForAPeriodLeaveTheCacheAndComeBackFresh) {
  Servers servers(1);
  auto geo = std::dynamic_pointer_cast<GeoClient>(make_geo_client(servers.client(), {.k_steps = 1, .workers = 1}));
  geo->create_table(sparse_table("emb", 2));
  std::vector<float> rows(4), grads(4, 1.0f);
  const std::vector<int64_t> both = {1, 2}, one = {1}, two = {2};
  geo->pull_sparse("emb", both, rows.data(), 2, 0);
  geo->push_sparse("emb", both, grads.data(), 2, 1.0f, 0);   // exchange 1: rows 1 and 2 touched
  EXPECT_EQ(geo->cached_rows("emb"), 2);
  geo->push_sparse("emb", one, grads.data(), 2, 1.0f, 0);    // exchange 2: row 2 untouched, dropped
  EXPECT_EQ(geo->cached_rows("emb"), 1);
  auto other = servers.client(1);
  ParameterTableConfig remote_config = sparse_table("emb", 2);
  remote_config.rule = TableRule::kDelta;
  other->create_table(remote_config);
  const std::vector<float> delta = {10.0f, 20.0f};
  other->push_sparse("emb", two, delta.data(), 2, 0.0f, 0);
  geo->pull_sparse("emb", two, rows.data(), 2, 0);
  EXPECT_EQ(rows[0], 9.0f);
  EXPECT_EQ(rows[1], 19.0f);
  EXPECT_EQ(geo->cached_rows("nope"), -1);
}

TEST(GeoClient, ARowThatLeavesTheCacheKeepsItsLocalOptimizerState) {
  // Adagrad, one worker exchanging every push: row 2 is pushed (g = 1),
  // dropped while row 1 trains alone, then pushed again (g = 1). With its
  // accumulator kept the second step is lr / sqrt(2) (acc 2), not lr
  // (a restarted accumulator of 1).
  Servers servers(1);
  auto geo = std::dynamic_pointer_cast<GeoClient>(make_geo_client(servers.client(), {.k_steps = 1, .workers = 1}));
  ParameterTableConfig config = sparse_table("emb", 1);
  config.rule = TableRule::kAdagrad;
  geo->create_table(config);
  const std::vector<int64_t> one = {1}, two = {2};
  const float g = 1.0f;
  float row = 0;
  geo->pull_sparse("emb", two, &row, 1, 0);
  geo->push_sparse("emb", two, &g, 1, 1.0f, 0);
  geo->pull_sparse("emb", one, &row, 1, 0);
  geo->push_sparse("emb", one, &g, 1, 1.0f, 0);
  ASSERT_EQ(geo->cached_rows("emb"), 1);  // row 2 left the cache
  geo->pull_sparse("emb", two, &row, 1, 0);
  geo->push_sparse("emb", two, &g, 1, 1.0f, 0);
  geo->pull_sparse("emb", two, &row, 1, 0);
  const double first = 1.0 / (1.0 + 1e-6), second = 1.0 / (std::sqrt(2.0) + 1e-6);
  EXPECT_NEAR(row, -(first + second), 1e-5);
}

}  // namespace
}  // namespace weir::ps
