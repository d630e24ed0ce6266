// Graph IR utilities: building, topological order, replace-all-uses, node
// removal, subgraph extraction and cloning.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "core/graph.h"
#include "tests/test_util.h"

namespace weir {
namespace {

const TensorType kRow{DType::kFloat32, Shape{Dim::symbol("N"), 4}};

size_t position(const std::vector<Node*>& order, const Node* node) {
  return static_cast<size_t>(std::find(order.begin(), order.end(), node) - order.begin());
}

TEST(Graph, BuildsValuesNodesAndUseLists) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Value* w = g.add_persistent("w", {DType::kFloat32, Shape{4, 4}}, PersistentRole::kParameter);
  Node* mm = g.add_node("MatMul", {x, w}, 1, {}, "mm");
  Node* relu = g.add_node("Relu", {mm->output(0)});
  g.add_output(relu->output(0));

  EXPECT_EQ(mm->output(0)->name(), "mm:0");
  EXPECT_EQ(mm->output(0)->producer(), mm);
  EXPECT_EQ(x->uses(), (std::vector<Use>{{mm, 0}}));
  EXPECT_EQ(w->uses(), (std::vector<Use>{{mm, 1}}));
  EXPECT_EQ(g.find_node("mm"), mm);
  EXPECT_EQ(g.find_value("x"), x);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_NE(relu->name().find("Relu"), std::string::npos);  // named automatically
  EXPECT_THROW(g.add_input("x", kRow), Error);               // names are unique
  EXPECT_THROW(g.add_node("Relu", {x}, 1, {}, "mm"), Error);
  EXPECT_THROW(mm->attr("missing"), Error);
}

TEST(Graph, RenameValueKeepsUsesAndRefusesTakenNames) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Node* relu = g.add_node("Relu", {x}, 1, {}, "relu");
  Value* y = relu->output(0);
  g.add_output(y);
  g.rename_value(y, "y");
  EXPECT_EQ(y->name(), "y");
  EXPECT_EQ(g.find_value("y"), y);
  EXPECT_EQ(g.find_value("relu:0"), nullptr);
  EXPECT_EQ(g.outputs().front(), y);
  EXPECT_THROW(g.rename_value(y, "x"), Error);
  EXPECT_THROW(g.rename_value(y, ""), Error);
  EXPECT_EQ(g.find_value("y"), y);  // unchanged after a refused rename
}

TEST(Graph, TopologicalOrderRespectsDataAndControlEdges) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  // Added in an order that is not topological: c reads b, b reads a.
  Value* a_out = g.add_value("a_out");
  Value* b_out = g.add_value("b_out");
  Node* c = g.add_node("Relu", {b_out}, 1, {}, "c");
  Node* b = g.add_node_with_outputs("Relu", {a_out}, {b_out}, {}, "b");
  Node* a = g.add_node_with_outputs("Relu", {x}, {a_out}, {}, "a");
  Node* side = g.add_node("Relu", {x}, 1, {}, "side");
  side->add_control_input(c);  // side has no data dependency on c, only control

  std::vector<Node*> order = g.topological_order();
  ASSERT_EQ(order.size(), 4u);
  EXPECT_LT(position(order, a), position(order, b));
  EXPECT_LT(position(order, b), position(order, c));
  EXPECT_LT(position(order, c), position(order, side));
  EXPECT_EQ(order, g.topological_order());  // deterministic
}

TEST(Graph, TopologicalOrderNamesTheCycle) {
  Graph g("loop");
  Value* x = g.add_input("x", kRow);
  Node* a = g.add_node("Relu", {x}, 1, {}, "a");
  Node* b = g.add_node("Relu", {a->output(0)}, 1, {}, "b");
  a->set_input(0, b->output(0));
  try {
    g.topological_order();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidGraph);
    std::string message = e.what();
    EXPECT_NE(message.find("cycle"), std::string::npos) << message;
    EXPECT_NE(message.find("a -> b -> a"), std::string::npos);
  }
}

