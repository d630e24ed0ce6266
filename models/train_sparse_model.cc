#include "models/train_sparse_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "frontend/data/data_loader.h"
#include "frontend/train/auc.h"
#include "frontend/train/trainer.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace weir::models {

namespace {

bool on_parameter_servers(const SparseModelTraining& options) {
  return options.strategy.parameter_server.mode != PsMode::kOff;
}

// The tables the step reads, created on the servers; each dense parameter's
// initial value offered (the first worker's wins, and they are all equal:
// the same seed).
// A resumed job offers none: the saved values are loaded instead, and an
// offer racing the load could leave a worker's client with a stale copy.
void create_tables(ParameterClient& client, const TrainingGraph& step, const Graph& graph, bool offer_initial) {
  for (const ParameterTableConfig& table : step.parameter_tables) {
    client.create_table(table);
    if (table.sparse || !offer_initial) continue;
    const Value* param = graph.find_value(table.name);
    const Tensor& initial = param->data();
    if (!initial.defined() || initial.num_elements() != table.width) {
      throw Error(ErrorKind::kInvalidArgument, "parameter '" + table.name + "' has no initial value of " +
                                                   std::to_string(table.width) + " floats to offer the servers");
    }
    client.set_dense(table.name, initial.data<float>(), table.width, /*only_if_unset=*/true);
  }
}

// In sync mode, returns once the servers applied all `rounds` rounds (the
// other workers' last pushes too), so what is evaluated is the final model.
void wait_for_rounds(ParameterClient& client, const TrainingGraph& step, int64_t rounds) {
  for (const ParameterTableConfig& table : step.parameter_tables) {
    if (table.sparse) {
      const int64_t id = 0;
      std::vector<float> row(static_cast<size_t>(table.width));
      client.pull_sparse(table.name, {&id, 1}, row.data(), table.width, rounds);
    } else {
      std::vector<float> values(static_cast<size_t>(table.width));
      client.pull_dense(table.name, values.data(), table.width, rounds);
    }
    return;  // one table's rounds are every table's: each step pushes to all of them
  }
}

// The job's barriers, met in the same order by every worker.
class WorkerMeetings {
 public:
  WorkerMeetings(ParameterClient* servers, int workers) : servers_(servers), workers_(workers) {}
  void meet(const std::string& what) {
    if (workers_ <= 1) return;
    if (servers_ == nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "the workers meet " + what + " through a client that sends each call "
                                               "before returning: set SparseModelTraining::servers to the client "
                                               "beneath the communicator");
    }
    wait_for_workers(*servers_, workers_, generation_++, what);
  }

 private:
  ParameterClient* servers_;
  int workers_;
  int64_t generation_ = 0;
};

std::filesystem::path worker_state_file(const std::filesystem::path& directory, int worker) {
  return directory / ("worker-" + std::to_string(worker) + ".state");
}

// The batches worker `worker` had trained when the tables in `directory`
// were saved: where its data continues.
int64_t read_batches_trained(const std::filesystem::path& directory, int worker) {
  const std::filesystem::path file = worker_state_file(directory, worker);
  std::ifstream in(file);
  std::string key;
  int64_t batches = -1;
  if (!in) {
    throw Error(ErrorKind::kIo, "no state of worker " + std::to_string(worker) + " to resume from (saved by "
                                "training with --checkpoint on the same number of workers)").with_file(file.string());
  }
  if (!(in >> key >> batches) || key != "batches_trained" || batches < 0) {
    throw Error(ErrorKind::kFormat, "expected 'batches_trained N' with N >= 0").with_file(file.string());
  }
  return batches;
}

constexpr const char* kLatest = "latest";

