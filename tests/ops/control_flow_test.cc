// If, Loop and Scan built in C++: each against a plain reference loop on
// random inputs, Loop's four M/cond combinations and early exits, Scan's
// axes and directions (and its opset-8 batch form), sub-graph kernels made
// once, and errors that name the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "core/verifier.h"
#include "ops/control/control_flow.h"
#include "ops/graph_evaluator.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_tensor;
using testing::to_doubles;

TensorType f32(Shape shape) { return TensorType{DType::kFloat32, std::move(shape)}; }
const TensorType kBoolScalar{DType::kBool, Shape{}};
const TensorType kInt64Scalar{DType::kInt64, Shape{}};

// The message of the weir::Error `body` throws; fails the test otherwise.
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' missing from: " << text;
}

void expect_near_all(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
}

Value* op(Graph& g, const std::string& type, const std::vector<Value*>& inputs,
          std::map<std::string, Attribute> attributes = {}) {
  Node* node = g.add_node(type, inputs, 1, std::move(attributes));
  infer_node_types(*node, default_op_registry());
  return node->output(0);
}

Value* scalar_constant(Graph& g, float value) { return g.add_constant("", Tensor::scalar(value)); }

// If(cond, x, y): then x + y, else x * y - 1 (both read the captured x, y).
std::unique_ptr<Graph> if_graph() {
  auto g = std::make_unique<Graph>("if");
  Value* cond = g->add_input("cond", kBoolScalar);
  Value* x = g->add_input("x", f32({3}));
  Value* y = g->add_input("y", f32({3}));
  auto then_branch = std::make_shared<Graph>("then");
  {
    Value* a = then_branch->add_input("x_in", f32({3}));
    Value* b = then_branch->add_input("y_in", f32({3}));
    then_branch->add_output(op(*then_branch, "Add", {a, b}));
  }
  auto else_branch = std::make_shared<Graph>("else");
  {
    Value* a = else_branch->add_input("x_in", f32({3}));
    Value* b = else_branch->add_input("y_in", f32({3}));
    else_branch->add_output(op(*else_branch, "Sub", {op(*else_branch, "Mul", {a, b}), scalar_constant(*else_branch, 1.0f)}));
  }
  Node* node = g->add_node("If", {cond, x, y}, 1, {{"then_branch", then_branch}, {"else_branch", else_branch}}, "if");
  infer_node_types(*node, default_op_registry());
  g->add_output(node->output(0));
  return g;
}

TEST(ControlFlow, IfRunsTheBranchCondChooses) {
  std::unique_ptr<Graph> g = if_graph();
  verify_graph(*g, default_op_registry());
  EXPECT_EQ(g->outputs()[0]->type(), f32({3}));
  Tensor x = random_tensor(DType::kFloat32, {3}, 1), y = random_tensor(DType::kFloat32, {3}, 2);
  std::vector<double> xs = to_doubles(x), ys = to_doubles(y);
  for (bool cond : {true, false}) {
    std::vector<Tensor> out = evaluate_graph(*g, {{"cond", Tensor::scalar(cond)}, {"x", x}, {"y", y}});
    std::vector<double> expected;
    for (size_t i = 0; i < 3; ++i) expected.push_back(cond ? xs[i] + ys[i] : static_cast<double>(static_cast<float>(xs[i] * ys[i]) - 1.0f));
    expect_near_all(to_doubles(out[0]), expected);
  }
}

// Branch outputs of different sizes: the If's output dim is symbolic, and
// each run returns the chosen branch's size.
TEST(ControlFlow, IfMergesBranchShapes) {
  Graph g("if_shapes");
  Value* cond = g.add_input("cond", kBoolScalar);
  auto then_branch = std::make_shared<Graph>("then");
  then_branch->add_output(then_branch->add_constant("two", make_tensor(DType::kFloat32, {1, 2}, {2})));
  auto else_branch = std::make_shared<Graph>("else");
  else_branch->add_output(else_branch->add_constant("three", make_tensor(DType::kFloat32, {3, 4, 5}, {3})));
  Node* node = g.add_node("If", {cond}, 1, {{"then_branch", then_branch}, {"else_branch", else_branch}}, "if");
  infer_node_types(*node, default_op_registry());
  g.add_output(node->output(0));
  verify_graph(g, default_op_registry());
  ASSERT_EQ(node->output(0)->shape().rank(), 1);
  EXPECT_TRUE(node->output(0)->shape()[0].is_symbolic());
  EXPECT_EQ(to_doubles(evaluate_graph(g, {{"cond", Tensor::scalar(true)}})[0]), (std::vector<double>{1, 2}));
  EXPECT_EQ(to_doubles(evaluate_graph(g, {{"cond", Tensor::scalar(false)}})[0]), (std::vector<double>{3, 4, 5}));
}

