// The verifier rejects broken graphs with an error naming the node, and
// accepts valid ones.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/register_ops.h"
#include "tests/test_util.h"

namespace weir {
namespace {

const TensorType kBatch4{DType::kFloat32, Shape{Dim::symbol("N"), 4}};

// Expects verify_graph to throw an error whose node is `node` and whose
// message contains `fragment`.
void expect_rejected(const Graph& g, const std::string& node, const std::string& fragment) {
  try {
    verify_graph(g, default_op_registry());
    FAIL() << "the verifier accepted a graph it should reject (" << fragment << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), node) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("node '" + node + "'"), std::string::npos) << e.what();
  }
}

// x[N,4] -> MatMul(w[4,3]) -> Add(b[3]) -> Relu -> Softmax
std::unique_ptr<Graph> make_mlp() {
  auto g = std::make_unique<Graph>("mlp");
  Value* x = g->add_input("x", kBatch4);
  Value* w = g->add_persistent("w", {DType::kFloat32, Shape{4, 3}}, PersistentRole::kParameter,
                               Tensor::from_vector(testing::random_floats(12, 1), {4, 3}));
  Value* b = g->add_constant("b", Tensor::from_vector(testing::random_floats(3, 2), {3}));
  Node* mm = g->add_node("MatMul", {x, w}, 1, {}, "mm");
  Node* add = g->add_node("Add", {mm->output(0), b}, 1, {}, "add");
  Node* relu = g->add_node("Relu", {add->output(0)}, 1, {}, "relu");
  Node* softmax = g->add_node("Softmax", {relu->output(0)}, 1, {{"axis", Attribute(1)}}, "softmax");
  g->add_output(softmax->output(0));
  infer_graph_types(*g, default_op_registry());
  return g;
}

TEST(Verifier, AcceptsAValidGraphAndInfersItsTypes) {
  auto g = make_mlp();
  EXPECT_NO_THROW(verify_graph(*g, default_op_registry(), {.require_types = true}));
  EXPECT_EQ(g->find_value("softmax:0")->type().to_string(), "f32[N,3]");
}

TEST(Verifier, RejectsACycle) {
  auto g = make_mlp();
  g->find_node("relu")->set_input(0, g->find_value("softmax:0"));  // types still agree
  expect_rejected(*g, "relu", "cycle: relu -> softmax -> relu");
}

TEST(Verifier, RejectsTwoProducers) {
  auto g = make_mlp();
  Node* stray = g->add_node("Relu", {g->find_value("x")}, 1, {}, "stray");
  stray->set_output(0, g->find_value("add:0"));
  // "add" still lists add:0 as its output, but the value now names "stray".
  expect_rejected(*g, "add", "two producers");
}

TEST(Verifier, RejectsADanglingInput) {
  auto g = make_mlp();
  Value* orphan = g->add_value("orphan", kBatch4);
  g->find_node("relu")->set_input(0, orphan);
  expect_rejected(*g, "relu", "'orphan' is not produced by any node");
}

TEST(Verifier, RejectsADeclaredTypeThatContradictsTheSchema) {
  auto dtype = make_mlp();
  dtype->find_value("relu:0")->set_type({DType::kFloat16, Shape{Dim::symbol("N"), 3}});
  expect_rejected(*dtype, "relu", "output 'relu:0' is f16 but 'add:0' is f32");

  auto shape = make_mlp();
  shape->find_value("add:0")->set_type({DType::kFloat32, Shape{Dim::symbol("N"), 5}});
  expect_rejected(*shape, "add", "infers f32[N,3]");
}

TEST(Verifier, RejectsInputsTheSchemaCannotTake) {
  auto mismatch = make_mlp();
  Value* wide = mismatch->add_input("wide", {DType::kFloat32, Shape{Dim::symbol("N"), 7}});
  mismatch->find_node("add")->set_input(1, wide);
  expect_rejected(*mismatch, "add", "cannot broadcast");

  Graph ints("ints");
  Value* i = ints.add_input("i", {DType::kInt32, Shape{2}});
  ints.add_node("Sigmoid", {i}, 1, {}, "sig");
  expect_rejected(ints, "sig", "T allows f32");

  Graph mixed("mixed");
  Value* a = mixed.add_input("a", {DType::kFloat32, Shape{2}});
  Value* d = mixed.add_input("d", {DType::kFloat64, Shape{2}});
  mixed.add_node("Add", {a, d}, 1, {}, "add");
  expect_rejected(mixed, "add", "both are type T");
}

TEST(Verifier, RejectsUnknownOpsAttributesAndArity) {
  auto unknown = make_mlp();
  unknown->add_node("FancyOp", {unknown->find_value("x")}, 1, {}, "fancy");
  expect_rejected(*unknown, "fancy", "unknown op type 'FancyOp'");
  EXPECT_NO_THROW(verify_graph(*unknown, default_op_registry(), {.allow_unknown_ops = true}));

  auto attr = make_mlp();
  attr->find_node("relu")->set_attr("alpha", Attribute(0.1));
  expect_rejected(*attr, "relu", "no attribute 'alpha'");

  auto attr_type = make_mlp();
  attr_type->find_node("softmax")->set_attr("axis", Attribute("one"));
  expect_rejected(*attr_type, "softmax", "must be int, got string");

  auto arity = make_mlp();
  arity->find_node("add")->remove_input(1);
  expect_rejected(*arity, "add", "takes 2 inputs, got 1");

  auto absent = make_mlp();
  absent->find_node("mm")->set_input(1, nullptr);
  expect_rejected(*absent, "mm", "required but absent");
}

TEST(Verifier, ChecksSubGraphsAndNamesBothNodes) {
  auto body = std::make_shared<Graph>("body");
  Value* bx = body->add_input("bx", kBatch4);
  body->add_node("Relu", {bx}, 1, {}, "inner");
  body->find_node("inner")->set_input(0, body->add_value("nowhere"));
  OpRegistry registry;
  register_all_ops(registry);
  registry.add(OpSchema("Repeat").input("x", "").output("y", "").attr("body", AttrType::kGraph));
  Graph g("outer");
  Value* x = g.add_input("x", kBatch4);
  g.add_node("Repeat", {x}, 1, {{"body", Attribute(body)}}, "loop");
  try {
    verify_graph(g, registry);
    FAIL() << "expected a sub-graph error";
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "loop");
    EXPECT_NE(std::string(e.what()).find("sub-graph attribute 'body': node 'inner'"), std::string::npos)
        << e.what();
  }
}

TEST(Verifier, RejectsConstantsThatContradictTheirTensor) {
  auto g = make_mlp();
  g->find_value("b")->set_type({DType::kFloat32, Shape{4}});
  try {
    verify_graph(*g, default_op_registry());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("constant 'b' is declared f32[4] but holds f32[3]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weir
