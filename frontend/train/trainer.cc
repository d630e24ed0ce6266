#include "frontend/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/communicator.h"
#include "core/error.h"
#include "frontend/train/checkpoint.h"
#include "frontend/train/progress.h"

namespace weir {

Trainer::Trainer(Session& session, TrainingGraph graph, DataLoader& loader, TrainerOptions options)
    : Trainer(session, nullptr, std::move(graph), loader, std::move(options)) {}

Trainer::Trainer(InProcessRanks& ranks, TrainingGraph graph, DataLoader& loader, TrainerOptions options)
    : Trainer(ranks.session(0), &ranks, std::move(graph), loader, std::move(options)) {}

Trainer::Trainer(Session& session, InProcessRanks* ranks, TrainingGraph graph, DataLoader& loader,
                 TrainerOptions options)
    : session_(session), ranks_(ranks), graph_(std::move(graph)), loader_(loader), options_(std::move(options)) {
  const Graph& g = session_.plan().graph();
  for (const std::string& feed : options_.feeds) {
    const Value* v = g.find_value(feed);
    if (v == nullptr || v->kind() != ValueKind::kInput) {
      throw Error(ErrorKind::kInvalidArgument, "trainer: '" + feed + "' is not an input of graph '" + g.name() + "'");
    }
  }
  if (loader_.batches_per_epoch() == 0) {
    throw Error(ErrorKind::kInvalidArgument, "trainer: the dataset has fewer examples than one batch");
  }
  if (options_.first_batch < 0) {
    throw Error(ErrorKind::kInvalidArgument, "trainer: the first batch is " + std::to_string(options_.first_batch) +
                                                 "; it counts batches already trained, from 0");
  }
  // One process's rank of a larger world feeds its own shard of each batch.
  const DataLoaderOptions& shard = loader_.options();
  const World* world = session_.world().get();
  const int world_size = ranks_ == nullptr && world != nullptr ? world->size() : 1;
  const int rank = ranks_ == nullptr && world != nullptr ? world->rank() : 0;
  if (!options_.parameter_server_worker && (shard.shards != world_size || shard.shard != rank)) {
    throw Error(ErrorKind::kInvalidArgument,
                "trainer: the data loader gives shard " + std::to_string(shard.shard) + " of " +
                    std::to_string(shard.shards) + " of each batch, but this session is rank " + std::to_string(rank) +
                    " of " + std::to_string(world_size) + " processes (" +
                    (world != nullptr ? world->description() : std::string("no world")) +
                    "): each process needs the shard of its rank");
  }
}


std::vector<Tensor> Trainer::run_step(const std::map<std::string, Tensor>& feeds) {
  RunOptions run_options;
  run_options.profiler = options_.profiler;
  if (ranks_ == nullptr) return session_.run(feeds, run_options);
  const int ranks = ranks_->size();
  std::vector<std::map<std::string, Tensor>> shares(static_cast<size_t>(ranks), feeds);
  for (const std::string& name : options_.feeds) {
    const Tensor& whole = feeds.at(name);
    const int64_t rows = whole.rank() > 0 ? whole.sizes()[0] : 0;
    if (rows % ranks != 0) {
      throw Error(ErrorKind::kInvalidArgument, "trainer: the batch's " + std::to_string(rows) + " rows of '" + name +
                                                   "' do not split evenly over " + std::to_string(ranks) + " ranks");
    }
    const int64_t share = rows / ranks;
    for (int r = 0; r < ranks; ++r) shares[static_cast<size_t>(r)][name] = whole.slice(r * share, (r + 1) * share);
  }
  return ranks_->run(shares, run_options).front();
}

int64_t Trainer::epoch() const { return (step_ + options_.first_batch) / loader_.batches_per_epoch(); }

TrainStats Trainer::run_epochs(int64_t epochs) {
  int64_t per_epoch = loader_.batches_per_epoch();
  int64_t target = 0;
  // The step may come from a checkpoint: the arithmetic is checked, so a huge
  // step fails instead of wrapping round to "nothing left to train".
  if (epochs < 0 || __builtin_add_overflow(epoch(), epochs, &target) ||
      __builtin_mul_overflow(target, per_epoch, &target)) {
    throw Error(ErrorKind::kInvalidArgument, "trainer: " + std::to_string(epochs) + " epochs after step " +
                                                 std::to_string(step_) + " overflow the step counter");
  }
  return run_steps(std::max<int64_t>(0, target - step_ - options_.first_batch));
}

TrainStats Trainer::run_steps(int64_t steps) {
  TrainStats stats;
  const int64_t per_epoch = loader_.batches_per_epoch();
  int64_t end = 0;
  if (steps < 0 || __builtin_add_overflow(step_, steps, &end)) {
    throw Error(ErrorKind::kInvalidArgument, "trainer: " + std::to_string(steps) + " steps after step " +
                                                 std::to_string(step_) + " overflow the step counter");
  }
  std::ostream* log = options_.log;
  Progress progress(log != nullptr ? *log : std::cerr, end, "train", options_.progress_terminal);
  double loss_sum = 0;
  if (options_.before_steps) options_.before_steps();
  auto start = std::chrono::steady_clock::now();
  while (step_ < end) {
    const int64_t position = step_ + options_.first_batch;
    if (loader_step_ != step_ || position % per_epoch == 0) {
      loader_.start_epoch(position / per_epoch, position % per_epoch);
      loader_step_ = step_;
    }
    std::optional<std::vector<Tensor>> batch = loader_.next();
    if (!batch) throw Error(ErrorKind::kInternal, "trainer: the data loader ended early at step " + std::to_string(step_));
    if (batch->size() < options_.feeds.size()) {
      throw Error(ErrorKind::kInvalidArgument, "trainer: batches have " + std::to_string(batch->size()) +
                                                   " fields; the feeds name " + std::to_string(options_.feeds.size()));
    }
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < options_.feeds.size(); ++i) feeds[options_.feeds[i]] = (*batch)[i];
    const int64_t number = step_ + 1;  // the update being applied, from 1
    feeds[graph_.lr_input] = Tensor::scalar<float>(static_cast<float>(options_.lr.at(number)));
    if (!graph_.step_input.empty()) feeds[graph_.step_input] = Tensor::scalar<int64_t>(number);
    std::vector<Tensor> outputs = run_step(feeds);
    double loss = outputs.empty() ? 0 : static_cast<double>(outputs[0].data<float>()[0]);
    ++step_;
    ++loader_step_;
    ++stats.steps;
    loss_sum += loss;
    stats.last_loss = loss;
    stats.losses.push_back(loss);
    if (log != nullptr) progress.update(step_, {{"loss", loss}});
    if (options_.after_step) options_.after_step(step_, loss);
    if (!options_.checkpoint.empty() && options_.checkpoint_every > 0 && step_ % options_.checkpoint_every == 0) {
      save(options_.checkpoint);
    }
  }
  if (log != nullptr) progress.finish();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.ms_per_step = stats.steps > 0 ? 1000 * stats.seconds / static_cast<double>(stats.steps) : 0;
  stats.mean_loss = stats.steps > 0 ? loss_sum / static_cast<double>(stats.steps) : 0;
  if (!options_.checkpoint.empty()) save(options_.checkpoint);
  return stats;
}