// Loop body: acc' = acc + x * (i + 1) (x captured), cond' = sum(acc') < limit
// (limit captured), scan output acc'. Inputs M and cond are optional.
struct LoopModel {
  std::unique_ptr<Graph> graph;
  Node* loop;
};

LoopModel loop_model(bool with_m, bool with_cond) {
  LoopModel model{std::make_unique<Graph>("loop"), nullptr};
  Graph& g = *model.graph;
  Value* m = with_m ? g.add_input("M", kInt64Scalar) : nullptr;
  Value* cond = with_cond ? g.add_input("cond", kBoolScalar) : nullptr;
  Value* acc = g.add_input("acc", f32({2}));
  Value* x = g.add_input("x", f32({2}));
  Value* limit = g.add_input("limit", f32({}));

  auto body = std::make_shared<Graph>("body");
  Value* i = body->add_input("i", kInt64Scalar);
  body->add_input("cond_in", kBoolScalar);
  Value* acc_in = body->add_input("acc_in", f32({2}));
  Value* x_in = body->add_input("x_in", f32({2}));
  Value* limit_in = body->add_input("limit_in", f32({}));
  Value* step = op(*body, "Add", {op(*body, "Cast", {i}, {{"to", Attribute(static_cast<int64_t>(DType::kFloat32))}}),
                                  scalar_constant(*body, 1.0f)});
  Value* acc_out = op(*body, "Add", {acc_in, op(*body, "Mul", {x_in, step})});
  Value* total = op(*body, "ReduceSum", {acc_out}, {{"keepdims", Attribute(int64_t{0})}});
  body->add_output(op(*body, "Less", {total, limit_in}));
  body->add_output(acc_out);
  body->add_output(op(*body, "Identity", {acc_out}));

  model.loop = g.add_node("Loop", {m, cond, acc, x, limit}, 2, {{"body", body}, {"num_captured", Attribute(int64_t{2})}}, "loop");
  infer_node_types(*model.loop, default_op_registry());
  g.add_output(model.loop->output(0));
  g.add_output(model.loop->output(1));
  return model;
}

// The reference: ONNX's table in plain C++.
struct LoopResult {
  std::vector<double> acc;
  std::vector<std::vector<double>> scans;
};

LoopResult reference_loop(bool with_m, int64_t m, bool with_cond, bool cond, std::vector<double> acc,
                          const std::vector<double>& x, double limit) {
  LoopResult result;
  for (int64_t i = 0; (!with_m || i < m) && (!with_cond || cond); ++i) {
    float step = static_cast<float>(i) + 1.0f;
    float total = 0;
    for (size_t k = 0; k < acc.size(); ++k) {
      acc[k] = static_cast<float>(acc[k]) + static_cast<float>(x[k]) * step;
      total += static_cast<float>(acc[k]);
    }
    cond = total < static_cast<float>(limit);
    result.scans.push_back(acc);
  }
  result.acc = acc;
  return result;
}

void check_loop(const LoopModel& model, bool with_m, int64_t m, bool with_cond, bool cond, double limit) {
  Tensor acc = make_tensor(DType::kFloat32, {0.5, -1.0}, {2});
  Tensor x = make_tensor(DType::kFloat32, {1.0, 2.0}, {2});
  std::map<std::string, Tensor> feeds = {{"acc", acc}, {"x", x}, {"limit", Tensor::scalar(static_cast<float>(limit))}};
  if (with_m) feeds["M"] = Tensor::scalar(m);
  if (with_cond) feeds["cond"] = Tensor::scalar(cond);
  std::vector<Tensor> out = evaluate_graph(*model.graph, feeds);
  LoopResult expected = reference_loop(with_m, m, with_cond, cond, to_doubles(acc), to_doubles(x), limit);
  expect_near_all(to_doubles(out[0]), expected.acc);
  ASSERT_EQ(out[1].sizes(), (std::vector<int64_t>{static_cast<int64_t>(expected.scans.size()), 2}));
  std::vector<double> flat;
  for (const auto& row : expected.scans) flat.insert(flat.end(), row.begin(), row.end());
  expect_near_all(to_doubles(out[1]), flat);
}

