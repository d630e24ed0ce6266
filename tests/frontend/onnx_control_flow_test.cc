// ONNX If, Loop and Scan: sub-graphs that read outer-scope values (at any
// depth) become explicit inputs; body inputs without types take the
// enclosing op's; the exporter writes the captures back as outer-scope names
// so that import -> export -> import runs to the same results; and the
// runtime's Session (with the inference passes) runs what evaluate_graph runs.
#include <gtest/gtest.h>

#include "core/error.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "onnx/checker.h"
#include "ops/graph_evaluator.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/frontend/onnx_model_builder.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::ModelBuilder;
using testing::random_tensor;
using testing::to_doubles;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
constexpr int32_t kBool = onnx::TensorProto::BOOL;

// A typed value_info; dims -1 is a dim_param, and no dims at all with
// `typed` false leaves the type out (ONNX lets a body input take it from
// the enclosing op).
void value_info(onnx::ValueInfoProto* info, const std::string& name, int32_t type, const std::vector<int64_t>& dims,
                bool typed = true) {
  info->set_name(name);
  if (!typed) return;
  onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) shape->add_dim()->set_dim_value(d);
    else shape->add_dim()->set_dim_param("n");
  }
}

onnx::NodeProto* add_node(onnx::GraphProto* graph, const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name.empty() ? outputs.at(0) + "_node" : name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

onnx::GraphProto* add_graph(onnx::NodeProto* node, const std::string& attribute, const std::string& name) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(attribute);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

void add_output(onnx::GraphProto* graph, const std::string& name) { graph->add_output()->set_name(name); }

// cond ? Loop(n, "", x) with body v' = v + w, scan v' * x : (-x, [x]).
// The Loop body reads w and x from the main graph, two scopes up, and its
// loop-carried input has no type.
ModelBuilder nested_model() {
  ModelBuilder m(16);
  value_info(m.graph->add_input(), "cond", kBool, {});
  value_info(m.graph->add_input(), "n", kInt64, {});
  m.input("x", {2}).input("w", {2});
  m.output("y").output("ys");
  onnx::NodeProto* node = m.node("If", {"cond"}, {"y", "ys"}, "choose");

  onnx::GraphProto* then_branch = add_graph(node, "then_branch", "then");
  onnx::NodeProto* loop = add_node(then_branch, "Loop", {"n", "", "x"}, {"t_final", "t_scan"}, "loop");
  add_output(then_branch, "t_final");
  add_output(then_branch, "t_scan");
  onnx::GraphProto* body = add_graph(loop, "body", "body");
  value_info(body->add_input(), "i", kInt64, {});
  value_info(body->add_input(), "c", kBool, {});
  value_info(body->add_input(), "v", kFloat, {}, /*typed=*/false);
  add_node(body, "Identity", {"c"}, {"c_out"});
  add_node(body, "Add", {"v", "w"}, {"v_out"});
  add_node(body, "Mul", {"v_out", "x"}, {"s"});
  add_output(body, "c_out");
  add_output(body, "v_out");
  add_output(body, "s");

  onnx::GraphProto* else_branch = add_graph(node, "else_branch", "else");
  *else_branch->add_initializer() = tensor_to_onnx(Tensor::from_vector<int64_t>({0}, {1}), "zero_axis");
  add_node(else_branch, "Neg", {"x"}, {"e1"});
  add_node(else_branch, "Unsqueeze", {"x", "zero_axis"}, {"e2"});
  add_output(else_branch, "e1");
  add_output(else_branch, "e2");
  return m;
}

struct NestedFeeds {
  std::map<std::string, Tensor> feeds;
  std::vector<double> y, ys;
};

NestedFeeds nested_case(bool cond, int64_t n, uint32_t seed) {
  NestedFeeds c;
  Tensor x = random_tensor(DType::kFloat32, {2}, seed), w = random_tensor(DType::kFloat32, {2}, seed + 1);
  c.feeds = {{"cond", Tensor::scalar(cond)}, {"n", Tensor::scalar(n)}, {"x", x}, {"w", w}};
  std::vector<double> xs = to_doubles(x), ws = to_doubles(w);
  if (!cond) {
    c.y = {-xs[0], -xs[1]};
    c.ys = xs;
    return c;
  }
  std::vector<float> v = {static_cast<float>(xs[0]), static_cast<float>(xs[1])};
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < 2; ++k) {
      v[k] += static_cast<float>(ws[k]);
      c.ys.push_back(v[k] * static_cast<float>(xs[k]));
    }
  }
  c.y = {v[0], v[1]};
  return c;
}

