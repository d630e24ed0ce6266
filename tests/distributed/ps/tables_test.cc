// A parameter server's tables without the network: sparse rows created on
// first touch from their (seed, id) alone, admission after N lookups, the
// per-row rules against a reference (equal ids added first), concurrent
// updates of one table from several threads, shrinking, save and load of
// shards and slices (and what a bad file gets), dense slices, and the
// synchronous rounds' barrier.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "core/error.h"
#include "distributed/ps/dense_table.h"
#include "distributed/ps/sparse_table.h"
#include "distributed/ps/sync_rounds.h"

namespace weir::ps {
namespace {

using namespace std::chrono_literals;

ParameterTableConfig sparse_config(int64_t width, TableRule rule = TableRule::kSgd) {
  ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = width;
  config.rule = rule;
  config.init = {TableInitializer::Kind::kUniform, 0.1, 7};
  config.shard_num = 16;
  return config;
}

std::vector<float> initial_row(const ParameterTableConfig& config, int64_t id) {
  std::vector<float> row(static_cast<size_t>(config.width));
  initial_table_row(config.init, id, row.data(), config.width);
  return row;
}

TEST(SparseTable, RowsStartFromTheirIdAndSeedAlone) {
  const auto config = sparse_config(5);
  SparseTable a(config), b(config);
  const std::vector<int64_t> ids = {3, -1, 1LL << 40, 3};
  std::vector<float> rows(ids.size() * 5), reversed(ids.size() * 5);
  a.pull(ids, rows.data());
  const std::vector<int64_t> other_order = {3, 1LL << 40, -1};
  b.pull(other_order, reversed.data());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto expected = initial_row(config, ids[i]);
    for (size_t j = 0; j < 5; ++j) EXPECT_EQ(rows[i * 5 + j], expected[j]) << "id " << ids[i];
  }
  EXPECT_EQ(reversed[5], rows[10]) << "a row does not depend on which table or lookup created it";
  EXPECT_EQ(a.num_rows(), 3);
  EXPECT_NE(rows[0], rows[5]) << "different ids get different rows";
  for (float v : rows) EXPECT_LE(std::abs(v), 0.1f);
}

TEST(SparseTable, RulesMatchTheReferenceWithEqualIdsAddedFirst) {
  for (TableRule rule : {TableRule::kSgd, TableRule::kAdagrad, TableRule::kAdam, TableRule::kDelta}) {
    const int64_t width = 3;
    const auto config = sparse_config(width, rule);
    SparseTable table(config);
    std::map<int64_t, std::vector<double>> value, s0, s1;
    std::map<int64_t, int> steps;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> g(-1, 1);
    const float lr = 0.05f;
    for (int step = 0; step < 5; ++step) {
      std::vector<int64_t> ids = {1, 2, 1, 9, static_cast<int64_t>(step)};
      std::vector<float> rows(ids.size() * width);
      table.pull(ids, rows.data());
      std::vector<float> grads(ids.size() * width);
      for (float& x : grads) x = g(rng);
      table.push(ids, grads.data(), lr);
      // Reference: sum the gradients of each id, then one update of it.
      std::map<int64_t, std::vector<double>> summed;
      for (size_t i = 0; i < ids.size(); ++i) {
        auto& sum = summed[ids[i]];
        sum.resize(width, 0.0);
        for (int64_t j = 0; j < width; ++j) sum[static_cast<size_t>(j)] += grads[i * width + static_cast<size_t>(j)];
      }
      for (auto& [id, sum] : summed) {
        if (!value.count(id)) {
          auto init = initial_row(config, id);
          value[id].assign(init.begin(), init.end());
          s0[id].assign(width, 0.0);
          s1[id].assign(width, 0.0);
        }
        const int t = ++steps[id];
        for (size_t j = 0; j < static_cast<size_t>(width); ++j) {
          double& p = value[id][j];
          switch (rule) {
            case TableRule::kSgd: p -= lr * sum[j]; break;
            case TableRule::kDelta: p += sum[j]; break;
            case TableRule::kAdagrad:
              s0[id][j] += sum[j] * sum[j];
              p -= lr * sum[j] / (std::sqrt(s0[id][j]) + 1e-6);
              break;
            case TableRule::kAdam: {
              s0[id][j] = 0.9 * s0[id][j] + 0.1 * sum[j];
              s1[id][j] = 0.999 * s1[id][j] + 0.001 * sum[j] * sum[j];
              double m = s0[id][j] / (1 - std::pow(0.9, t)), v = s1[id][j] / (1 - std::pow(0.999, t));
              p -= lr * m / (std::sqrt(v) + 1e-8);
              break;
            }
          }
        }
      }
    }
    for (auto& [id, expected] : value) {
      std::vector<float> got(width);
      ASSERT_TRUE(table.find(id, got.data()));
      for (size_t j = 0; j < static_cast<size_t>(width); ++j) {
        EXPECT_NEAR(got[j], expected[j], 1e-5) << table_rule_name(rule) << " id " << id << " element " << j;
      }
    }
  }
}

TEST(SparseTable, AnIdGetsARowAtItsNthLookupAndNoUpdatesBefore) {
  auto config = sparse_config(2);
  config.admit_after = 3;
  SparseTable table(config);
  const std::vector<int64_t> id = {42};
  std::vector<float> row(2);
  const std::vector<float> grad = {1, 1};
  for (int lookup = 1; lookup <= 2; ++lookup) {
    table.pull(id, row.data());
    EXPECT_EQ(row, std::vector<float>({0, 0})) << "lookup " << lookup << " is below admission";
    table.push(id, grad.data(), 0.5f);
    EXPECT_EQ(table.num_rows(), 0);
  }
  table.pull(id, row.data());
  EXPECT_EQ(row, initial_row(config, 42)) << "the third lookup admits the id";
  table.push(id, grad.data(), 0.5f);
  table.pull(id, row.data());
  EXPECT_FLOAT_EQ(row[0], initial_row(config, 42)[0] - 0.5f);
}

TEST(SparseTable, ConcurrentPushesFromManyThreadsAllLand) {
  auto config = sparse_config(4, TableRule::kDelta);
  config.init = {};
  SparseTable table(config);
  constexpr int kThreads = 4, kPushes = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, t] {
      std::vector<int64_t> ids(32);
      std::vector<float> rows(ids.size() * 4), ones(ids.size() * 4, 1.0f);
      for (int p = 0; p < kPushes; ++p) {
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + static_cast<size_t>(p + t)) % 64);
        table.pull(ids, rows.data());
        table.push(ids, ones.data(), 0.0f);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  double total = 0;
  for (int64_t id = 0; id < 64; ++id) {
    std::vector<float> row(4);
    ASSERT_TRUE(table.find(id, row.data()));
    EXPECT_EQ(row[0], row[3]);
    total += row[0];
  }
  EXPECT_EQ(total, kThreads * kPushes * 32.0) << "every push of every thread is in the table";
}

