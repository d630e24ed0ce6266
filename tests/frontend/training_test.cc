// Training end to end on small graphs: one step of an MLP for every
// optimizer against a reference computed from finite-difference gradients
// and the update rules written out here; the data loader's order; exact
// resumption from a checkpoint; learning-rate schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/data/data_loader.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "frontend/optim/lr_schedule.h"
#include "frontend/optim/optimizer.h"
#include "frontend/data/npy.h"
#include "frontend/train/checkpoint.h"
#include "frontend/train/trainer.h"
#include "runtime/plan.h"
#include "tests/session_gradients.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::random_f64_tensor;

const std::vector<std::string> kParams = {"w1", "b1", "w2", "b2"};

// An f64 MLP 6-5-3 on a batch of 4, softmax cross-entropy: "loss".
std::unique_ptr<Graph> mlp_f64() {
  GraphBuilder b("mlp", 1);
  Var x = b.input("x", {DType::kFloat64, Shape{4, 6}});
  Var labels = b.input("labels", {DType::kInt64, Shape{4}});
  Var w1 = b.parameter("w1", random_f64_tensor({6, 5}, 1, 0.6));
  Var b1 = b.parameter("b1", random_f64_tensor({5}, 2, 0.2));
  Var w2 = b.parameter("w2", random_f64_tensor({5, 3}, 3, 0.6));
  Var b2 = b.parameter("b2", random_f64_tensor({3}, 4, 0.2));
  Var logits = nn::matmul(nn::relu(nn::matmul(x, w1) + b1), w2) + b2;
  Var loss = nn::cross_entropy(logits, labels);
  b.output(loss);
  auto graph = b.finish();
  Value* named = graph->add_value("loss");
  graph->add_node_with_outputs("Identity", {loss.value()}, {named}, {}, "loss_identity");
  graph->clear_outputs();
  graph->add_output(named);
  return graph;
}

std::map<std::string, Tensor> mlp_feeds() {
  Tensor labels(DType::kInt64, {4});
  for (int64_t i = 0; i < 4; ++i) labels.data<int64_t>()[i] = (i * 2) % 3;
  return {{"x", random_f64_tensor({4, 6}, 5, 1.0)}, {"labels", labels}};
}

// Gradients of the loss by central differences at the session's parameters.
std::map<std::string, std::vector<double>> finite_difference_gradients(Session& forward,
                                                                       const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, std::vector<double>> grads;
  for (const std::string& name : kParams) grads[name] = testing::central_difference_gradient(forward, name, feeds, 0);
  return grads;
}

struct ReferenceState {
  std::map<std::string, std::vector<double>> p, s0, s1;
};