void expect_outputs(const std::vector<Tensor>& out, const NestedFeeds& c, const std::string& where) {
  ASSERT_EQ(out.size(), 2u) << where;
  EXPECT_EQ(to_doubles(out[0]), c.y) << where;
  EXPECT_EQ(to_doubles(out[1]), c.ys) << where;
}

TEST(OnnxControlFlow, OuterScopeValuesBecomeExplicitInputsAtEveryDepth) {
  Model model = nested_model().import();
  const Graph& g = *model.graph;
  const Node* choose = g.find_node("choose");
  ASSERT_NE(choose, nullptr);
  // cond, then the captured n, x (the Loop's inputs) and w (read by the body).
  ASSERT_EQ(choose->num_inputs(), 4u);
  EXPECT_EQ(choose->input(1)->name(), "n");
  EXPECT_EQ(choose->input(2)->name(), "x");
  EXPECT_EQ(choose->input(3)->name(), "w");
  const Graph& then_branch = *choose->attr("then_branch").g();
  const Graph& else_branch = *choose->attr("else_branch").g();
  EXPECT_EQ(then_branch.inputs().size(), 3u);
  EXPECT_EQ(else_branch.inputs().size(), 3u);
  const Node* loop = then_branch.find_node("loop");
  ASSERT_NE(loop, nullptr);
  // M, cond (absent), v_initial x, then the body's captured w and x.
  ASSERT_EQ(loop->num_inputs(), 5u);
  EXPECT_EQ(loop->input(1), nullptr);
  EXPECT_EQ(loop->attr("num_captured").i(), 2);
  const Graph& body = *loop->attr("body").g();
  ASSERT_EQ(body.inputs().size(), 5u);
  // The untyped loop-carried input took x's type.
  EXPECT_EQ(body.inputs()[2]->type(), (TensorType{DType::kFloat32, Shape{2}}));
  // The scan output's length is known only when the Loop runs.
  EXPECT_TRUE(choose->output(1)->shape()[0].is_symbolic());

  for (bool cond : {true, false}) {
    for (int64_t n : {0, 1, 4}) {
      NestedFeeds c = nested_case(cond, n, static_cast<uint32_t>(10 + n));
      expect_outputs(evaluate_graph(g, c.feeds), c, "cond " + std::to_string(cond) + " n " + std::to_string(n));
    }
  }
}

// A loop-carried value that doubles in length each iteration: the body's
// input gets a symbolic dim and the loop runs with the growing value.
TEST(OnnxControlFlow, LoopCarriedValuesMayChangeShape) {
  ModelBuilder m(16);
  value_info(m.graph->add_input(), "n", kInt64, {});
  m.input("x", {1});
  m.output("y");
  onnx::NodeProto* loop = m.node("Loop", {"n", "", "x"}, {"y"}, "doubling");
  onnx::GraphProto* body = add_graph(loop, "body", "body");
  value_info(body->add_input(), "i", kInt64, {});
  value_info(body->add_input(), "c", kBool, {});
  value_info(body->add_input(), "v", kFloat, {1});
  add_node(body, "Identity", {"c"}, {"c_out"});
  onnx::NodeProto* concat = add_node(body, "Concat", {"v", "v"}, {"v_out"});
  testing::add_int(concat, "axis", 0);
  add_output(body, "c_out");
  add_output(body, "v_out");
  Model model = m.import();
  const Node* node = model.graph->find_node("doubling");
  const Graph& imported_body = *node->attr("body").g();
  EXPECT_TRUE(imported_body.inputs()[2]->shape()[0].is_symbolic());
  std::vector<Tensor> out = evaluate_graph(*model.graph, {{"n", Tensor::scalar(int64_t{3})}, {"x", Tensor::from_vector<float>({1.5f}, {1})}});
  EXPECT_EQ(to_doubles(out[0]), std::vector<double>(8, 1.5));
}

