#include "passes/collectives/data_parallel.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "passes/graph_match.h"

namespace weir {
namespace {

std::string replica_prefix(size_t r) { return r == 0 ? std::string() : "replica" + std::to_string(r) + "/"; }

// `name` when no node or value has it yet, else a numbered variant.
std::string fresh_name(Graph& graph, const std::string& name) {
  return graph.find_node(name) == nullptr && graph.find_value(name) == nullptr ? name : graph.unique_name(name);
}

bool has_trait(const Node& node, const OpRegistry& registry, OpTrait trait) {
  const OpSchema* schema = registry.find(node.op_type(), node.domain());
  return schema != nullptr && schema->has(trait);
}

Value* find_or_throw(const Graph& graph, const std::string& name, const char* what) {
  Value* value = graph.find_value(name);
  if (value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, std::string("data-parallel rewrite: the ") + what + " '" + name +
                                                 "' is not a value of graph '" + graph.name() + "'");
  }
  return value;
}

class Rewrite {
 public:
  Rewrite(Graph& graph, const DataParallelOptions& options, const OpRegistry& registry)
      : graph_(graph), options_(options), registry_(registry), replicas_(options.devices.size()) {}

  DataParallelResult run() {
    check_devices();
    Value* loss = find_or_throw(graph_, options_.loss, "loss");
    if (!loss->shape().has_rank() || loss->shape().rank() != 0) {
      throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: the loss '" + loss->name() +
                                                   "' must be a scalar, it is " + loss->type().to_string());
    }
    std::vector<Value*> gradients;
    std::vector<const Value*> roots = {loss};
    for (const std::string& name : options_.gradients) {
      gradients.push_back(find_or_throw(graph_, name, "gradient"));
      roots.push_back(gradients.back());
    }
    replicated_ = nodes_feeding(roots, /*through_control=*/true);
    for (Node* node : graph_.topological_order()) {
      if (replicated_.count(node)) {
        order_.push_back(node);
      } else {
        tail_.push_back(node);
      }
    }
    for (const Node* node : order_) check_replicable(*node);

    split_batch_inputs();
    clone_replicas();
    for (Value* gradient : gradients) average_gradient(gradient);
    combine_outputs(loss);
    order_tail();

    DataParallelResult result;
    result.replicas = static_cast<int>(replicas_);
    result.replicated_nodes = static_cast<int>(order_.size());
    result.allreduces = allreduces_;
    result.batch_inputs = batch_input_names_;
    return result;
  }