// The step directory of the checkpoint `directory` holds: the one its
// `latest` names, or `directory` itself when it has none (a step directory,
// or a checkpoint written before they had step directories).
std::filesystem::path checkpoint_in(const std::filesystem::path& directory) {
  const std::filesystem::path pointer = directory / kLatest;
  std::ifstream in(pointer);
  if (!in) return directory;
  std::string name;
  if (!(in >> name) || !name.starts_with("step-") || name.find('/') != std::string::npos ||
      !std::filesystem::is_directory(directory / name)) {
    throw Error(ErrorKind::kFormat, "expected the name of a step-B directory beside it, got '" + name + "'")
        .with_file(pointer.string());
  }
  return directory / name;
}

// The step-B directories in `directory` (none when it does not exist), by B.
std::vector<std::pair<int64_t, std::filesystem::path>> step_directories(const std::filesystem::path& directory) {
  std::vector<std::pair<int64_t, std::filesystem::path>> steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !name.starts_with("step-")) continue;
    try {
      size_t end = 0;
      const int64_t batches = std::stoll(name.substr(5), &end);
      if (end + 5 == name.size()) steps.emplace_back(batches, entry.path());
    } catch (const std::exception&) {
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// After the checkpoint `current` is whole: save_to/latest names it, and the
// step directories but it and the one before go (a failure to remove one
// is not worth failing the job for).
void make_latest(const std::filesystem::path& save_to, const std::filesystem::path& current) {
  write_file_atomically(save_to / kLatest, current.filename().string() + "\n");
  const std::vector<std::pair<int64_t, std::filesystem::path>> steps = step_directories(save_to);
  std::error_code ec;
  for (size_t i = 0; i + 2 < steps.size(); ++i) {
    if (steps[i].second != current) std::filesystem::remove_all(steps[i].second, ec);
  }
}

void write_batches_trained(const std::filesystem::path& directory, int worker, int64_t batches) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot create the directory: " + ec.message()).with_file(directory.string());
  write_file_atomically(worker_state_file(directory, worker), "batches_trained " + std::to_string(batches) + "\n");
}

struct Evaluation {
  double auc = -1;
  double loss = -1;
  int64_t examples = 0;
};

// On parameter servers the model is read through `tables`: the servers'
// client, not a communicator's dense copies or a Geo-SGD client's rows,
// which need not hold the other workers' last pushes.
Evaluation evaluate(const SparseModelTraining& options, const std::shared_ptr<ParameterClient>& tables,
                    const Session* trained, const TrainingGraph& step, const std::vector<Tensor>& test) {
  const int64_t count = test.front().sizes()[0];
  const int64_t batch = std::min(options.eval_batch, count);
  if (batch < 1) return {};
  SparseModelGraph model = build_sparse_model(options, batch);
  SessionOptions session_options;
  session_options.inter_op_threads = options.inter_op_threads;
  session_options.parameter_client = tables;
  Session eval(compile(*model.graph), session_options);
  if (on_parameter_servers(options)) {
    for (const ParameterTableConfig& table : step.parameter_tables) {
      if (table.sparse) continue;
      Tensor values = eval.state(table.name);  // shares the session's memory
      tables->pull_dense(table.name, values.data<float>(), table.width, 0);
    }
  } else {
    copy_state(*trained, eval);  // one trainer thread: checked by the caller
  }
  Evaluation result;
  std::vector<float> scores, labels;
  double loss_sum = 0;
  int64_t batches = 0;
  for (int64_t start = 0; start + batch <= count; start += batch) {
    std::map<std::string, Tensor> feeds;
    for (size_t f = 0; f < test.size(); ++f) feeds[model.inputs[f]] = test[f].slice(start, start + batch).clone();
    std::vector<Tensor> outputs = eval.run(feeds);
    loss_sum += outputs[0].data<float>()[0];
    ++batches;
    if (options.model == "ctr") {
      const Tensor& probability = outputs[1];
      const Tensor& label = feeds.at("label");
      scores.insert(scores.end(), probability.data<float>(), probability.data<float>() + batch);
      labels.insert(labels.end(), label.data<float>(), label.data<float>() + batch);
    }
  }
  result.examples = batches * batch;
  result.loss = loss_sum / static_cast<double>(batches);
  if (!scores.empty()) result.auc = roc_auc(scores, labels);
  return result;
}

