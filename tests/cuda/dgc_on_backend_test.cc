// DgcEncode and DgcMomentum on each accelerator against the CPU kernels,
// as a training step runs them: u, v, the parameter and its velocity are
// persistent values each side keeps across steps, and after every step the
// encoded pairs and the state must equal the CPU's bit for bit (within a
// few ulps of the clipping factor with clip_norm). The cases cover the
// dense phase before rampup_begin_step, a sparsity ramp, Nesterov and
// weight decay, sizes below and above one block of every launch, fewer
// candidates than k (padding), more candidates than k with ties at the
// k-th largest magnitude (kept in index order), and DgcMomentum's sparse
// update from several ranks' encodings with repeated indices and padding,
// its dense phase, and an out-of-range gathered index.
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/stateful_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::BothRuns;
using testing::gaussian_floats;
using testing::StatefulComparison;
using testing::Tolerance;

class DgcOnBackend : public testing::OnBackend {};


// Magnitudes from a few levels, so that many entries tie.
std::vector<float> levels(int64_t n, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& value : values) value = static_cast<float>(pick(engine));
  return values;
}

Tensor floats(const std::vector<float>& values, const std::vector<int64_t>& sizes) {
  return Tensor::from_vector<float>(values, sizes);
}

Tensor step_tensor(int64_t step) { return Tensor::scalar<int64_t>(step); }

struct EncodeCase {
  std::vector<int64_t> sizes;
  std::map<std::string, Attribute> attributes;
  bool tied = false;  // gradients from a few levels
  std::string label;
};

// grad, step fed; param, u, v persistent; the pairs out.
std::unique_ptr<Graph> encode_graph(const EncodeCase& c, uint32_t seed) {
  auto g = std::make_unique<Graph>("dgc_encode");
  const int64_t n = testing::count_of(c.sizes);
  const TensorType type{DType::kFloat32, Shape::from_sizes(c.sizes)};
  Value* grad = g->add_input("grad", type);
  Value* param = g->add_persistent("param", type, PersistentRole::kParameter, floats(gaussian_floats(n, seed), c.sizes));
  Value* u = g->add_persistent("u", type, PersistentRole::kOptimizerState, floats(gaussian_floats(n, seed + 1, 0.1), c.sizes));
  Value* v = g->add_persistent("v", type, PersistentRole::kOptimizerState, floats(gaussian_floats(n, seed + 2, 0.1), c.sizes));
  Value* step = g->add_input("step", {DType::kInt64, Shape{}});
  Node* encode = g->add_node("DgcEncode", {grad, param, u, v, step}, 1, c.attributes, "encode");
  g->add_output(encode->output(0));
  return g;
}

void expect_encodes_match(const Device& device, const EncodeCase& c, int steps, uint32_t seed, Tolerance tolerance) {
  std::unique_ptr<Graph> g = encode_graph(c, seed);
  StatefulComparison both(device, *g);
  const int64_t n = testing::count_of(c.sizes);
  for (int step = 1; step <= steps; ++step) {
    const uint32_t grad_seed = seed + 10 + static_cast<uint32_t>(step);
    Tensor grad = floats(c.tied ? levels(n, grad_seed) : gaussian_floats(n, grad_seed), c.sizes);
    const std::string label = c.label + " step " + std::to_string(step);
    BothRuns runs = both.run({{"grad", grad}, {"step", step_tensor(step)}});
    testing::expect_all_close(runs, tolerance, label);
    both.expect_states_close({"u", "v"}, tolerance, label);
    if (::testing::Test::HasFailure()) return;  // one broken step is enough to read
  }
}

std::map<std::string, Attribute> encoding(double sparsity, int64_t rampup_begin_step = 0, double momentum = 0.9,
                                          int64_t nesterov = 0, double weight_decay = 0.0) {
  return {{"momentum", Attribute(momentum)},
          {"nesterov", Attribute(nesterov)},
          {"weight_decay", Attribute(weight_decay)},
          {"rampup_begin_step", Attribute(rampup_begin_step)},
          {"sparsity", Attribute(std::vector<double>{sparsity})}};
}