TEST(SparseTable, EndPassDropsRowsUnseenForTheGivenPasses) {
  SparseTable table(sparse_config(2));
  std::vector<float> rows(4);
  const std::vector<int64_t> both = {1, 2}, one = {1};
  table.pull(both, rows.data());
  EXPECT_EQ(table.end_pass(2), 0);   // both seen in this pass
  table.pull(one, rows.data());
  EXPECT_EQ(table.end_pass(2), 0);   // 2 unseen for one pass
  table.pull(one, rows.data());
  EXPECT_EQ(table.end_pass(2), 1);   // 2 unseen for two passes: dropped
  EXPECT_EQ(table.num_rows(), 1);
  std::vector<float> row(2);
  EXPECT_FALSE(table.find(2, row.data()));
  table.pull({both.data() + 1, 1}, row.data());
  EXPECT_EQ(row, initial_row(sparse_config(2), 2)) << "a dropped row starts again from its initializer";
}

// The lookup counts of ids below admission go as unseen rows do, so
// one-off ids do not hold counters for the life of the job; an id looked up
// again in time keeps its count.
TEST(SparseTable, EndPassForgetsTheLookupsOfIdsBelowAdmissionLeftUnseen) {
  auto config = sparse_config(2);
  config.admit_after = 3;
  SparseTable table(config);
  std::vector<float> row(2);
  const std::vector<int64_t> steady = {7}, once = {8};
  table.pull(steady, row.data());
  table.pull(once, row.data());
  EXPECT_EQ(table.num_counted_ids(), 2);
  EXPECT_EQ(table.end_pass(1), 0);  // both seen in this pass
  EXPECT_EQ(table.num_counted_ids(), 2);
  table.pull(steady, row.data());   // 7's second lookup
  EXPECT_EQ(table.end_pass(1), 0);  // no rows yet
  EXPECT_EQ(table.num_counted_ids(), 1) << "8 went a pass unseen: its count is forgotten";
  table.pull(steady, row.data());
  EXPECT_EQ(row, initial_row(config, 7)) << "7 kept its count: the third lookup admits it";
  EXPECT_EQ(table.num_counted_ids(), 0);
  for (int lookup = 1; lookup <= 2; ++lookup) {
    table.pull(once, row.data());
    EXPECT_EQ(row, std::vector<float>({0, 0})) << "8 counts again from 1: lookup " << lookup;
  }
  table.pull(once, row.data());
  EXPECT_EQ(row, initial_row(config, 8));
  EXPECT_EQ(table.num_rows(), 2);
}