TEST(Graph, ReplaceAllUsesAndRemoveNode) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Node* identity = g.add_node("Identity", {x}, 1, {}, "id");
  Node* relu = g.add_node("Relu", {identity->output(0)}, 1, {}, "relu");
  Node* tanh = g.add_node("Tanh", {identity->output(0)}, 1, {}, "tanh");
  g.add_output(identity->output(0));
  g.add_output(relu->output(0));
  tanh->add_control_input(identity);

  EXPECT_THROW(g.remove_node(identity), Error);  // its output is still used
  g.replace_all_uses(identity->output(0), x);
  EXPECT_EQ(relu->input(0), x);
  EXPECT_EQ(tanh->input(0), x);
  EXPECT_EQ(g.outputs()[0], x);
  EXPECT_EQ(x->uses().size(), 3u);
  g.remove_node(identity);
  EXPECT_EQ(g.find_node("id"), nullptr);
  EXPECT_EQ(g.find_value("id:0"), nullptr);
  EXPECT_TRUE(tanh->control_inputs().empty());
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(Graph, RemoveInputRenumbersUses) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Value* y = g.add_input("y", kRow);
  Node* add = g.add_node("Add", {x, y, x});
  add->remove_input(0);
  EXPECT_EQ(add->inputs(), (std::vector<Value*>{y, x}));
  EXPECT_EQ(x->uses(), (std::vector<Use>{{add, 1}}));
  EXPECT_EQ(y->uses(), (std::vector<Use>{{add, 0}}));
}

TEST(Graph, ExtractSubgraphKeepsWhatTheOutputsNeed) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Value* bias = g.add_constant("bias", Tensor::from_vector(testing::random_floats(4, 5), {4}));
  Node* relu = g.add_node("Relu", {x}, 1, {}, "relu");
  Node* add = g.add_node("Add", {relu->output(0), bias}, 1, {}, "add");
  Node* tanh = g.add_node("Tanh", {add->output(0)}, 1, {}, "tanh");
  g.add_node("Sigmoid", {x}, 1, {}, "unrelated");
  g.add_output(tanh->output(0));

  auto sub = g.extract_subgraph({relu->output(0)}, {tanh->output(0)});
  EXPECT_EQ(sub->num_nodes(), 2u);
  ASSERT_NE(sub->find_node("add"), nullptr);
  ASSERT_NE(sub->find_node("tanh"), nullptr);
  EXPECT_EQ(sub->inputs().size(), 1u);
  EXPECT_EQ(sub->inputs()[0]->name(), "relu:0");
  ASSERT_EQ(sub->constants().size(), 1u);
  EXPECT_TRUE(sub->constants()[0]->data().bitwise_equal(bias->data()));
  EXPECT_EQ(sub->outputs()[0]->name(), "tanh:0");

  // Asking for tanh from add's output alone is fine; from nothing is not.
  EXPECT_THROW(g.extract_subgraph({}, {tanh->output(0)}), Error);
}

TEST(Graph, CloneIsDeepAndIndependent) {
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  auto body = std::make_shared<Graph>("body");
  Value* bx = body->add_input("bx", kRow);
  body->add_output(body->add_node("Relu", {bx})->output(0));
  Node* relu = g.add_node("Relu", {x}, 1, {{"body", Attribute(body)}, {"alpha", Attribute(0.5)}}, "relu");
  relu->set_device(Device::cpu(1));
  relu->set_stream("comm");
  Node* tanh = g.add_node("Tanh", {relu->output(0)}, 1, {}, "tanh");
  tanh->add_control_input(relu);
  g.add_output(tanh->output(0));

  auto copy = g.clone();
  Node* relu_copy = copy->find_node("relu");
  ASSERT_NE(relu_copy, nullptr);
  EXPECT_EQ(relu_copy->device(), Device::cpu(1));
  EXPECT_EQ(relu_copy->stream(), "comm");
  EXPECT_EQ(relu_copy->attr("alpha").f(), 0.5);
  EXPECT_NE(relu_copy->attr("body").g().get(), body.get());  // sub-graph cloned
  EXPECT_EQ(relu_copy->attr("body").g()->num_nodes(), 1u);
  EXPECT_EQ(copy->find_node("tanh")->control_inputs(), (std::vector<Node*>{relu_copy}));
  EXPECT_EQ(copy->outputs()[0]->producer(), copy->find_node("tanh"));

  copy->find_node("tanh")->set_attr("changed", Attribute(1));
  EXPECT_FALSE(tanh->has_attr("changed"));
  EXPECT_EQ(g.topological_order().size(), copy->topological_order().size());
}

TEST(Graph, SetOutputCanCreateASecondProducer) {
  // The IR lets a buggy pass do this; the verifier is what catches it.
  Graph g("g");
  Value* x = g.add_input("x", kRow);
  Node* a = g.add_node("Relu", {x}, 1, {}, "a");
  Node* b = g.add_node("Tanh", {x}, 1, {}, "b");
  b->set_output(0, a->output(0));
  EXPECT_EQ(a->output(0)->producer(), b);
  EXPECT_EQ(a->output(0), b->output(0));
}

}  // namespace
}  // namespace weir
