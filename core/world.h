// World — the ranks one program runs on, and how this rank reaches them.
//
//   std::shared_ptr<weir::World> world = ...;        // in-process, Gloo, NCCL, MPI
//   world->rank();  world->size();                   // 1 of 4
//   world->local_rank();  world->node();             // 1 on node 0 (2 ranks per node)
//   world->device();                                 // where this rank's program runs: cpu:1
//   world->communicator()->all_reduce(grad, weir::ReduceOp::kAvg, "grad/w");
//   world->intra_node();                             // the ranks of this node
//   world->group({0, 2});                            // any subgroup
//
// A session given a world (SessionOptions::world) runs its plan as this
// rank's program: every rank of the world runs the same plan on its own
// device, and the plan's collectives go through the world's communicator.
// Rank and device are separate notions: rank is a place in the world, the
// device is where this rank computes (an in-process world puts rank r on
// cpu:r by default; a multi-process one on the local rank's GPU).
//
// Ranks fill nodes in order: rank = node * local_size + local_rank (the
// way torchrun, mpirun --map-by node and Slurm's block distribution number
// them), so the ranks of a node are consecutive.
//
// Group calls (intra_node, inter_node, group) are collective: every member
// of the group asked for calls them, in the same order. abort() makes every
// blocked and future collective of every group of the world fail with
// kCommunication naming the reason, on every rank: a rank that fails calls
// it so that no peer waits for it until a timeout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"

namespace weir {

class World {
 public:
  virtual ~World() = default;

  virtual int size() const = 0;
  virtual int rank() const = 0;
  virtual int local_size() const = 0;  // ranks on this rank's node
  virtual int local_rank() const = 0;
  int node() const { return rank() / local_size(); }
  int num_nodes() const { return size() / local_size(); }
  // The device this rank's program runs on.
  virtual Device device() const = 0;
  // What messages name: "in-process world of 4, rank 1".
  virtual std::string description() const = 0;

  // The whole world's communicator; its ranks are the world's.
  virtual std::shared_ptr<Communicator> communicator() = 0;
  // The communicator of the group `ranks` (world ranks, in the order that
  // defines the group's ranks); this rank must be one of them. The whole
  // world in order is communicator(); other groups are its subgroups, which
  // the communicator creates once per rank list.
  std::shared_ptr<Communicator> group(const std::vector<int>& ranks);
  // The ranks of this node, by local rank.
  std::shared_ptr<Communicator> intra_node() { return group(intra_node_ranks()); }
  // The ranks with this rank's local rank, one per node, by node.
  std::shared_ptr<Communicator> inter_node() { return group(inter_node_ranks()); }
  std::vector<int> intra_node_ranks() const;
  std::vector<int> inter_node_ranks() const;

  virtual void abort(const std::string& reason) = 0;
};

}  // namespace weir