// The update rules, written from their papers: SGD; momentum (Sutskever et
// al. 2013, optionally Nesterov); Adam (Kingma & Ba 2015) with L2 decay;
// AdamW (Loshchilov & Hutter 2019); LAMB (You et al. 2020), trust ratio per
// parameter tensor. Gradients clipped to a global norm first when asked.
void reference_step(const OptimizerConfig& c, double lr, int64_t t, std::map<std::string, std::vector<double>> g,
                    ReferenceState& s) {
  if (c.clip_global_norm > 0) {
    double norm = 0;
    for (auto& [name, v] : g) {
      for (double x : v) norm += x * x;
    }
    norm = std::sqrt(norm);
    if (norm > c.clip_global_norm) {
      for (auto& [name, v] : g) {
        for (double& x : v) x *= c.clip_global_norm / norm;
      }
    }
  }
  const double eps = c.epsilon > 0 ? c.epsilon
                     : (c.kind == OptimizerKind::kLamb || c.kind == OptimizerKind::kAdagrad ? 1e-6 : 1e-8);
  for (const std::string& name : kParams) {
    std::vector<double>& p = s.p[name];
    std::vector<double>& m = s.s0[name];
    std::vector<double>& v = s.s1[name];
    m.resize(p.size(), 0.0);
    v.resize(p.size(), 0.0);
    std::vector<double> u(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[name][i];
      switch (c.kind) {
        case OptimizerKind::kSgd: u[i] = gi + c.weight_decay * p[i]; break;
        case OptimizerKind::kMomentum: {
          double gw = gi + c.weight_decay * p[i];
          m[i] = c.momentum * m[i] + gw;
          u[i] = c.nesterov ? gw + c.momentum * m[i] : m[i];
          break;
        }
        case OptimizerKind::kAdagrad: {
          double gw = gi + c.weight_decay * p[i];
          m[i] += gw * gw;
          u[i] = gw / (std::sqrt(m[i]) + eps);
          break;
        }
        default: {
          double gw = c.kind == OptimizerKind::kAdam ? gi + c.weight_decay * p[i] : gi;
          m[i] = c.beta1 * m[i] + (1 - c.beta1) * gw;
          v[i] = c.beta2 * v[i] + (1 - c.beta2) * gw * gw;
          double mhat = m[i] / (1 - std::pow(c.beta1, static_cast<double>(t)));
          double vhat = v[i] / (1 - std::pow(c.beta2, static_cast<double>(t)));
          u[i] = mhat / (std::sqrt(vhat) + eps) + (c.kind == OptimizerKind::kAdam ? 0.0 : c.weight_decay * p[i]);
        }
      }
    }
    double trust = 1.0;
    if (c.kind == OptimizerKind::kLamb) {
      double pn = 0, un = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        pn += p[i] * p[i];
        un += u[i] * u[i];
      }
      if (pn > 0 && un > 0) trust = std::sqrt(pn) / std::sqrt(un);
    }
    for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * trust * u[i];
  }
}

std::vector<double> values(const Tensor& t) { return {t.data<double>(), t.data<double>() + t.num_elements()}; }

TEST(Optimizers, OneStepOfAnMlpMatchesTheReferenceForEveryOptimizer) {
  const std::map<std::string, Tensor> feeds = mlp_feeds();
  std::vector<std::pair<std::string, OptimizerConfig>> configs = {
      {"sgd", {.kind = OptimizerKind::kSgd, .weight_decay = 0.01}},
      {"sgd+clip", {.kind = OptimizerKind::kSgd, .clip_global_norm = 0.05}},
      {"momentum", {.kind = OptimizerKind::kMomentum, .weight_decay = 0.01, .momentum = 0.9}},
      {"nesterov", {.kind = OptimizerKind::kMomentum, .momentum = 0.8, .nesterov = true}},
      {"adagrad", {.kind = OptimizerKind::kAdagrad, .weight_decay = 0.01}},
      {"adam", {.kind = OptimizerKind::kAdam, .weight_decay = 0.01}},
      {"adamw", {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1}},
      {"lamb", {.kind = OptimizerKind::kLamb, .weight_decay = 0.1}},
  };
  for (const auto& [label, config] : configs) {
    SCOPED_TRACE(label);
    auto forward_graph = mlp_f64();
    Session forward(compile(*forward_graph));
    auto train_graph = mlp_f64();
    TrainingGraph info = minimize(*train_graph, "loss", config);
    EXPECT_EQ(info.parameters.size(), 4u);
    Session train(compile(*train_graph));

    ReferenceState reference;
    for (const std::string& name : kParams) reference.p[name] = values(forward.state(name));
    const double lr = 0.1;
    for (int64_t t = 1; t <= 3; ++t) {
      // The reference's gradient at the reference's parameters.
      for (const std::string& name : kParams) {
        Tensor p(DType::kFloat64, forward.state(name).sizes());
        std::copy(reference.p[name].begin(), reference.p[name].end(), p.data<double>());
        forward.set_state(name, p);
      }
      auto grads = finite_difference_gradients(forward, feeds);
      reference_step(config, lr, t, grads, reference);

      std::map<std::string, Tensor> step_feeds = feeds;
      step_feeds[info.lr_input] = Tensor::scalar<float>(static_cast<float>(lr));
      if (!info.step_input.empty()) step_feeds[info.step_input] = Tensor::scalar<int64_t>(t);
      train.run(step_feeds);
      for (const std::string& name : kParams) {
        std::vector<double> got = values(train.state(name));
        for (size_t i = 0; i < got.size(); ++i) {
          // lr is fed as f32: 0.1f differs from 0.1 by 1.5e-9 relative.
          ASSERT_NEAR(got[i], reference.p[name][i], 2e-7 + 1e-6 * std::abs(reference.p[name][i]))
              << name << "[" << i << "] after step " << t;
        }
      }
    }
  }
}

