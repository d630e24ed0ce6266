// Worlds and one program per rank: the in-process world's ranks, nodes and
// groups; sessions of one plan as the ranks of a world; the collective check
// at session start; a rank that fails makes every rank fail at once, naming
// it; random ops draw per rank.
#include <gtest/gtest.h>

#include <chrono>

#include "core/error.h"
#include "ops/graph_evaluator.h"
#include "runtime/in_process_ranks.h"
#include "runtime/in_process_world.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using testing::error_of;
using testing::random_tensor;

TEST(InProcessWorld, RanksNodesDevicesAndGroups) {
  std::vector<std::shared_ptr<World>> world = make_in_process_world(4, {.ranks_per_node = 2});
  ASSERT_EQ(world.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const World& w = *world[static_cast<size_t>(r)];
    EXPECT_EQ(w.size(), 4);
    EXPECT_EQ(w.rank(), r);
    EXPECT_EQ(w.local_size(), 2);
    EXPECT_EQ(w.local_rank(), r % 2);
    EXPECT_EQ(w.node(), r / 2);
    EXPECT_EQ(w.num_nodes(), 2);
    EXPECT_EQ(w.device(), Device::cpu(r));
  }
  EXPECT_EQ(world[3]->intra_node_ranks(), (std::vector<int>{2, 3}));
  EXPECT_EQ(world[3]->inter_node_ranks(), (std::vector<int>{1, 3}));

  // Rank r contributes r + 1: within a node the sums are 1+2 and 3+4; across
  // nodes (same local rank) 1+3 and 2+4; the world's is 10.
  std::vector<float> intra(4), inter(4), all(4);
  run_on_ranks(4, [&](int r) {
    World& w = *world[static_cast<size_t>(r)];
    auto sum = [&](Communicator& c, const std::string& tag) {
      Tensor t = Tensor::scalar<float>(static_cast<float>(r + 1));
      c.all_reduce(t, ReduceOp::kSum, tag);
      return t.data<float>()[0];
    };
    intra[static_cast<size_t>(r)] = sum(*w.intra_node(), "intra");
    inter[static_cast<size_t>(r)] = sum(*w.inter_node(), "inter");
    all[static_cast<size_t>(r)] = sum(*w.communicator(), "all");
  });
  EXPECT_EQ(intra, (std::vector<float>{3, 3, 7, 7}));
  EXPECT_EQ(inter, (std::vector<float>{4, 6, 4, 6}));
  EXPECT_EQ(all, (std::vector<float>{10, 10, 10, 10}));

  EXPECT_NE(error_of([] { make_in_process_world(3, {.ranks_per_node = 2}); }).find("do not fill nodes"),
            std::string::npos);
}

// x -> Relu -> AllReduce(tag) -> output, one device: a rank's program.
std::shared_ptr<const Plan> reduce_program(const std::string& op, const std::string& tag, int64_t n) {
  Graph g("program");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{n}});
  Node* relu = g.add_node("Relu", {x}, 1, {}, "relu");
  std::map<std::string, Attribute> attributes = {{"tag", Attribute(tag)}};
  if (op == "AllReduce") attributes["reduction"] = Attribute(std::string("sum"));
  Node* reduce = g.add_node(op, {relu->output(0)}, 1, attributes, "collective");
  g.add_output(reduce->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

TEST(World, SessionsOfOnePlanAreTheRanks) {
  std::shared_ptr<const Plan> plan = reduce_program("AllReduce", "sum", 5);
  InProcessRanks ranks(plan, 3);
  std::vector<std::map<std::string, Tensor>> feeds;
  Tensor expected = Tensor::from_vector(std::vector<float>(5, 0.0f), {5});
  for (uint32_t r = 0; r < 3; ++r) {
    Tensor x = random_tensor({5}, 10 + r);
    feeds.push_back({{"x", x}});
    for (int64_t i = 0; i < 5; ++i) expected.data<float>()[i] += std::max(0.0f, x.data<float>()[i]);
  }
  std::vector<std::vector<Tensor>> out = ranks.run(feeds);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks.session(r).devices(), std::vector<Device>{Device::cpu(r)});
    EXPECT_EQ(ranks.session(r).world()->rank(), r);
    EXPECT_LT(testing::relative_l2(out[static_cast<size_t>(r)][0], expected), 1e-6) << "rank " << r;
    EXPECT_TRUE(out[static_cast<size_t>(r)][0].bitwise_equal(out[0][0])) << "rank " << r;
    EXPECT_GT(ranks.session(r).memory_stats(Device::cpu(r)).stats.num_allocations, 0);
  }
}

// Each rank of a two-rank world starts a session of its own plan; returns
// each rank's error message ("(no error)" when it started).
std::vector<std::string> start_two(const std::shared_ptr<const Plan>& zero, const std::shared_ptr<const Plan>& one) {
  std::vector<std::shared_ptr<World>> world = make_in_process_world(2, {.timeout = std::chrono::seconds(30)});
  std::vector<std::string> errors(2);
  run_on_ranks(2, [&](int r) {
    errors[static_cast<size_t>(r)] = error_of([&] {
      SessionOptions options;
      options.world = world[static_cast<size_t>(r)];
      Session session(r == 0 ? zero : one, options);
    });
  });
  return errors;
}

