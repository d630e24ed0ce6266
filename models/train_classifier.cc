#include "models/train_classifier.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "frontend/data/data_loader.h"
#include "frontend/nn/margin_head.h"
#include "frontend/train/checkpoint.h"
#include "frontend/train/evaluate.h"
#include "frontend/train/trainer.h"
#include "ops/loss/class_shards.h"
#include "passes/analysis/flop_estimate.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace weir::models {

namespace {

// Every rank's rows of the class centres, as the one-rank head's [C, D] on
// rank 0 (other ranks of a world of processes send theirs and get an empty
// tensor): the ranks' sessions of an in-process world read directly, a
// world of processes over its communicator.
Tensor gather_class_centres(const ClassCentres& centres, const std::function<Tensor(int)>& in_process_shard,
                            World* world, const Tensor& own) {
  std::vector<RowShard> parts;
  for (int r = 0; r < centres.ranks; ++r) {
    const ClassShard shard = class_shard(centres.classes, centres.ranks, r);
    parts.push_back({.rows = centres.classes, .start = shard.start, .count = shard.count});
  }
  std::shared_ptr<Communicator> comm = world != nullptr ? world->communicator() : nullptr;
  return gather_row_shard(centres.weight, parts, own, comm.get(), in_process_shard);
}

// The head's state: its centres and their optimizer state, the
// persistents NAME and NAME/....
std::vector<std::string> head_state(const Graph& graph, const std::string& weight) {
  std::vector<std::string> names;
  for (const Value* value : graph.persistents()) {
    if (value->name() == weight || value->name().starts_with(weight + "/")) names.push_back(value->name());
  }
  return names;
}

// The model-parallel head's row shards: its state, rank r holding its
// classes' rows. A checkpoint holds them whole, as the one-rank head's.
std::function<RowShards(int)> head_row_shards(const Graph& graph, const ClassCentres& centres) {
  return [names = head_state(graph, centres.weight), classes = centres.classes, ranks = centres.ranks](int rank) {
    const ClassShard shard = class_shard(classes, ranks, rank);
    RowShards shards;
    for (const std::string& name : names) shards[name] = {.rows = classes, .start = shard.start, .count = shard.count};
    return shards;
  };
}

}  // namespace

void initialize_class_centres(Session& session, const ClassCentres& centres, int rank) {
  // On a CPU the session's own memory, filled in place; on a GPU a host
  // copy, filled and then written back.
  Tensor weight = session.host_state(centres.weight);
  nn::fill_class_centres(weight, centres.classes, centres.ranks, rank, centres.seed);
  if (session.state(centres.weight).device().type != DeviceType::kCpu) session.set_state(centres.weight, weight);
}

