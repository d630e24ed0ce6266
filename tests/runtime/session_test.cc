// The session's executor: results equal the reference evaluator, values
// crossing devices are copied, a failing kernel stops the run naming node
// and device (also while other devices wait in a collective), concurrent
// runs are safe, and bad feeds or plans are rejected with clear errors.
#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "ops/graph_evaluator.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using weir::testing::error_of;
using weir::testing::random_tensor;
using weir::testing::resnet_style_graph;

void expect_bitwise(const std::vector<Tensor>& got, const std::vector<Tensor>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwise_equal(expected[i])) << "output " << i;
}

TEST(Session, RunsAResNetStyleGraphLikeTheReferenceEvaluator) {
  auto g = resnet_style_graph(3, 8, 16);
  Tensor x = random_tensor({1, 3, 16, 16}, 1);
  std::vector<Tensor> expected = evaluate_graph(*g, {{"x", x}});
  Session session(compile(*g));
  for (int run = 0; run < 3; ++run) expect_bitwise(session.run({{"x", x}}), expected);
  // After the first run, the arena and the dynamic tensors come from the cache.
  DeviceMemoryStats stats = session.memory_stats(Device::cpu());
  EXPECT_GT(stats.cache_hits, 0);
  EXPECT_GT(stats.planned_arena_bytes, 0);
  int64_t system = stats.system_allocations;
  session.run({{"x", x}});
  EXPECT_EQ(session.memory_stats(Device::cpu()).system_allocations, system);
}

TEST(Session, CopiesValuesThatCrossDevices) {
  Graph g("two_devices");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 5}});
  Node* a = g.add_node("Relu", {x}, 1, {}, "a");
  a->set_device(Device::cpu(0));
  Node* b = g.add_node("Neg", {a->output(0)}, 1, {}, "b");
  b->set_device(Device::cpu(1));
  Node* c = g.add_node("Mul", {b->output(0), a->output(0)}, 1, {}, "c");
  c->set_device(Device::cpu(1));
  g.add_output(c->output(0));
  infer_graph_types(g, default_op_registry());
  CompileOptions options;
  options.devices = {Device::cpu(0), Device::cpu(1)};
  auto plan = compile(g, options);
  std::string text = plan->to_string();
  EXPECT_NE(text.find("DeviceCopy cpu:1/compute"), std::string::npos) << text;
  Tensor input = random_tensor({4, 5}, 3);
  Session session(plan);
  expect_bitwise(session.run({{"x", input}}), evaluate_graph(g, {{"x", input}}));
  EXPECT_GT(session.memory_stats(Device::cpu(1)).stats.num_allocations, 0);
}

// Device 1 gathers with a fed index, then both devices all-reduce: a bad
// index fails device 1 while device 0 already waits in the AllReduce.
std::unique_ptr<Graph> gather_then_allreduce() {
  auto g = std::make_unique<Graph>("failing");
  Value* data = g->add_input("data", {DType::kFloat32, Shape{4, 3}});
  Value* index = g->add_input("index", {DType::kInt64, Shape{2}});
  Node* early = g->add_node("Relu", {data}, 1, {}, "early");
  early->set_device(Device::cpu(0));
  Node* r0 = g->add_node("AllReduce", {early->output(0)}, 1, {{"tag", Attribute(std::string("sum"))}}, "reduce0");
  r0->set_device(Device::cpu(0));
  Node* gather = g->add_node("Gather", {data, index}, 1, {}, "bad_gather");
  gather->set_device(Device::cpu(1));
  Node* padded = g->add_node("Concat", {gather->output(0), gather->output(0)}, 1, {{"axis", Attribute(int64_t{0})}},
                             "padded");
  padded->set_device(Device::cpu(1));
  Node* r1 = g->add_node("AllReduce", {padded->output(0)}, 1, {{"tag", Attribute(std::string("sum"))}}, "reduce1");
  r1->set_device(Device::cpu(1));
  g->add_output(r0->output(0));
  g->add_output(r1->output(0));
  return g;
}

TEST(Session, AFailingKernelStopsTheRunAndNamesNodeAndDevice) {
  auto g = gather_then_allreduce();
  CompileOptions options;
  options.devices = {Device::cpu(0), Device::cpu(1)};
  SessionOptions session_options;
  // Far longer than the test: an error that is a timeout means abort failed.
  session_options.collective_timeout = std::chrono::seconds(60);
  Session session(compile(*g, options), session_options);
  Tensor data = random_tensor({4, 3}, 2);
  std::string error = error_of([&] { session.run({{"data", data}, {"index", Tensor::from_vector<int64_t>({1, 9}, {2})}}); });
  std::cout << "error: " << error << "\n";
  EXPECT_NE(error.find("bad_gather"), std::string::npos) << error;
  EXPECT_NE(error.find("cpu:1"), std::string::npos) << error;
  EXPECT_EQ(error.find("timed out"), std::string::npos) << error;
  // The session stays usable, with a fresh communicator group.
  std::vector<Tensor> out = session.run({{"data", data}, {"index", Tensor::from_vector<int64_t>({1, 3}, {2})}});
  ASSERT_EQ(out.size(), 2u);
  for (int64_t i = 0; i < 12; ++i) {
    float relu = std::max(0.0f, data.data<float>()[i]);
    int64_t row = i / 3 % 2 == 0 ? 1 : 3;
    float gathered = data.data<float>()[row * 3 + i % 3];
    EXPECT_FLOAT_EQ(out[0].data<float>()[i], relu + gathered);
    EXPECT_FLOAT_EQ(out[1].data<float>()[i], relu + gathered);
  }
}