TEST(ControlFlow, LoopWithTripCountAndCondStopsAtEither) {
  LoopModel model = loop_model(true, true);
  verify_graph(*model.graph, default_op_registry());
  EXPECT_TRUE(model.loop->output(1)->shape()[0].is_symbolic());
  check_loop(model, true, 10, true, true, 20.0);   // cond turns false first (after 4 iterations)
  check_loop(model, true, 2, true, true, 100.0);   // M first
  check_loop(model, true, 5, true, false, 100.0);  // cond false: no iteration
  check_loop(model, true, 0, true, true, 100.0);   // M = 0
  check_loop(model, true, -3, true, true, 100.0);  // negative M: none either
}

TEST(ControlFlow, LoopWithTripCountOnlyIgnoresTheBodysCond) {
  LoopModel model = loop_model(true, false);
  verify_graph(*model.graph, default_op_registry());
  check_loop(model, true, 6, false, true, -100.0);  // the body says stop at once; M wins
  check_loop(model, true, 0, false, true, 100.0);
}

TEST(ControlFlow, LoopWithCondOnlyRunsWhileItHolds) {
  LoopModel model = loop_model(false, true);
  verify_graph(*model.graph, default_op_registry());
  check_loop(model, false, 0, true, true, 50.0);
  check_loop(model, false, 0, true, true, -100.0);  // one iteration, then stops
  check_loop(model, false, 0, true, false, 100.0);  // early exit: none
}

// Neither M nor cond: the loop runs until the body fails (here a Gather past
// the end of a captured 4-element tensor, at iteration 4), whatever its cond.
TEST(ControlFlow, LoopWithNeitherRunsUntilTheBodyFails) {
  Graph g("endless");
  Value* data = g.add_input("data", f32({4}));
  Value* start = g.add_input("start", f32({}));
  auto body = std::make_shared<Graph>("body");
  Value* i = body->add_input("i", kInt64Scalar);
  body->add_input("cond_in", kBoolScalar);
  Value* sum_in = body->add_input("sum_in", f32({}));
  Value* data_in = body->add_input("data_in", f32({4}));
  body->add_output(body->add_constant("stop", Tensor::scalar(false)));
  body->add_output(op(*body, "Add", {sum_in, op(*body, "Gather", {data_in, i})}));
  Node* loop = g.add_node("Loop", {nullptr, nullptr, start, data}, 1, {{"body", body}, {"num_captured", Attribute(int64_t{1})}}, "endless_loop");
  infer_node_types(*loop, default_op_registry());
  g.add_output(loop->output(0));
  verify_graph(g, default_op_registry());
  std::string message = error_of([&] {
    evaluate_graph(g, {{"data", random_tensor(DType::kFloat32, {4}, 3)}, {"start", Tensor::scalar(0.0f)}});
  });
  expect_contains(message, "endless_loop");
  expect_contains(message, "iteration 4");
  expect_contains(message, "Gather");
}

// A constant M without cond gives the scan outputs a static length.
TEST(ControlFlow, LoopScanOutputsOfAConstantTripCountAreStatic) {
  Graph g("static_loop");
  Value* m = g.add_constant("M", Tensor::scalar(int64_t{3}));
  Value* x = g.add_input("x", f32({2}));
  auto body = std::make_shared<Graph>("body");
  body->add_input("i", kInt64Scalar);
  Value* cond_in = body->add_input("cond_in", kBoolScalar);
  Value* x_in = body->add_input("x_in", f32({2}));
  body->add_output(cond_in);
  body->add_output(op(*body, "Neg", {x_in}));
  body->add_output(x_in);
  Node* loop = g.add_node("Loop", {m, nullptr, x}, 2, {{"body", body}}, "loop");
  infer_node_types(*loop, default_op_registry());
  g.add_output(loop->output(0));
  g.add_output(loop->output(1));
  verify_graph(g, default_op_registry());
  EXPECT_EQ(loop->output(1)->type(), f32({3, 2}));
  Tensor xs = random_tensor(DType::kFloat32, {2}, 4);
  std::vector<double> v = to_doubles(xs);
  std::vector<Tensor> out = evaluate_graph(g, {{"x", xs}});
  EXPECT_EQ(to_doubles(out[0]), (std::vector<double>{-v[0], -v[1]}));
  EXPECT_EQ(to_doubles(out[1]), (std::vector<double>{v[0], v[1], -v[0], -v[1], v[0], v[1]}));
}

