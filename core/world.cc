#include "core/world.h"

namespace weir {

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