TEST(Optimizers, ParametersAreUpdatedAfterEveryRead) {
  auto graph = mlp_f64();
  minimize(*graph, "loss", {.kind = OptimizerKind::kSgd});
  for (Node* node : graph->nodes()) {
    if (node->op_type() != "SGD") continue;
    Value* param = node->input(0);
    std::set<Node*> controls(node->control_inputs().begin(), node->control_inputs().end());
    for (const Use& use : param->uses()) {
      if (use.node == node) continue;
      EXPECT_TRUE(controls.count(use.node)) << use.node->name() << " reads " << param->name();
    }
  }
  EXPECT_THROW(parse_optimizer_kind("rmsprop"), Error);
}

TEST(DataLoader, EveryExampleOnceInASeedDeterminedOrder) {
  Tensor x(DType::kInt64, {103, 2});
  for (int64_t i = 0; i < 103; ++i) x.data<int64_t>()[2 * i] = x.data<int64_t>()[2 * i + 1] = i;
  auto data = std::make_shared<TensorDataset>(std::vector<Tensor>{x});
  auto epoch = [&](int workers, uint64_t seed, int64_t first) {
    DataLoader loader(data, {.batch_size = 10, .shuffle = true, .drop_last = false, .seed = seed, .num_workers = workers});
    loader.start_epoch(3, first);
    std::vector<int64_t> seen;
    while (auto batch = loader.next()) {
      for (int64_t i = 0; i < (*batch)[0].sizes()[0]; ++i) seen.push_back((*batch)[0].data<int64_t>()[2 * i]);
    }
    return seen;
  };
  std::vector<int64_t> one = epoch(1, 7, 0);
  ASSERT_EQ(one.size(), 103u);
  EXPECT_EQ(std::set<int64_t>(one.begin(), one.end()).size(), 103u);
  EXPECT_EQ(epoch(3, 7, 0), one) << "the order must not depend on the worker count";
  EXPECT_NE(epoch(2, 8, 0), one);
  std::vector<int64_t> tail = epoch(2, 7, 4);
  EXPECT_EQ(tail, std::vector<int64_t>(one.begin() + 40, one.end())) << "resuming at batch 4";
  DataLoader dropping(data, {.batch_size = 10, .drop_last = true});
  EXPECT_EQ(dropping.batches_per_epoch(), 10);
}

TEST(DataLoader, ShardsTogetherAreTheWholeBatch) {
  Tensor x(DType::kInt64, {103, 1});
  for (int64_t i = 0; i < 103; ++i) x.data<int64_t>()[i] = i;
  auto data = std::make_shared<TensorDataset>(std::vector<Tensor>{x});
  DataLoader whole(data, {.batch_size = 12, .seed = 9, .num_workers = 2});
  std::vector<std::unique_ptr<DataLoader>> shards;
  for (int r = 0; r < 3; ++r) {
    shards.push_back(std::make_unique<DataLoader>(
        data, DataLoaderOptions{.batch_size = 12, .seed = 9, .num_workers = 1 + r % 2, .shards = 3, .shard = r}));
    EXPECT_EQ(shards.back()->batches_per_epoch(), whole.batches_per_epoch());
    shards.back()->start_epoch(2, 1);
  }
  whole.start_epoch(2, 1);
  int batches = 0;
  while (auto batch = whole.next()) {
    for (int r = 0; r < 3; ++r) {
      std::optional<std::vector<Tensor>> share = shards[static_cast<size_t>(r)]->next();
      ASSERT_TRUE(share.has_value());
      ASSERT_EQ((*share)[0].sizes()[0], 4);
      for (int64_t i = 0; i < 4; ++i) {
        EXPECT_EQ((*share)[0].data<int64_t>()[i], (*batch)[0].data<int64_t>()[r * 4 + i]) << "shard " << r;
      }
    }
    ++batches;
  }
  EXPECT_EQ(batches, 7);
  for (auto& shard : shards) EXPECT_FALSE(shard->next().has_value());
  EXPECT_THROW(DataLoader(data, {.batch_size = 10, .shards = 3}), Error);
  EXPECT_THROW(DataLoader(data, {.batch_size = 12, .shards = 3, .shard = 3}), Error);
  EXPECT_THROW(DataLoader(data, {.batch_size = 12, .drop_last = false, .shards = 3}), Error);
}