// A scan output of zero iterations has a leading 0 and the body's other dims.
TEST(ControlFlow, LoopOfZeroIterationsKeepsInitialValues) {
  LoopModel model = loop_model(true, false);
  Tensor acc = random_tensor(DType::kFloat32, {2}, 5);
  std::vector<Tensor> out = evaluate_graph(*model.graph, {{"M", Tensor::scalar(int64_t{0})},
                                                           {"acc", acc},
                                                           {"x", random_tensor(DType::kFloat32, {2}, 6)},
                                                           {"limit", Tensor::scalar(1.0f)}});
  EXPECT_TRUE(out[0].bitwise_equal(acc));
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{0, 2}));
}

// Scan: state s [C]; X1 [T, C] scanned forward along axis 0, X2 [C, T]
// backward along axis 1; s' = s + x1 * x2; outputs s' (axis 0, appended) and
// x1 - x2 (axis 1, prepended).
struct ScanCase {
  std::vector<int64_t> input_axes{0, 1}, input_directions{0, 1}, output_axes{0, 1}, output_directions{0, 1};
};

std::unique_ptr<Graph> scan_graph(int64_t t, int64_t c, const ScanCase& sc) {
  auto g = std::make_unique<Graph>("scan");
  Value* s = g->add_input("s", f32({c}));
  Value* x1 = g->add_input("x1", f32({t, c}));
  Value* x2 = g->add_input("x2", f32({c, t}));
  auto body = std::make_shared<Graph>("body");
  Value* s_in = body->add_input("s_in", f32({c}));
  Value* a = body->add_input("a", f32({c}));
  Value* b = body->add_input("b", f32({c}));
  body->add_output(op(*body, "Add", {s_in, op(*body, "Mul", {a, b})}));
  body->add_output(op(*body, "Identity", {body->outputs()[0]}));
  body->add_output(op(*body, "Sub", {a, b}));
  Node* scan = g->add_node("Scan", {s, x1, x2}, 3,
                           {{"body", body},
                            {"num_scan_inputs", Attribute(int64_t{2})},
                            {"scan_input_axes", sc.input_axes},
                            {"scan_input_directions", sc.input_directions},
                            {"scan_output_axes", sc.output_axes},
                            {"scan_output_directions", sc.output_directions}},
                           "scan");
  infer_node_types(*scan, default_op_registry());
  for (Value* out : scan->outputs()) g->add_output(out);
  return g;
}

TEST(ControlFlow, ScanFollowsAxesAndDirections) {
  const int64_t t = 4, c = 3;
  std::unique_ptr<Graph> g = scan_graph(t, c, {});
  verify_graph(*g, default_op_registry());
  EXPECT_EQ(g->outputs()[0]->type(), f32({c}));
  EXPECT_EQ(g->outputs()[1]->type(), f32({t, c}));
  EXPECT_EQ(g->outputs()[2]->type(), f32({c, t}));
  Tensor s = random_tensor(DType::kFloat32, {c}, 7), x1 = random_tensor(DType::kFloat32, {t, c}, 8),
         x2 = random_tensor(DType::kFloat32, {c, t}, 9);
  std::vector<double> state = to_doubles(s), v1 = to_doubles(x1), v2 = to_doubles(x2);
  std::vector<double> out1(static_cast<size_t>(t * c)), out2(static_cast<size_t>(c * t));
  for (int64_t step = 0; step < t; ++step) {
    int64_t row2 = t - 1 - step;  // X2 backward
    for (int64_t k = 0; k < c; ++k) {
      float a = static_cast<float>(v1[static_cast<size_t>(step * c + k)]);
      float b = static_cast<float>(v2[static_cast<size_t>(k * t + row2)]);
      state[static_cast<size_t>(k)] = static_cast<float>(state[static_cast<size_t>(k)]) + a * b;
      out1[static_cast<size_t>(step * c + k)] = state[static_cast<size_t>(k)];
      out2[static_cast<size_t>(k * t + (t - 1 - step))] = a - b;  // prepended along axis 1
    }
  }
  std::vector<Tensor> out = evaluate_graph(*g, {{"s", s}, {"x1", x1}, {"x2", x2}});
  expect_near_all(to_doubles(out[0]), state);
  expect_near_all(to_doubles(out[1]), out1);
  expect_near_all(to_doubles(out[2]), out2);
}

