#include "models/train_classifier.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "frontend/data/data_loader.h"
#include "frontend/train/evaluate.h"
#include "frontend/train/trainer.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace weir::models {

ClassifierTrainingResult train_classifier(const ClassifierTraining& options, const Tensor& train_examples,
                                          const Tensor& train_labels, const Tensor* test_examples,
                                          const Tensor* test_labels) {
  // With data parallelism the graph is one rank's program, on its share of
  // the batch; the ranks are threads of this process (an in-process world)
  // or, given a world, processes each running this.
  Strategy strategy = options.strategy;
  if (options.world != nullptr) strategy.data_parallel.ranks = options.world->size();
  const int ranks = strategy.data_parallel.ranks;
  if (ranks < 1 || options.batch % ranks != 0) {
    throw Error(ErrorKind::kInvalidArgument, "the batch of " + std::to_string(options.batch) +
                                                 " does not split evenly over " + std::to_string(ranks) +
                                                 " data-parallel ranks");
  }
  ClassifierGraph train = build_classifier(options.model, options.batch / ranks, /*training=*/true, options.zoo);
  TrainingGraph step = minimize(*train.graph, train.loss, options.optimizer, strategy);
  SessionOptions session_options;
  session_options.inter_op_threads = options.inter_op_threads;
  std::shared_ptr<const Plan> plan = compile(*train.graph);
  // One rank is a world of one: the same path, with nothing to average.
  std::unique_ptr<InProcessRanks> world;
  std::unique_ptr<Session> process_rank;
  if (options.world != nullptr) {
    session_options.world = options.wrap_world ? options.wrap_world(options.world) : options.world;
    process_rank = std::make_unique<Session>(plan, session_options);
  } else {
    world = std::make_unique<InProcessRanks>(plan, ranks, session_options, InProcessWorldOptions{.wrap = options.wrap_world});
  }
  Session& session = world ? world->session(0) : *process_rank;
  const bool rank0 = options.world == nullptr || options.world->rank() == 0;

  auto dataset = std::make_shared<TensorDataset>(std::vector<Tensor>{train_examples, train_labels});
  DataLoaderOptions loader_options{.batch_size = options.batch, .shuffle = true, .drop_last = true,
                                   .seed = options.data_seed, .num_workers = 2};
  if (options.world != nullptr) {
    loader_options.shards = ranks;
    loader_options.shard = options.world->rank();
  }
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
  Trainer trainer = world ? Trainer(*world, step, loader, trainer_options) : Trainer(session, step, loader, trainer_options);
  if (!options.resume.empty()) trainer.resume(options.resume);
  const int local_sessions = world ? ranks : 1;
  for (int r = 0; r < local_sessions; ++r) (world ? world->session(r) : session).reset_peak_memory();
  TrainStats stats = options.steps > 0 ? trainer.run_steps(options.steps) : trainer.run_epochs(options.epochs);

  ClassifierTrainingResult result;
  result.steps = stats.steps;
  result.total_steps = trainer.step();
  result.ms_per_step = stats.ms_per_step;
  result.last_loss = stats.last_loss;
  result.losses = stats.losses;
  for (int r = 0; r < local_sessions; ++r) {
    for (const DeviceMemoryStats& device : (world ? world->session(r) : session).memory_stats()) {
      result.peak_memory_bytes += device.stats.peak_bytes;
    }
  }
  result.training = step;

  ClassifierGraph infer = build_classifier(options.model, 0, /*training=*/false, options.zoo);
  bake_state(session, *infer.graph);
  if (test_examples != nullptr && test_labels != nullptr && rank0) {
    Session eval(compile(*infer.graph));
    result.test_accuracy = classification_accuracy(eval, infer.input, *test_examples, *test_labels, 1000);
  }
  result.inference_graph = std::move(infer.graph);
  if (world && ranks > 1) result.ranks = std::move(world);
  return result;
}

}  // namespace weir::models