TEST(World, RanksWhoseCollectivesDifferRefuseToStart) {
  // Another op under the same tag.
  std::vector<std::string> errors =
      start_two(reduce_program("AllReduce", "grads", 4), reduce_program("Broadcast", "grads", 4));
  for (int r = 0; r < 2; ++r) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("rank 0 and rank 1 run different collectives"), std::string::npos) << e;
    EXPECT_NE(e.find("collective #1 is AllReduce tag 'grads' reduction=sum f32[4] on comm on rank 0"), std::string::npos) << e;
    EXPECT_NE(e.find("Broadcast tag 'grads' f32[4] on comm on rank 1"), std::string::npos) << e;
  }
  // Another shape.
  errors = start_two(reduce_program("AllReduce", "grads", 4), reduce_program("AllReduce", "grads", 6));
  EXPECT_NE(errors[1].find("f32[6]"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("f32[4]"), std::string::npos) << errors[0];
  // A rank with no collective at all.
  Graph g("no_collective");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4}});
  g.add_output(g.add_node("Relu", {x}, 1, {}, "relu")->output(0));
  infer_graph_types(g, default_op_registry());
  errors = start_two(reduce_program("AllReduce", "grads", 4), compile(g));
  EXPECT_NE(errors[0].find("on rank 0 but nothing (it runs 0 collectives) on rank 1"), std::string::npos) << errors[0];
  // The same programs start.
  errors = start_two(reduce_program("AllReduce", "grads", 4), reduce_program("AllReduce", "grads", 4));
  EXPECT_EQ(errors, (std::vector<std::string>{"(no error)", "(no error)"}));
}

