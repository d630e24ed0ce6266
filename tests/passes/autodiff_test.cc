// The autodiff pass against central finite differences, in f64, on graphs
// with a value used several times, a branch the loss does not depend on, a
// data input whose gradient nobody needs, and an op without a gradient rule.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/session_gradients.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::random_f64_tensor;

// loss = mean(tanh(x w + b) * (x w) + sigmoid(w)...) : w is used three times.
struct Net {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> feeds;
  std::string loss;
};

Net build_net() {
  GraphBuilder b("net", 1);
  Var x = b.input("x", {DType::kFloat64, Shape{4, 3}});
  Var w = b.parameter("w", random_f64_tensor({3, 5}, 1));
  Var bias = b.parameter("b", random_f64_tensor({5}, 2));
  Var unused = b.parameter("unused", random_f64_tensor({5}, 3));
  Var xw = nn::matmul(x, w);
  Var h = nn::tanh(xw + bias) * xw;                          // xw read twice
  Var extra = nn::reduce_sum(nn::sigmoid(w), {0, 1});         // w read again
  Var loss = nn::reduce_mean(h, {0, 1}) + extra;
  b.output(nn::relu(unused));                                 // not on the loss's path
  Net net;
  net.loss = b.op("Identity", {loss}, {}, "loss").name();
  net.graph = b.finish();
  net.feeds = {{"x", random_f64_tensor({4, 3}, 4)}};
  return net;
}

TEST(Autodiff, GradientsMatchFiniteDifferences) {
  Net net = build_net();
  Value* loss = net.graph->find_value(net.loss);
  ASSERT_NE(loss, nullptr);
  net.graph->add_output(loss);
  // Forward-only session for the finite differences.
  Session forward(compile(*net.graph));

  auto graph = net.graph->clone();
  PassContext ctx;
  Autodiff autodiff({.loss = net.loss, .wrt = {}, .add_outputs = true});
  ASSERT_TRUE(autodiff.run(*graph, ctx));
  ASSERT_EQ(autodiff.gradients().count("w"), 1u);
  ASSERT_EQ(autodiff.gradients().count("b"), 1u);
  EXPECT_EQ(autodiff.gradients().count("unused"), 0u) << "the loss does not depend on 'unused'";
  // The data input's gradient dL/dx (the only [4, 3] value it could make)
  // is not built.
  for (Node* node : graph->nodes()) {
    for (Value* out : node->outputs()) EXPECT_NE(out->shape(), (Shape{4, 3})) << node->name() << " computes dL/dx";
  }
  std::vector<Value*> outputs = graph->outputs();
  Session backward(compile(*graph));
  std::vector<Tensor> results = backward.run(net.feeds);

  const size_t loss_output = net.graph->outputs().size() - 1;
  for (std::string name : {"w", "b"}) {
    size_t index = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i] == autodiff.gradients().at(name)) index = i;
    }
    const Tensor& grad = results[index];
    std::vector<double> fd = testing::central_difference_gradient(forward, name, net.feeds, loss_output);
    for (int64_t j = 0; j < grad.num_elements(); ++j) {
      EXPECT_NEAR(grad.data<double>()[j], fd[static_cast<size_t>(j)], 1e-7 + 1e-6 * std::abs(fd[static_cast<size_t>(j)]))
          << name << "[" << j << "]";
    }
  }
}

TEST(Autodiff, AnOpWithoutARuleOnThePathIsNamed) {
  GraphBuilder b("net", 1);
  Var x = b.input("x", {DType::kFloat64, Shape{4}});
  Var w = b.parameter("w", random_f64_tensor({4}, 1));
  Var r = b.op("ZerosLike", {x * w}, {}, "zeros");  // ZerosLike has no gradient rule
  Var loss = nn::reduce_sum(r, {0});
  b.output(loss);
  auto graph = b.finish();
  try {
    append_backward(*graph, loss.value(), {graph->find_value("w")}, default_op_registry());
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("zeros"), std::string::npos) << message;
    EXPECT_NE(message.find("no gradient rule"), std::string::npos) << message;
  }
}

TEST(Autodiff, TheLossMustBeAScalar) {
  GraphBuilder b("net", 1);
  Var w = b.parameter("w", random_f64_tensor({4}, 1));
  Var y = nn::tanh(w);
  b.output(y);
  auto graph = b.finish();
  PassContext ctx;
  Autodiff autodiff({.loss = y.name(), .wrt = {}});
  try {
    autodiff.run(*graph, ctx);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one element"), std::string::npos) << e.what();
  }
  Autodiff missing({.loss = "nope", .wrt = {}});
  EXPECT_THROW(missing.run(*graph, ctx), Error);
}

}  // namespace
}  // namespace weir
