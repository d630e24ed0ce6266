#include "core/verifier.h"

#include <limits>
#include <unordered_map>

#include "core/error.h"

namespace weir {

namespace {

class GraphVerifier {
 public:
  GraphVerifier(const Graph& graph, const OpRegistry& registry, const VerifyOptions& options)
      : graph_(graph), registry_(registry), options_(options) {}

  void run() {
    for (const Value* value : graph_.constants()) check_constant(value);
    for (const Value* value : graph_.persistents()) check_persistent(value);
    for (const Node* node : graph_.nodes()) check_node(*node);
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const Value* output = graph_.outputs()[i];
      if (!is_defined(output)) {
        fail_graph("graph output " + std::to_string(i) + " '" + output->name() +
                   "' is not produced by any node and is not an input, constant or persistent value");
      }
    }
    graph_.topological_order();  // throws on a cycle, naming a node on it
  }

 private:
  [[noreturn]] void fail(const Node& node, const std::string& message) const {
    throw Error(ErrorKind::kInvalidGraph, message).with_node(node.name());
  }
  [[noreturn]] void fail_graph(const std::string& message) const {
    throw Error(ErrorKind::kInvalidGraph, "graph '" + graph_.name() + "': " + message);
  }

  bool is_defined(const Value* value) const {
    if (value == nullptr || value->graph() != &graph_) return false;
    if (value->kind() != ValueKind::kIntermediate) return true;
    return value->producer() != nullptr;
  }

  void check_constant(const Value* value) const {
    const Tensor& data = value->data();
    TensorType actual = data.type();
    if (!data.defined() || !(actual == value->type())) {
      fail_graph("constant '" + value->name() + "' is declared " + value->type().to_string() +
                 " but holds " + (data.defined() ? actual.to_string() : std::string("no tensor")));
    }
  }

  void check_persistent(const Value* value) const {
    const Tensor& data = value->data();
    if (data.defined() && !types_compatible(value->type(), data.type())) {
      fail_graph("persistent value '" + value->name() + "' is declared " +
                 value->type().to_string() + " but its initial tensor is " + data.type_string());
    }
    if (options_.require_types && !value->type().is_known()) {
      fail_graph("persistent value '" + value->name() + "' has no known type");
    }
  }

  void check_node(const Node& node) {
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      const Value* input = node.input(i);
      if (input != nullptr && !is_defined(input)) {
        fail(node, "input " + std::to_string(i) + " '" + input->name() +
                       "' is not produced by any node and is not an input, constant or "
                       "persistent value of graph '" + graph_.name() + "'");
      }
    }
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      const Value* output = node.output(i);
      if (output->producer() != &node) {
        fail(node, "output " + std::to_string(i) + " '" + output->name() +
                       "' has two producers: this node and '" +
                       (output->producer() ? output->producer()->name() : std::string("?")) + "'");
      }
      if (output->kind() != ValueKind::kIntermediate) {
        fail(node, "output '" + output->name() + "' is a " +
                       std::string(value_kind_name(output->kind())) +
                       " value; nodes may only produce intermediate values");
      }
      if (options_.require_types && !output->type().is_known()) {
        fail(node, "output '" + output->name() + "' has no known type");
      }
    }
    check_subgraphs(node);

