// What the data-parallel pass tests share: an MLP training step on 8x8
// images built at one rank's batch, seeded feeds for one step, and each
// rank's share of them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/plan.h"
#include "tests/test_util.h"

namespace weir {
namespace testing {

struct Step {
  models::ClassifierGraph graph;
  TrainingGraph training;
  std::shared_ptr<const Plan> plan;
};

// An MLP on 8x8 images; `batch` is one rank's.
inline Step mlp_step(int64_t batch, int64_t layers, int64_t width, double dropout, const Strategy& strategy,
                     OptimizerKind kind) {
  models::ZooOptions zoo;
  zoo.mlp_layers = layers;
  zoo.mlp_width = width;
  zoo.mlp_dropout = dropout;
  zoo.image_size = 8;
  Step step{models::build_classifier("mlp", batch, /*training=*/true, zoo), {}, nullptr};
  step.training = minimize(*step.graph.graph, step.graph.loss, {.kind = kind}, strategy);
  step.plan = compile(*step.graph.graph);
  return step;
}

inline std::map<std::string, Tensor> feeds_for(int64_t batch, int step, bool adam) {
  Tensor x = Tensor::from_vector(
      testing::random_floats(static_cast<size_t>(batch * 64), 70 + static_cast<uint32_t>(step), 0.0f, 1.0f), {batch, 1, 8, 8});
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = (i * 3 + step) % 10;
  std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", Tensor::from_vector(labels, {batch})},
                                         {"lr", Tensor::scalar(0.05f)}};
  if (adam) feeds["step"] = Tensor::scalar<int64_t>(step + 1);
  return feeds;
}

// Rank r's share of the whole batch's feeds: rows [r*b, (r+1)*b) of x and labels.
inline std::vector<std::map<std::string, Tensor>> shares(const std::map<std::string, Tensor>& whole, int ranks) {
  std::vector<std::map<std::string, Tensor>> out(static_cast<size_t>(ranks), whole);
  for (const char* name : {"x", "labels"}) {
    const int64_t b = whole.at(name).sizes()[0] / ranks;
    for (int r = 0; r < ranks; ++r) out[static_cast<size_t>(r)][name] = whole.at(name).slice(r * b, (r + 1) * b);
  }
  return out;
}

}  // namespace testing
}  // namespace weir