TEST(ControlFlow, ScanWithNegativeAxesAndForwardDirections) {
  const int64_t t = 5, c = 2;
  ScanCase sc;
  sc.input_axes = {-2, -1};
  sc.input_directions = {0, 0};
  sc.output_axes = {-1, 0};
  sc.output_directions = {1, 0};
  std::unique_ptr<Graph> g = scan_graph(t, c, sc);
  verify_graph(*g, default_op_registry());
  EXPECT_EQ(g->outputs()[1]->type(), f32({c, t}));
  EXPECT_EQ(g->outputs()[2]->type(), f32({t, c}));
  Tensor s = random_tensor(DType::kFloat32, {c}, 10), x1 = random_tensor(DType::kFloat32, {t, c}, 11),
         x2 = random_tensor(DType::kFloat32, {c, t}, 12);
  std::vector<double> state = to_doubles(s), v1 = to_doubles(x1), v2 = to_doubles(x2);
  std::vector<double> out1(static_cast<size_t>(c * t)), out2(static_cast<size_t>(t * c));
  for (int64_t step = 0; step < t; ++step) {
    for (int64_t k = 0; k < c; ++k) {
      float a = static_cast<float>(v1[static_cast<size_t>(step * c + k)]);
      float b = static_cast<float>(v2[static_cast<size_t>(k * t + step)]);
      state[static_cast<size_t>(k)] = static_cast<float>(state[static_cast<size_t>(k)]) + a * b;
      out1[static_cast<size_t>(k * t + (t - 1 - step))] = state[static_cast<size_t>(k)];  // axis 1, prepended
      out2[static_cast<size_t>(step * c + k)] = a - b;
    }
  }
  std::vector<Tensor> out = evaluate_graph(*g, {{"s", s}, {"x1", x1}, {"x2", x2}});
  expect_near_all(to_doubles(out[0]), state);
  expect_near_all(to_doubles(out[1]), out1);
  expect_near_all(to_doubles(out[2]), out2);
}

TEST(ControlFlow, ScanOfZeroStepsKeepsTheStates) {
  std::unique_ptr<Graph> g = scan_graph(0, 3, {});
  Tensor s = random_tensor(DType::kFloat32, {3}, 13);
  std::vector<Tensor> out = evaluate_graph(*g, {{"s", s}, {"x1", Tensor(DType::kFloat32, {0, 3})}, {"x2", Tensor(DType::kFloat32, {3, 0})}});
  EXPECT_TRUE(out[0].bitwise_equal(s));
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(out[2].sizes(), (std::vector<int64_t>{3, 0}));
}

// ONNX's opset-8 form: a batch axis on everything, axis 1 scanned, each
// entry for sequence_lens[b] steps (scan outputs zero past them).
TEST(ControlFlow, BatchedScanRunsEachEntryForItsLength) {
  const int64_t batch = 3, t = 4, c = 2;
  Graph g("scan8");
  Value* lens = g.add_input("lens", TensorType{DType::kInt64, Shape{batch}});
  Value* s = g.add_input("s", f32({batch, c}));
  Value* x = g.add_input("x", f32({batch, t, c}));
  auto body = std::make_shared<Graph>("body");
  Value* s_in = body->add_input("s_in", f32({c}));
  Value* x_in = body->add_input("x_in", f32({c}));
  Value* sum = op(*body, "Add", {s_in, x_in});
  body->add_output(sum);
  body->add_output(op(*body, "Identity", {sum}));
  Node* scan = g.add_node("Scan", {lens, s, x}, 2,
                          {{"body", body}, {"num_scan_inputs", Attribute(int64_t{1})}, {"batched", Attribute(int64_t{1})},
                           {"scan_input_directions", std::vector<int64_t>{1}}},
                          "scan8");
  infer_node_types(*scan, default_op_registry());
  g.add_output(scan->output(0));
  g.add_output(scan->output(1));
  verify_graph(g, default_op_registry());
  EXPECT_EQ(scan->output(1)->type(), f32({batch, t, c}));
  const std::vector<int64_t> lengths = {4, 2, 0};
  Tensor states = random_tensor(DType::kFloat32, {batch, c}, 14), xs = random_tensor(DType::kFloat32, {batch, t, c}, 15);
  std::vector<double> st = to_doubles(states), xv = to_doubles(xs);
  std::vector<double> scanned(static_cast<size_t>(batch * t * c), 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = lengths[static_cast<size_t>(b)];
    for (int64_t step = 0; step < length; ++step) {
      int64_t row = length - 1 - step;  // reversed within the entry's length
      for (int64_t k = 0; k < c; ++k) {
        double& state = st[static_cast<size_t>(b * c + k)];
        state = static_cast<float>(state) + static_cast<float>(xv[static_cast<size_t>((b * t + row) * c + k)]);
        scanned[static_cast<size_t>((b * t + step) * c + k)] = state;
      }
    }
  }
  std::vector<Tensor> out = evaluate_graph(g, {{"lens", Tensor::from_vector(lengths, {batch})}, {"s", states}, {"x", xs}});
  expect_near_all(to_doubles(out[0]), st);
  expect_near_all(to_doubles(out[1]), scanned);
}

