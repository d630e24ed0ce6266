// ONNX's Gradient (ai.onnx.preview.training): the importer expands it into
// Weir's backward nodes. Each gradient is checked against central finite
// differences of sum(y), computed here from the same model's forward output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "frontend/onnx/onnx_importer.h"
#include "ops/graph_evaluator.h"
#include "tests/frontend/onnx_model_builder.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::add_string;
using testing::error_of;
using testing::make_tensor;
using testing::ModelBuilder;
using testing::random_tensor;
using testing::to_doubles;

constexpr const char* kTraining = "ai.onnx.preview.training";
constexpr int32_t kF64 = onnx::TensorProto::DOUBLE;

void import_training_domain(ModelBuilder& m) {
  onnx::OperatorSetIdProto* id = m.model.add_opset_import();
  id->set_domain(kTraining);
  id->set_version(1);
}

void add_strings(onnx::NodeProto* node, const std::string& name, const std::vector<std::string>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

onnx::NodeProto* gradient(ModelBuilder& m, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                          const std::vector<std::string>& xs, const std::string& y,
                          const std::vector<std::string>& zs = {}) {
  onnx::NodeProto* node = m.node("Gradient", inputs, outputs, "grad");
  node->set_domain(kTraining);
  add_strings(node, "xs", xs);
  if (!zs.empty()) add_strings(node, "zs", zs);
  add_string(node, "y", y);
  return node;
}

// A graph output of type f64 (ModelBuilder's are f32).
void output_f64(ModelBuilder& m, const std::string& name) {
  m.output(name);
  m.graph->mutable_output(m.graph->output_size() - 1)->mutable_type()->mutable_tensor_type()->set_elem_type(kF64);
}

double sum_of(const Tensor& tensor) {
  double sum = 0;
  for (double v : to_doubles(tensor)) sum += v;
  return sum;
}

// d sum(output 0) / d feeds[x], by central differences.
std::vector<double> numeric_gradient(const Graph& graph, const std::map<std::string, Tensor>& feeds, const std::string& x) {
  const double eps = 1e-6;
  std::vector<double> base = to_doubles(feeds.at(x));
  std::vector<int64_t> sizes = feeds.at(x).sizes();
  std::vector<double> grad;
  for (size_t i = 0; i < base.size(); ++i) {
    auto at = [&](double delta) {
      std::vector<double> moved = base;
      moved[i] += delta;
      std::map<std::string, Tensor> shifted = feeds;
      shifted.insert_or_assign(x, make_tensor(DType::kFloat64, moved, sizes));
      return sum_of(evaluate_graph(graph, shifted)[0]);
    };
    grad.push_back((at(eps) - at(-eps)) / (2 * eps));
  }
  return grad;
}

// Runs the model and checks output 1 + i (the gradient w.r.t. xs[i]) against
// finite differences of output 0 (y).
void expect_gradients(const Model& model, const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& xs) {
  std::vector<Tensor> outputs = evaluate_graph(*model.graph, feeds);
  ASSERT_EQ(outputs.size(), xs.size() + 1);
  for (size_t i = 0; i < xs.size(); ++i) {
    SCOPED_TRACE("d y / d " + xs[i]);
    EXPECT_EQ(outputs[i + 1].sizes(), feeds.at(xs[i]).sizes());
    std::vector<double> analytic = to_doubles(outputs[i + 1]);
    std::vector<double> numeric = numeric_gradient(*model.graph, feeds, xs[i]);
    ASSERT_EQ(analytic.size(), numeric.size());
    for (size_t k = 0; k < numeric.size(); ++k) EXPECT_NEAR(analytic[k], numeric[k], 1e-5 * (1 + std::abs(numeric[k]))) << k;
  }
}

TEST(OnnxGradient, OfAddWithBroadcasting) {
  ModelBuilder m(13);
  import_training_domain(m);
  m.input("a", {2, 3}, kF64).input("b", {3}, kF64);
  m.node("Add", {"a", "b"}, {"c"}, "add");
  gradient(m, {"a", "b"}, {"dc_da", "dc_db"}, {"a", "b"}, "c");
  for (const char* name : {"c", "dc_da", "dc_db"}) output_f64(m, name);
  Model model = m.import();
  std::map<std::string, Tensor> feeds = {{"a", random_tensor(DType::kFloat64, {2, 3}, 1)},
                                         {"b", random_tensor(DType::kFloat64, {3}, 2)}};
  expect_gradients(model, feeds, {"a", "b"});
  // Seeded with ones: b is broadcast over 2 rows.
  EXPECT_EQ(to_doubles(evaluate_graph(*model.graph, feeds)[2]), (std::vector<double>{2, 2, 2}));
}

TEST(OnnxGradient, OfMulAndAddAtScalars) {
  // The simple suite's test_gradient_of_add_and_mul: d((a + b) * a)/da = 2a + b.
  // a is declared a scalar; b's shape is not given, so neither is y's.
  ModelBuilder m(12);
  import_training_domain(m);
  m.input("a", {}).input("b", {});
  m.graph->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  m.node("Add", {"a", "b"}, {"c"}, "add");
  m.node("Mul", {"c", "a"}, {"d"}, "mul");
  gradient(m, {"a", "b"}, {"dd_da", "dd_db"}, {"a", "b"}, "d");
  m.output("d").output("dd_da").output("dd_db");
  Model model = m.import();
  std::vector<Tensor> out = evaluate_graph(*model.graph, {{"a", Tensor::scalar(1.5f)}, {"b", Tensor::scalar(-2.0f)}});
  EXPECT_FLOAT_EQ(to_doubles(out[1])[0], 2 * 1.5f - 2.0f);
  EXPECT_FLOAT_EQ(to_doubles(out[2])[0], 1.5f);
}

TEST(OnnxGradient, OfMul) {
  ModelBuilder m(13);
  import_training_domain(m);
  m.input("a", {4}, kF64).input("b", {4}, kF64);
  m.node("Mul", {"a", "b"}, {"c"}, "mul");
  m.node("Mul", {"c", "a"}, {"y"}, "mul2");
  gradient(m, {"a", "b"}, {"dy_da", "dy_db"}, {"a", "b"}, "y");
  for (const char* name : {"y", "dy_da", "dy_db"}) output_f64(m, name);
  expect_gradients(m.import(), {{"a", random_tensor(DType::kFloat64, {4}, 3)}, {"b", random_tensor(DType::kFloat64, {4}, 4)}},
                   {"a", "b"});
}

// x -> MatMul w1 -> Add b1 -> Relu -> MatMul w2 -> (ReduceSum), gradients
// with respect to the weights (x in zs).
void build_mlp(ModelBuilder& m, bool reduce) {
  import_training_domain(m);
  m.input("x", {4, 3}, kF64).input("w1", {3, 5}, kF64).input("b1", {5}, kF64).input("w2", {5, 2}, kF64);
  m.node("MatMul", {"x", "w1"}, {"h"}, "fc1");
  m.node("Add", {"h", "b1"}, {"hb"}, "bias1");
  m.node("Relu", {"hb"}, {"r"}, "relu");
  m.node("MatMul", {"r", "w2"}, {reduce ? "o" : "y"}, "fc2");
  if (reduce) m.node("ReduceSum", {"o"}, {"y"}, "sum");
  gradient(m, {"w1", "b1", "w2", "x"}, {"dw1", "db1", "dw2"}, {"w1", "b1", "w2"}, "y", {"x"});
  for (const char* name : {"y", "dw1", "db1", "dw2"}) output_f64(m, name);
}

std::map<std::string, Tensor> mlp_feeds() {
  return {{"x", random_tensor(DType::kFloat64, {4, 3}, 5)},
          {"w1", random_tensor(DType::kFloat64, {3, 5}, 6)},
          {"b1", random_tensor(DType::kFloat64, {5}, 7)},
          {"w2", random_tensor(DType::kFloat64, {5, 2}, 8)}};
}

TEST(OnnxGradient, OfSmallMlpWithReduceSum) {
  ModelBuilder m(13);
  build_mlp(m, /*reduce=*/true);
  expect_gradients(m.import(), mlp_feeds(), {"w1", "b1", "w2"});
}

TEST(OnnxGradient, OfNonScalarIsTheGradientOfItsSum) {
  ModelBuilder m(13);
  build_mlp(m, /*reduce=*/false);
  Model model = m.import();
  expect_gradients(model, mlp_feeds(), {"w1", "b1", "w2"});
  // The seed's sum is not left behind as a forward node.
  for (Node* node : model.graph->nodes()) EXPECT_NE(node->op_type(), "ReduceSum") << node->name();
}

TEST(OnnxGradient, AtInputsOtherThanTheNamedValues) {
  // y = a * a * b; the gradient w.r.t. a taken at p (and b at q): 2 p q.
  ModelBuilder m(13);
  import_training_domain(m);
  m.input("a", {3}, kF64).input("b", {3}, kF64).input("p", {3}, kF64).input("q", {3}, kF64);
  m.node("Mul", {"a", "a"}, {"aa"}, "square");
  m.node("Mul", {"aa", "b"}, {"y"}, "scale");
  gradient(m, {"p", "q"}, {"dy_da"}, {"a"}, "y", {"b"});
  output_f64(m, "y");
  output_f64(m, "dy_da");
  Model model = m.import();
  std::vector<double> a = {1, 2, 3}, b = {-1, 0.5, 2}, p = {0.5, -1.5, 4}, q = {2, 3, -0.25};
  std::vector<Tensor> out = evaluate_graph(*model.graph, {{"a", make_tensor(DType::kFloat64, a, {3})},
                                                          {"b", make_tensor(DType::kFloat64, b, {3})},
                                                          {"p", make_tensor(DType::kFloat64, p, {3})},
                                                          {"q", make_tensor(DType::kFloat64, q, {3})}});
  std::vector<double> y = to_doubles(out[0]), grad = to_doubles(out[1]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(y[i], a[i] * a[i] * b[i]);  // the forward output is still at a, b
    EXPECT_DOUBLE_EQ(grad[i], 2 * p[i] * q[i]);
  }
}

TEST(OnnxGradient, SkippedOutputAndWithRespectToY) {
  // An empty output name skips that gradient; d y / d y is ones.
  ModelBuilder m(13);
  import_training_domain(m);
  m.input("a", {2}, kF64);
  m.node("Relu", {"a"}, {"y"}, "relu");
  gradient(m, {"a", "y"}, {"", "dy_dy"}, {"a", "y"}, "y");
  output_f64(m, "dy_dy");
  Model model = m.import();
  EXPECT_EQ(to_doubles(evaluate_graph(*model.graph, {{"a", make_tensor(DType::kFloat64, {-1, 2}, {2})}})[0]),
            (std::vector<double>{1, 1}));
}

TEST(OnnxGradient, ErrorsNameTheNode) {
  {  // y does not depend on b
    ModelBuilder m(13);
    import_training_domain(m);
    m.input("a", {2}).input("b", {2});
    m.node("Relu", {"a"}, {"y"}, "relu");
    gradient(m, {"a", "b"}, {"da", "db"}, {"a", "b"}, "y");
    m.output("db");
    std::string message = error_of([&] { m.import(); }, ErrorKind::kUnsupported);
    EXPECT_NE(message.find("Gradient (opset 1): 'y' ('y') does not depend on 'b' (in 'xs'); node 'grad'"), std::string::npos)
        << message;
  }
  {  // DFT has no gradient rule
    ModelBuilder m(17);
    import_training_domain(m);
    m.input("a", {1, 4, 1});
    m.node("DFT", {"a"}, {"f"}, "dft");
    gradient(m, {"a"}, {"da"}, {"a"}, "f");
    m.output("da");
    std::string message = error_of([&] { m.import(); }, ErrorKind::kUnsupported);
    EXPECT_NE(message.find("node 'dft' (DFT) has no gradient rule"), std::string::npos) << message;
    EXPECT_NE(message.find("node 'grad'"), std::string::npos) << message;
  }
  {  // one input per name in xs and zs
    ModelBuilder m(13);
    import_training_domain(m);
    m.input("a", {2}).input("b", {2});
    m.node("Mul", {"a", "b"}, {"y"}, "mul");
    gradient(m, {"a"}, {"da"}, {"a"}, "y", {"b"});
    m.output("da");
    std::string message = error_of([&] { m.import(); }, ErrorKind::kFormat);
    EXPECT_NE(message.find("Gradient node 'grad' has 1 inputs; it needs one per name in 'xs' and 'zs' (2)"), std::string::npos)
        << message;
  }
  {  // the ONNX fuzzer's finding: a Mul with one input on the differentiated path
    ModelBuilder m(12);
    import_training_domain(m);
    m.input("a", {2}).input("b", {2});
    m.node("Add", {"a", "b"}, {"c"}, "add");
    m.node("Mul", {"a"}, {"d"}, "mul");
    gradient(m, {"a", "b"}, {"da", "db"}, {"a", "b"}, "d");
    m.output("da");
    std::string message = error_of([&] { m.import(); }, ErrorKind::kUnsupported);
    EXPECT_NE(message.find("Mul (opset 12): 1 inputs; Weir's Mul takes at least 2; node 'mul'"), std::string::npos)
        << message;
  }
  {  // y must be defined
    ModelBuilder m(13);
    import_training_domain(m);
    m.input("a", {2});
    gradient(m, {"a"}, {"da"}, {"a"}, "nope");
    m.output("da");
    std::string message = error_of([&] { m.import(); }, ErrorKind::kFormat);
    EXPECT_NE(message.find("'y' names 'nope', which no earlier node"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace weir
