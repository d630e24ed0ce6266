// TrainingGraph — what the training pipeline made of a graph: the names a
// training loop feeds and reads, and each pass's figures. The passes share
// one TrainingStepState through the pass context while they build the step.
//
//   weir::PassContext ctx(registry);
//   ctx.options<weir::TrainingStepState>().graph.loss = "loss";
//   weir::training_pipeline(strategy, optimizer)->run(graph, ctx);
//   const weir::TrainingGraph& step = ctx.options<weir::TrainingStepState>().graph;
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/graph.h"
#include "core/op_schema.h"
#include "core/parameter_client.h"
#include "passes/collectives/gradient_buckets.h"

namespace weir {

struct TrainingGraph {
  std::string loss{};
  std::string lr_input = "lr";
  std::string step_input{};                // empty when the optimizer needs no step
  std::vector<std::string> parameters{};   // updated, in graph order
  std::vector<std::string> frozen{};     // parameters the loss does not depend on (not updated)
  std::vector<std::string> optimizer_state{};
  // With a Strategy: AMP (low-precision nodes, casts inserted), dynamic loss
  // scaling (the persistent scale, empty when off) and recompute (the
  // checkpoints kept, the nodes cloned and their FLOPs, the estimated
  // peak bytes before and after, the budget).
  int amp_low_precision_nodes = 0;
  int amp_casts = 0;
  int amp_f32_gradient_sums = 0;  // gradient sums written in f32 instead of cast up (F32GradientAccumulation)
  std::string loss_scale{};
  std::vector<std::string> recompute_checkpoints{};
  int recomputed_nodes = 0;
  int64_t peak_bytes_before_recompute = 0;
  int64_t peak_bytes_after_recompute = 0;
  int64_t recomputed_flops = 0;       // estimated FLOPs of the cloned nodes
  int64_t forward_flops = 0;          // ... and of the forward pass, for comparison
  int64_t recompute_budget_bytes = 0; // the budget the automatic choice met (0: none)
  // Data parallel: the ranks the step is each rank's program for (1: not
  // data parallel), the AllReduce nodes added and the bytes they average
  // per step on each rank (a ring allreduce sends 2(N-1)/N times that).
  int ranks = 1;
  int allreduces = 0;
  int64_t allreduce_bytes = 0;
  // Gradient communication (Strategy::communication): the buckets, in the
  // order they are averaged (empty: one AllReduce per gradient), the Casts
  // moved across and added for half-precision communication, and the grid
  // of a hierarchical or 2-D allreduce (0 x 0: flat).
  std::vector<GradientBucket> buckets{};
  int comm_moved_casts = 0;
  int comm_added_casts = 0;
  int allreduce_rows = 0;
  int allreduce_cols = 0;
  // Gradient merge: micro-steps per update (1: off), and the collectives
  // that skip on the steps between updates.
  int gradient_merge_steps = 1;
  int merged_collectives = 0;
  // LocalSGD (passes/collectives/local_sgd.h): the values averaged through
  // snapshots, and the collectives that run only on the steps that average
  // (0 values: off). The loss is then the rank's own.
  int localsgd_values = 0;
  int localsgd_collectives = 0;
  bool localsgd_adaptive = false;
  // Deep gradient compression: the parameters whose gradients are sent as
  // their largest entries (passes/collectives/deep_gradient_compression.h).
  std::vector<std::string> dgc_parameters{};
  // Parameter-server training (parameter_server_updates.h): the tables the
  // step's ops read and push (dense: one per trained parameter, named after
  // it; sparse: one per PsPullSparse table), as the workers must create
  // them on the servers, and the mode.
  std::vector<ParameterTableConfig> parameter_tables{};
  std::string ps_mode{};  // empty: not trained on parameter servers
};

// What the passes of one training pipeline hand each other, by value name
// (names survive the rewrites between them; pointers might not).
struct TrainingStepState {
  TrainingGraph graph{};            // the result: loss set by the caller, the rest by the passes
  std::string differentiated{};     // what autodiff differentiates: the loss, or loss * loss_scale
  std::vector<std::string> raw_gradients{};  // by trained parameter: autodiff's (what ranks average)
  std::vector<std::string> gradients{};      // by trained parameter: what the update reads
  std::string found_inf{};          // loss scaling: the overflow flag every update skips on
  std::string merge_skip{};         // gradient merge: the flag updates and gradient collectives skip on
  std::vector<std::string> rank_local_state{};  // gradient merge's accumulators: each rank's own
  std::string update_step{};        // what the Adam family's updates read as the step; empty: the step input
  std::string localsgd_skip{};      // LocalSGD: the flag its collectives skip on between averages
  std::vector<std::string> localsgd_sources{};  // LocalSGD: the nodes whose results are averaged (snapshot differences)
  // Parameter servers: the PsPullSparse nodes the loss depends on, and the
  // gradients of their rows (by lookup).
  std::vector<std::string> sparse_lookups{};
  std::vector<std::string> sparse_gradients{};
};

// What the step rewrites share: a node named uniquely from `name`, on
// `device`, with its output types inferred;
Node* add_training_node(Graph& graph, const OpRegistry& registry, const std::string& op_type,
                        const std::vector<Value*>& inputs, size_t outputs, std::map<std::string, Attribute> attributes,
                        const std::string& name, const std::optional<Device>& device = std::nullopt);
// `value` as the graph's first output (the loss a training loop reads),
// the other outputs after it in their order;
void make_first_output(Graph& graph, Value* value);
// every node that reads `value`, directly or through views of it (the
// nodes an in-place write of it must follow or precede);
void collect_readers(const Value* value, const OpRegistry& registry, std::unordered_set<Node*>& readers);
// and the i64 "step" input (1 on the first step), added when no pass has
// yet, recorded as the step's step_input. Throws weir::Error naming `pass`
// when the graph's "step" is something else.
Value* step_number_input(Graph& graph, TrainingGraph& result, const std::string& pass);

}  // namespace weir