TEST(SparseTable, ShardsSaveAndLoadWithTheirOptimizerState) {
  const auto config = sparse_config(3, TableRule::kAdagrad);
  SparseTable table(config), restored(config);
  std::vector<int64_t> ids(50);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i * 1000003);
  std::vector<float> rows(ids.size() * 3), grads(ids.size() * 3, 0.25f);
  table.pull(ids, rows.data());
  table.push(ids, grads.data(), 0.1f);
  for (int s = 0; s < config.shard_num; ++s) restored.load_shard(s, table.save_shard(s), "shard-" + std::to_string(s));
  EXPECT_EQ(restored.num_rows(), 50);
  // The same next push on both: equal rows only if the accumulators came along.
  table.push(ids, grads.data(), 0.1f);
  restored.push(ids, grads.data(), 0.1f);
  std::vector<float> a(rows.size()), b(rows.size());
  table.pull(ids, a.data());
  restored.pull(ids, b.data());
  EXPECT_EQ(a, b);

  const std::string bytes = table.save_shard(sparse_shard_of(ids[0], config.shard_num));
  auto error_of = [&](const std::string& data, int shard, const ParameterTableConfig& c) -> std::string {
    SparseTable target(c);
    try {
      target.load_shard(shard, data, "ck/emb/shard-x");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFormat) << e.what();
      return e.what();
    }
    return "(loaded)";
  };
  const int shard = sparse_shard_of(ids[0], config.shard_num);
  const std::string truncated = error_of(bytes.substr(0, bytes.size() - 5), shard, config);
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("ck/emb/shard-x"), std::string::npos) << "the error names the file: " << truncated;
  EXPECT_NE(error_of("garbage!" + bytes.substr(8), shard, config).find("bad magic"), std::string::npos);
  EXPECT_NE(error_of(bytes, (shard + 1) % config.shard_num, config).find("belongs to shard"), std::string::npos);
  EXPECT_NE(error_of(bytes, shard, sparse_config(4, TableRule::kAdagrad)).find("rows of 3 values"), std::string::npos);
}

TEST(DenseTable, SlicesCoverTheTableAndApplyTheRule) {
  int64_t covered = 0;
  for (int s = 0; s < 3; ++s) {
    auto [begin, end] = dense_slice(10, s, 3);
    EXPECT_EQ(begin, covered);
    covered = end;
  }
  EXPECT_EQ(covered, 10);
  ParameterTableConfig config;
  config.name = "fc.weight";
  config.width = 4;
  config.rule = TableRule::kAdagrad;
  DenseTable slice(config, 4);
  const std::vector<float> init = {1, 2, 3, 4}, grad = {0.5f, -0.5f, 1, 0};
  slice.set(init.data());
  slice.push(grad.data(), 0.1f);
  std::vector<float> out(4);
  slice.pull(out.data());
  for (size_t i = 0; i < 4; ++i) {
    const double expected = init[i] - 0.1 * grad[i] / (std::abs(grad[i]) + 1e-6);
    EXPECT_NEAR(out[i], expected, 1e-6);
  }
  DenseTable restored(config, 4);
  restored.load(slice.save(), "slice");
  restored.pull(out.data());
  EXPECT_EQ(out[0], static_cast<float>(1 - 0.1 * 0.5 / (0.5 + 1e-6)));
  DenseTable wrong(config, 5);
  EXPECT_THROW(wrong.load(slice.save(), "slice"), Error);
}

TEST(SyncRounds, AppliesCompleteRoundsInOrderWithPushesInWorkerOrder) {
  SyncRounds rounds("emb", 2);
  std::vector<std::string> applied;
  auto apply = [&](std::vector<Push>& by_worker) {
    std::string order;
    for (const Push& p : by_worker) order += std::to_string(static_cast<int>(p.values[0]));
    applied.push_back(order);
  };
  rounds.add(1, 1, {{}, {11}, 0.1f}, apply);   // round 1 before round 0 is complete
  rounds.add(1, 0, {{}, {10}, 0.1f}, apply);
  EXPECT_TRUE(applied.empty());
  rounds.add(0, 1, {{}, {1}, 0.1f}, apply);
  EXPECT_TRUE(applied.empty()) << "round 1 waits for round 0";
  rounds.add(0, 0, {{}, {0}, 0.1f}, apply);
  EXPECT_EQ(applied, (std::vector<std::string>{"010", "111"}));
  EXPECT_EQ(rounds.applied(), 2);
  rounds.wait_applied(2, std::chrono::steady_clock::now());

  EXPECT_THROW(rounds.add(0, 1, {{}, {1}, 0.1f}, apply), Error) << "a round already applied";
  EXPECT_THROW(rounds.add(2, 2, {{}, {1}, 0.1f}, apply), Error) << "worker 2 of 2";
  rounds.add(0, 2, {{}, {1}, 0.1f}, apply);
  EXPECT_THROW(rounds.add(0, 2, {{}, {1}, 0.1f}, apply), Error) << "a second push of one worker";
  const auto start = std::chrono::steady_clock::now();
  try {
    rounds.wait_applied(3, start + 200ms);
    ADD_FAILURE() << "round 2 cannot be applied without worker 1";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
    EXPECT_NE(std::string(e.what()).find("round 2 is still waiting for the push of worker(s) 1"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace weir::ps
