// tools/graph-runner/graphviz.h: nodes clustered by device, communication
// marked, edges labelled with types.
#include "tools/graph-runner/graphviz.h"

#include <gtest/gtest.h>

#include "ops/register_ops.h"

namespace weir::tools {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Graphviz, ClustersNodesByDeviceAndMarksCommunication) {
  Graph graph("two_devices");
  Value* x = graph.add_input("x", {DType::kFloat32, Shape{4, 8}});
  Node* relu = graph.add_node("Relu", {x}, 1, {}, "relu");
  relu->set_device(Device::cpu(0));
  relu->output(0)->set_type({DType::kFloat32, Shape{4, 8}});
  Node* copy = graph.add_node("DeviceCopy", {relu->output(0)}, 1, {}, "copy");
  copy->set_device(Device::cpu(1));
  Node* reduce = graph.add_node("AllReduce", {copy->output(0)}, 1, {}, "grad_allreduce");
  reduce->set_device(Device::cpu(1));
  reduce->set_stream("comm");
  Node* tanh = graph.add_node("Tanh", {reduce->output(0)}, 1, {}, "unplaced_tanh");
  graph.add_output(tanh->output(0));

  const std::string dot = graphviz(graph, default_op_registry());
  EXPECT_EQ(dot.rfind("digraph \"two_devices\" {", 0), 0u) << dot;
  EXPECT_EQ(count(dot, "subgraph cluster_"), 2u) << dot;
  const size_t cpu0 = dot.find("label=\"cpu:0\""), cpu1 = dot.find("label=\"cpu:1\"");
  ASSERT_NE(cpu0, std::string::npos) << dot;
  ASSERT_NE(cpu1, std::string::npos) << dot;
  // Each node inside its device's cluster; the unplaced one before both.
  EXPECT_GT(dot.find("\"n:relu\""), cpu0);
  EXPECT_LT(dot.find("\"n:relu\""), cpu1);
  EXPECT_GT(dot.find("\"n:grad_allreduce\""), cpu1);
  EXPECT_LT(dot.find("\"n:unplaced_tanh\" ["), cpu0);
  // The collective is marked and says its stream; the copy is marked too.
  std::string allreduce_line = dot.substr(dot.find("\"n:grad_allreduce\" ["));
  allreduce_line = allreduce_line.substr(0, allreduce_line.find('\n'));
  EXPECT_NE(allreduce_line.find("shape=hexagon"), std::string::npos) << allreduce_line;
  EXPECT_NE(allreduce_line.find("class=communication"), std::string::npos) << allreduce_line;
  EXPECT_NE(allreduce_line.find("stream comm"), std::string::npos) << allreduce_line;
  const std::string copy_line = dot.substr(dot.find("\"n:copy\" ["));
  EXPECT_NE(copy_line.substr(0, copy_line.find('\n')).find("class=copy"), std::string::npos) << copy_line;
  const std::string relu_line = dot.substr(dot.find("\"n:relu\" ["));
  EXPECT_EQ(relu_line.substr(0, relu_line.find('\n')).find("class="), std::string::npos) << relu_line;
  // Edges carry the value's type; graph inputs and outputs are ellipses.
  EXPECT_NE(dot.find("\"n:relu\" -> \"n:copy\" [label=\"f32[4,8]\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"v:x\" [shape=ellipse"), std::string::npos) << dot;
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

}  // namespace
}  // namespace weir::tools