// Scan (opset 16) with a reversed scan input and a body reading an outer
// `scale`; and a Loop with nothing carried or captured (only scan outputs).
ModelBuilder scan_and_counter_model() {
  ModelBuilder m(16);
  m.input("s", {3}).input("xs", {-1, 3}).input("scale", {3});
  value_info(m.graph->add_input(), "count", kInt64, {});
  m.output("s_final").output("s_all").output("counter");
  onnx::NodeProto* scan = m.node("Scan", {"s", "xs"}, {"s_final", "s_all"}, "scan");
  testing::add_int(scan, "num_scan_inputs", 1);
  testing::add_ints(scan, "scan_input_directions", {1});
  onnx::GraphProto* body = add_graph(scan, "body", "scan_body");
  value_info(body->add_input(), "s_in", kFloat, {3});
  value_info(body->add_input(), "x_t", kFloat, {3});
  add_node(body, "Mul", {"x_t", "scale"}, {"scaled"});
  add_node(body, "Add", {"s_in", "scaled"}, {"s_out"});
  add_node(body, "Identity", {"s_out"}, {"s_copy"});
  add_output(body, "s_out");
  add_output(body, "s_copy");

  onnx::NodeProto* loop = m.node("Loop", {"count"}, {"counter"}, "counter_loop");
  onnx::GraphProto* loop_body = add_graph(loop, "body", "counter_body");
  value_info(loop_body->add_input(), "i", kInt64, {});
  value_info(loop_body->add_input(), "c", kBool, {});
  add_node(loop_body, "Identity", {"c"}, {"c_out"});
  onnx::NodeProto* cast = add_node(loop_body, "Cast", {"i"}, {"i_float"});
  testing::add_int(cast, "to", kFloat);
  add_output(loop_body, "c_out");
  add_output(loop_body, "i_float");
  return m;
}

std::map<std::string, Tensor> scan_feeds(int64_t steps, int64_t count, uint32_t seed) {
  return {{"s", random_tensor(DType::kFloat32, {3}, seed)},
          {"xs", random_tensor(DType::kFloat32, {steps, 3}, seed + 1)},
          {"scale", random_tensor(DType::kFloat32, {3}, seed + 2)},
          {"count", Tensor::scalar(count)}};
}

TEST(OnnxControlFlow, ScanReadsOuterValuesAndLoopsNeedNothingCarried) {
  Model model = scan_and_counter_model().import();
  std::map<std::string, Tensor> feeds = scan_feeds(4, 5, 20);
  std::vector<Tensor> out = evaluate_graph(*model.graph, feeds);
  std::vector<double> s = to_doubles(feeds["s"]), xs = to_doubles(feeds["xs"]), scale = to_doubles(feeds["scale"]);
  std::vector<double> all;
  for (int64_t t = 0; t < 4; ++t) {
    const int64_t row = 3 - t;  // reversed
    for (size_t k = 0; k < 3; ++k) {
      s[k] = static_cast<float>(s[k]) + static_cast<float>(xs[static_cast<size_t>(row * 3) + k]) * static_cast<float>(scale[k]);
    }
    all.insert(all.end(), s.begin(), s.end());
  }
  EXPECT_EQ(to_doubles(out[0]), s);
  EXPECT_EQ(to_doubles(out[1]), all);
  EXPECT_EQ(to_doubles(out[2]), (std::vector<double>{0, 1, 2, 3, 4}));
}