 private:
  void check_devices() const {
    if (replicas_ == 0) throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: no devices given");
    for (size_t i = 0; i < replicas_; ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (options_.devices[i] == options_.devices[j]) {
          throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: device " +
                                                       options_.devices[i].to_string() + " is listed twice");
        }
      }
    }
  }

  void check_replicable(const Node& node) const {
    if (has_trait(node, registry_, OpTrait::kCollective)) {
      throw Error(ErrorKind::kUnsupported, "data-parallel rewrite: node '" + node.name() + "' (" + node.op_type() +
                                               ") communicates already; the graph must be one replica's step")
          .with_node(node.name());
    }
    if (has_trait(node, registry_, OpTrait::kSideEffects)) {
      throw Error(ErrorKind::kUnsupported, "data-parallel rewrite: node '" + node.name() + "' (" + node.op_type() +
                                               ") has side effects but the loss or a gradient depends on it, so "
                                               "every replica would run it; state may be written only after the "
                                               "gradients (the optimizer updates, Assign)")
          .with_node(node.name());
    }
  }

  // The uses of `value` by nodes inside (or outside) the replicated part,
  // taken before new readers are added, and pointing them elsewhere.
  std::vector<Use> uses_of(const Value* value, bool inside) const {
    std::vector<Use> uses;
    for (const Use& use : value->uses()) {
      if ((replicated_.count(use.node) != 0) == inside) uses.push_back(use);
    }
    return uses;
  }
  static void redirect(const std::vector<Use>& uses, Value* to) {
    for (const Use& use : uses) use.node->set_input(static_cast<size_t>(use.input_index), to);
  }

  bool read_by_replica(const Value* value) const {
    return std::any_of(value->uses().begin(), value->uses().end(),
                       [&](const Use& use) { return replicated_.count(use.node) != 0; });
  }

  // Each batch input takes replicas * b rows; replica r reads its rows
  // through a Slice on its own device.
  void split_batch_inputs() {
    std::vector<Value*> inputs;
    if (options_.batch_inputs.empty()) {
      for (Value* input : graph_.inputs()) {
        if (input->shape().has_rank() && input->shape().rank() >= 1 && read_by_replica(input)) inputs.push_back(input);
      }
    } else {
      for (const std::string& name : options_.batch_inputs) {
        Value* input = find_or_throw(graph_, name, "batch input");
        if (std::find(graph_.inputs().begin(), graph_.inputs().end(), input) == graph_.inputs().end()) {
          throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: the batch input '" + name +
                                                       "' is not a graph input");
        }
        inputs.push_back(input);
      }
    }
    for (Value* input : inputs) {
      const Shape& shape = input->shape();
      if (!shape.has_rank() || shape.rank() < 1 || !shape[0].is_static()) {
        throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: the batch input '" + input->name() +
                                                     "' needs a static first dim (the per-replica batch), it is " +
                                                     input->type().to_string());
      }
      const int64_t rows = shape[0].size();
      if (replica_rows_ < 0) replica_rows_ = rows;
      Shape whole = shape;
      whole[0] = Dim(rows * static_cast<int64_t>(replicas_));
      input->set_type({input->dtype(), whole});
      Value* axes = graph_.add_constant(fresh_name(graph_, input->name() + "/dp_axes"),
                                        Tensor::from_vector<int64_t>({0}, {1}));
      for (size_t r = 0; r < replicas_; ++r) {
        const auto begin = static_cast<int64_t>(r) * rows;
        Value* starts = graph_.add_constant(fresh_name(graph_, replica_prefix(r) + input->name() + "/dp_start"),
                                            Tensor::from_vector<int64_t>({begin}, {1}));
        Value* ends = graph_.add_constant(fresh_name(graph_, replica_prefix(r) + input->name() + "/dp_end"),
                                          Tensor::from_vector<int64_t>({begin + rows}, {1}));
        Node* slice = graph_.add_node("Slice", {input, starts, ends, axes}, 1, {},
                                      fresh_name(graph_, replica_prefix(r) + input->name() + "/dp_shard"));
        slice->set_device(options_.devices[r]);
        infer_node_types(*slice, registry_);
        value_map_[r][input] = slice->output(0);
      }
      // Replica 0 (the original nodes) reads its shard; the clones map that shard to theirs.
      Value* first_shard = value_map_[0][input];
      redirect(uses_of(input, /*inside=*/true), first_shard);
      for (size_t r = 1; r < replicas_; ++r) value_map_[r][first_shard] = value_map_[r][input];
      batch_input_names_.push_back(input->name());
    }
  }

  Value* mapped(size_t r, Value* value) const {
    if (value == nullptr) return nullptr;
    auto it = value_map_[r].find(value);
    return it == value_map_[r].end() ? value : it->second;
  }

  void clone_replicas() {
    for (Node* node : order_) node->set_device(options_.devices[0]);
    for (size_t r = 1; r < replicas_; ++r) {
      const std::string prefix = replica_prefix(r);
      for (Node* original : order_) {
        std::vector<Value*> inputs;
        for (Value* input : original->inputs()) inputs.push_back(mapped(r, input));
        std::vector<Value*> outputs;
        for (Value* out : original->outputs()) {
          outputs.push_back(out != nullptr ? graph_.add_value(fresh_name(graph_, prefix + out->name()), out->type())
                                           : nullptr);
        }
        std::map<std::string, Attribute> attributes = original->attributes();
        const OpSchema* schema = registry_.find(original->op_type(), original->domain());
        if (schema != nullptr && schema->find_attr("seed") != nullptr) {
          // Another stream of random numbers per replica; 0 is the op's default seed.
          const int64_t seed = original->has_attr("seed") ? original->attr("seed").i() : 0;
          attributes["seed"] = Attribute(static_cast<int64_t>(static_cast<uint64_t>(seed) ^
                                                              (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(r))));
        }
        Node* clone = graph_.add_node_with_outputs(original->op_type(), inputs, outputs, std::move(attributes),
                                                   fresh_name(graph_, prefix + original->name()));
        clone->set_domain(original->domain());
        clone->set_device(options_.devices[r]);
        clone->set_stream(original->stream());
        for (Node* control : original->control_inputs()) clone->add_control_input(clone_of_[r - 1].at(control));
        clone_of_[r - 1][original] = clone;
        clones_.insert(clone);
        for (size_t o = 0; o < outputs.size(); ++o) {
          if (outputs[o] != nullptr) value_map_[r][original->output(o)] = outputs[o];
        }
      }
    }
  }

  // One AllReduce of `value` per replica, under one tag; returns replica 0's.
  Node* all_reduce(Value* value, const std::string& tag, Value* output0) {
    Node* first = nullptr;
    for (size_t r = 0; r < replicas_; ++r) {
      std::map<std::string, Attribute> attributes = {{"reduction", Attribute(std::string("avg"))},
                                                     {"tag", Attribute(tag)}};
      std::string name = fresh_name(graph_, replica_prefix(r) + value->name() + "/allreduce");
      Node* node = r == 0 && output0 != nullptr
                       ? graph_.add_node_with_outputs("AllReduce", {value}, {output0}, std::move(attributes), name)
                       : graph_.add_node("AllReduce", {mapped(r, value)}, 1, std::move(attributes), name);
      node->set_device(options_.devices[r]);
      infer_node_types(*node, registry_);
      ++allreduces_;
      if (r == 0) first = node;
    }
    return first;
  }

  void average_gradient(Value* gradient) {
    if (gradient->producer() == nullptr || !replicated_.count(gradient->producer())) return;  // the same everywhere
    std::vector<Use> tail_uses = uses_of(gradient, /*inside=*/false);
    redirect(tail_uses, all_reduce(gradient, "dp/grad/" + gradient->name(), nullptr)->output(0));
  }

  // The loss and the other graph outputs that replicas compute keep their
  // names: the replicas' values are averaged (scalars) or concatenated
  // (b rows), and replica 0's own value is renamed.
  void combine_outputs(Value* loss) {
    std::vector<Value*> combined = {loss};
    for (Value* out : graph_.outputs()) {
      if (out->producer() != nullptr && replicated_.count(out->producer()) &&
          std::find(combined.begin(), combined.end(), out) == combined.end()) {
        combined.push_back(out);
      }
    }
    for (Value* value : combined) {
      const std::string name = value->name();
      const Shape& shape = value->shape();
      const bool scalar = shape.has_rank() && shape.rank() == 0;
      const bool rows = !scalar && shape.has_rank() && shape[0].is_static() && shape[0].size() == replica_rows_;
      if (!scalar && !rows) {
        throw Error(ErrorKind::kUnsupported, "data-parallel rewrite: cannot combine the replicas' graph output '" +
                                                 name + "' (" + value->type().to_string() +
                                                 "): only scalars (averaged) and per-example rows (concatenated)");
      }
      std::vector<Use> tail_uses = uses_of(value, /*inside=*/false);
      graph_.rename_value(value, fresh_name(graph_, name + "/replica0"));
      Value* whole = graph_.add_value(name, value->type());
      if (scalar) {
        all_reduce(value, "dp/output/" + name, whole);
      } else {
        std::vector<Value*> parts;
        for (size_t r = 0; r < replicas_; ++r) parts.push_back(mapped(r, value));
        Node* concat = graph_.add_node_with_outputs("Concat", parts, {whole}, {{"axis", Attribute(int64_t{0})}},
                                                    fresh_name(graph_, name + "/dp_concat"));
        concat->set_device(options_.devices[0]);
        infer_node_types(*concat, registry_);
      }
      redirect(tail_uses, whole);
      for (size_t i = 0; i < graph_.outputs().size(); ++i) {
        if (graph_.outputs()[i] == value) graph_.set_output(i, whole);
      }
    }
  }

  // The tail runs once, on devices[0]. It waits for what it waited for in
  // every replica, and a tail node that writes a persistent value (an
  // update, an Assign) waits for every replica's readers of it, so no
  // replica reads this step's state after it changed.
  void order_tail() {
    for (Node* node : tail_) {
      node->set_device(options_.devices[0]);
      std::vector<Node*> controls = node->control_inputs();
      for (Node* control : controls) {
        if (!replicated_.count(control)) continue;
        for (size_t r = 1; r < replicas_; ++r) node->add_control_input(clone_of_[r - 1].at(control));
      }
      if (!has_trait(*node, registry_, OpTrait::kSideEffects)) continue;
      for (Value* input : node->inputs()) {
        if (input == nullptr || !input->is_persistent()) continue;
        std::vector<Use> uses = input->uses();
        for (const Use& use : uses) {
          if (replicated_.count(use.node) || clones_.count(use.node)) node->add_control_input(use.node);
        }
      }
    }
  }

  Graph& graph_;
  const DataParallelOptions& options_;
  const OpRegistry& registry_;
  size_t replicas_;
  std::unordered_set<const Node*> replicated_;
  std::vector<Node*> order_;  // the replicated nodes, topologically
  std::vector<Node*> tail_;
  std::unordered_set<const Node*> clones_;
  std::vector<std::unordered_map<const Value*, Value*>> value_map_ = std::vector<std::unordered_map<const Value*, Value*>>(replicas_);
  std::vector<std::unordered_map<const Node*, Node*>> clone_of_ =
      std::vector<std::unordered_map<const Node*, Node*>>(replicas_ > 0 ? replicas_ - 1 : 0);
  std::vector<std::string> batch_input_names_;
  int64_t replica_rows_ = -1;  // the per-replica batch (first dim of the batch inputs); -1: none
  int allreduces_ = 0;
};

}  // namespace

DataParallelResult apply_data_parallel(Graph& graph, const DataParallelOptions& options, const OpRegistry& registry) {
  return Rewrite(graph, options, registry).run();
}

bool DataParallel::run(Graph& graph, PassContext& context) {
  result_ = apply_data_parallel(graph, options_, context.registry());
  return true;
}

}  // namespace weir
