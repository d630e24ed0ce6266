#include "tools/graph-runner/sparse_model_training.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "core/error.h"
#include "distributed/launch_environment.h"
#include "distributed/ps/async_communicator.h"
#include "distributed/ps/geo_client.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "frontend/data/click_log.h"
#include "frontend/data/skipgram.h"
#include "frontend/train/auc.h"
#include "models/train_sparse_model.h"

namespace weir::tools {

namespace {

struct Datasets {
  std::vector<Tensor> train, test;
  double best_auc = -1;  // ctr: the true model's AUC on the test set
};

Datasets ctr_data(const SparseModelArgs& args, models::CtrConfig& config) {
  if (args.data != "synthetic") {
    throw Error(ErrorKind::kInvalidArgument, "--model ctr trains on --data synthetic (a click log drawn from a known "
                                             "logistic model), got '" + args.data + "'");
  }
  ClickLogOptions options;
  options.examples = args.synthetic_examples > 0 ? args.synthetic_examples : 200000;
  options.slots = config.slots;
  options.dense_features = config.dense_features;
  options.ids_per_slot = args.ids_per_slot;
  options.model_seed = args.seed + 1;
  options.sample_seed = args.seed + 2;
  config.vocabulary = options.ids_per_slot * options.slots;
  ClickLog train = synthetic_click_log(options);
  options.examples = std::max<int64_t>(options.examples / 4, 1);
  options.sample_seed = args.seed + 3;
  ClickLog test = synthetic_click_log(options);
  Datasets data;
  data.train = {train.ids, train.dense, train.labels};
  data.test = {test.ids, test.dense, test.labels};
  const float* probability = test.true_probability.data<float>();
  data.best_auc = roc_auc({probability, static_cast<size_t>(test.true_probability.num_elements())},
                          {test.labels.data<float>(), static_cast<size_t>(test.labels.num_elements())});
  return data;
}

Datasets word2vec_data(const SparseModelArgs& args, models::Word2vecConfig& config) {
  std::vector<int64_t> tokens, counts;
  if (args.data == "synthetic") {
    const int64_t count = args.synthetic_examples > 0 ? args.synthetic_examples : 200000;
    tokens = zipf_corpus(args.vocabulary, count, 1.0, args.seed + 1);
    counts.assign(static_cast<size_t>(args.vocabulary), 0);
    for (int64_t token : tokens) ++counts[static_cast<size_t>(token)];
  } else {
    TextCorpus corpus = read_text_corpus(args.data, 5);
    tokens = std::move(corpus.tokens);
    counts = std::move(corpus.counts);
  }
  config.vocabulary = static_cast<int64_t>(counts.size());
  // The last tenth of the corpus is held out: its loss says how well the
  // vectors generalise.
  const size_t split = tokens.size() - tokens.size() / 10;
  SkipGramOptions options{.window = 5, .negatives = config.negatives, .seed = args.seed + 2};
  SkipGramExamples train = skipgram_examples({tokens.data(), split}, counts, options);
  options.seed = args.seed + 3;
  SkipGramExamples test = skipgram_examples({tokens.data() + split, tokens.size() - split}, counts, options);
  Datasets data;
  data.train = {train.centres, train.targets, train.labels};
  data.test = {test.centres, test.targets, test.labels};
  return data;
}

struct Clients {
  std::shared_ptr<ParameterClient> client;   // the mode's
  std::shared_ptr<ParameterClient> servers;  // the gRPC client beneath it
};

Clients clients_for(const SparseModelArgs& args, PsMode mode, const LaunchEnvironment& job) {
  const char* endpoints = std::getenv("WEIR_SERVER_ENDPOINTS");
  if (endpoints == nullptr || *endpoints == '\0') {
    throw Error(ErrorKind::kInvalidArgument, "--ps " + args.ps + " trains on parameter servers, and none are given: "
                                             "start the job with graph-runner launch --servers S --workers W -- "
                                             "graph-runner train ..., or set WEIR_SERVER_ENDPOINTS=host:port,...");
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout * 1000));
  std::shared_ptr<ParameterClient> remote = ps::connect_parameter_servers(
      {.endpoints = ps::parse_server_endpoints(endpoints), .worker = job.rank, .connect_timeout = timeout,
       .call_timeout = timeout});
  switch (mode) {
    case PsMode::kAsync:
    case PsMode::kHalfAsync: {
      ps::AsyncCommunicatorOptions options;
      options.max_merge_var_num = args.max_merge;
      options.half_async = mode == PsMode::kHalfAsync;
      options.workers = job.world_size;
      options.worker = job.rank;
      options.timeout = timeout;
      return {ps::make_async_communicator(remote, options), remote};
    }
    case PsMode::kGeo:
      return {ps::make_geo_client(remote, {.k_steps = args.geo_k, .workers = job.world_size, .timeout = timeout}),
              remote};
    default:
      return {remote, remote};
  }
}

}  // namespace

bool is_sparse_model(const std::string& model) { return model == "ctr" || model == "word2vec"; }