// Exported ONNX passes onnx's checker, names the captured values as outer
// references again (no extra inputs), and re-imports to the same results.
TEST(OnnxControlFlow, ExportRoundTripRunsToTheSameResults) {
  for (ModelBuilder builder : {nested_model(), scan_and_counter_model()}) {
    Model first = builder.import();
    onnx::ModelProto proto = to_onnx_model(first);
    EXPECT_NO_THROW(onnx::checker::check_model(proto));
    for (const onnx::NodeProto& node : proto.graph().node()) {
      const std::map<std::string, int> onnx_inputs = {{"If", 1}, {"Scan", 2}, {"Loop", 2}};  // Loop: M and ""
      auto expected = onnx_inputs.find(node.op_type());
      if (expected != onnx_inputs.end()) {
        EXPECT_EQ(node.input_size(), expected->second) << node.op_type();
      }
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        EXPECT_NE(attribute.name(), "num_captured");
        if (attribute.type() == onnx::AttributeProto::GRAPH) {
          EXPECT_LE(attribute.g().input_size(), 3);
        }
      }
    }
    Model second = import_onnx_model_from_bytes(proto.SerializeAsString(), "exported.onnx");
    std::vector<std::map<std::string, Tensor>> cases;
    if (first.graph->find_value("cond") != nullptr) {
      for (bool cond : {true, false}) cases.push_back(nested_case(cond, 3, 30).feeds);
    } else {
      cases = {scan_feeds(3, 4, 40), scan_feeds(0, 0, 50)};
    }
    for (const auto& feeds : cases) {
      std::vector<Tensor> a = evaluate_graph(*first.graph, feeds), b = evaluate_graph(*second.graph, feeds);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].bitwise_equal(b[i])) << first.graph->name() << " output " << i;
    }
  }
}

// The runtime runs control flow as evaluate_graph does, at every pass
// level: data-dependent output sizes, captured inputs, nested sub-graphs.
TEST(OnnxControlFlow, SessionRunsControlFlowAtEveryOptLevel) {
  Model nested = nested_model().import();
  Model scans = scan_and_counter_model().import();
  for (int level = 0; level <= 3; ++level) {
    CompileOptions options;
    options.opt_level = level;
    Session nested_session(compile(*nested.graph, options));
    for (bool cond : {true, false}) {
      for (int64_t n : {0, 2, 5}) {
        NestedFeeds c = nested_case(cond, n, static_cast<uint32_t>(60 + n));
        expect_outputs(nested_session.run(c.feeds), c, "level " + std::to_string(level));
      }
    }
    Session scan_session(compile(*scans.graph, options));
    for (int64_t steps : {0, 1, 6}) {
      std::map<std::string, Tensor> feeds = scan_feeds(steps, steps + 1, static_cast<uint32_t>(70 + steps));
      std::vector<Tensor> expected = evaluate_graph(*scans.graph, feeds);
      std::vector<Tensor> actual = scan_session.run(feeds);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < actual.size(); ++i) {
        EXPECT_TRUE(actual[i].bitwise_equal(expected[i])) << "level " << level << " steps " << steps << " output " << i;
      }
    }
  }
}

// Sequences and optionals in a sub-graph are reported, not crashed on.
// A sequence made and consumed inside a branch: [x, x] concatenated when
// cond holds, x itself otherwise.
TEST(OnnxControlFlow, SequencesInsideABranch) {
  ModelBuilder m(16);
  value_info(m.graph->add_input(), "cond", kBool, {});
  m.input("x", {2});
  m.output("y");
  onnx::NodeProto* node = m.node("If", {"cond"}, {"y"}, "choose");
  onnx::GraphProto* then_branch = add_graph(node, "then_branch", "then");
  add_node(then_branch, "SequenceConstruct", {"x", "x"}, {"seq"});
  testing::add_int(add_node(then_branch, "ConcatFromSequence", {"seq"}, {"t"}), "axis", 0);
  add_output(then_branch, "t");
  onnx::GraphProto* else_branch = add_graph(node, "else_branch", "else");
  add_node(else_branch, "Identity", {"x"}, {"e"});
  add_output(else_branch, "e");
  Model model = m.import();
  Tensor x = Tensor::from_vector<float>({1.5f, -2}, {2});
  EXPECT_EQ(to_doubles(evaluate_graph(*model.graph, {{"cond", Tensor::scalar(true)}, {"x", x}})[0]),
            (std::vector<double>{1.5, -2, 1.5, -2}));
  EXPECT_EQ(to_doubles(evaluate_graph(*model.graph, {{"cond", Tensor::scalar(false)}, {"x", x}})[0]),
            (std::vector<double>{1.5, -2}));
}

}  // namespace
}  // namespace weir