    const OpSchema* schema = registry_.find(node.op_type(), node.domain());
    if (schema == nullptr) {
      if (options_.allow_unknown_ops) return;
      fail(node, "unknown op type '" + node.op_type() + "'" +
                     (node.domain().empty() ? "" : " in domain '" + node.domain() + "'"));
    }
    check_arity(node, *schema);
    check_attributes(node, *schema);
    check_type_constraints(node, *schema);
    check_inferred_types(node, *schema);
  }

  void check_subgraphs(const Node& node) const {
    for (const auto& [name, attribute] : node.attributes()) {
      std::vector<GraphPtr> graphs;
      if (attribute.type() == AttrType::kGraph) graphs.push_back(attribute.g());
      if (attribute.type() == AttrType::kGraphs) graphs = attribute.graphs();
      for (const GraphPtr& sub : graphs) {
        if (!sub) fail(node, "sub-graph attribute '" + name + "' is empty");
        try {
          GraphVerifier(*sub, registry_, options_).run();
        } catch (const Error& e) {
          std::string where = e.node().empty() ? "" : "node '" + e.node() + "': ";
          throw Error(e.kind(), "in sub-graph attribute '" + name + "': " + where + e.message())
              .with_node(node.name());
        }
      }
    }
  }

  void check_arity(const Node& node, const OpSchema& schema) const {
    auto range = [](size_t lo, size_t hi) {
      if (hi == std::numeric_limits<size_t>::max()) return "at least " + std::to_string(lo);
      if (lo == hi) return std::to_string(lo);
      return std::to_string(lo) + " to " + std::to_string(hi);
    };
    if (node.num_inputs() < schema.min_inputs() || node.num_inputs() > schema.max_inputs()) {
      fail(node, node.op_type() + " takes " + range(schema.min_inputs(), schema.max_inputs()) +
                     " inputs, got " + std::to_string(node.num_inputs()));
    }
    if (node.num_outputs() < schema.min_outputs() || node.num_outputs() > schema.max_outputs()) {
      fail(node, node.op_type() + " has " + range(schema.min_outputs(), schema.max_outputs()) +
                     " outputs, got " + std::to_string(node.num_outputs()));
    }
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      if (node.input(i) == nullptr && schema.input_param(i).arity != Arity::kOptional) {
        fail(node, node.op_type() + " input " + std::to_string(i) + " '" +
                       schema.input_param(i).name + "' is required but absent");
      }
    }
  }

  void check_attributes(const Node& node, const OpSchema& schema) const {
    for (const auto& [name, attribute] : node.attributes()) {
      const AttributeSpec* spec = schema.find_attr(name);
      if (spec == nullptr) fail(node, node.op_type() + " has no attribute '" + name + "'");
      if (spec->type != attribute.type()) {
        fail(node, "attribute '" + name + "' of " + node.op_type() + " must be " +
                       std::string(attr_type_name(spec->type)) + ", got " +
                       std::string(attr_type_name(attribute.type())));
      }
    }
    for (const AttributeSpec& spec : schema.attributes()) {
      if (spec.required && !node.has_attr(spec.name)) {
        fail(node, node.op_type() + " needs attribute '" + spec.name + "'");
      }
    }
  }

  void check_type_constraints(const Node& node, const OpSchema& schema) const {
    std::unordered_map<std::string, std::pair<DType, std::string>> bound;  // param -> (dtype, who bound it)
    auto check = [&](const FormalParameter& param, const Value* value, const std::string& role) {
      if (value == nullptr || param.type_param.empty() || value->dtype() == DType::kUndefined) return;
      auto constraint = schema.type_constraints().find(param.type_param);
      if (constraint != schema.type_constraints().end()) {
        bool allowed = false;
        std::string names;
        for (DType dtype : constraint->second) {
          allowed = allowed || dtype == value->dtype();
          names += (names.empty() ? "" : ", ") + std::string(dtype_name(dtype));
        }
        if (!allowed) {
          fail(node, role + " '" + value->name() + "' of " + node.op_type() + " is " +
                         std::string(dtype_name(value->dtype())) + "; " + param.type_param +
                         " allows " + names);
        }
      }
      auto [it, inserted] = bound.emplace(param.type_param, std::make_pair(value->dtype(), value->name()));
      if (!inserted && it->second.first != value->dtype()) {
        fail(node, role + " '" + value->name() + "' is " + std::string(dtype_name(value->dtype())) +
                       " but '" + it->second.second + "' is " +
                       std::string(dtype_name(it->second.first)) + "; both are type " +
                       param.type_param + " of " + node.op_type());
      }
    };
    for (size_t i = 0; i < node.num_inputs(); ++i) check(schema.input_param(i), node.input(i), "input");
    for (size_t i = 0; i < node.num_outputs(); ++i) check(schema.output_param(i), node.output(i), "output");
  }

  void check_inferred_types(const Node& node, const OpSchema& schema) const {
    std::vector<TensorType> inferred = infer_output_types(node, schema);
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      const TensorType& declared = node.output(i)->type();
      if (!types_compatible(declared, inferred[i])) {
        fail(node, "output " + std::to_string(i) + " '" + node.output(i)->name() +
                       "' is declared " + declared.to_string() + " but " + node.op_type() +
                       " infers " + inferred[i].to_string() + " from its inputs");
      }
    }
  }

  const Graph& graph_;
  const OpRegistry& registry_;
  const VerifyOptions& options_;
};

}  // namespace

void verify_graph(const Graph& graph, const OpRegistry& registry, const VerifyOptions& options) {
  GraphVerifier(graph, registry, options).run();
}

}  // namespace weir