int Trainer::ranks() const {
  if (ranks_ != nullptr) return ranks_->size();
  return session_.world() != nullptr ? session_.world()->size() : 1;
}

int Trainer::rank() const { return ranks_ == nullptr && session_.world() != nullptr ? session_.world()->rank() : 0; }

std::map<std::string, Tensor> Trainer::gather_row_shards() const {
  std::map<std::string, Tensor> whole;
  if (!options_.row_shards) return whole;
  std::vector<RowShards> shards;
  for (int r = 0; r < ranks(); ++r) shards.push_back(options_.row_shards(r));
  std::shared_ptr<Communicator> comm = ranks_ == nullptr && ranks() > 1 ? session_.world()->communicator() : nullptr;
  for (const auto& named : shards[static_cast<size_t>(rank())]) {
    const std::string& name = named.first;  // a structured binding clang cannot capture
    std::vector<RowShard> parts;
    for (const RowShards& of_rank : shards) parts.push_back(of_rank.at(name));
    Tensor all = gather_row_shard(name, parts, session_.host_state(name), comm.get(),
                                  [&](int r) { return ranks_->session(r).host_state(name); });
    if (rank() == 0) whole[name] = std::move(all);
  }
  return whole;
}

void Trainer::save(const std::filesystem::path& path) const {
  const std::map<std::string, Tensor> whole = gather_row_shards();
  if (rank() != 0) return;
  save_checkpoint(path, session_, step_, whole);
}

void Trainer::resume(const std::filesystem::path& path) {
  auto shards_of = [&](int r) { return options_.row_shards ? options_.row_shards(r) : RowShards{}; };
  step_ = load_checkpoint(path, session_, shards_of(rank()));
  if (ranks_ != nullptr) {
    for (int r = 1; r < ranks_->size(); ++r) load_checkpoint(path, ranks_->session(r), shards_of(r));
  }
  loader_step_ = -1;
}

int copy_state(const Session& from, Session& to) {
  int copied = 0;
  const Graph& source = from.plan().graph();
  for (const Value* value : to.plan().graph().persistents()) {
    const Value* match = source.find_value(value->name());
    if (match == nullptr || !match->is_persistent()) continue;
    to.set_state(value->name(), from.host_state(value->name()));
    ++copied;
  }
  return copied;
}

void bake_state(const Session& from, Graph& graph) {
  const Graph& source = from.plan().graph();
  for (Value* value : graph.persistents()) {
    const Value* match = source.find_value(value->name());
    if (match != nullptr && match->is_persistent()) value->set_data(from.host_state(value->name()).clone());
  }
}

}  // namespace weir
