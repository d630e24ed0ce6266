// The parameter-server ops in a session given a client of two servers on
// 127.0.0.1: a lookup returns the table's rows (ids of any integer type and
// shape, repeated ids), a push updates them as a direct push would, a dense
// pull overwrites the parameter in place and a dense push trains the table;
// without a client, the ops fail naming the node and the table.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/graph.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"
#include "distributed/ps/sparse_table.h"
#include "runtime/session.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

ParameterTableConfig embedding() {
  ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = 3;
  config.rule = TableRule::kAdagrad;
  config.init = {TableInitializer::Kind::kUniform, 0.5, 9};
  config.shard_num = 8;
  return config;
}

struct Job {
  Job() : a({}), b({}) {
    client = ps::connect_parameter_servers({.endpoints = {a.endpoint(), b.endpoint()}, .connect_timeout = 10s});
    client->create_table(embedding());
  }
  ps::ParameterServer a, b;
  std::shared_ptr<ParameterClient> client;
};

Tensor ids_tensor(const std::vector<int64_t>& ids, std::vector<int64_t> sizes) {
  return Tensor::from_vector<int64_t>(ids, std::move(sizes));
}

TEST(ParameterServerOps, LookupAndPushMatchTheTableThroughASession) {
  Job job;
  Graph g("lookup");
  Value* ids = g.add_input("ids", {DType::kInt64, Shape{2, 3}});
  Value* grad = g.add_input("grad", {DType::kFloat32, Shape{2, 3, 3}});
  Value* lr = g.add_input("lr", {DType::kFloat32, Shape{}});
  std::map<std::string, Attribute> attrs = {{"table", Attribute(std::string("emb"))}, {"width", Attribute(int64_t{3})}};
  Node* pull = g.add_node("PsPullSparse", {ids}, 1, attrs, "lookup");
  g.add_node("PsPushSparse", {ids, grad, lr}, 0, attrs, "push");
  g.add_output(pull->output(0));
  SessionOptions options;
  options.parameter_client = job.client;
  Session session(compile(g), options);

  ps::SparseTable reference(embedding());
  const std::vector<int64_t> keys = {5, -7, 5, 1LL << 33, 0, 5};
  std::vector<float> grad_values(18);
  for (size_t i = 0; i < 18; ++i) grad_values[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
  Tensor grads = Tensor::from_vector<float>(grad_values, {2, 3, 3});
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out = session.run({{"ids", ids_tensor(keys, {2, 3})}, {"grad", grads}, {"lr", Tensor::scalar<float>(0.1f)}});
    ASSERT_EQ(out[0].sizes(), (std::vector<int64_t>{2, 3, 3}));
    std::vector<float> expected(18);
    reference.pull(keys, expected.data());
    for (size_t i = 0; i < 18; ++i) EXPECT_EQ(out[0].data<float>()[i], expected[i]) << "step " << step << " element " << i;
    reference.push(keys, grads.data<float>(), 0.1f);
  }
}

TEST(ParameterServerOps, DensePullOverwritesTheParameterAndPushTrainsTheTable) {
  Job job;
  ParameterTableConfig dense;
  dense.name = "w";
  dense.width = 4;
  job.client->create_table(dense);
  const std::vector<float> init = {1, 2, 3, 4};
  job.client->set_dense("w", init.data(), 4);

  Graph g("dense");
  Value* w = g.add_persistent("w", {DType::kFloat32, Shape{4}}, PersistentRole::kParameter,
                              Tensor::from_vector<float>({0, 0, 0, 0}, {4}));
  Value* grad = g.add_input("grad", {DType::kFloat32, Shape{4}});
  Value* lr = g.add_input("lr", {DType::kFloat32, Shape{}});
  Node* pull = g.add_node("PsPullDense", {w}, 1, {{"table", Attribute(std::string("w"))}}, "pull_w");
  Node* twice = g.add_node("Add", {pull->output(0), pull->output(0)}, 1, {}, "twice");
  Node* push = g.add_node("PsPushDense", {grad, lr}, 0, {{"table", Attribute(std::string("w"))}}, "push_w");
  push->add_control_input(twice);
  g.add_output(twice->output(0));
  SessionOptions options;
  options.parameter_client = job.client;
  Session session(compile(g), options);
  std::vector<Tensor> out = session.run({{"grad", Tensor::from_vector<float>({1, 1, 1, 1}, {4})}, {"lr", Tensor::scalar<float>(0.5f)}});
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(std::vector<float>(session.state("w").data<float>(), session.state("w").data<float>() + 4), init)
      << "the pull wrote the parameter in place";
  std::vector<float> trained(4);
  job.client->pull_dense("w", trained.data(), 4, 0);
  EXPECT_EQ(trained, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
}

TEST(ParameterServerOps, WithoutAClientTheOpsNameTheNodeAndTheTable) {
  Graph g("lookup");
  Value* ids = g.add_input("ids", {DType::kInt64, Shape{2}});
  Node* pull = g.add_node("PsPullSparse", {ids}, 1,
                          {{"table", Attribute(std::string("emb"))}, {"width", Attribute(int64_t{3})}}, "lookup");
  g.add_output(pull->output(0));
  Session session(compile(g));
  try {
    session.run({{"ids", ids_tensor({1, 2}, {2})}});
    ADD_FAILURE() << "a lookup ran without parameter servers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lookup"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("table 'emb' lives on parameter servers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
