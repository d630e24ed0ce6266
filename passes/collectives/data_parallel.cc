#include "passes/collectives/data_parallel.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/dtype.h"
#include "core/error.h"
#include "core/type_inference.h"
#include "passes/graph_match.h"

namespace weir {
namespace {

Value* find_or_throw(const Graph& graph, const std::string& name, const char* what) {
  Value* value = graph.find_value(name);
  if (value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, std::string("data-parallel rewrite: the ") + what + " '" + name +
                                                 "' is not a value of graph '" + graph.name() + "'");
  }
  return value;
}

// `name` when no node or value has it yet, else a numbered variant.
std::string fresh_name(Graph& graph, const std::string& name) {
  return graph.find_node(name) == nullptr && graph.find_value(name) == nullptr ? name : graph.unique_name(name);
}

class Rewrite {
 public:
  Rewrite(Graph& graph, const DataParallelOptions& options, const OpRegistry& registry)
      : graph_(graph), options_(options), registry_(registry) {}

  DataParallelResult run() {
    Value* loss = find_or_throw(graph_, options_.loss, "loss");
    if (!loss->shape().has_rank() || loss->shape().rank() != 0) {
      throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: the loss '" + loss->name() +
                                                   "' must be a scalar, it is " + loss->type().to_string());
    }
    std::vector<const Value*> roots = {loss};
    for (const std::string& name : options_.gradients) roots.push_back(find_or_throw(graph_, name, "gradient"));
    std::set<const Value*> local;
    for (const std::string& name : options_.local_gradients) {
      Value* gradient = find_or_throw(graph_, name, "local gradient");
      local.insert(gradient);
      roots.push_back(gradient);
    }
    std::vector<Value*> shards;
    for (const std::string& name : options_.shard_gradients) {
      Value* gradient = find_or_throw(graph_, name, "shard gradient");
      local.insert(gradient);
      roots.push_back(gradient);
      shards.push_back(gradient);
    }
    if (!shards.empty() && options_.ranks < 1) {
      throw Error(ErrorKind::kInvalidArgument, "data-parallel rewrite: shard gradients need the world's size, got " +
                                                   std::to_string(options_.ranks));
    }
    per_rank_ = nodes_feeding(roots, /*through_control=*/true);
    for (const Node* node : per_rank_) check_per_rank(*node);

    // What crosses from the per-rank part to the tail, and the scalar graph
    // outputs of the per-rank part, in graph order.
    std::vector<Value*> crossing;
    for (Node* node : graph_.topological_order()) {
      if (!per_rank_.count(node)) continue;
      for (Value* out : node->outputs()) {
        if (out == nullptr || local.count(out)) continue;
        if (!tail_uses(out).empty() || is_scalar_output(out)) crossing.push_back(out);
      }
    }
    DataParallelResult result;
    result.rank_nodes = static_cast<int>(per_rank_.size());
    for (Value* value : crossing) {
      average(value);
      result.averaged.push_back(value->name());
      if (value->shape().is_static()) {
        result.allreduce_bytes += value->shape().num_elements() * static_cast<int64_t>(dtype_size(value->dtype()));
      }
    }
    result.allreduces = static_cast<int>(crossing.size());
    for (Value* gradient : shards) divide_by_ranks(gradient);
    return result;
  }

 private:
  void check_per_rank(const Node& node) const {
    const OpSchema* schema = registry_.find(node.op_type(), node.domain());
    const bool rank_local = std::any_of(node.inputs().begin(), node.inputs().end(), [&](const Value* input) {
      return input != nullptr && input->is_persistent() &&
             std::find(options_.rank_local_state.begin(), options_.rank_local_state.end(), input->name()) !=
                 options_.rank_local_state.end();
    });
    // A collective's side effect is its communication, which every rank
    // does alike (the model-parallel head's AllGather, AllReduce and
    // ReduceScatter in the forward pass and their gradients).
    const bool collective = schema != nullptr && schema->has(OpTrait::kCollective);
    if (schema != nullptr && schema->has(OpTrait::kSideEffects) && !rank_local && !collective) {
      throw Error(ErrorKind::kUnsupported, "data-parallel rewrite: node '" + node.name() + "' (" + node.op_type() +
                                               ") has side effects but the loss or a gradient depends on it, so "
                                               "each rank would write its own state from its own share of the "
                                               "batch; state may be written only after the gradients (the "
                                               "optimizer updates, Assign)")
          .with_node(node.name());
    }
  }