// Hogwild: `threads` sessions of the step run at once, each taking the next
// batch from whichever reader queue has one; no lock between their steps
// (the client is shared, and is thread-safe). Every `options.save_every`
// steps the threads stop after exactly that many steps and
// `at_save_point(steps)` runs alone before they go on: the one moment
// Hogwild steps have in common, where a checkpoint holds every step before
// it and none after.
TrainStats run_hogwild(const SparseModelTraining& options, const std::shared_ptr<const Plan>& plan,
                       const SessionOptions& session_options, const TrainingGraph& step, DataLoader& loader,
                       const std::vector<std::string>& feeds, int64_t first_batch,
                       const std::function<void()>& end_of_epoch,
                       const std::function<void(int64_t)>& at_save_point) {
  const int threads = options.trainer_threads;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int t = 0; t < threads; ++t) sessions.push_back(std::make_unique<Session>(plan, session_options));
  std::atomic<int64_t> steps{0};
  std::mutex mutex;
  std::vector<double> losses;
  std::exception_ptr error;
  const int64_t limit = options.steps > 0 ? options.steps : std::numeric_limits<int64_t>::max();
  const auto start = std::chrono::steady_clock::now();
  const int64_t per_epoch = loader.batches_per_epoch();
  const int64_t first_epoch = first_batch / per_epoch;
  // Every thread runs steps, claiming their numbers, up to `segment_end`;
  // a claim past it, or one that found the epoch's batches used up, is
  // given back, so `steps` counts the steps run once they are joined.
  // Returns whether the batches ran out.
  auto run_until = [&](int64_t segment_end) {
    std::atomic<bool> ran_out{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        try {
          while (true) {
            const int64_t number = steps.fetch_add(1) + 1;
            if (number > segment_end) {
              steps.fetch_sub(1);
              break;
            }
            std::optional<std::vector<Tensor>> batch = loader.next();
            if (!batch) {
              steps.fetch_sub(1);
              ran_out = true;
              break;
            }
            std::map<std::string, Tensor> inputs;
            for (size_t f = 0; f < feeds.size(); ++f) inputs[feeds[f]] = (*batch)[f];
            inputs[step.lr_input] = Tensor::scalar<float>(static_cast<float>(options.lr));
            if (!step.step_input.empty()) inputs[step.step_input] = Tensor::scalar<int64_t>(number);
            const double loss = sessions[static_cast<size_t>(t)]->run(inputs)[0].data<float>()[0];
            std::lock_guard lock(mutex);
            losses.push_back(loss);
          }
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!error) error = std::current_exception();
        }
      });
    }
    for (std::thread& worker : workers) worker.join();
    if (error) std::rethrow_exception(error);
    return ran_out.load();
  };
  for (int64_t epoch = first_epoch; steps.load() < limit && (options.steps > 0 || epoch < first_epoch + options.epochs);
       ++epoch) {
    loader.start_epoch(epoch, epoch == first_epoch ? first_batch % per_epoch : 0);
    bool epoch_over = false;
    int64_t save_after_epoch = 0;
    while (!epoch_over && steps.load() < limit) {
      // Up to the next save point, the epoch's end or the limit.
      const int64_t done = steps.load();
      const int64_t epoch_end = done + per_epoch - (first_batch + done) % per_epoch;
      const int64_t next_save = options.save_every > 0 ? (done / options.save_every + 1) * options.save_every : limit;
      epoch_over = run_until(std::min({limit, epoch_end, next_save}));
      const int64_t reached = steps.load();
      if (reached == epoch_end) epoch_over = true;
      // The end-of-training save follows the last step; a save at the end
      // of a pass follows the pass's end, as with one trainer thread.
      if (options.save_every > 0 && reached == next_save && reached != options.steps) {
        if (epoch_over) {
          save_after_epoch = reached;
        } else {
          at_save_point(reached);
        }
      }
    }
    if (options.steps == 0) end_of_epoch();  // by epochs, each one runs to its end
    if (save_after_epoch > 0) at_save_point(save_after_epoch);
    if (options.steps == 0 && epoch + 1 >= first_epoch + options.epochs) break;
    if (losses.empty()) break;  // an epoch without a batch: more would not help
  }
  TrainStats stats;
  stats.steps = static_cast<int64_t>(losses.size());
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.ms_per_step = stats.steps > 0 ? stats.seconds * 1000 / static_cast<double>(stats.steps) : 0;
  stats.losses = losses;
  stats.last_loss = losses.empty() ? 0 : losses.back();
  return stats;
}

}  // namespace

