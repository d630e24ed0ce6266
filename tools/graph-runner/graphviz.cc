#include "tools/graph-runner/graphviz.h"

#include <map>
#include <sstream>
#include <vector>

namespace weir::tools {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool communicates(const Node& node, const OpRegistry& registry) {
  const OpSchema* schema = registry.find(node.op_type(), node.domain());
  return (schema != nullptr && schema->has(OpTrait::kCollective)) || node.op_type().starts_with("Ps");
}

std::string node_statement(const Node& node, const OpRegistry& registry) {
  std::string label = escape(node.op_type()) + "\\n" + escape(node.name());
  if (!node.stream().empty()) label += "\\nstream " + escape(node.stream());
  std::string style;
  if (communicates(node, registry)) {
    style = ", shape=hexagon, style=filled, fillcolor=orange, class=communication";
  } else if (node.op_type() == "DeviceCopy") {
    style = ", style=filled, fillcolor=lightgrey, class=copy";
  }
  return "\"n:" + escape(node.name()) + "\" [label=\"" + label + "\"" + style + "];\n";
}

}  // namespace

std::string graphviz(const Graph& graph, const OpRegistry& registry) {
  std::ostringstream dot;
  dot << "digraph \"" << escape(graph.name()) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const Value* input : graph.inputs()) {
    dot << "  \"v:" << escape(input->name()) << "\" [shape=ellipse, label=\"" << escape(input->name()) << "\\n"
        << escape(input->type().to_string()) << "\"];\n";
  }
  // Nodes grouped by device, each group a cluster; a std::map keeps the
  // clusters in device order, so the text is the same on every run.
  const std::vector<Node*> nodes = graph.nodes();
  std::map<std::string, std::vector<const Node*>> by_device;
  for (const Node* node : nodes) {
    if (node->device().has_value()) {
      by_device[node->device()->to_string()].push_back(node);
    } else {
      dot << "  " << node_statement(*node, registry);
    }
  }
  int cluster = 0;
  for (const auto& [device, members] : by_device) {
    dot << "  subgraph cluster_" << cluster++ << " {\n    label=\"" << escape(device) << "\";\n    style=rounded;\n";
    for (const Node* node : members) dot << "    " << node_statement(*node, registry);
    dot << "  }\n";
  }
  for (const Node* node : nodes) {
    for (const Value* input : node->inputs()) {
      if (input == nullptr) continue;
      if (input->producer() != nullptr) {
        dot << "  \"n:" << escape(input->producer()->name()) << "\" -> \"n:" << escape(node->name()) << "\" [label=\""
            << escape(input->type().to_string()) << "\"];\n";
      } else if (input->kind() == ValueKind::kInput) {
        dot << "  \"v:" << escape(input->name()) << "\" -> \"n:" << escape(node->name()) << "\";\n";
      }
    }
    for (const Node* control : node->control_inputs()) {
      dot << "  \"n:" << escape(control->name()) << "\" -> \"n:" << escape(node->name()) << "\" [style=dashed];\n";
    }
  }
  for (const Value* output : graph.outputs()) {
    dot << "  \"out:" << escape(output->name()) << "\" [shape=ellipse, label=\"" << escape(output->name()) << "\\n"
        << escape(output->type().to_string()) << "\"];\n";
    if (output->producer() != nullptr) {
      dot << "  \"n:" << escape(output->producer()->name()) << "\" -> \"out:" << escape(output->name()) << "\";\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace weir::tools
