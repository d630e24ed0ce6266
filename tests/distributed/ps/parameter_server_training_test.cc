// Training on parameter servers, in one process: two workers (threads, each
// with its own gRPC client) and two in-process servers train the ctr model
// in sync mode, and every step's loss, averaged over the workers, equals
// the loss of one local process training on the whole batch (its tables
// [vocabulary, width] parameters, every row started as a server starts it),
// with SGD and with Adagrad; word2vec (sparse tables only) likewise. And
// the step the rewrite builds: a pull and a push per dense parameter, a
// push per lookup, all on the communication stream, each reading the round
// in sync mode.
#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "core/error.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"
#include "tests/distributed/ps/in_process_servers.h"
#include "frontend/data/click_log.h"
#include "frontend/data/skipgram.h"
#include "frontend/optim/optimizer.h"
#include "models/train_sparse_model.h"

namespace weir::ps {
namespace {

using namespace std::chrono_literals;

// The training tests' calls wait longer: a sync pull waits for the other worker.
struct Job : InProcessServers {
  explicit Job(int count) : InProcessServers(count) {}
  std::shared_ptr<ParameterClient> client(int worker) const { return InProcessServers::client(worker, 30s); }
};

std::vector<Tensor> click_log(int64_t examples) {
  ClickLogOptions options;
  options.examples = examples;
  options.ids_per_slot = 40;  // few ids: rows repeat within and across the workers' shares
  ClickLog log = synthetic_click_log(options);
  return {log.ids, log.dense, log.labels};
}

models::SparseModelTraining ctr_options(OptimizerKind optimizer, double lr) {
  models::SparseModelTraining options;
  options.model = "ctr";
  options.ctr.vocabulary = 8 * 40;
  options.ctr.hidden = {16};
  options.batch = 32;
  options.steps = 6;
  options.optimizer.kind = optimizer;
  options.lr = lr;
  options.log = nullptr;
  return options;
}

// Each step's loss of `workers` sync workers (their mean) against the local run's.
void expect_sync_equals_local(models::SparseModelTraining options, const std::vector<Tensor>& data, int workers) {
  const models::SparseModelTrainingResult local = models::train_sparse_model(options, data);
  ASSERT_EQ(local.losses.size(), static_cast<size_t>(options.steps));

  Job job(2);
  options.strategy.parameter_server.mode = PsMode::kSync;
  options.workers = workers;
  std::vector<std::future<models::SparseModelTrainingResult>> runs;
  for (int w = 0; w < workers; ++w) {
    models::SparseModelTraining worker = options;
    worker.worker = w;
    worker.client = job.client(w);
    runs.push_back(std::async(std::launch::async, [worker, &data] { return models::train_sparse_model(worker, data); }));
  }
  std::vector<models::SparseModelTrainingResult> results;
  for (auto& run : runs) results.push_back(run.get());
  for (size_t step = 0; step < local.losses.size(); ++step) {
    double mean = 0;
    for (const auto& result : results) mean += result.losses.at(step) / workers;
    EXPECT_NEAR(mean, local.losses[step], 1e-5 * std::abs(local.losses[step])) << "step " << step + 1;
  }
  // The model learns: the loss moves.
  EXPECT_NE(local.losses.front(), local.losses.back());
}

TEST(ParameterServerTraining, SyncCtrWithSgdEqualsOneProcessOnTheWholeBatch) {
  expect_sync_equals_local(ctr_options(OptimizerKind::kSgd, 0.5), click_log(32 * 8), 2);
}

TEST(ParameterServerTraining, SyncCtrWithAdagradEqualsOneProcessOnTheWholeBatch) {
  expect_sync_equals_local(ctr_options(OptimizerKind::kAdagrad, 0.1), click_log(32 * 8), 2);
}

TEST(ParameterServerTraining, SyncWord2vecEqualsOneProcessOnTheWholeBatch) {
  std::vector<int64_t> tokens = zipf_corpus(50, 2000, 1.0, 3);
  std::vector<int64_t> counts(50, 0);
  for (int64_t t : tokens) ++counts[static_cast<size_t>(t)];
  SkipGramExamples examples = skipgram_examples(tokens, counts, {.window = 2, .negatives = 3, .seed = 4});
  models::SparseModelTraining options;
  options.model = "word2vec";
  options.word2vec = {.vocabulary = 50, .dim = 8, .negatives = 3};
  options.batch = 64;
  options.steps = 8;
  options.optimizer.kind = OptimizerKind::kAdagrad;
  options.lr = 0.5;
  options.log = nullptr;
  expect_sync_equals_local(options, {examples.centres, examples.targets, examples.labels}, 2);
}

TEST(ParameterServerTraining, TheStepPullsAndPushesEveryParameterOnTheCommunicationStream) {
  models::SparseModelTraining options = ctr_options(OptimizerKind::kAdagrad, 0.1);
  options.strategy.parameter_server = {.mode = PsMode::kSync, .workers = 2};
  models::SparseModelGraph model = models::build_sparse_model(options, 16);
  TrainingGraph step = minimize(*model.graph, model.loss, options.optimizer, options.strategy);
  std::map<std::string, int> ops;
  for (const Node* node : model.graph->nodes()) {
    if (!node->op_type().starts_with("Ps")) continue;
    ++ops[node->op_type()];
    EXPECT_EQ(node->stream(), "comm") << node->name();
    EXPECT_EQ(node->inputs().back()->producer()->op_type(), "Sub") << node->name() << " reads the round last";
  }
  const size_t dense = step.parameters.size();
  EXPECT_GT(dense, 0u);
  EXPECT_EQ(ops["PsPullDense"], static_cast<int>(dense));
  EXPECT_EQ(ops["PsPushDense"], static_cast<int>(dense));
  EXPECT_EQ(ops["PsPullSparse"], 2);  // ctr/embedding, ctr/wide
  EXPECT_EQ(ops["PsPushSparse"], 2);
  ASSERT_EQ(step.parameter_tables.size(), dense + 2);
  for (const ParameterTableConfig& table : step.parameter_tables) {
    EXPECT_EQ(table.rule, TableRule::kAdagrad) << table.name;
    EXPECT_EQ(table.sync_workers, 2) << table.name;
  }
  EXPECT_EQ(step.ps_mode, "sync");
  EXPECT_EQ(step.step_input, "step");
  // No update op: the servers apply the optimizer.
  for (const Node* node : model.graph->nodes()) EXPECT_NE(node->op_type(), "Adagrad") << node->name();
}

TEST(ParameterServerTraining, ALookupWithoutAParameterServerStrategyIsRefused) {
  models::SparseModelTraining options = ctr_options(OptimizerKind::kSgd, 0.1);
  options.strategy.parameter_server.mode = PsMode::kAsync;  // builds the lookups
  models::SparseModelGraph model = models::build_sparse_model(options, 16);
  try {
    minimize(*model.graph, model.loss, options.optimizer, Strategy{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ctr/embedding"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--ps"), std::string::npos) << e.what();
  }
}

TEST(ParameterServerTraining, AnOptimizerTheServersDoNotRunIsRefused) {
  models::SparseModelTraining options = ctr_options(OptimizerKind::kMomentum, 0.1);
  options.strategy.parameter_server.mode = PsMode::kAsync;
  models::SparseModelGraph model = models::build_sparse_model(options, 16);
  try {
    minimize(*model.graph, model.loss, options.optimizer, options.strategy);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("momentum"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir::ps
