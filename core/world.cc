#include "core/world.h"

namespace weir {

std::shared_ptr<Communicator> World::group(const std::vector<int>& ranks) {
  bool whole = static_cast<int>(ranks.size()) == size();
  for (size_t i = 0; whole && i < ranks.size(); ++i) whole = ranks[i] == static_cast<int>(i);
  return whole ? communicator() : communicator()->subgroup(ranks);
}

std::vector<int> World::intra_node_ranks() const {
  std::vector<int> ranks;
  for (int r = 0; r < local_size(); ++r) ranks.push_back(node() * local_size() + r);
  return ranks;
}

std::vector<int> World::inter_node_ranks() const {
  std::vector<int> ranks;
  for (int n = 0; n < num_nodes(); ++n) ranks.push_back(n * local_size() + local_rank());
  return ranks;
}

}  // namespace weir