// A small classifier with dropout (so the RNG state matters), trained with Adam.
std::unique_ptr<Graph> dropout_net(TrainingGraph& info) {
  GraphBuilder b("dropout_net", 11);
  Var x = b.input("x", {DType::kFloat32, Shape{16, 12}});
  Var labels = b.input("labels", {DType::kInt64, Shape{16}});
  nn::Linear fc1(b, "fc1", 12, 32), fc2(b, "fc2", 32, 4);
  Var logits = fc2(nn::dropout(nn::relu(fc1(x)), 0.3, /*training=*/true));
  Var loss = nn::cross_entropy(logits, labels);
  b.output(loss);
  auto graph = b.finish();
  info = minimize(*graph, loss.name(), {.kind = OptimizerKind::kAdam});
  return graph;
}

std::shared_ptr<TensorDataset> dropout_data() {
  Tensor x = Tensor::from_vector(testing::random_floats(200 * 12, 3), {200, 12});
  Tensor y(DType::kInt64, {200});
  for (int64_t i = 0; i < 200; ++i) y.data<int64_t>()[i] = (x.data<float>()[i * 12] > 0) + 2 * (x.data<float>()[i * 12 + 1] > 0);
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x, y});
}

TEST(Checkpoints, ResumingGivesTheSameParametersAsRunningStraight) {
  testing::ScratchDir dir;
  auto data = dropout_data();
  const DataLoaderOptions loader_options{.batch_size = 16, .seed = 5, .num_workers = 2};
  const LrSchedule lr = LrSchedule::cosine(3e-3, 40).with_warmup(5);
  auto make = [&](TrainingGraph& info) { return std::make_unique<Session>(compile(*dropout_net(info))); };

  TrainingGraph straight_info;
  auto straight = make(straight_info);
  DataLoader straight_loader(data, loader_options);
  Trainer straight_trainer(*straight, straight_info, straight_loader, {.feeds = {"x", "labels"}, .lr = lr, .log = nullptr});
  straight_trainer.run_steps(30);  // 12 batches per epoch: crosses two epoch ends

  TrainingGraph first_info;
  auto first = make(first_info);
  {
    DataLoader loader(data, loader_options);
    Trainer trainer(*first, first_info, loader, {.feeds = {"x", "labels"}, .lr = lr, .log = nullptr});
    trainer.run_steps(17);
    trainer.save(dir / "ckpt.npz");
  }
  TrainingGraph second_info;
  auto second = make(second_info);
  DataLoader loader(data, loader_options);
  Trainer trainer(*second, second_info, loader, {.feeds = {"x", "labels"}, .lr = lr, .log = nullptr});
  trainer.resume(dir / "ckpt.npz");
  EXPECT_EQ(trainer.step(), 17);
  trainer.run_steps(13);
  int compared = 0;
  for (const Value* value : straight->plan().graph().persistents()) {
    EXPECT_TRUE(straight->state(value->name()).bitwise_equal(second->state(value->name()))) << value->name();
    ++compared;
  }
  EXPECT_EQ(compared, 4 + 8);  // parameters and Adam's two moments each
}

