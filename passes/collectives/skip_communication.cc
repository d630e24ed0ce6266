#include "passes/collectives/skip_communication.h"

#include <deque>
#include <string>
#include <unordered_set>

#include "core/error.h"

namespace weir {

int skip_collectives_after(const std::vector<Node*>& sources, Value* skip, const char* pass) {
  std::unordered_set<Node*> seen;
  std::deque<Node*> frontier(sources.begin(), sources.end());
  int collectives = 0;
  while (!frontier.empty()) {
    Node* node = frontier.front();
    frontier.pop_front();
    if (!seen.insert(node).second) continue;
    const std::string& op = node->op_type();
    if (node->domain().empty() && (op == "AllReduce" || op == "AllGather" || op == "ReduceScatter")) {
      if (node->num_inputs() != 1) {
        throw Error(ErrorKind::kInvalidArgument, std::string(pass) + ": the collective '" + node->name() +
                                                     "' already has a skip input")
            .with_node(node->name());
      }
      node->add_input(skip);
      ++collectives;
    }
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      if (node->output(i) == nullptr) continue;
      for (const Use& use : node->output(i)->uses()) frontier.push_back(use.node);
    }
  }
  return collectives;
}

}  // namespace weir