void train_sparse_model_command(const SparseModelArgs& args) {
  models::SparseModelTraining options;
  options.model = args.model;
  options.batch = args.batch;
  options.epochs = args.epochs;
  options.steps = args.steps;
  options.optimizer.kind = parse_optimizer_kind(args.optimizer);
  options.lr = args.lr;
  options.data_seed = args.seed + 4;
  options.inter_op_threads = args.threads;
  options.trainer_threads = args.trainer_threads;
  options.reader_threads = args.reader_threads;
  options.ctr.seed = args.seed;
  options.word2vec.seed = args.seed;
  const PsMode mode = args.ps.empty() ? PsMode::kOff : parse_ps_mode(args.ps);
  options.strategy.parameter_server.mode = mode;
  if (mode == PsMode::kGeo && args.geo_k < 1) {
    throw Error(ErrorKind::kInvalidArgument, "--geo-k must be at least 1, got " + std::to_string(args.geo_k));
  }
  if (args.max_merge < 1) throw Error(ErrorKind::kInvalidArgument, "--max-merge must be at least 1, got " + std::to_string(args.max_merge));
  const LaunchEnvironment job = read_launch_environment(process_environment());
  if (mode != PsMode::kOff) {
    options.worker = job.rank;
    options.workers = job.world_size;
  } else if (job.world_size > 1) {
    throw Error(ErrorKind::kInvalidArgument, "--model " + args.model + " in a job of " + std::to_string(job.world_size) +
                                                 " processes shares its tables through parameter servers: add --ps "
                                                 "sync|async|half-async|geo (and start it with graph-runner launch "
                                                 "--servers S --workers W)");
  }
  if (args.trainer_threads > 1 && mode == PsMode::kOff) {
    throw Error(ErrorKind::kInvalidArgument, "--trainer-threads shares a worker's parameters through its parameter "
                                             "client; add --ps async, half-async or geo");
  }
  if (mode == PsMode::kOff && (!args.checkpoint.empty() || !args.resume.empty() || args.shrink_after_passes > 0 ||
                               args.admit_after > 1 || args.checkpoint_every > 0)) {
    throw Error(ErrorKind::kInvalidArgument, "--checkpoint, --checkpoint-every, --resume, --shrink-after-passes and "
                                             "--admit-after act on the parameter servers' tables; --model " +
                                                 args.model + " trains locally without --ps");
  }
  if (args.checkpoint_every != 0 && (args.checkpoint_every < 0 || args.checkpoint.empty())) {
    throw Error(ErrorKind::kInvalidArgument, "--checkpoint-every " + std::to_string(args.checkpoint_every) +
                                                 " needs a positive step count and --checkpoint DIR to save in");
  }
  options.save_to = args.checkpoint;
  options.save_every = args.checkpoint_every;
  options.resume_from = args.resume;
  options.shrink_after_passes = args.shrink_after_passes;
  options.ctr.admit_after = args.admit_after;
  options.word2vec.admit_after = args.admit_after;
  Datasets data = args.model == "ctr" ? ctr_data(args, options.ctr) : word2vec_data(args, options.word2vec);
  if (mode != PsMode::kOff) {
    Clients clients = clients_for(args, mode, job);
    options.client = std::move(clients.client);
    options.servers = std::move(clients.servers);
  }

  models::SparseModelTrainingResult result = models::train_sparse_model(options, data.train, &data.test);
  if (options.worker == 0 && mode != PsMode::kOff) {
    std::printf("parameter servers: %s mode, %d workers, %d servers, %zu tables\n", ps_mode_name(mode),
                options.workers, options.client->num_servers(), result.training.parameter_tables.size());
  }
  if (args.print_losses) {
    for (size_t i = 0; i < result.losses.size(); ++i) std::printf("step %zu loss: %.9g\n", i + 1, result.losses[i]);
  }
  if (!args.resume.empty()) {
    std::printf("resumed: tables from %s, data from batch %lld\n", result.resumed_from.string().c_str(),
                static_cast<long long>(result.first_batch));
  }
  if (args.shrink_after_passes > 0 && options.worker == 0) {
    std::printf("rows_dropped: %lld\n", static_cast<long long>(result.rows_dropped));
  }
  if (options.worker == 0) {
    for (const std::filesystem::path& saved : result.saved) std::printf("saved: tables in %s\n", saved.string().c_str());
  }
  std::printf("steps: %lld\n", static_cast<long long>(result.steps));
  std::printf("final_loss: %.9g\n", result.last_loss);
  std::printf("ms_per_step: %.3f\n", result.steps > 0 ? result.seconds * 1000 / static_cast<double>(result.steps) : 0.0);
  std::printf("examples_per_second: %.1f\n", result.examples_per_second);
  if (mode != PsMode::kOff) {
    std::printf("bytes_pushed_per_step: %lld\n",
                static_cast<long long>(result.steps > 0 ? result.bytes_pushed / result.steps : 0));
  }
  if (result.test_loss >= 0) std::printf("test_loss: %.6f\n", result.test_loss);
  if (result.test_auc >= 0) {
    std::printf("test_auc: %.4f\n", result.test_auc);
    std::printf("best_auc: %.4f\n", data.best_auc);
  }
  std::fflush(stdout);
}

}  // namespace weir::tools