SparseModelGraph build_sparse_model(const SparseModelTraining& options, int64_t batch) {
  if (options.model == "ctr") {
    CtrConfig config = options.ctr;
    config.on_parameter_servers = on_parameter_servers(options);
    return build_ctr(batch, config);
  }
  if (options.model == "word2vec") {
    Word2vecConfig config = options.word2vec;
    config.on_parameter_servers = on_parameter_servers(options);
    return build_word2vec(batch, config);
  }
  throw Error(ErrorKind::kInvalidArgument, "unknown sparse model '" + options.model + "' (expected ctr or word2vec)");
}

SparseModelTrainingResult train_sparse_model(const SparseModelTraining& options, const std::vector<Tensor>& train,
                                             const std::vector<Tensor>* test) {
  const bool on_servers = on_parameter_servers(options);
  const int workers = options.workers;
  if (workers < 1 || options.worker < 0 || options.worker >= workers) {
    throw Error(ErrorKind::kInvalidArgument, "worker " + std::to_string(options.worker) + " is not one of " +
                                                 std::to_string(workers) + " workers");
  }
  if (!on_servers && workers > 1) {
    throw Error(ErrorKind::kInvalidArgument, std::to_string(workers) + " workers share their parameters through "
                                             "parameter servers; choose a parameter-server mode");
  }
  if (on_servers && options.client == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "training on parameter servers needs a parameter client");
  }
  if (options.batch % workers != 0) {
    throw Error(ErrorKind::kInvalidArgument, "the batch of " + std::to_string(options.batch) +
                                                 " does not split evenly over " + std::to_string(workers) + " workers");
  }
  if (options.trainer_threads < 1) {
    throw Error(ErrorKind::kInvalidArgument, "trainer threads must be at least 1, got " + std::to_string(options.trainer_threads));
  }
  const int64_t examples = train.empty() ? 0 : train.front().sizes().empty() ? 0 : train.front().sizes()[0];
  if (options.batch < 1 || examples < options.batch) {
    throw Error(ErrorKind::kInvalidArgument, "the training data's " + std::to_string(examples) +
                                                 " examples make no whole batch of " + std::to_string(options.batch));
  }
  if (options.trainer_threads > 1 && options.strategy.parameter_server.mode == PsMode::kSync) {
    throw Error(ErrorKind::kInvalidArgument, "sync mode runs one trainer thread per worker (a round is one step of "
                                             "each worker); use async, half-async or geo for Hogwild threads");
  }
  Strategy strategy = options.strategy;
  strategy.parameter_server.workers = workers;
  SparseModelGraph model = build_sparse_model(options, options.batch / workers);
  TrainingGraph step = minimize(*model.graph, model.loss, options.optimizer, strategy);
  const bool resuming = !options.resume_from.empty();
  if (!on_servers && (resuming || !options.save_to.empty() || options.shrink_after_passes > 0)) {
    throw Error(ErrorKind::kInvalidArgument, "saving, resuming and shrinking act on parameter servers' tables; "
                                             "this model trains locally");
  }
  if (options.shrink_after_passes > 0 && options.steps > 0) {
    throw Error(ErrorKind::kInvalidArgument, "shrinking happens at the ends of passes, which are epochs: train "
                                             "by epochs, not by steps");
  }
  // A communicator or a Geo-SGD client would queue or apply a barrier's
  // push locally: only the plain client serves as `servers` by default.
  ParameterClient* servers = options.servers                                           ? options.servers.get()
                             : options.strategy.parameter_server.mode == PsMode::kSync ? options.client.get()
                                                                                       : nullptr;
  WorkerMeetings meetings(servers, workers);
  int64_t first_batch = 0;
  std::filesystem::path resumed_from;
  if (on_servers && resuming) {
    resumed_from = checkpoint_in(options.resume_from);
    first_batch = read_batches_trained(resumed_from, options.worker);
  }
  if (options.save_every < 0 || (options.save_every > 0 && options.save_to.empty())) {
    throw Error(ErrorKind::kInvalidArgument, "saving every " + std::to_string(options.save_every) +
                                                 " steps needs a positive count and a directory to save in");
  }
  if (!options.save_to.empty()) {
    // A job started before a checkpoint there (anew, or resumed from an
    // earlier one) would write its step directories over it while `latest`
    // still named it.
    const auto steps = step_directories(options.save_to);
    if (!steps.empty() && steps.back().first > first_batch) {
      throw Error(ErrorKind::kInvalidArgument,
                  "checkpoint directory " + options.save_to.string() + " holds a checkpoint at batch " +
                      std::to_string(steps.back().first) + " (" + steps.back().second.filename().string() +
                      "), past batch " + std::to_string(first_batch) + " where this job starts, which it would "
                      "overwrite; save to another directory, resume from that checkpoint, or remove it");
    }
  }
  if (on_servers) {
    create_tables(*options.client, step, *model.graph, /*offer_initial=*/!resuming);
    if (resuming) {
      if (options.worker == 0) options.client->load(resumed_from);
      meetings.meet("before training (worker 0 loads the tables saved in " + resumed_from.string() + ")");
    } else if (!options.save_to.empty()) {
      // Every worker has looked at the directory (above) before any saves
      // in it: outside sync mode a fast worker's first save could otherwise
      // come before a slow one's look, which would take it for another
      // job's newer checkpoint.
      meetings.meet("before training (every worker checked " + options.save_to.string() + ")");
    }
  }
  // Every push of this worker's `rounds` steps sent, and in sync mode applied.
  auto settle = [&](int64_t rounds) {
    options.client->flush();
    if (options.strategy.parameter_server.mode == PsMode::kSync) wait_for_rounds(*options.client, step, rounds);
  };
  std::vector<std::filesystem::path> saved;
  // Every worker has trained `rounds` steps of this job, `first_batch +
  // rounds` batches in all, and settled them: the servers write their
  // tables once every push of those steps is there.
  auto save = [&](int64_t rounds, bool training_goes_on) {
    const std::filesystem::path directory = options.save_to / ("step-" + std::to_string(first_batch + rounds));
    write_batches_trained(directory, options.worker, first_batch + rounds);
    meetings.meet("before the servers save the tables in " + directory.string());
    if (options.worker == 0) options.client->save(directory);
    if (training_goes_on) meetings.meet("after the servers saved the tables in " + directory.string());
    if (options.worker == 0) make_latest(options.save_to, directory);
    saved.push_back(directory);
  };
  int64_t rows_dropped = 0;
  auto end_of_pass = [&] {
    if (options.shrink_after_passes <= 0) return;
    options.client->flush();
    meetings.meet("at the end of a pass");
    if (options.worker == 0) rows_dropped += options.client->end_pass(options.shrink_after_passes);
    meetings.meet("after the servers shrank their tables");
  };

  SessionOptions session_options;
  session_options.inter_op_threads = options.inter_op_threads;
  session_options.parameter_client = options.client;
  std::shared_ptr<const Plan> plan = compile(*model.graph);
  auto dataset = std::make_shared<TensorDataset>(train);
  DataLoaderOptions loader_options{.batch_size = options.batch, .shuffle = true, .drop_last = true,
                                   .seed = options.data_seed, .num_workers = options.reader_threads,
                                   .shards = workers, .shard = options.worker};
  loader_options.ordered = options.trainer_threads == 1;
  DataLoader loader(dataset, loader_options);
  const int64_t bytes_before = options.client ? options.client->bytes_pushed() : 0;

  TrainStats stats;
  std::unique_ptr<Session> session;
  if (options.trainer_threads == 1) {
    session = std::make_unique<Session>(plan, session_options);
    TrainerOptions trainer_options;
    trainer_options.feeds = model.inputs;
    trainer_options.lr = LrSchedule::constant(options.lr);
    trainer_options.log = options.worker == 0 ? options.log : nullptr;
    trainer_options.parameter_server_worker = on_servers;
    trainer_options.first_batch = first_batch;
    const int64_t per_epoch = loader.batches_per_epoch();
    trainer_options.after_step = [&](int64_t number, double) {
      if ((number + first_batch) % per_epoch == 0) end_of_pass();
      const bool last = options.steps > 0 && number == options.steps;  // the end-of-training save follows
      if (options.save_every > 0 && number % options.save_every == 0 && !last) {
        settle(number);
        save(number, /*training_goes_on=*/true);
      }
    };
    Trainer trainer(*session, step, loader, trainer_options);
    stats = options.steps > 0 ? trainer.run_steps(options.steps) : trainer.run_epochs(options.epochs);
  } else {
    stats = run_hogwild(options, plan, session_options, step, loader, model.inputs, first_batch, end_of_pass,
                        [&](int64_t number) {
                          settle(number);
                          save(number, /*training_goes_on=*/true);
                        });
  }
  if (options.client != nullptr) settle(stats.steps);
  const bool saved_at_the_end = !saved.empty() && saved.back().filename() == "step-" + std::to_string(first_batch + stats.steps);
  if (!options.save_to.empty() && !saved_at_the_end) save(stats.steps, /*training_goes_on=*/false);
  const bool evaluating = test != nullptr && !test->empty();
  // Worker 0 evaluates the servers' tables once every worker's last push is
  // there: a Geo-SGD worker still training holds deltas the servers have
  // not seen. Sync mode has waited for every round above already. Not in
  // async mode, where a worker that died must not stop the others: there
  // worker 0 evaluates what the servers hold when it is done.
  const PsMode mode = options.strategy.parameter_server.mode;
  if (evaluating && (mode == PsMode::kHalfAsync || mode == PsMode::kGeo)) {
    meetings.meet("before worker 0 evaluates the servers' tables");
  }

  SparseModelTrainingResult result;
  result.steps = stats.steps;
  result.losses = stats.losses;
  result.last_loss = stats.last_loss;
  result.seconds = stats.seconds;
  result.examples_per_second =
      stats.seconds > 0 ? static_cast<double>(stats.steps * (options.batch / workers)) / stats.seconds : 0;
  result.bytes_pushed = options.client ? options.client->bytes_pushed() - bytes_before : 0;
  result.training = step;
  result.first_batch = first_batch;
  result.rows_dropped = rows_dropped;
  result.saved = saved;
  result.resumed_from = resumed_from;
  if (evaluating && options.worker == 0) {
    if (session == nullptr && !on_servers) {
      throw Error(ErrorKind::kUnsupported, "evaluating a local model trained by several threads is not supported");
    }
    Evaluation evaluation = evaluate(options, options.servers ? options.servers : options.client, session.get(), step, *test);
    result.test_auc = evaluation.auc;
    result.test_loss = evaluation.loss;
    result.test_examples = evaluation.examples;
  }
  return result;
}

}  // namespace weir::models