ClassifierTrainingResult train_classifier(const ClassifierTraining& options, const Tensor& train_examples,
                                          const Tensor& train_labels, const Tensor* test_examples,
                                          const Tensor* test_labels) {
  // With data parallelism the graph is one rank's program, on its share of
  // the batch; the ranks are threads of this process (an in-process world)
  // or, given a world, processes each running this.
  Strategy strategy = options.strategy;
  if (options.world != nullptr) {
    strategy.data_parallel.ranks = options.world->size();
    strategy.data_parallel.communicate_alone = true;  // a launched world of one still runs its collectives
  }
  const int ranks = strategy.data_parallel.ranks;
  if (ranks < 1 || options.batch % ranks != 0) {
    throw Error(ErrorKind::kInvalidArgument, "the batch of " + std::to_string(options.batch) +
                                                 " does not split evenly over " + std::to_string(ranks) +
                                                 " data-parallel ranks");
  }
  // A model-parallel head (arcface) shards its classes over the same ranks.
  ZooOptions zoo = options.zoo;
  zoo.head_ranks = ranks;
  ClassifierGraph train = build_classifier(options.model, options.batch / ranks, /*training=*/true, zoo);
  if (train.class_centres && ranks > 1) {
    strategy.data_parallel.distributed_parameters.insert(train.class_centres->weight);
  }
  TrainingGraph step = minimize(*train.graph, train.loss, options.optimizer, strategy);
  SessionOptions session_options;
  session_options.inter_op_threads = options.inter_op_threads;
  CompileOptions compile_options;
  compile_options.default_device = options.world != nullptr ? options.world->device() : options.device;
  if (options.world == nullptr && ranks > 1 && options.device.type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, std::to_string(ranks) + " data-parallel ranks in one process run on CPUs; on " +
                                             options.device.to_string() + " train one rank per process (an NCCL world)");
  }
  std::shared_ptr<const Plan> plan = compile(*train.graph, compile_options);
  // One rank is a world of one: the same path, with nothing to average.
  std::unique_ptr<InProcessRanks> world;
  std::unique_ptr<Session> process_rank;
  if (options.world != nullptr) {
    session_options.world = options.wrap_world ? options.wrap_world(options.world) : options.world;
    process_rank = std::make_unique<Session>(plan, session_options);
  } else if (options.device.type != DeviceType::kCpu) {
    process_rank = std::make_unique<Session>(plan, session_options);  // one rank, on its GPU: no collectives
  } else {
    world = std::make_unique<InProcessRanks>(plan, ranks, session_options, InProcessWorldOptions{.wrap = options.wrap_world});
  }
  Session& session = world ? world->session(0) : *process_rank;
  const bool rank0 = options.world == nullptr || options.world->rank() == 0;
  if (train.class_centres) {
    for (int r = 0; r < (world ? ranks : 1); ++r) {
      initialize_class_centres(world ? world->session(r) : session, *train.class_centres,
                               options.world != nullptr ? options.world->rank() : r);
    }
  }

  auto dataset = std::make_shared<TensorDataset>(std::vector<Tensor>{train_examples, train_labels});
  DataLoaderOptions loader_options{.batch_size = options.batch, .shuffle = true, .drop_last = true,
                                   .seed = options.data_seed, .num_workers = 2};
  if (options.world != nullptr) {
    loader_options.shards = ranks;
    loader_options.shard = options.world->rank();
  }
  // Batches for a GPU are made in pinned memory, so their copies run by DMA.
  loader_options.batch_memory = &session.feed_allocator(train.input);
  DataLoader loader(dataset, loader_options);
  TrainerOptions trainer_options;
  trainer_options.feeds = {train.input, train.labels};
  trainer_options.lr = LrSchedule::constant(options.lr);
  trainer_options.log = rank0 ? options.log : nullptr;
  trainer_options.checkpoint = options.checkpoint;
  trainer_options.checkpoint_every = options.checkpoint_every;
  trainer_options.profiler = options.profiler;
  trainer_options.before_steps = options.before_steps;
  trainer_options.after_step = options.after_step;
  if (train.class_centres && ranks > 1) trainer_options.row_shards = head_row_shards(*train.graph, *train.class_centres);
  Trainer trainer = world ? Trainer(*world, step, loader, trainer_options) : Trainer(session, step, loader, trainer_options);
  if (!options.resume.empty()) trainer.resume(options.resume);
  const int local_sessions = world ? ranks : 1;
  for (int r = 0; r < local_sessions; ++r) (world ? world->session(r) : session).reset_peak_memory();
  TrainStats stats = options.steps > 0 ? trainer.run_steps(options.steps) : trainer.run_epochs(options.epochs);

  ClassifierTrainingResult result;
  result.steps = stats.steps;
  result.total_steps = trainer.step();
  result.ms_per_step = stats.ms_per_step;
  result.step_flops = estimated_flops(*train.graph);
  result.last_loss = stats.last_loss;
  result.losses = stats.losses;
  for (int r = 0; r < local_sessions; ++r) {
    for (const DeviceMemoryStats& device : (world ? world->session(r) : session).memory_stats()) {
      result.peak_memory_bytes += device.stats.peak_bytes;
    }
  }
  result.training = step;
  if (train.class_centres) {
    for (const std::string& name : head_state(*train.graph, train.class_centres->weight)) {
      result.head_state_bytes += static_cast<int64_t>(session.state(name).nbytes());
    }
  }

  zoo.class_centres_in_graph = false;
  ClassifierGraph infer = build_classifier(options.model, 0, /*training=*/false, zoo);
  bake_state(session, *infer.graph);
  if (train.class_centres && ranks > 1) {
    const std::string& name = train.class_centres->weight;
    Tensor all = gather_class_centres(*train.class_centres, [&](int r) { return world->session(r).host_state(name); },
                                      options.world.get(), session.host_state(name));
    // Rank 0's holds every class; the others' are left without centres
    // (bake_state gave them their own rows, which are not the [C, D] head).
    infer.graph->find_value(name)->set_data(std::move(all));
  }
  if (test_examples != nullptr && test_labels != nullptr && rank0) {
    Session eval(compile(*infer.graph));
    result.test_accuracy = classification_accuracy(eval, infer.input, *test_examples, *test_labels, 1000);
  }
  result.inference_graph = std::move(infer.graph);
  if (world && ranks > 1) result.ranks = std::move(world);
  return result;
}

}  // namespace weir::models