TEST_P(DgcOnBackend, EncodeMatchesTheCpuBitForBitOverSteps) {
  uint32_t seed = 1;
  const std::vector<std::vector<int64_t>> sizes = {{64}, {1000}, {16387}, {5, 40009}};
  for (const std::vector<int64_t>& s : sizes) {
    for (double sparsity : {0.75, 0.99, 0.999}) {
      for (int64_t nesterov : {0, 1}) {
        for (double weight_decay : {0.0, 1e-4}) {
          EncodeCase c{s, encoding(sparsity, 2, 0.9, nesterov, weight_decay), false, ""};
          c.label = "numel " + std::to_string(testing::count_of(s)) + " sparsity " + std::to_string(sparsity) +
                    " nesterov " + std::to_string(nesterov) + " weight_decay " + std::to_string(weight_decay);
          expect_encodes_match(GetParam(), c, 5, seed, Tolerance{});
          seed += 100;
        }
      }
    }
  }
}

// A ramp over the sparsity list: k changes from step to step.
TEST_P(DgcOnBackend, ASparsityRampMatchesTheCpu) {
  EncodeCase c{{20000}, encoding(0.999, 1), false, "ramp"};
  c.attributes["sparsity"] = Attribute(std::vector<double>{0.75, 0.9375, 0.984375, 0.996, 0.999});
  c.attributes["rampup_step"] = Attribute(int64_t{5});
  expect_encodes_match(GetParam(), c, 8, 700, Tolerance{});
}

// Small blocks (each sample block's smallest sample picks the threshold)
// and few magnitude levels: more candidates than k, ties at the k-th
// largest, kept in index order.
TEST_P(DgcOnBackend, TiesAtTheKthLargestAreKeptInIndexOrderAsOnTheCpu) {
  uint32_t seed = 900;
  for (int64_t n : {64, 200, 5000}) {
    for (double sparsity : {0.5, 0.75, 0.9}) {
      EncodeCase c{{n}, encoding(sparsity, 0, 0.0), true,
                   "tied numel " + std::to_string(n) + " sparsity " + std::to_string(sparsity)};
      expect_encodes_match(GetParam(), c, 4, seed, Tolerance{});
      seed += 50;
    }
  }
}

// Clipping sums the gradient's squares in another order on the device:
// the factor, and so u and v, may differ in their last bits.
TEST_P(DgcOnBackend, ClippedEncodeMatchesTheCpuClosely) {
  EncodeCase c{{30011}, encoding(0.99, 0), false, "clipped"};
  c.attributes["clip_norm"] = Attribute(1.0);
  expect_encodes_match(GetParam(), c, 4, 1200, Tolerance{1e-6, 1e-9});
}

// param, velocity persistent; dense_grad, gathered, encoded, lr, step fed.
std::unique_ptr<Graph> momentum_graph(int64_t n, int64_t rampup_begin_step, int64_t nesterov, double weight_decay) {
  auto g = std::make_unique<Graph>("dgc_momentum");
  const TensorType type{DType::kFloat32, Shape{n}};
  Value* param = g->add_persistent("param", type, PersistentRole::kParameter, floats(gaussian_floats(n, 31), {n}));
  Value* velocity = g->add_persistent("velocity", type, PersistentRole::kOptimizerState, floats(gaussian_floats(n, 32, 0.1), {n}));
  Value* dense = g->add_input("dense_grad", type);
  Value* gathered = g->add_input("gathered", {DType::kFloat32, Shape{Dim::symbol("gathered")}});
  Value* encoded = g->add_input("encoded", {DType::kFloat32, Shape{Dim::symbol("encoded")}});
  Value* lr = g->add_input("lr", {DType::kFloat32, Shape{}});
  Value* step = g->add_input("step", {DType::kInt64, Shape{}});
  Node* apply = g->add_node("DgcMomentum", {param, velocity, dense, gathered, encoded, lr, step}, 2,
                            {{"momentum", Attribute(0.9)},
                             {"nesterov", Attribute(nesterov)},
                             {"weight_decay", Attribute(weight_decay)},
                             {"rampup_begin_step", Attribute(rampup_begin_step)}},
                            "apply");
  g->add_output(apply->output(0));
  g->add_output(apply->output(1));
  return g;
}

float index_bits(int32_t index) {
  float slot;
  std::memcpy(&slot, &index, sizeof(slot));
  return slot;
}