// A body's kernels are created with the Loop's kernel, once, from the
// registry the Loop's kernel came from; they then run once per iteration.
std::atomic<int> counted_creations{0};
std::atomic<int> counted_runs{0};

class CountedNeg final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    ++counted_runs;
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes());
    for (int64_t i = 0; i < x.num_elements(); ++i) y.data<float>()[i] = -x.data<float>()[i];
  }
};

TEST(ControlFlow, BodyKernelsAreCreatedOnceFromTheLoopsRegistry) {
  KernelRegistry kernels;
  register_all_kernels(kernels);
  kernels.add({"test.counting", "CountedNeg"}, DeviceType::kCpu, {DType::kFloat32}, [](const Node&) {
    ++counted_creations;
    return std::make_unique<CountedNeg>();
  });
  Graph g("counted");
  Value* m = g.add_input("M", kInt64Scalar);
  Value* x = g.add_input("x", f32({2}));
  auto body = std::make_shared<Graph>("body");
  body->add_input("i", kInt64Scalar);
  Value* cond_in = body->add_input("cond_in", kBoolScalar);
  Value* x_in = body->add_input("x_in", f32({2}));
  Node* neg = body->add_node("CountedNeg", {x_in}, 1, {}, "counted_neg");
  neg->set_domain("test.counting");
  neg->output(0)->set_type(f32({2}));
  body->add_output(cond_in);
  body->add_output(neg->output(0));
  Node* loop = g.add_node("Loop", {m, nullptr, x}, 1, {{"body", body}}, "loop");
  loop->output(0)->set_type(f32({2}));
  g.add_output(loop->output(0));
  counted_creations = 0;
  counted_runs = 0;
  Tensor xs = random_tensor(DType::kFloat32, {2}, 16);
  std::vector<Tensor> out = evaluate_graph(g, {{"M", Tensor::scalar(int64_t{5})}, {"x", xs}}, {.kernels = &kernels});
  EXPECT_EQ(counted_creations.load(), 1);
  EXPECT_EQ(counted_runs.load(), 5);
  std::vector<double> v = to_doubles(xs);
  EXPECT_EQ(to_doubles(out[0]), (std::vector<double>{-v[0], -v[1]}));  // negated 5 times
}

// --- errors name the node -----------------------------------------------------

TEST(ControlFlow, CondMustBeOneBool) {
  std::unique_ptr<Graph> g = if_graph();
  Value* cond = g->inputs()[0];
  // Declared as any length, fed two values: the kernel refuses.
  cond->set_type(TensorType{DType::kBool, Shape{Dim::symbol("n")}});
  Tensor x = random_tensor(DType::kFloat32, {3}, 1);
  std::string message = error_of([&] {
    evaluate_graph(*g, {{"cond", Tensor::from_vector<bool>({true, false}, {2})}, {"x", x}, {"y", x}});
  });
  expect_contains(message, "If 'if'");
  expect_contains(message, "cond must be a bool tensor of one element, got bool[2]");
  // A static shape of two elements, or another dtype, is refused by inference.
  cond->set_type(TensorType{DType::kBool, Shape{2}});
  expect_contains(error_of([&] { verify_graph(*g, default_op_registry()); }), "cond");
  cond->set_type(TensorType{DType::kInt64, Shape{}});
  message = error_of([&] { verify_graph(*g, default_op_registry()); });
  expect_contains(message, "'if'");
  expect_contains(message, "input cond is i64, expected bool");
}

