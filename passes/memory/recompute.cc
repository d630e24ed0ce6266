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
#include "passes/graph_match.h"

namespace weir {

namespace {

Value* find_loss(const Graph& graph, const std::string& loss) {
  Value* value = graph.find_value(loss);
  if (value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "recompute: the loss '" + loss + "' is not a value of graph '" + graph.name() + "'");
  }
  return value;
}

// Communication and writes to persistent state must happen once per step.
bool recomputable(const Node& node, const OpRegistry& registry) {
  const OpSchema* schema = registry.find(node.op_type(), node.domain());
  return schema != nullptr && !schema->has(OpTrait::kSideEffects) && !schema->has(OpTrait::kCollective);
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

// Checkpoints for `segments` even segments of the candidates.
std::vector<std::string> evenly_spaced(const std::vector<std::string>& candidates, int segments) {
  std::vector<std::string> chosen;
  const int m = static_cast<int>(candidates.size());
  for (int j = 1; j < segments; ++j) {
    int index = static_cast<int>(std::lround(static_cast<double>(j) * (m + 1) / segments)) - 1;
    index = std::clamp(index, 0, m - 1);
    if (chosen.empty() || chosen.back() != candidates[index]) chosen.push_back(candidates[index]);
  }
  return chosen;
}

std::string format_bytes(int64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%lld bytes (%.1f MiB)", static_cast<long long>(bytes), static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

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
                    const OpRegistry& registry) {
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
  auto available = [&](const Value* v) {
    const Node* producer = v->producer();
    return producer == nullptr || !forward.count(producer) || kept.count(v) || !recomputable(*producer, registry);
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
  return static_cast<int>(clones.size());
}

bool Recompute::run(Graph& graph, PassContext& context) {
  const OpRegistry& registry = context.registry();
  chosen_.clear();
  recomputed_ = 0;
  peak_before_ = peak_after_ = 0;
  if (options_.memory_budget > 0 && !options_.estimate_peak) {
    throw Error(ErrorKind::kInvalidArgument, "recompute: a memory budget needs a peak estimator (estimate_peak)");
  }
  // The estimator may place the graph it is given: it gets a copy.
  auto peak_of = [&](const Graph& g) { return options_.estimate_peak(*g.clone()); };
  auto estimate = [&](const std::vector<std::string>& checkpoints, int* cloned) {
    std::unique_ptr<Graph> trial = graph.clone();
    *cloned = apply_recompute(*trial, options_.loss, checkpoints, registry);
    return options_.estimate_peak(*trial);
  };
  if (options_.estimate_peak) peak_before_ = peak_of(graph);

  if (!options_.automatic) {
    chosen_ = options_.checkpoints;
  } else {
    std::vector<std::string> candidates = recompute_candidates(graph, options_.loss);
    if (candidates.empty()) return false;
    const int m = static_cast<int>(candidates.size());
    if (!options_.estimate_peak) {
      chosen_ = evenly_spaced(candidates, std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(m))))));
    } else {
      if (options_.memory_budget > 0 && peak_before_ <= options_.memory_budget) {
        peak_after_ = peak_before_;
        return false;  // fits as it is: nothing to recompute
      }
      // Every segment count when there are few candidates, else a spread of them.
      std::vector<int> counts;
      const int step = std::max(1, (m + 1) / 64);
      for (int k = 1; k <= m + 1; k += step) counts.push_back(k);
      counts.push_back(static_cast<int>(std::lround(std::sqrt(static_cast<double>(m)))));
      struct Trial {
        std::vector<std::string> checkpoints;
        int64_t peak;
        int cloned;
      };
      std::vector<Trial> trials;
      for (int k : counts) {
        Trial trial{evenly_spaced(candidates, std::max(1, k)), 0, 0};
        trial.peak = estimate(trial.checkpoints, &trial.cloned);
        trials.push_back(std::move(trial));
      }
      const Trial* best = nullptr;
      for (const Trial& trial : trials) {
        bool fits = options_.memory_budget <= 0 || trial.peak <= options_.memory_budget;
        if (!fits) continue;
        bool better = best == nullptr ||
                      (options_.memory_budget > 0 ? std::tie(trial.cloned, trial.peak) < std::tie(best->cloned, best->peak)
                                                  : std::tie(trial.peak, trial.cloned) < std::tie(best->peak, best->cloned));
        if (better) best = &trial;
      }
      if (best == nullptr) {
        const Trial& lowest = *std::min_element(trials.begin(), trials.end(), [](const Trial& a, const Trial& b) { return a.peak < b.peak; });
        throw Error(ErrorKind::kInvalidArgument,
                    "recompute: the memory budget of " + format_bytes(options_.memory_budget) +
                        " cannot be met: the lowest estimated peak with recompute is " + format_bytes(lowest.peak) +
                        " (" + std::to_string(lowest.checkpoints.size()) + " checkpoints); without recompute it is " +
                        format_bytes(peak_before_));
      }
      chosen_ = best->checkpoints;
    }
  }
  recomputed_ = apply_recompute(graph, options_.loss, chosen_, registry);
  if (options_.estimate_peak) peak_after_ = peak_of(graph);
  return recomputed_ > 0;
}

}  // namespace weir
