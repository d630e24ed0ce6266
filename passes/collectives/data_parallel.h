// Data-parallel rewrite: one rank's training step becomes the program every
// rank of a world runs (SPMD). Each rank computes the forward and backward
// pass on its own share of the batch, with its own copy of the parameters
// and optimizer state; AllReduce nodes average, over the world, every value
// the update tail reads from that per-rank part (the gradients, and state
// such as BatchNorm's batch statistics); and every rank runs the tail on
// the averaged values, so all ranks' parameters stay bitwise equal.
// Communication is graph ops: the scheduler runs the AllReduces on the
// communication stream, overlapping the backward pass of earlier layers.
//
//   weir::DataParallelOptions options{.gradients = {"w1/grad", "b1/grad"}, .loss = "loss"};
//   weir::DataParallel pass(options);
//   pass.run(step_graph, ctx);       // after minimize()'s updates
//   // compile once; run the plan as every rank of a world (runtime/in_process_ranks.h)
//
// The graph given is one rank's step, built at the per-rank batch; the
// program does not depend on the world's size (AllReduce's average divides
// by it at run time). The per-rank part is what the loss and the gradients
// depend on (through data and control edges: forward, backward, recompute
// clones); the tail is everything else (clipping and unscaling, the
// optimizer updates, BatchNorm's running-statistics Assigns).
//
// The loss keeps its name and becomes the world's average (with a mean loss
// and equal shares, the whole batch's loss); so does every other scalar
// float graph output of the per-rank part. Outputs with rows (logits) stay
// the rank's own rows. Random ops draw different numbers on each rank
// because the runtime keys their stream by rank, not because the program
// differs.
//
// Gradients listed in `local_gradients` (those deep gradient compression
// exchanges itself) are read by the tail as they are, not averaged.
// Gradients in `shard_gradients` (of parameters a strategy marks
// distributed: model-parallel shards, each rank holding its own part) are
// not averaged either but divided by the world's size: the ranks' losses
// meet in the forward pass through collectives (the sharded classifier's
// AllGather and ReduceScatter), so what autodiff gives each rank for its
// shard is the gradient of the sum of the ranks' losses, and the step
// minimises their average (the loss it reports). This is Fleet's scaling
// of the loss by 1/N, applied where it matters; the replicated parameters'
// average already has it.
//
// Refused, naming the node or value: a per-rank node with side effects
// (state written inside the forward or backward pass, which would differ
// between ranks), unless it writes state the options name rank-local; a value the tail reads from the per-rank part that is not
// floating point (no average to take).
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

struct DataParallelOptions {
  std::vector<std::string> gradients{};        // averaged over the world before the tail reads them
  std::string loss{};                          // scalar; averaged, keeps its name
  std::vector<std::string> local_gradients{};  // not averaged (exchanged by DGC)
  std::vector<std::string> shard_gradients{};  // of model-parallel shards: divided by `ranks`, not averaged
  int ranks = 1;                               // the world's size (for shard_gradients only)
  // Persistent values each rank keeps for itself inside the per-rank part
  // (gradient merge's accumulators, which hold the rank's own share): the
  // nodes that write them are not refused for their side effects.
  std::vector<std::string> rank_local_state{};
};

struct DataParallelResult {
  int rank_nodes = 0;                 // nodes of the per-rank part (forward and backward)
  int allreduces = 0;                 // AllReduce nodes added
  int64_t allreduce_bytes = 0;        // what they average per step, each rank (static shapes)
  std::vector<std::string> averaged{};  // the values they average, in graph order
};

DataParallelResult apply_data_parallel(Graph& graph, const DataParallelOptions& options, const OpRegistry& registry);

class DataParallel final : public Pass {
 public:
  explicit DataParallel(DataParallelOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "data_parallel"; }
  bool run(Graph& graph, PassContext& context) override;
  const DataParallelResult& result() const { return result_; }

 private:
  DataParallelOptions options_;
  DataParallelResult result_{};
};

}  // namespace weir
