#include "passes/memory/recompute.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "passes/analysis/flop_estimate.h"
#include "passes/graph_match.h"
#include "passes/memory/recompute_choice.h"

namespace weir {

namespace {

Value* find_loss(const Graph& graph, const std::string& loss) {
  Value* value = graph.find_value(loss);
  if (value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "recompute: the loss '" + loss + "' is not a value of graph '" + graph.name() + "'");
  }
  return value;
}

// Every node reachable from `root` through data and control edges.
std::unordered_set<const Node*> descendants(const Node* root) {
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack = {root};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Value* out : node->outputs()) {
      if (out == nullptr) continue;
      for (const Use& use : out->uses()) {
        if (seen.insert(use.node).second) stack.push_back(use.node);
      }
    }
    for (const Node* next : node->control_outputs()) {
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
  return seen;
}

std::string format_bytes(int64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%lld bytes (%.1f MiB)", static_cast<long long>(bytes), static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

bool recomputable(const Node& node, const OpRegistry& registry) {
  // Communication and writes to persistent state must happen once per step.
  const OpSchema* schema = registry.find(node.op_type(), node.domain());
  return schema != nullptr && !schema->has(OpTrait::kSideEffects) && !schema->has(OpTrait::kCollective);
}

bool views_input(const Node& node, const OpRegistry& registry) {
  const OpSchema* schema = registry.find(node.op_type(), node.domain());
  return schema != nullptr && schema->has(OpTrait::kViewOfInput) && node.num_inputs() > 0;
}

std::vector<std::string> evenly_spaced_checkpoints(const std::vector<std::string>& candidates, int segments) {
  std::vector<std::string> chosen;
  const int m = static_cast<int>(candidates.size());
  for (int j = 1; j < segments; ++j) {
    int index = static_cast<int>(std::lround(static_cast<double>(j) * (m + 1) / segments)) - 1;
    index = std::clamp(index, 0, m - 1);
    if (chosen.empty() || chosen.back() != candidates[index]) chosen.push_back(candidates[index]);
  }
  return chosen;
}

std::vector<std::string> recompute_candidates(const Graph& graph, const std::string& loss_name) {
  const Value* loss = find_loss(graph, loss_name);
  std::unordered_set<const Node*> forward = nodes_feeding(loss);
  std::vector<Node*> order;
  for (Node* node : graph.topological_order()) {
    if (forward.count(node)) order.push_back(node);
  }
  std::unordered_map<const Node*, int> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  // Each activation is alive over [its producer, its last forward reader).
  const int n = static_cast<int>(order.size());
  std::vector<int> count(n + 1, 0);
  std::vector<int64_t> id_sum(n + 1, 0);
  std::vector<const Value*> values;
  for (const Node* node : order) {
    for (const Value* out : node->outputs()) {
      if (out == nullptr || out == loss) continue;
      int last = -1;
      for (const Use& use : out->uses()) {
        auto it = position.find(use.node);
        if (it != position.end()) last = std::max(last, it->second);
      }
      int def = position.at(node);
      if (last <= def) continue;
      values.push_back(out);
      count[def] += 1;
      count[last] -= 1;
      id_sum[def] += static_cast<int64_t>(values.size());
      id_sum[last] -= static_cast<int64_t>(values.size());
    }
  }
  std::vector<std::string> candidates;
  int alive = 0;
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    alive += count[i];
    sum += id_sum[i];
    if (alive != 1) continue;
    const Value* only = values[static_cast<size_t>(sum - 1)];
    if (candidates.empty() || candidates.back() != only->name()) candidates.push_back(only->name());
  }
  return candidates;
}

int apply_recompute(Graph& graph, const std::string& loss_name, const std::vector<std::string>& checkpoints,
                    const OpRegistry& registry, int64_t* recomputed_flops) {
  if (recomputed_flops != nullptr) *recomputed_flops = 0;
  Value* loss = find_loss(graph, loss_name);
  std::unordered_set<const Node*> forward = nodes_feeding(loss);
  std::unordered_set<const Value*> kept = {loss};
  for (const Value* out : graph.outputs()) kept.insert(out);
  for (const std::string& name : checkpoints) {
    const Value* value = graph.find_value(name);
    if (value == nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "recompute: checkpoint '" + name + "' is not a value of graph '" + graph.name() + "'");
    }
    if (value->producer() == nullptr || !forward.count(value->producer())) {
      throw Error(ErrorKind::kInvalidArgument, "recompute: checkpoint '" + name +
                                                   "' is not computed by the forward graph (the nodes the loss '" +
                                                   loss_name + "' depends on)");
    }
    kept.insert(value);
  }
  // A view of an available value is available: keeping it costs no memory.
  auto available = [&](const Value* v) {
    while (true) {
      const Node* producer = v->producer();
      if (producer == nullptr || !forward.count(producer) || kept.count(v) || !recomputable(*producer, registry)) return true;
      if (v->producer_output() != 0 || !views_input(*producer, registry) || producer->input(0) == nullptr) return false;
      v = producer->input(0);
    }
  };