  // The uses of `value` by tail nodes.
  std::vector<Use> tail_uses(const Value* value) const {
    std::vector<Use> uses;
    for (const Use& use : value->uses()) {
      if (use.node != nullptr && !per_rank_.count(use.node)) uses.push_back(use);
    }
    return uses;
  }

  bool is_output(const Value* value) const {
    return std::find(graph_.outputs().begin(), graph_.outputs().end(), value) != graph_.outputs().end();
  }
  bool is_scalar_output(const Value* value) const {
    return is_output(value) && value->shape().has_rank() && value->shape().rank() == 0 && is_floating(value->dtype());
  }

  // The tail reads `gradient` / ranks (a Mul by a constant of its dtype).
  void divide_by_ranks(Value* gradient) {
    const std::vector<Use> readers = tail_uses(gradient);
    if (options_.ranks == 1 || readers.empty()) return;
    const DType dtype = gradient->dtype();
    if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
      throw Error(ErrorKind::kUnsupported, "data-parallel rewrite: the shard gradient '" + gradient->name() +
                                               "' is " + gradient->type().to_string() + ", not f32 or f64");
    }
    const double inverse = 1.0 / options_.ranks;
    Tensor factor = dtype == DType::kFloat32 ? Tensor::scalar<float>(static_cast<float>(inverse)) : Tensor::scalar<double>(inverse);
    Value* constant = graph_.add_constant(fresh_name(graph_, gradient->name() + "/world_size_inverse"), factor);
    Value* scaled = graph_.add_value(fresh_name(graph_, gradient->name() + "/over_ranks"), gradient->type());
    Node* mul = graph_.add_node_with_outputs("Mul", {gradient, constant}, {scaled}, {},
                                             fresh_name(graph_, gradient->name() + "/divide_by_ranks"));
    if (gradient->producer() != nullptr && gradient->producer()->device()) mul->set_device(*gradient->producer()->device());
    infer_node_types(*mul, registry_);
    for (const Use& use : readers) use.node->set_input(static_cast<size_t>(use.input_index), scaled);
  }

  // One AllReduce (average) of `value`; the tail and the graph outputs read
  // its result. A graph output keeps its name (the rank's own value becomes
  // "<name>/local"), so the loss is found where it was.
  void average(Value* value) {
    const std::vector<Use> readers = tail_uses(value);
    if (!is_floating(value->dtype())) {
      const std::string reader = readers.empty() ? std::string("?") : readers.back().node->name();
      throw Error(ErrorKind::kUnsupported,
                  "data-parallel rewrite: '" + value->name() + "' (" + value->type().to_string() +
                      ") is computed by each rank from its share of the batch and read by '" + reader +
                      "' after the gradients; only floating-point values can be averaged over the ranks")
          .with_node(readers.empty() ? value->name() : reader);
    }
    const std::string name = value->name();
    const bool output = is_output(value);
    Value* averaged = nullptr;
    if (output) {
      graph_.rename_value(value, fresh_name(graph_, name + "/local"));
      averaged = graph_.add_value(name, value->type());
    } else {
      averaged = graph_.add_value(fresh_name(graph_, name + "/avg"), value->type());
    }
    Node* reduce = graph_.add_node_with_outputs(
        "AllReduce", {value}, {averaged},
        {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute("dp/" + name)}},
        fresh_name(graph_, name + "/allreduce"));
    if (value->producer() != nullptr && value->producer()->device()) reduce->set_device(*value->producer()->device());
    infer_node_types(*reduce, registry_);
    for (const Use& use : readers) use.node->set_input(static_cast<size_t>(use.input_index), averaged);
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      if (graph_.outputs()[i] == value) graph_.set_output(i, averaged);
    }
  }

  Graph& graph_;
  const DataParallelOptions& options_;
  const OpRegistry& registry_;
  std::unordered_set<const Node*> per_rank_;
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
