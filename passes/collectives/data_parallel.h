// Data-parallel rewrite: one training step graph becomes N replicas on N
// devices, each on its share of the batch, with the gradients averaged by
// AllReduce nodes in the graph (communication as graph ops: the scheduler
// overlaps them with the backward pass of the layers before).
//
//   weir::DataParallelOptions options{.devices = {weir::Device::cpu(0), weir::Device::cpu(1)},
//                                     .gradients = {"w1/grad", "b1/grad"}, .loss = "loss"};
//   weir::DataParallel pass(options);
//   pass.run(step_graph, ctx);      // after minimize(); compile with options.devices
//
// The graph given is one replica's step, built at the per-replica batch b.
// What the gradients and the loss depend on (through data and control
// edges: forward, backward and recompute clones) is the replicated part;
// replica 0 is the original nodes, the others are clones named
// "replica<r>/<name>". Everything else (the tail: gradient clipping and
// unscaling, the optimizer updates, BatchNorm's running-statistics Assigns)
// runs once, on devices[0], and reads replica 0's values, except that a
// gradient is read through its AllReduce (average).
//
// Batch inputs (by default every graph input of rank >= 1 that the replicas
// read) keep their names and take N * b rows; replica r reads rows
// [r*b, (r+1)*b). Scalars (the learning rate, the step) are shared, and so
// are parameters and constants. The loss keeps its name and becomes the
// replicas' average: with a mean loss and equal shares, the loss and the
// gradients are those of the whole batch. Other scalar graph outputs are
// averaged too; outputs with b rows are concatenated.
//
// Random ops (a "seed" attribute, like Dropout) get a different seed on each
// replica but replica 0, so masks differ between shares; recompute clones
// of one replica keep that replica's seed, so the replay stays exact.
//
// Refused, naming the node or value: a replicated node with side effects
// (state written inside the forward or backward pass) or one that
// communicates already; a batch input whose first dim is not static; a
// device listed twice.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"
#include "passes/pass.h"

namespace weir {

struct DataParallelOptions {
  std::vector<Device> devices{};            // one replica each; devices[i] is communicator rank i
  std::vector<std::string> gradients{};     // averaged across the replicas before the tail reads them
  std::string loss{};                       // scalar; averaged, keeps its name
  std::vector<std::string> batch_inputs{};  // empty: every graph input of rank >= 1 the replicas read
};

struct DataParallelResult {
  int replicas = 0;
  int replicated_nodes = 0;   // nodes in one replica
  int allreduces = 0;         // AllReduce nodes added, over all replicas
  std::vector<std::string> batch_inputs{};
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