  struct Read {
    Node* node;
    size_t index;
    Value* value;
  };
  std::vector<Read> backward_reads;
  for (Node* node : graph.nodes()) {
    // Writers of state (running statistics' Assign) keep reading the forward values.
    if (forward.count(node) || !recomputable(*node, registry)) continue;
    for (size_t i = 0; i < node->num_inputs(); ++i) {
      Value* input = node->input(i);
      if (input != nullptr && !available(input)) backward_reads.push_back({node, i, input});
    }
  }
  if (backward_reads.empty()) return 0;

  std::unordered_map<const Node*, Node*> clone_of;
  std::unordered_set<const Node*> clones;
  std::vector<Node*> clone_list;
  std::function<Value*(Value*)> recompute = [&](Value* value) -> Value* {
    if (available(value)) return value;
    Node* original = value->producer();
    auto it = clone_of.find(original);
    if (it == clone_of.end()) {
      std::vector<Value*> inputs;
      for (Value* input : original->inputs()) inputs.push_back(input != nullptr ? recompute(input) : nullptr);
      std::string name = graph.unique_name(original->name() + "/recompute");
      std::vector<Value*> outputs;
      for (size_t o = 0; o < original->num_outputs(); ++o) {
        Value* out = original->output(o);
        outputs.push_back(out != nullptr ? graph.add_value(graph.unique_name(out->name() + "/recompute"), out->type()) : nullptr);
      }
      Node* clone = graph.add_node_with_outputs(original->op_type(), inputs, outputs, original->attributes(), name);
      clone->set_domain(original->domain());
      clone->set_device(original->device());
      clone->set_stream(original->stream());
      for (Node* control : original->control_inputs()) clone->add_control_input(control);
      it = clone_of.emplace(original, clone).first;
      clones.insert(clone);
      clone_list.push_back(clone);
    }
    return it->second->output(static_cast<size_t>(value->producer_output()));
  };
  for (const Read& read : backward_reads) read.node->set_input(read.index, recompute(read.value));

  // Each chain of clones starts when the backward pass reaches it: its roots
  // wait for the gradients that the chain's backward readers take from
  // outside it (never one that itself waits on the chain), and for every
  // other backward reader of the chain those gradients come from (the weight
  // gradients beside the data-gradient path), so that the previous chain's
  // memory is free for this one.
  struct Chain {
    Node* root;
    std::unordered_set<Node*> readers;   // backward nodes reading the chain
    std::unordered_set<Node*> triggers;  // producers of the readers' other inputs
  };
  std::vector<Chain> chains;
  for (Node* root : clone_list) {
    bool is_root = std::none_of(root->inputs().begin(), root->inputs().end(),
                                [&](const Value* v) { return v != nullptr && v->producer() != nullptr && clones.count(v->producer()); });
    if (!is_root) continue;
    Chain chain{root, {}, {}};
    std::unordered_set<const Node*> in_chain = {root};
    std::vector<const Node*> stack = {root};
    while (!stack.empty()) {
      const Node* node = stack.back();
      stack.pop_back();
      for (const Value* out : node->outputs()) {
        if (out == nullptr) continue;
        for (const Use& use : out->uses()) {
          if (clones.count(use.node)) {
            if (in_chain.insert(use.node).second) stack.push_back(use.node);
          } else {
            chain.readers.insert(use.node);
          }
        }
      }
    }
    for (Node* reader : chain.readers) {
      for (Value* input : reader->inputs()) {
        Node* producer = input != nullptr ? input->producer() : nullptr;
        if (producer != nullptr && !forward.count(producer) && !clones.count(producer)) chain.triggers.insert(producer);
      }
    }
    chains.push_back(std::move(chain));
  }
  std::unordered_map<const Node*, std::vector<size_t>> chains_read_by;  // backward node -> chains it reads
  for (size_t c = 0; c < chains.size(); ++c) {
    for (const Node* reader : chains[c].readers) chains_read_by[reader].push_back(c);
  }
  for (Chain& chain : chains) {
    // The backward nodes before the triggers; every chain one of them reads
    // is finished with (all its readers) before this one starts.
    std::unordered_set<Node*> waits = chain.triggers;
    std::unordered_set<const Node*> before;
    std::vector<const Node*> stack(chain.triggers.begin(), chain.triggers.end());
    while (!stack.empty()) {
      const Node* node = stack.back();
      stack.pop_back();
      if (forward.count(node) || clones.count(node) || !before.insert(node).second) continue;
      for (const Value* input : node->inputs()) {
        if (input != nullptr && input->producer() != nullptr) stack.push_back(input->producer());
      }
      for (const Node* control : node->control_inputs()) stack.push_back(control);
    }
    for (const Node* node : before) {
      auto it = chains_read_by.find(node);
      if (it == chains_read_by.end()) continue;
      for (size_t other : it->second) waits.insert(chains[other].readers.begin(), chains[other].readers.end());
    }
    std::unordered_set<const Node*> after_root = descendants(chain.root);
    for (Node* wait : waits) {
      if (wait != chain.root && !after_root.count(wait)) chain.root->add_control_input(wait);
    }
  }
  // A clone that reads a parameter runs before the parameter's update.
  for (Node* clone : clone_list) {
    for (Value* input : clone->inputs()) {
      if (input == nullptr || !input->is_persistent()) continue;
      for (const Use& use : input->uses()) {
        if (use.node == clone || clones.count(use.node)) continue;
        const OpSchema* schema = registry.find(use.node->op_type(), use.node->domain());
        if (schema != nullptr && schema->has(OpTrait::kSideEffects)) use.node->add_control_input(clone);
      }
    }
  }
  // One in-order stream for the step: the memory plan may then count on the
  // order (a clone's buffer reuses what the previous segment freed) instead
  // of only on dependencies, which leave the weight-gradient branches
  // unordered. Training runs one step at a time on one inter-op thread by
  // default, so nothing is lost; kernels keep their intra-op threads.
  for (Node* node : graph.nodes()) {
    const OpSchema* schema = registry.find(node->op_type(), node->domain());
    if (node->stream().empty() && (schema == nullptr || !schema->has(OpTrait::kCollective))) node->set_stream(kRecomputeStream);
  }
  infer_graph_types(graph, registry);
  if (recomputed_flops != nullptr) {
    for (const Node* clone : clone_list) *recomputed_flops += estimated_flops(*clone);
  }
  return static_cast<int>(clones.size());
}