TEST(Session, AFailingKernelOnTheThreadPoolDoesNotHang) {
  Graph g("pool");
  Value* data = g.add_input("data", {DType::kFloat32, Shape{4, 3}});
  Value* index = g.add_input("index", {DType::kInt64, Shape{2}});
  Value* branch = data;
  for (int i = 0; i < 6; ++i) branch = g.add_node("Relu", {branch}, 1, {}, "relu" + std::to_string(i))->output(0);
  Value* gathered = g.add_node("Gather", {data, index}, 1, {}, "gather")->output(0);
  g.add_output(branch);
  g.add_output(gathered);
  SessionOptions options;
  options.inter_op_threads = 3;
  Session session(compile(g), options);
  Tensor d = random_tensor({4, 3}, 4);
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::string error = error_of([&] { session.run({{"data", d}, {"index", Tensor::from_vector<int64_t>({0, -7}, {2})}}); });
    ASSERT_NE(error.find("gather"), std::string::npos) << error;
    ASSERT_NE(error.find("cpu:0"), std::string::npos) << error;
  }
}

TEST(Session, ConcurrentRunsOfOneInferencePlanAreSafe) {
  auto g = resnet_style_graph(2, 8, 12);
  SessionOptions options;
  options.inter_op_threads = 2;
  Session session(compile(*g), options);
  constexpr int kThreads = 4, kRuns = 15;
  std::vector<Tensor> inputs;
  std::vector<std::vector<Tensor>> expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor({1, 3, 12, 12}, 50 + t));
    expected.push_back(evaluate_graph(*g, {{"x", inputs.back()}}));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        std::vector<Tensor> out = session.run({{"x", inputs[t]}});
        if (!out[0].bitwise_equal(expected[t][0])) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(Session, BadFeedsAreNamed) {
  auto g = resnet_style_graph(1, 4, 8);
  Session session(compile(*g));
  Tensor good = random_tensor({1, 3, 8, 8}, 1);
  EXPECT_NE(error_of([&] { session.run({}); }).find("'x' is not fed"), std::string::npos);
  EXPECT_NE(error_of([&] { session.run({{"x", good}, {"y", good}}); }).find("'y' is not an input"), std::string::npos);
  EXPECT_NE(error_of([&] { session.run({{"x", random_tensor({1, 3, 8, 9}, 1)}}); }).find("f32[1,3,8,9]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { session.run({{"x", Tensor(DType::kInt64, {1, 3, 8, 8})}}); }).find("i64"), std::string::npos);
}

TEST(Session, PlansThatCannotRunAreRejectedAtCompileTime) {
  // A device outside the plan.
  Graph g1("outside");
  Value* x = g1.add_input("x", {DType::kFloat32, Shape{2}});
  Node* n = g1.add_node("Relu", {x}, 1, {}, "far");
  n->set_device(Device::cpu(3));
  g1.add_output(n->output(0));
  EXPECT_NE(error_of([&] { compile(g1); }).find("far"), std::string::npos);

  CompileOptions two;
  two.devices = {Device::cpu(0), Device::cpu(1)};
  // An AllReduce on one device only.
  Graph g2("lonely");
  Value* y = g2.add_input("y", {DType::kFloat32, Shape{2}});
  Node* lonely = g2.add_node("AllReduce", {y}, 1, {}, "lonely");
  lonely->set_device(Device::cpu(1));
  g2.add_output(lonely->output(0));
  std::string error = error_of([&] { compile(g2, two); });
  EXPECT_NE(error.find("no counterpart on cpu:0"), std::string::npos) << error;

  // Collectives in opposite orders on the two devices would deadlock.
  Graph g3("crossed");
  Value* z = g3.add_input("z", {DType::kFloat32, Shape{2}});
  auto reduce = [&](Value* in, const char* tag, int device, const char* name) {
    Node* node = g3.add_node("AllReduce", {in}, 1, {{"tag", Attribute(std::string(tag))}}, name);
    node->set_device(Device::cpu(device));
    return node->output(0);
  };
  g3.add_output(reduce(reduce(z, "a", 0, "a0"), "b", 0, "b0"));
  g3.add_output(reduce(reduce(z, "b", 1, "b1"), "a", 1, "a1"));
  error = error_of([&] { compile(g3, two); });
  EXPECT_NE(error.find("deadlock"), std::string::npos) << error;

  // A collective on the compute stream would hold a thread its peers need.
  lonely->set_device(Device::cpu(0));
  lonely->set_stream("compute");
  error = error_of([&] { compile(g2); });
  EXPECT_NE(error.find("cannot run on the compute stream"), std::string::npos) << error;
}

}  // namespace
}  // namespace weir
