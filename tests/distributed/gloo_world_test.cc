// One program per rank across processes: sessions whose world is a Gloo
// world of forked processes run an SPMD plan and agree with the in-process
// world of the same size bit for bit; programs whose collectives differ
// refuse to start on every process, naming the collective and both ranks.
#include <gtest/gtest.h>


#include "core/error.h"
#include "core/type_inference.h"
#include "distributed/gloo/gloo_world.h"
#include "ops/register_ops.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/distributed/process_group.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

// x -> Relu -> `op` (AllReduce sum or Broadcast) under `tag`.
std::shared_ptr<const Plan> program(const std::string& op, int64_t n) {
  Graph g("program");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{n}});
  Node* relu = g.add_node("Relu", {x}, 1, {}, "relu");
  std::map<std::string, Attribute> attributes = {{"tag", Attribute(std::string("grads"))}};
  if (op == "AllReduce") attributes["reduction"] = Attribute(std::string("avg"));
  g.add_output(g.add_node(op, {relu->output(0)}, 1, attributes, "collective")->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

Tensor input_of(int rank) { return Tensor::from_vector(testing::random_floats(7, 100 + static_cast<uint32_t>(rank)), {7}); }

LaunchEnvironment launch(int rank, int size, int port) {
  LaunchEnvironment env;
  env.rank = rank;
  env.world_size = size;
  env.local_rank = rank;
  env.local_world_size = size;
  env.master_port = port;
  env.source = "test";
  return env;
}

TEST(GlooWorld, ProcessesRunOneProgramAsTheInProcessWorldDoes) {
  const int size = 3;
  std::shared_ptr<const Plan> plan = program("AllReduce", 7);
  // The in-process world of the same size: the reference, bit for bit.
  InProcessRanks ranks(plan, size);
  std::vector<std::map<std::string, Tensor>> feeds;
  for (int r = 0; r < size; ++r) feeds.push_back({{"x", input_of(r)}});
  Tensor expected = ranks.run(feeds)[0][0];

  const int port = testing::unused_port();
  std::vector<std::string> results = testing::run_processes(size, 60s, [&](int rank) {
    SessionOptions options;
    options.world = make_gloo_world(launch(rank, size, port), {.timeout = 20s});
    Session session(plan, options);
    for (int step = 0; step < 3; ++step) {
      Tensor got = session.run({{"x", input_of(rank)}})[0];
      if (!got.bitwise_equal(expected)) throw std::runtime_error("step " + std::to_string(step) + " differs from the in-process world");
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(results[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(GlooWorld, ProcessesWhoseCollectivesDifferRefuseToStart) {
  const int port = testing::unused_port();
  std::vector<std::string> results = testing::run_processes(2, 60s, [&](int rank) {
    SessionOptions options;
    options.world = make_gloo_world(launch(rank, 2, port), {.timeout = 20s});
    Session session(program(rank == 0 ? "AllReduce" : "Broadcast", 7), options);
  });
  for (int r = 0; r < 2; ++r) {
    const std::string& e = results[static_cast<size_t>(r)];
    EXPECT_NE(e.find("rank 0 and rank 1 run different collectives"), std::string::npos) << "rank " << r << ": " << e;
    EXPECT_NE(e.find("AllReduce tag 'grads'"), std::string::npos) << e;
    EXPECT_NE(e.find("Broadcast tag 'grads'"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace weir