// A parameter-server job resumed from its servers' tables continues the
// data at the batch where the saved job stopped, while its steps count from
// 1 (they are the fresh servers' sync rounds). With lr 0 a step's loss
// depends on its batch alone.
TEST(Checkpoints, AFirstBatchContinuesTheDataWhileStepsCountFromOne) {
  auto data = dropout_data();
  const DataLoaderOptions loader_options{.batch_size = 16, .seed = 5, .num_workers = 2};
  auto make = [](TrainingGraph& info) {
    GraphBuilder b("linear_net", 11);
    Var x = b.input("x", {DType::kFloat32, Shape{16, 12}});
    Var labels = b.input("labels", {DType::kInt64, Shape{16}});
    nn::Linear fc(b, "fc", 12, 4);
    Var loss = nn::cross_entropy(fc(x), labels);
    b.output(loss);
    auto graph = b.finish();
    info = minimize(*graph, loss.name(), {.kind = OptimizerKind::kSgd});
    return std::make_unique<Session>(compile(*graph));
  };
  const TrainerOptions options{.feeds = {"x", "labels"}, .lr = LrSchedule::constant(0), .log = nullptr};
  TrainingGraph straight_info;
  auto straight = make(straight_info);
  DataLoader straight_loader(data, loader_options);
  Trainer straight_trainer(*straight, straight_info, straight_loader, options);
  const std::vector<double> all = straight_trainer.run_steps(30).losses;  // 12 batches an epoch

  TrainerOptions resumed_options = options;
  resumed_options.first_batch = 17;
  TrainingGraph info;
  auto session = make(info);
  DataLoader loader(data, loader_options);
  Trainer trainer(*session, info, loader, resumed_options);
  EXPECT_EQ(trainer.epoch(), 1);
  const std::vector<double> rest = trainer.run_steps(13).losses;
  EXPECT_EQ(trainer.step(), 13);
  ASSERT_EQ(rest.size(), 13u);
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], all[17 + i]) << "step " << i + 1;
  EXPECT_NE(all[17], all[18]);

  // By epochs: to the end of the epoch batch 17 is in (batch 24), 7 steps.
  TrainingGraph epoch_info;
  auto epoch_session = make(epoch_info);
  DataLoader epoch_loader(data, loader_options);
  Trainer epoch_trainer(*epoch_session, epoch_info, epoch_loader, resumed_options);
  EXPECT_EQ(epoch_trainer.run_epochs(1).steps, 7);

  resumed_options.first_batch = -1;
  EXPECT_THROW(Trainer(*epoch_session, epoch_info, epoch_loader, resumed_options), Error);
}

// A checkpoint's step comes from the file: INT64_MAX once wrapped the
// trainer's arithmetic, so the run trained 0 steps and exited 0. Now the
// overflow is an error naming the step, and a negative step is refused at
// load.
TEST(Checkpoints, StepsThatOverflowOrAreNegativeAreErrors) {
  testing::ScratchDir dir;
  auto data = dropout_data();
  TrainingGraph info;
  Session session(compile(*dropout_net(info)));
  DataLoader loader(data, {.batch_size = 16, .seed = 5, .num_workers = 1});
  Trainer trainer(session, info, loader, {.feeds = {"x", "labels"}, .lr = LrSchedule::constant(1e-3), .log = nullptr});
  save_checkpoint(dir / "max.npz", session, std::numeric_limits<int64_t>::max());
  trainer.resume(dir / "max.npz");
  for (bool epochs : {false, true}) {
    try {
      if (epochs) trainer.run_epochs(1);
      else trainer.run_steps(1);
      ADD_FAILURE() << "trained past INT64_MAX";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("overflow the step counter"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(std::numeric_limits<int64_t>::max())), std::string::npos)
          << e.what();
    }
  }
  save_checkpoint(dir / "negative.npz", session, -5);
  try {
    load_checkpoint(dir / "negative.npz", session);
    ADD_FAILURE() << "a negative step loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step -5 is negative"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("negative.npz"), std::string::npos) << e.what();
  }
}