// Rank 0: Send(x) to rank 1 and Relu(x); rank 1: Recv from rank 0. Each a
// one-device program compiled on its own (compile() checks no peers: it
// cannot know the world), checked against the world at session start.
std::shared_ptr<const Plan> send_program(int64_t peer) {
  Graph g("send");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{3}});
  g.add_node("Send", {x}, 0, {{"peer", Attribute(peer)}, {"tag", Attribute(std::string("act"))}}, "send");
  g.add_output(g.add_node("Relu", {x}, 1, {}, "relu")->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

std::shared_ptr<const Plan> recv_program(int64_t peer) {
  Graph g("recv");
  Node* recv = g.add_node("Recv", {}, 1,
                          {{"peer", Attribute(peer)}, {"tag", Attribute(std::string("act"))},
                           {"dtype", Attribute(static_cast<int64_t>(DType::kFloat32))},
                           {"shape", Attribute(std::vector<int64_t>{3})}},
                          "recv");
  g.add_output(recv->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

TEST(World, RanksSendAndReceiveInTheirOwnPrograms) {
  std::vector<std::shared_ptr<World>> world = make_in_process_world(2, {.timeout = std::chrono::seconds(30)});
  std::shared_ptr<const Plan> plans[] = {send_program(1), recv_program(0)};
  Tensor x = random_tensor({3}, 5);
  std::vector<Tensor> received(2);
  run_on_ranks(2, [&](int r) {
    SessionOptions options;
    options.world = world[static_cast<size_t>(r)];
    Session session(plans[r], options);
    std::map<std::string, Tensor> feeds;
    if (r == 0) feeds["x"] = x;
    received[static_cast<size_t>(r)] = session.run(feeds)[0];
  });
  EXPECT_TRUE(received[1].bitwise_equal(x));

  // A peer outside the world, or the rank itself: refused at session start
  // naming the node, and the other rank is woken, not left waiting.
  std::vector<std::string> errors = start_two(send_program(2), recv_program(0));
  EXPECT_NE(errors[0].find("at session start: Send 'send': peer 2 is not a rank of a world of 2"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("rank 0 refused its program"), std::string::npos) << errors[1];
  errors = start_two(send_program(1), recv_program(1));
  EXPECT_NE(errors[1].find("Recv 'recv': peer 1 is the rank itself"), std::string::npos) << errors[1];
}

// data[4,3], index[2] -> Gather -> ReduceSum -> AllReduce: an index out of
// range fails the Gather on the rank fed it, before its AllReduce.
std::shared_ptr<const Plan> gather_program() {
  Graph g("gather");
  Value* data = g.add_input("data", {DType::kFloat32, Shape{4, 3}});
  Value* index = g.add_input("index", {DType::kInt64, Shape{2}});
  Node* gather = g.add_node("Gather", {data, index}, 1, {}, "gather");
  Node* sum = g.add_node("ReduceSum", {gather->output(0)}, 1, {{"keepdims", Attribute(int64_t{0})}}, "sum");
  Node* reduce = g.add_node("AllReduce", {sum->output(0)}, 1, {{"tag", Attribute(std::string("total"))}}, "reduce");
  g.add_output(reduce->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

TEST(World, ARankThatFailsFailsEveryRankNamingIt) {
  // The collective timeout is long: the peers fail because rank 1 aborted
  // the world, not because they waited it out.
  SessionOptions options;
  options.collective_timeout = std::chrono::minutes(5);
  InProcessRanks ranks(gather_program(), 3, options);
  Tensor data = random_tensor({4, 3}, 1);
  auto feeds = [&](int bad_rank) {
    std::vector<std::map<std::string, Tensor>> all;
    for (int r = 0; r < 3; ++r) {
      all.push_back({{"data", data}, {"index", Tensor::from_vector<int64_t>({0, r == bad_rank ? 9 : 2}, {2})}});
    }
    return all;
  };
  std::vector<std::vector<Tensor>> fine = ranks.run(feeds(-1));
  EXPECT_TRUE(fine[2][0].bitwise_equal(fine[0][0]));

  std::vector<std::string> errors(3);
  run_on_ranks(3, [&](int r) {
    errors[static_cast<size_t>(r)] = error_of([&] { ranks.session(r).run(feeds(1)[static_cast<size_t>(r)]); });
  });
  EXPECT_NE(errors[1].find("index 9 is out of range"), std::string::npos) << errors[1];
  EXPECT_EQ(errors[1].rfind("rank 1: node 'gather': ", 0), 0u) << errors[1];
  for (int r : {0, 2}) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("aborted: rank 1: node 'gather' on cpu:1 failed"), std::string::npos) << e;
    EXPECT_EQ(e.rfind("rank " + std::to_string(r) + ": ", 0), 0u) << e;
  }
  // The world stays aborted.
  EXPECT_NE(error_of([&] { ranks.run(feeds(-1)); }).find("aborted: rank 1"), std::string::npos);
}

TEST(World, ABadFeedOnOneRankFailsEveryRank) {
  InProcessRanks ranks(gather_program(), 2);
  std::vector<std::map<std::string, Tensor>> feeds = {
      {{"data", random_tensor({4, 3}, 1)}, {"index", Tensor::from_vector<int64_t>({0, 1}, {2})}},
      {{"data", random_tensor({5, 3}, 1)}, {"index", Tensor::from_vector<int64_t>({0, 1}, {2})}}};
  std::string e = error_of([&] { ranks.run(feeds); });
  EXPECT_EQ(e.rfind("rank 1: feed 'data' is f32[5,3]", 0), 0u) << e;
  // Rank 0 waited in its AllReduce for rank 1: it was told why.
  std::string zero = error_of([&] { ranks.session(0).run(feeds[0]); });
  EXPECT_NE(zero.find("aborted: rank 1 failed: feed 'data' is f32[5,3]"), std::string::npos) << zero;
}

TEST(World, APlanOfTwoDevicesIsNotOneRanksProgram) {
  Graph g("two_devices");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4}});
  Node* a = g.add_node("Relu", {x}, 1, {}, "a");
  a->set_device(Device::cpu(0));
  Node* b = g.add_node("Neg", {a->output(0)}, 1, {}, "b");
  b->set_device(Device::cpu(1));
  g.add_output(b->output(0));
  infer_graph_types(g, default_op_registry());
  CompileOptions options;
  options.devices = {Device::cpu(0), Device::cpu(1)};
  std::shared_ptr<const Plan> plan = compile(g, options);
  std::string e = error_of([&] { InProcessRanks ranks(plan, 2); });
  EXPECT_NE(e.find("one rank of a world is that rank's program, on one device"), std::string::npos) << e;
  EXPECT_NE(e.find("this plan holds cpu:0, cpu:1"), std::string::npos) << e;
}

TEST(World, RandomOpsDrawPerRank) {
  Graph g("dropout");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{64}});
  Value* ratio = g.add_constant("ratio", Tensor::scalar<float>(0.5f));
  Value* training = g.add_constant("training", Tensor::scalar<bool>(true));
  Node* dropout = g.add_node("Dropout", {x, ratio, training}, 1, {}, "dropout");
  g.add_output(dropout->output(0));
  infer_graph_types(g, default_op_registry());
  std::shared_ptr<const Plan> plan = compile(g);
  Tensor input = Tensor::from_vector(std::vector<float>(64, 1.0f), {64});
  std::vector<Tensor> alone = Session(plan).run({{"x", input}});
  InProcessRanks ranks(plan, 2);
  std::vector<std::vector<Tensor>> out = ranks.run({{{"x", input}}, {{"x", input}}});
  // Rank 0 draws what a session of its own draws; rank 1 other masks.
  EXPECT_TRUE(out[0][0].bitwise_equal(alone[0]));
  EXPECT_FALSE(out[1][0].bitwise_equal(out[0][0]));
}

}  // namespace
}  // namespace weir