TEST(ControlFlow, LoopBodyCondMustBeBool) {
  LoopModel model = loop_model(true, true);
  Graph& body = *model.loop->attr("body").g();
  Value* number = op(body, "Cast", {body.outputs()[0]}, {{"to", Attribute(static_cast<int64_t>(DType::kInt64))}});
  body.set_output(0, number);
  std::string message = error_of([&] { verify_graph(*model.graph, default_op_registry()); });
  expect_contains(message, "'loop'");
  expect_contains(message, "body output 0 (cond)");
  // The kernel says the same when run without verification.
  message = error_of([&] {
    evaluate_graph(*model.graph, {{"M", Tensor::scalar(int64_t{3})}, {"cond", Tensor::scalar(true)},
                                  {"acc", random_tensor(DType::kFloat32, {2}, 1)}, {"x", random_tensor(DType::kFloat32, {2}, 2)},
                                  {"limit", Tensor::scalar(10.0f)}});
  });
  expect_contains(message, "Loop 'loop'");
  expect_contains(message, "must be a bool tensor of one element, got i64[]");
}

TEST(ControlFlow, BodyOutputCountMismatchNamesTheNode) {
  LoopModel model = loop_model(true, true);
  Node* loop = model.loop;
  // Three outputs: the body gives one carried value and one scan output.
  Node* wider = model.graph->add_node("Loop", loop->inputs(), 3, loop->attributes(), "wider_loop");
  std::string message = error_of([&] { infer_node_types(*wider, default_op_registry()); });
  expect_contains(message, "Loop 'wider_loop'");
  expect_contains(message, "has 3 outputs, its body gives 1 loop-carried value and 1 scan output");
  message = error_of([&] { default_kernel_registry().create(*wider, DeviceType::kCpu); });
  expect_contains(message, "Loop 'wider_loop'");

  // A body that takes fewer inputs than the node gives.
  auto short_body = std::make_shared<Graph>("short");
  short_body->add_input("i", kInt64Scalar);
  short_body->add_output(short_body->add_input("c", kBoolScalar));
  Node* short_loop = model.graph->add_node("Loop", loop->inputs(), 1,
                                           {{"body", short_body}, {"num_captured", Attribute(int64_t{2})}}, "short_loop");
  message = error_of([&] { infer_node_types(*short_loop, default_op_registry()); });
  expect_contains(message, "Loop 'short_loop'");
  expect_contains(message, "body takes 2 inputs, expected 5");
}

TEST(ControlFlow, BodyOutputTypeMismatchNamesTheNode) {
  // A loop-carried f32 value that the body returns as i64.
  LoopModel model = loop_model(true, true);
  Graph& body = *model.loop->attr("body").g();
  body.set_output(1, op(body, "Cast", {body.outputs()[1]}, {{"to", Attribute(static_cast<int64_t>(DType::kInt64))}}));
  std::string message = error_of([&] { infer_node_types(*model.loop, default_op_registry()); });
  expect_contains(message, "'loop'");
  expect_contains(message, "body output 1");
  expect_contains(message, "is i64, expected f32");

  // If branches of different dtypes.
  std::unique_ptr<Graph> g = if_graph();
  Node* node = g->outputs()[0]->producer();
  Graph& else_branch = *node->attr("else_branch").g();
  else_branch.set_output(0, op(else_branch, "Cast", {else_branch.outputs()[0]}, {{"to", Attribute(static_cast<int64_t>(DType::kFloat64))}}));
  message = error_of([&] { verify_graph(*g, default_op_registry()); });
  expect_contains(message, "'if'");
  expect_contains(message, "both branches must give one dtype");

  // A Scan whose scan inputs disagree on their length at run time.
  std::unique_ptr<Graph> scan = scan_graph(4, 3, {});
  scan->inputs()[2]->set_type(f32({3, Dim::symbol("steps")}));
  message = error_of([&] {
    evaluate_graph(*scan, {{"s", random_tensor(DType::kFloat32, {3}, 1)},
                           {"x1", random_tensor(DType::kFloat32, {4, 3}, 2)},
                           {"x2", random_tensor(DType::kFloat32, {3, 5}, 3)}});
  });
  expect_contains(message, "Scan 'scan'");
  expect_contains(message, "scan input 1 f32[3,5] has 5 steps along axis 1, scan input 0 f32[4,3] has 4");
}

}  // namespace
}  // namespace weir
