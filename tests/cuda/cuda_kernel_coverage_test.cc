// Every node of the models the CUDA backend must run has a CUDA kernel (and
// of their training steps with gradient merge, DGC and LocalSGD): the
// plans are compiled for cuda:0, which creates each node's kernel from the
// registry and needs no GPU. This runs everywhere, so a model that would be
// refused on a GPU ("no CUDA kernel for X with f32 inputs") fails here first.
// The exception, listed by its test: the sharded margin head's ops of
// model-parallel classification, which run on the host.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/graph.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/plan.h"

namespace weir {
namespace {

// Why the graph cannot be compiled for cuda:0 at `opt_level`, or "": compile()
// creates every node's kernel from the registry for the device it is placed
// on (which needs no GPU), so a node without a CUDA kernel fails it, named.
std::string cuda_compile_error(const Graph& graph, int opt_level) {
  CompileOptions options;
  options.default_device = Device::cuda(0);
  options.opt_level = opt_level;
  try {
    std::shared_ptr<const Plan> plan = compile(graph, options);
    for (const Node* node : plan->graph().nodes()) {
      if (!node->device() || node->device()->type != DeviceType::kCuda) return "node '" + node->name() + "' is not on cuda:0";
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The check itself: an op the CUDA backend does not have (Det) is reported.
TEST(CudaKernelCoverage, ReportsAnOpWithoutACudaKernelByName) {
  Graph graph("det");
  Value* x = graph.add_input("x", {DType::kFloat32, Shape{3, 3}});
  graph.add_output(graph.add_node("Det", {x}, 1, {}, "det")->output(0));
  const std::string error = cuda_compile_error(graph, 0);
  EXPECT_NE(error.find("node 'det': no CUDA kernel for Det with f32 inputs"), std::string::npos) << error;
}

struct TrainingCase {
  std::string model;
  OptimizerKind optimizer;
  std::optional<DType> amp;
  // A gradient-communication strategy: "", "gradient_merge", "dgc",
  // "localsgd" or "adaptive_localsgd" (the last three one rank of two).
  std::string communication = "";
};

std::string training_case_name(const ::testing::TestParamInfo<TrainingCase>& info) {
  std::string amp = info.param.amp ? "_" + std::string(dtype_name(*info.param.amp)) : "";
  std::string communication = info.param.communication.empty() ? "" : "_" + info.param.communication;
  return info.param.model + "_" + optimizer_kind_name(info.param.optimizer) + amp + communication;
}

void set_communication(const std::string& name, Strategy& strategy) {
  if (name.empty()) return;
  if (name == "gradient_merge") {
    strategy.gradient_merge = {.enabled = true, .k_steps = 2};
    return;
  }
  strategy.data_parallel.ranks = 2;
  if (name == "dgc") {
    strategy.dgc = {.enabled = true, .rampup_begin_step = 2, .sparsity = {0.75, 0.999}, .clip_norm = 1.0};
  } else if (name == "localsgd") {
    strategy.localsgd = {.enabled = true, .k_steps = 3};
  } else if (name == "adaptive_localsgd") {
    strategy.localsgd = {.enabled = true, .adaptive = true, .init_k_steps = 2};
  } else {
    FAIL() << "unknown communication strategy '" << name << "'";
  }
}

class CudaTrainingCoverage : public ::testing::TestWithParam<TrainingCase> {};

// The training step as `graph-runner train --device cuda` compiles it, and
// one rank's step of the gradient-communication strategies.
TEST_P(CudaTrainingCoverage, EveryNodeOfTheTrainingStepHasACudaKernel) {
  const TrainingCase& c = GetParam();
  models::ClassifierGraph model = models::build_classifier(c.model, 8, /*training=*/true, {.classes = 10});
  Strategy strategy;
  if (c.amp) {
    strategy.amp.enabled = true;
    strategy.amp.dtype = *c.amp;
  }
  set_communication(c.communication, strategy);
  minimize(*model.graph, model.loss, {.kind = c.optimizer}, strategy);
  EXPECT_EQ(cuda_compile_error(*model.graph, 0), "");
}

INSTANTIATE_TEST_SUITE_P(
    Models, CudaTrainingCoverage,
    ::testing::Values(TrainingCase{"lenet", OptimizerKind::kSgd, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kMomentum, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kAdam, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kAdamW, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kLamb, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kMomentum, DType::kFloat16},
                      TrainingCase{"resnet50", OptimizerKind::kMomentum, DType::kFloat16},
                      TrainingCase{"bert", OptimizerKind::kAdamW, std::nullopt},
                      TrainingCase{"lenet", OptimizerKind::kAdam, std::nullopt, "gradient_merge"},
                      TrainingCase{"lenet", OptimizerKind::kMomentum, std::nullopt, "dgc"},
                      TrainingCase{"lenet", OptimizerKind::kMomentum, std::nullopt, "localsgd"},
                      TrainingCase{"lenet", OptimizerKind::kSgd, std::nullopt, "adaptive_localsgd"}),
    training_case_name);

// One rank's step of model-parallel classification (PLSC): the margin
// head's classes sharded over 2 ranks, with and without PartialFC's
// sampling of class centres. The sharded head's own ops have no CUDA
// kernels yet: they run on the host (host fallback), which costs copies of
// the [batch, shard width] logits both ways each step. The list below is
// what falls back; every other node has a CUDA kernel.
TEST(CudaTrainingCoverage, OnlyTheShardedMarginHeadsOwnOpsRunOnTheHost) {
  for (double sample_ratio : {1.0, 0.5}) {
    models::ZooOptions zoo{.classes = 1000};
    zoo.sample_ratio = sample_ratio;
    zoo.head_ranks = 2;
    models::ClassifierGraph model = models::build_classifier("arcface", 8, /*training=*/true, zoo);
    Strategy strategy;
    strategy.data_parallel.ranks = 2;
    strategy.data_parallel.distributed_parameters.insert(model.class_centres->weight);
    minimize(*model.graph, model.loss, {.kind = OptimizerKind::kMomentum}, strategy);
    CompileOptions options;
    options.default_device = Device::cuda(0);
    options.host_fallback = true;
    std::shared_ptr<const Plan> plan = compile(*model.graph, options);
    std::set<std::string> on_host;
    for (const Node* node : plan->graph().nodes()) {
      if (node->device() && node->device()->type == DeviceType::kCpu) on_host.insert(node->op_type());
    }
    std::set<std::string> expected = {"MarginLogits", "MarginLogitsGrad", "MaskShardPadding", "ShardLabels",
                                      "ShardedCrossEntropy", "ShardedCrossEntropyGrad"};
    if (sample_ratio < 1) expected.insert("SampleClassCenters");
    EXPECT_EQ(on_host, expected) << "sample_ratio " << sample_ratio;
  }
}

class CudaInferenceCoverage : public ::testing::TestWithParam<std::string> {};

// The inference graphs `graph-runner bench --device cuda` runs, at the
// default optimization level (3) and with the fusions off (2).
TEST_P(CudaInferenceCoverage, EveryNodeAtEachOptimizationLevelHasACudaKernel) {
  models::ClassifierGraph model = models::build_classifier(GetParam(), 1, /*training=*/false, {.classes = 1000});
  for (int level : {2, 3}) {
    EXPECT_EQ(cuda_compile_error(*model.graph, level), "") << "opt-level " << level;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaInferenceCoverage, ::testing::Values("lenet", "resnet50", "mobilenet_v2", "bert"));

}  // namespace
}  // namespace weir