bool Recompute::run(Graph& graph, PassContext& context) {
  const OpRegistry& registry = context.registry();
  chosen_.clear();
  recomputed_ = 0;
  recomputed_flops_ = forward_flops_ = 0;
  peak_before_ = peak_after_ = budget_ = 0;
  evaluations_ = 0;
  if (options_.memory_budget > 0 && !options_.estimate_peak) {
    throw Error(ErrorKind::kInvalidArgument, "recompute: a memory budget needs a peak estimator (estimate_peak)");
  }
  {
    const Value* loss = find_loss(graph, options_.loss);
    for (const Node* node : nodes_feeding(loss)) forward_flops_ += estimated_flops(*node);
  }
  // The estimator may place the graph it is given: it gets a copy.
  auto peak_of = [&](const Graph& g) { return options_.estimate_peak(*g.clone()); };
  if (options_.estimate_peak) peak_before_ = peak_of(graph);

  if (!options_.automatic) {
    chosen_ = options_.checkpoints;
  } else if (!options_.estimate_peak) {
    std::vector<std::string> candidates = recompute_candidates(graph, options_.loss);
    if (candidates.empty()) return false;
    const int m = static_cast<int>(candidates.size());
    chosen_ = evenly_spaced_checkpoints(candidates, std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(m))))));
  } else {
    const bool explicit_budget = options_.memory_budget > 0;
    budget_ = explicit_budget ? options_.memory_budget : options_.segments_only ? 0 : peak_before_ / kDefaultBudgetDivisor;
    if (peak_before_ <= budget_) {
      peak_after_ = peak_before_;
      return false;  // fits as it is: nothing to recompute
    }
    auto evaluate = [&](const std::vector<std::string>& checkpoints) {
      RecomputeTrial trial;
      trial.checkpoints = checkpoints;
      std::unique_ptr<Graph> copy = graph.clone();
      trial.cloned = apply_recompute(*copy, options_.loss, checkpoints, registry, &trial.flops);
      trial.peak = options_.estimate_peak(*copy);
      return trial;
    };
    RecomputeSearch search = choose_checkpoints(graph, options_.loss, budget_, evaluate, registry, options_.segments_only);
    evaluations_ = search.evaluations;
    if (!search.fits && !options_.segments_only) {
      // Out of reach: the lowest peak is wanted, and the finer spread of
      // segment counts (everything between them recomputed) may go lower.
      RecomputeSearch segments = choose_checkpoints(graph, options_.loss, 0, evaluate, registry, /*segments_only=*/true);
      evaluations_ += segments.evaluations;
      if (segments.evaluations > 0 && (search.evaluations == 0 || segments.lowest.peak < search.lowest.peak)) {
        search.lowest = std::move(segments.lowest);
      }
      search.evaluations += segments.evaluations;
    }
    if (search.fits) {
      chosen_ = search.best.checkpoints;
    } else if (!explicit_budget && search.evaluations > 0 && search.lowest.peak < peak_before_) {
      chosen_ = search.lowest.checkpoints;  // the default budget is a wish: the lowest peak reachable instead
    } else if (!explicit_budget) {
      peak_after_ = peak_before_;
      return false;
    } else {
      throw Error(ErrorKind::kInvalidArgument,
                  "recompute: the memory budget of " + format_bytes(options_.memory_budget) +
                      " cannot be met: the lowest estimated peak with recompute is " + format_bytes(search.lowest.peak) +
                      " (" + std::to_string(search.lowest.checkpoints.size()) + " values kept, " +
                      std::to_string(search.lowest.cloned) + " nodes recomputed); without recompute it is " +
                      format_bytes(peak_before_));
    }
  }
  recomputed_ = apply_recompute(graph, options_.loss, chosen_, registry, &recomputed_flops_);
  if (options_.estimate_peak) peak_after_ = peak_of(graph);
  return recomputed_ > 0;
}

}  // namespace weir