// `ranks` encodings of k pairs each: indices drawn with repeats across
// ranks, ascending within a rank, the last few of each rank padding.
std::vector<float> gathered_pairs(int64_t n, int64_t k, int ranks, uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<float> pairs;
  for (int r = 0; r < ranks; ++r) {
    std::vector<int32_t> indices;
    std::uniform_int_distribution<int64_t> pick(0, std::min<int64_t>(n - 1, 3 * k));  // a narrow range: repeats
    while (static_cast<int64_t>(indices.size()) < k - 2) {
      const int32_t i = static_cast<int32_t>(pick(engine));
      if (std::find(indices.begin(), indices.end(), i) == indices.end()) indices.push_back(i);
    }
    std::sort(indices.begin(), indices.end());
    std::normal_distribution<double> value(0.0, 1.0);
    for (int32_t i : indices) {
      pairs.push_back(index_bits(i));
      pairs.push_back(static_cast<float>(value(engine)));
    }
    for (int p = 0; p < 2; ++p) {
      pairs.push_back(index_bits(-1));
      pairs.push_back(0.0f);
    }
  }
  return pairs;
}

TEST_P(DgcOnBackend, MomentumMatchesTheCpuInBothPhases) {
  for (int64_t nesterov : {0, 1}) {
    for (double weight_decay : {0.0, 1e-4}) {
      const int64_t n = 50000, k = 500;
      std::unique_ptr<Graph> g = momentum_graph(n, 2, nesterov, weight_decay);
      StatefulComparison both(GetParam(), *g);
      for (int step = 1; step <= 5; ++step) {
        const bool sparse = step - 1 >= 2;
        const int ranks = 3;
        std::map<std::string, Tensor> feeds = {
            {"dense_grad", floats(gaussian_floats(n, 40 + static_cast<uint32_t>(step)), {n})},
            {"lr", Tensor::scalar<float>(0.05f)},
            {"step", step_tensor(step)}};
        if (sparse) {
          std::vector<float> pairs = gathered_pairs(n, k, ranks, 60 + static_cast<uint32_t>(step));
          feeds["gathered"] = floats(pairs, {static_cast<int64_t>(pairs.size())});
          feeds["encoded"] = floats(std::vector<float>(pairs.begin(), pairs.begin() + 2 * k), {2 * k});
        } else {
          feeds["gathered"] = floats({}, {0});
          feeds["encoded"] = floats({}, {0});
        }
        const std::string label = "nesterov " + std::to_string(nesterov) + " weight_decay " +
                                  std::to_string(weight_decay) + " step " + std::to_string(step);
        testing::expect_all_close(both.run(feeds), Tolerance{}, label);
        both.expect_states_close({"param", "velocity"}, Tolerance{}, label);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(DgcOnBackend, AnOutOfRangeGatheredIndexFailsTheNodeAndAppliesNothing) {
  const int64_t n = 1000, k = 10;
  std::unique_ptr<Graph> g = momentum_graph(n, 0, 0, 0.0);
  StatefulComparison both(GetParam(), *g);
  std::vector<float> pairs = gathered_pairs(n, k, 2, 7);
  pairs[2 * 13] = index_bits(static_cast<int32_t>(n + 5));  // rank 1's fourth pair
  const Tensor before = both.device_session().host_state("param");
  std::map<std::string, Tensor> feeds = {{"dense_grad", floats(gaussian_floats(n, 8), {n})},
                                         {"gathered", floats(pairs, {static_cast<int64_t>(pairs.size())})},
                                         {"encoded", floats(std::vector<float>(pairs.begin(), pairs.begin() + 2 * k), {2 * k})},
                                         {"lr", Tensor::scalar<float>(0.1f)},
                                         {"step", step_tensor(1)}};
  try {
    both.run_on_device(feeds);
    FAIL() << "an index of " << n + 5 << " for a parameter of " << n << " elements was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("gathered pair 13 has index 1005; expected -1 (padding) or an index below 1000"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("apply"));
  }
  EXPECT_TRUE(both.device_session().host_state("param").bitwise_equal(before)) << "nothing is applied";
}

INSTANTIATE_TEST_SUITE_P(Cuda, DgcOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