TEST(Checkpoints, AMismatchedCheckpointIsRefusedAndChangesNothing) {
  testing::ScratchDir dir;
  TrainingGraph info;
  Session session(compile(*dropout_net(info)));
  save_checkpoint(dir / "ok.npz", session, 3);
  Tensor before = session.state("fc1/weight").clone();
  // A checkpoint of another graph: the MLP's parameters.
  Session other(compile(*mlp_f64()));
  save_checkpoint(dir / "other.npz", other, 9);
  try {
    load_checkpoint(dir / "other.npz", session);
    FAIL() << "a foreign checkpoint was loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other.npz"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(session.state("fc1/weight").bitwise_equal(before));
  EXPECT_THROW(load_checkpoint(dir / "missing.npz", session), Error);
  EXPECT_EQ(load_checkpoint(dir / "ok.npz", session), 3);
}

// A row-sharded value (a model-parallel head's) is saved whole, the caller
// having gathered it, and loaded as this rank's rows: its padding rows stay
// as they are. A whole value of another height is refused naming it and the
// file, and nothing changes.
TEST(Checkpoints, ARowShardedValueIsSavedWholeAndLoadedAsThisRanksRows) {
  testing::ScratchDir dir;
  GraphBuilder b("sharded", 1);
  Tensor shard(DType::kFloat32, {3, 2});  // two rows of the whole, one of padding
  for (int64_t i = 0; i < 6; ++i) shard.data<float>()[i] = static_cast<float>(100 + i);
  Var w = b.parameter("w", shard);
  b.output(w * 2.0);
  auto graph = b.finish();
  Session session(compile(*graph));
  Tensor whole(DType::kFloat32, {5, 2});
  for (int64_t i = 0; i < 10; ++i) whole.data<float>()[i] = static_cast<float>(i);
  const std::filesystem::path path = dir / "sharded.npz";
  save_checkpoint(path, session, 7, {{"w", whole}});
  EXPECT_TRUE(read_npz(path).at("w").bitwise_equal(whole)) << "written whole";

  EXPECT_EQ(load_checkpoint(path, session, {{"w", {.rows = 5, .start = 3, .count = 2}}}), 7);
  const Tensor loaded = session.host_state("w").clone();
  EXPECT_EQ(std::vector<float>(loaded.data<float>(), loaded.data<float>() + 6),
            (std::vector<float>{6, 7, 8, 9, 104, 105}))
      << "rows 3 and 4 of the whole, then the padding row as it was";

  try {
    load_checkpoint(path, session, {{"w", {.rows = 6, .start = 4, .count = 2}}});
    ADD_FAILURE() << "a whole value of 5 rows loaded as rows of 6";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(std::string(e.what()).find("checkpoint value 'w' is f32[5,2]; this rank holds 2 of its rows, so it must "
                                         "be f32[6,2]"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("sharded.npz"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(session.host_state("w").bitwise_equal(loaded)) << "a refused checkpoint changes nothing";
  // Without shards the whole value does not fit this rank's.
  EXPECT_THROW(load_checkpoint(path, session), Error);
}

TEST(LrSchedules, StepCosineAndWarmup) {
  EXPECT_DOUBLE_EQ(LrSchedule::constant(0.5).at(100), 0.5);
  LrSchedule step = LrSchedule::step_decay(1.0, 10, 0.5);
  EXPECT_DOUBLE_EQ(step.at(10), 1.0);
  EXPECT_DOUBLE_EQ(step.at(11), 0.5);
  EXPECT_DOUBLE_EQ(step.at(25), 0.25);
  LrSchedule cosine = LrSchedule::cosine(1.0, 101, 0.1);
  EXPECT_DOUBLE_EQ(cosine.at(1), 1.0);
  EXPECT_NEAR(cosine.at(51), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(cosine.at(101), 0.1);
  EXPECT_DOUBLE_EQ(cosine.at(500), 0.1);
  LrSchedule warm = LrSchedule::constant(1.0).with_warmup(4);
  EXPECT_DOUBLE_EQ(warm.at(1), 0.25);
  EXPECT_DOUBLE_EQ(warm.at(4), 1.0);
  EXPECT_DOUBLE_EQ(warm.at(5), 1.0);
}

}  // namespace
}  // namespace weir
