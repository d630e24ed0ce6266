#include "tools/graph-runner/train_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <set>

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/data/class_centres.h"
#include "frontend/data/idx.h"
#include "frontend/data/npy.h"
#include "frontend/nn/margin_head.h"
#include "core/type_inference.h"
#include "frontend/data/data_loader.h"
#include "frontend/optim/lr_schedule.h"
#include "frontend/strategy/strategy.h"
#include "frontend/strategy/strategy_file.h"
#include "frontend/train/trainer.h"
#include "models/train_classifier.h"
#include "passes/precision/auto_mixed_precision.h"
#include "ops/loss/class_shards.h"
#include "ops/register_ops.h"
#include "passes/analysis/flop_estimate.h"
#include "runtime/communication_overlap.h"
#include "runtime/in_process_ranks.h"
#include "runtime/device_support.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tools/graph-runner/launched_world.h"
#include "tools/graph-runner/sparse_model_training.h"
#include "tools/graph-runner/step_communication.h"
#include "tools/graph-runner/synthetic_examples.h"

namespace weir::tools {

namespace {

struct TrainArgs {
  std::string model;
  std::string device = "cpu";
  std::string data = kFashionMnistDir;
  int64_t epochs = 1;
  int64_t steps = 0;
  int64_t batch = 64;
  std::string optimizer = "adam";
  double lr = 1e-3;
  double weight_decay = 0;
  double clip = 0;
  uint64_t seed = 42;
  int threads = 1;
  int64_t layers = 2;
  int64_t mlp_layers = 1;
  int64_t mlp_width = 256;
  std::string save;
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  std::string resume;
  std::string test_batch;
  std::string graph;
  std::string save_training_graph;
  std::string amp;
  std::string recompute;
  std::string memory_budget;
  std::string strategy_file;
  int64_t image_size = 0;
  int64_t synthetic_examples = 0;
  int data_parallel = 1;
  double collective_timeout = 60;
  std::string job = "weir";
  bool print_losses = false;
  std::string profile;
  std::string simulate_link;
  int64_t classes = 0;  // 0: the dataset's (10)
  std::string margin;
  double sample_ratio = 1.0;
  int64_t embedding = 512;
  std::string ps;
  int geo_k = 100;
  int trainer_threads = 1;
  int reader_threads = 2;
  int max_merge = 20;
  int64_t ids_per_slot = 125000;
  int64_t vocabulary = 10000;
  int shrink_after_passes = 0;
  int64_t admit_after = 1;
};

// --model ctr|word2vec (tools/graph-runner/sparse_model_training.h).
void train_sparse(const TrainArgs& args) {
  if (!args.amp.empty() || !args.recompute.empty() || !args.memory_budget.empty() || !args.strategy_file.empty() ||
      args.data_parallel != 1 || !args.save.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--model " + args.model + " trains with --ps (parameter servers) or "
                                             "locally; --amp, --recompute, --memory-budget, --strategy, "
                                             "--data-parallel and --save are not supported with it yet "
                                             "(--checkpoint DIR, --checkpoint-every N and --resume DIR save and "
                                             "load the servers' tables)");
  }
  SparseModelArgs sparse;
  sparse.model = args.model;
  sparse.data = args.data == kFashionMnistDir ? "synthetic" : args.data;
  sparse.epochs = args.epochs;
  sparse.steps = args.steps;
  sparse.batch = args.batch;
  sparse.optimizer = args.optimizer;
  sparse.lr = args.lr;
  sparse.seed = args.seed;
  sparse.threads = args.threads;
  sparse.synthetic_examples = args.synthetic_examples;
  sparse.ps = args.ps;
  sparse.geo_k = args.geo_k;
  sparse.trainer_threads = args.trainer_threads;
  sparse.reader_threads = args.reader_threads;
  sparse.max_merge = args.max_merge;
  sparse.ids_per_slot = args.ids_per_slot;
  sparse.vocabulary = args.vocabulary;
  sparse.timeout = args.collective_timeout;
  sparse.print_losses = args.print_losses;
  sparse.checkpoint = args.checkpoint;
  sparse.checkpoint_every = args.checkpoint_every;
  sparse.resume = args.resume;
  sparse.shrink_after_passes = args.shrink_after_passes;
  sparse.admit_after = args.admit_after;
  train_sparse_model_command(sparse);
}

// --simulate-link slows the collectives of a world; a run of one rank has none.
SimulatedLink simulated_link_of(const TrainArgs& args, int ranks) {
  if (args.simulate_link.empty()) return {};
  const SimulatedLink link = parse_simulated_link(args.simulate_link);
  if (ranks < 2) {
    throw Error(ErrorKind::kInvalidArgument, "--simulate-link slows the collectives between data-parallel ranks, and "
                                             "this run has one rank; add --data-parallel N or start it under "
                                             "graph-runner launch");
  }
  return link;
}

// --device, parsed ("tpu" fails naming the flag).
Device parsed_device(const TrainArgs& args) {
  try {
    return Device::parse(args.device);
  } catch (const Error& e) {
    throw Error(e.kind(), "--device " + e.message());
  }
}

// --device, checked: "cuda:1" on a machine without that GPU fails here,
// naming it, before anything is built.
Device device_of(const TrainArgs& args) {
  const Device device = parsed_device(args);
  try {
    check_device_usable(device);
  } catch (const Error& e) {
    throw Error(e.kind(), "--device " + e.message());
  }
  return device;
}

// The launched world (tools/graph-runner/launched_world.h); nullptr when
// this process is a world of one on a CPU.
std::shared_ptr<World> world_of(const TrainArgs& args) {
  const DeviceType device = parsed_device(args).type;
  std::shared_ptr<World> world = tools::launched_world(
      {.job = args.job, .timeout = std::chrono::milliseconds(static_cast<int64_t>(args.collective_timeout * 1000)),
       .device = device});
  if (device != DeviceType::kCpu && world == nullptr && args.data_parallel != 1) {
    throw Error(ErrorKind::kInvalidArgument, "--data-parallel " + std::to_string(args.data_parallel) +
                                                 " runs ranks as threads of one process, on CPUs; to train on " +
                                                 std::to_string(args.data_parallel) + " GPUs start one process per "
                                                 "GPU: graph-runner launch -n " + std::to_string(args.data_parallel) +
                                                 " graph-runner train --device cuda ... (an NCCL world)");
  }
  if (world != nullptr && args.data_parallel != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "--data-parallel " + std::to_string(args.data_parallel) + " runs ranks as threads of one process, "
                "but this process is " + world->description() +
                "; a launched world is data parallel over its processes already (leave --data-parallel out)");
  }
  return world;
}

// This process's rate: its share of the batch, and its step's estimated
// FLOPs over the time a step took.
void print_step_rate(int64_t examples_per_step, double ms_per_step, int64_t step_flops) {
  if (ms_per_step <= 0) return;
  std::printf("examples_per_second: %.1f (this rank)\n", static_cast<double>(examples_per_step) * 1e3 / ms_per_step);
  std::printf("step_flops: %.4g GFLOP (estimated), %.4g TFLOP/s\n", static_cast<double>(step_flops) * 1e-9,
              static_cast<double>(step_flops) / (ms_per_step * 1e-3) * 1e-12);
}

// Result lines come from rank 0 only.
bool prints_results(const std::shared_ptr<World>& world) { return world == nullptr || world->rank() == 0; }

// Result lines. Losses carry 9 significant digits (a float's round trip), so
// two runs' lines compare exactly.
void print_losses(const std::vector<double>& losses, int64_t first_step) {
  for (size_t i = 0; i < losses.size(); ++i) {
    std::printf("step %lld loss: %.9g\n", static_cast<long long>(first_step + static_cast<int64_t>(i)), losses[i]);
  }
}

Strategy strategy_of(const TrainArgs& args) {
  Strategy strategy;
  if (!args.amp.empty() && args.amp != "off") {
    strategy.amp.enabled = true;
    strategy.amp.dtype = parse_amp_dtype(args.amp);
  }
  strategy.recompute = parse_recompute(args.recompute);
  if (!args.memory_budget.empty()) {
    strategy.recompute.memory_budget = parse_byte_size(args.memory_budget);
    if (strategy.recompute.mode == RecomputeMode::kOff) strategy.recompute.mode = RecomputeMode::kAuto;
    if (strategy.recompute.mode != RecomputeMode::kAuto) {
      throw Error(ErrorKind::kInvalidArgument, "--memory-budget chooses the checkpoints itself; it goes with --recompute "
                                               "auto, not with named checkpoints");
    }
  }
  strategy.data_parallel.ranks = args.data_parallel;
  if (!args.strategy_file.empty()) strategy = read_strategy_file(args.strategy_file, strategy);
  return strategy;
}

// The world's nodes, for a hierarchical allreduce that leaves the ranks per
// node to the launcher: the launched world's local size; an in-process
// world is one node.
void resolve_ranks_per_node(Strategy& strategy, const World* world, int ranks) {
  GradientCommunicationStrategy& comm = strategy.communication;
  if (comm.use_hierarchical_allreduce && comm.hierarchical_allreduce_inter_nranks == 0) {
    comm.hierarchical_allreduce_inter_nranks = world != nullptr ? world->local_size() : ranks;
  }
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

void report_strategy(const TrainingGraph& step, const Strategy& strategy, const World* world) {
  if (strategy.amp.enabled) {
    std::printf("amp: %s, %d nodes in low precision, %d casts, %d gradient sums written in f32%s\n",
                std::string(dtype_name(strategy.amp.dtype)).c_str(), step.amp_low_precision_nodes, step.amp_casts,
                step.amp_f32_gradient_sums, step.loss_scale.empty() ? "" : ", dynamic loss scaling");
  }
  if (strategy.recompute.mode != RecomputeMode::kOff) {
    std::printf("recompute: %zu values kept, %d nodes recomputed (%.3g GFLOP, %.1f%% of the forward pass's %.3g), "
                "estimated peak %lld -> %lld bytes",
                step.recompute_checkpoints.size(), step.recomputed_nodes, static_cast<double>(step.recomputed_flops) * 1e-9,
                step.forward_flops > 0 ? 100.0 * static_cast<double>(step.recomputed_flops) / static_cast<double>(step.forward_flops) : 0.0,
                static_cast<double>(step.forward_flops) * 1e-9, static_cast<long long>(step.peak_bytes_before_recompute),
                static_cast<long long>(step.peak_bytes_after_recompute));
    if (step.recompute_budget_bytes > 0) {
      std::printf(" (budget %lld%s%s)", static_cast<long long>(step.recompute_budget_bytes),
                  strategy.recompute.memory_budget > 0 ? "" : ", a third of the peak without recompute",
                  step.peak_bytes_after_recompute > step.recompute_budget_bytes ? ", out of reach: the lowest peak found" : "");
    }
    std::printf("\n");
  }
  if (step.ranks > 1 && world != nullptr) {
    std::printf("data parallel: %d ranks (%s), %d allreduces per step\n", step.ranks,
                world->description().c_str(), step.allreduces);
  } else if (step.ranks > 1) {
    std::printf("data parallel: %d ranks (threads of an in-process world, cpu:0..cpu:%d), %d allreduces per step\n",
                step.ranks, step.ranks - 1, step.allreduces);
  }
  if (!step.buckets.empty()) {
    std::set<std::string> streams;
    std::string sizes;
    for (const GradientBucket& bucket : step.buckets) {
      streams.insert(bucket.stream);
      sizes += (sizes.empty() ? "" : ", ") + mib(bucket.bytes());
    }
    std::printf("gradient buckets: %zu (%s), %s, %zu communication stream%s", step.buckets.size(), sizes.c_str(),
                std::string(dtype_name(step.buckets.front().dtype)).c_str(), streams.size(), streams.size() == 1 ? "" : "s");
    if (step.comm_moved_casts > 0) std::printf(", %d AMP casts moved across the allreduce", step.comm_moved_casts);
    std::printf("\n");
  }
  if (step.allreduce_rows > 1 && step.allreduce_cols > 1) {
    std::printf("allreduce topology: %s, %d x %d (reduce-scatter in each group of %d, allreduce across %d, allgather)\n",
                strategy.communication.use_hierarchical_allreduce ? "hierarchical" : "2-D", step.allreduce_rows,
                step.allreduce_cols, step.allreduce_cols, step.allreduce_rows);
  }
  if (step.gradient_merge_steps > 1) {
    std::printf("gradient merge: %d micro-steps per update (%s), %d collectives skip between updates\n",
                step.gradient_merge_steps, strategy.gradient_merge.avg ? "averaged" : "summed", step.merged_collectives);
  }
  if (!step.dgc_parameters.empty()) {
    const DgcStrategy& dgc = strategy.dgc;
    std::string ramp;
    for (double sparsity : dgc.sparsity) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", sparsity);
      ramp += (ramp.empty() ? "" : ", ") + std::string(text);
    }
    std::printf("dgc: %zu parameters compressed (sparsity [%s] over %d steps from step %d, dense before), the "
                "others averaged densely\n",
                step.dgc_parameters.size(), ramp.c_str(), dgc.rampup_step, dgc.rampup_begin_step + 1);
  }
  if (step.localsgd_values > 0) {
    const LocalSgdStrategy& localsgd = strategy.localsgd;
    if (localsgd.adaptive) {
      std::printf("adaptive localsgd: %d values averaged every step up to step %d, then every k steps (k from the "
                  "loss and the learning rate, first %d), %d collectives skip between averages; the loss is rank 0's own\n",
                  step.localsgd_values, localsgd.begin_step, localsgd.init_k_steps, step.localsgd_collectives);
    } else {
      std::printf("localsgd: %d values averaged every step up to step %d, then every %d steps, %d collectives skip "
                  "between averages; the loss is rank 0's own\n",
                  step.localsgd_values, localsgd.begin_step, localsgd.k_steps, step.localsgd_collectives);
    }
  }
  if (step.ranks > 1) std::printf("bytes_communicated_per_step: %lld\n", static_cast<long long>(step.allreduce_bytes));
}

// The margin head's shape: its classes per rank, PartialFC's sample, and
// what its rows and their optimizer state take on rank 0.
void report_margin_head(const models::ZooOptions& zoo, int ranks, int64_t batch, int64_t state_bytes) {
  const int64_t rows = ranks > 1 ? class_shard(zoo.classes, ranks, 0).width : zoo.classes;
  std::printf("margin head: %s, %lld classes x %lld, %s", zoo.margin.c_str(), static_cast<long long>(zoo.classes),
              static_cast<long long>(zoo.embedding),
              ranks > 1 ? ("model parallel over " + std::to_string(ranks) + " ranks, " + std::to_string(rows) +
                           " rows each").c_str()
                        : "one rank");
  if (zoo.sample_ratio < 1) {
    std::printf(", PartialFC %lld of %lld rows per step",
                static_cast<long long>(nn::sampled_centres(rows, zoo.sample_ratio, batch)), static_cast<long long>(rows));
  }
  std::printf("\nhead_state_bytes: %lld\n", static_cast<long long>(state_bytes));
}

// --profile: rank 0 writes its trace and says how much of its communication
// ran beside computation (runtime/communication_overlap.h).
void report_profile(const Profiler& profiler, const std::string& path, int64_t steps) {
  profiler.write_chrome_trace(path);
  const CommunicationOverlap overlap = communication_overlap(profiler.events());
  std::printf("communication: %.3f ms per step in %lld events, %.3f ms of it beside computation\n",
              static_cast<double>(overlap.communication_ns) / 1e6 / static_cast<double>(std::max<int64_t>(steps, 1)),
              static_cast<long long>(overlap.events),
              static_cast<double>(overlap.overlapped_ns) / 1e6 / static_cast<double>(std::max<int64_t>(steps, 1)));
  std::printf("communication_overlap: %.3f\n", overlap.fraction());
  std::cerr << "profile: " << path << " (" << profiler.events().size() << " events)\n";
}

// The devices a saved graph's nodes are placed on, default first, then by
// type and index (a data-parallel step names cpu:0 .. cpu:N-1).
std::vector<Device> devices_named_by(const Graph& graph) {
  std::vector<Device> devices = {Device::cpu()};
  for (const Node* node : graph.nodes()) {
    if (node->device() && std::find(devices.begin(), devices.end(), *node->device()) == devices.end()) {
      devices.push_back(*node->device());
    }
  }
  std::sort(devices.begin() + 1, devices.end(), [](const Device& a, const Device& b) {
    return std::pair(static_cast<int>(a.type), a.index) < std::pair(static_cast<int>(b.type), b.index);
  });
  return devices;
}

// Seeded random batches for each data input of a training graph: floats in
// [0, 1), integers (labels, ids) in {0, 1} so any classifier accepts them.
std::vector<Tensor> synthetic_fields(const std::vector<const Value*>& inputs, int64_t count, uint64_t seed) {
  std::vector<Tensor> fields;
  std::mt19937_64 rng(seed);
  for (const Value* input : inputs) {
    std::vector<int64_t> sizes = {count};
    for (size_t i = 1; i < input->shape().dims().size(); ++i) {
      const Dim& d = input->shape()[i];
      sizes.push_back(d.is_static() ? d.size() : 1);
    }
    Tensor t(input->dtype(), sizes);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      switch (input->dtype()) {
        case DType::kFloat32: t.data<float>()[i] = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53); break;
        case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2); break;
        default:
          throw Error(ErrorKind::kUnsupported, "--data synthetic cannot make input '" + input->name() + "' of type " +
                                                   input->type().to_string());
      }
    }
    fields.push_back(t);
  }
  return fields;
}

// train --graph FILE: a saved training-step graph (inputs: the data, "lr",
// and "step" for the Adam family; the loss is the first output). With
// --data-parallel N the graph must be one rank's data-parallel program
// (saved by train --model --data-parallel --save-training-graph), and N
// ranks run it, each on its share of batches N times its batch.
void train_graph(const TrainArgs& args) {
  if (!args.amp.empty() || !args.recompute.empty() || !args.memory_budget.empty() || !args.strategy_file.empty() ||
      args.image_size > 0) {
    throw Error(ErrorKind::kInvalidArgument, "--amp, --recompute, --memory-budget, --strategy and --image-size shape "
                                             "the training graph as it "
                                             "is built; use them with --model (and --save-training-graph to keep the "
                                             "result), not with --graph");
  }
  Model model = load_model(args.graph);
  Graph& graph = *model.graph;
  infer_graph_types(graph, default_op_registry());
  const Value* lr = graph.find_value("lr");
  if (lr == nullptr || lr->kind() != ValueKind::kInput || graph.outputs().empty()) {
    throw Error(ErrorKind::kInvalidArgument, "not a training graph: it needs an 'lr' input and the loss as its first "
                                             "output (write one with train --model NAME --save-training-graph FILE)")
        .with_file(args.graph);
  }
  TrainingGraph info;
  info.loss = graph.outputs().front()->name();
  const Value* step = graph.find_value("step");
  if (step != nullptr && step->kind() == ValueKind::kInput) info.step_input = "step";
  std::vector<const Value*> data_inputs;
  std::vector<std::string> feeds;
  for (const Value* input : graph.inputs()) {
    if (input->name() == "lr" || input->name() == "step") continue;
    data_inputs.push_back(input);
    feeds.push_back(input->name());
  }
  const Dim batch_dim = data_inputs.empty() || !data_inputs[0]->shape().has_rank() || data_inputs[0]->shape().rank() == 0
                            ? Dim(1) : data_inputs[0]->shape()[0];
  if (!batch_dim.is_static()) {
    throw Error(ErrorKind::kInvalidArgument, "the training graph's batch dim must be static, got " +
                                                 data_inputs[0]->type().to_string()).with_file(args.graph);
  }
  std::shared_ptr<World> launched = world_of(args);
  const int ranks = launched != nullptr ? launched->size() : args.data_parallel;
  const std::vector<Node*> nodes = graph.nodes();
  if (ranks > 1 && std::none_of(nodes.begin(), nodes.end(), [](const Node* node) { return node->op_type() == "AllReduce"; })) {
    throw Error(ErrorKind::kInvalidArgument, std::to_string(ranks) +
                                                 " data-parallel ranks run a data-parallel step program, and this "
                                                 "graph averages no gradients (no AllReduce): its ranks would train "
                                                 "apart; save one with train --model NAME --data-parallel N "
                                                 "--save-training-graph FILE")
        .with_file(args.graph);
  }
  const int64_t batch = batch_dim.size() * ranks;
  std::vector<Tensor> fields;
  if (args.data == "synthetic") {
    fields = synthetic_fields(data_inputs, batch * 16, args.seed + 1);
  } else {
    FashionMnist data = load_fashion_mnist(args.data);
    fields = {data.train_images, data.train_labels};
    if (data_inputs.size() != 2) {
      throw Error(ErrorKind::kInvalidArgument, "Fashion-MNIST has two fields (images, labels); the graph has " +
                                                   std::to_string(data_inputs.size()) + " data inputs").with_file(args.graph);
    }
  }
  SessionOptions session_options;
  session_options.inter_op_threads = args.threads;
  session_options.world = launched;
  CompileOptions compile_options;
  compile_options.host_fallback = true;  // a GPU's missing forward kernels run on the host (runtime/host_fallback.h)
  if (launched != nullptr) {
    compile_options.default_device = launched->device();  // the rank's program runs on its world's device
  } else if (const Device device = device_of(args); device.type != DeviceType::kCpu) {
    compile_options.default_device = device;
    compile_options.devices = {device};
  } else {
    compile_options.devices = devices_named_by(graph);
  }
  std::shared_ptr<const Plan> plan = compile(graph, compile_options);
  StepCommunication communication(simulated_link_of(args, ranks));
  auto wrap = [&](std::shared_ptr<World> rank_world) { return communication.wrap(std::move(rank_world)); };
  if (launched != nullptr) session_options.world = wrap(launched);
  std::unique_ptr<InProcessRanks> world;
  std::unique_ptr<Session> single;
  if (launched == nullptr && ranks > 1) {
    world = std::make_unique<InProcessRanks>(plan, ranks, session_options, InProcessWorldOptions{.wrap = wrap});
  } else {
    single = std::make_unique<Session>(plan, session_options);
  }
  Session& session = world ? world->session(0) : *single;
  const int local_sessions = world ? ranks : 1;
  const bool rank0 = prints_results(launched);
  auto dataset = std::make_shared<TensorDataset>(fields);
  DataLoaderOptions loader_options{.batch_size = batch, .seed = args.seed, .num_workers = 2};
  if (launched != nullptr) {
    loader_options.shards = ranks;
    loader_options.shard = launched->rank();
  }
  // Batches for a GPU are made in pinned memory, so their copies run by DMA.
  if (!feeds.empty()) loader_options.batch_memory = &session.feed_allocator(feeds.front());
  DataLoader loader(dataset, loader_options);
  TrainerOptions options;
  options.feeds = feeds;
  options.lr = LrSchedule::constant(args.lr);
  options.checkpoint = args.checkpoint;
  options.checkpoint_every = args.checkpoint_every;
  if (!rank0) options.log = nullptr;
  options.before_steps = [&] { communication.start(); };
  options.after_step = [&](int64_t, double) { communication.record_step(); };
  Profiler profiler;
  if (!args.profile.empty()) options.profiler = &profiler;
  Trainer trainer = world ? Trainer(*world, info, loader, options) : Trainer(session, info, loader, options);
  if (!args.resume.empty()) trainer.resume(args.resume);
  for (int r = 0; r < local_sessions; ++r) (world ? world->session(r) : session).reset_peak_memory();
  TrainStats stats = args.steps > 0 ? trainer.run_steps(args.steps) : trainer.run_epochs(args.epochs);
  if (!rank0) return;
  if (!args.save.empty()) {
    bake_state(session, graph);
    save_model(model, args.save);
    std::cerr << "saved the trained training graph to " << args.save << "\n";
  }
  if (args.print_losses) print_losses(stats.losses, trainer.step() - stats.steps + 1);
  communication.report(args.print_losses, trainer.step() - stats.steps + 1);
  std::printf("steps: %lld\n", static_cast<long long>(trainer.step()));
  std::printf("final_loss: %.9g\n", stats.last_loss);
  std::printf("ms_per_step: %.3f\n", stats.ms_per_step);
  print_step_rate(batch / ranks, stats.ms_per_step, estimated_flops(graph));
  if (launched != nullptr) std::printf("data parallel: %d ranks (%s)\n", ranks, launched->description().c_str());
  int64_t peak = 0;
  for (int r = 0; r < local_sessions; ++r) {
    for (const DeviceMemoryStats& device : (world ? world->session(r) : session).memory_stats()) {
      peak += device.stats.peak_bytes;
    }
  }
  std::printf("peak_memory_bytes: %lld\n", static_cast<long long>(peak));
  if (!args.profile.empty()) report_profile(profiler, args.profile, stats.steps);
}

void train(const TrainArgs& args) {
  if (!args.graph.empty()) {
    train_graph(args);
    return;
  }
  if (args.model.empty()) throw Error(ErrorKind::kInvalidArgument, "train needs --model NAME or --graph FILE");
  if (is_sparse_model(args.model)) {
    if (args.device != "cpu") {
      throw Error(ErrorKind::kUnsupported, "--model " + args.model + " trains on CPUs (its embedding tables live on "
                                           "parameter servers or in host memory); leave --device out");
    }
    train_sparse(args);
    return;
  }
  if (!args.ps.empty() || args.trainer_threads != 1) {
    throw Error(ErrorKind::kInvalidArgument, "--ps and --trainer-threads train the sparse-feature models (--model ctr "
                                             "or word2vec) on parameter servers, not '" + args.model + "'");
  }
  std::shared_ptr<World> world = world_of(args);
  const bool rank0 = prints_results(world);
  const int ranks = world != nullptr ? world->size() : args.data_parallel;
  models::ClassifierTraining options;
  options.world = world;
  options.device = world != nullptr ? world->device() : device_of(args);
  options.model = args.model;
  options.zoo.seed = args.seed;
  options.zoo.layers = args.layers;
  options.zoo.mlp_layers = args.mlp_layers;
  options.zoo.mlp_width = args.mlp_width;
  if (args.model != "arcface" && (!args.margin.empty() || args.sample_ratio != 1.0)) {
    throw Error(ErrorKind::kInvalidArgument, "--margin and --sample-ratio shape the margin head of --model arcface, not of '" +
                                                 args.model + "'");
  }
  if (args.classes > 0) {
    if (args.data != "synthetic" && args.classes != 10) {
      throw Error(ErrorKind::kInvalidArgument, "--classes " + std::to_string(args.classes) +
                                                   " goes with --data synthetic (Fashion-MNIST has 10 classes)");
    }
    options.zoo.classes = args.classes;
  }
  if (!args.margin.empty()) options.zoo.margin = args.margin;
  options.zoo.sample_ratio = args.sample_ratio;
  options.zoo.embedding = args.embedding;
  if (args.image_size > 0) {
    if (args.data != "synthetic") {
      throw Error(ErrorKind::kInvalidArgument, "--image-size " + std::to_string(args.image_size) +
                                                   " goes with --data synthetic (Fashion-MNIST's images are 28x28)");
    }
    options.zoo.image_size = args.image_size;
  }
  options.batch = args.batch;
  options.epochs = args.epochs;
  options.steps = args.steps;
  options.optimizer.kind = parse_optimizer_kind(args.optimizer);
  options.optimizer.weight_decay = args.weight_decay;
  options.optimizer.clip_global_norm = args.clip;
  options.lr = args.lr;
  options.inter_op_threads = args.threads;
  options.checkpoint = args.checkpoint;
  options.checkpoint_every = args.checkpoint_every;
  options.resume = args.resume;
  options.strategy = strategy_of(args);
  Profiler profiler;
  if (!args.profile.empty()) options.profiler = &profiler;
  StepCommunication communication(simulated_link_of(args, ranks));
  options.wrap_world = [&](std::shared_ptr<World> rank_world) { return communication.wrap(std::move(rank_world)); };
  options.before_steps = [&] { communication.start(); };
  options.after_step = [&](int64_t, double) { communication.record_step(); };
  resolve_ranks_per_node(options.strategy, world.get(), ranks);
  if (args.batch % ranks != 0) {
    throw Error(ErrorKind::kInvalidArgument, "--batch " + std::to_string(args.batch) + " does not split evenly over " +
                                                 std::to_string(ranks) + " data-parallel ranks");
  }

  Tensor train_x, train_y, test_x, test_y;
  bool has_test = false;
  if (args.data == "synthetic") {
    models::ClassifierGraph shape = models::build_classifier(args.model, 1, false, options.zoo);
    int64_t count = args.synthetic_examples > 0
                        ? args.synthetic_examples
                        : args.batch * std::max<int64_t>(args.steps > 0 ? std::min<int64_t>(args.steps, 16) : 16, 1);
    if (count < args.batch) {
      throw Error(ErrorKind::kInvalidArgument, "--synthetic-examples " + std::to_string(count) +
                                                   " is fewer than one batch of " + std::to_string(args.batch));
    }
    if (args.model == "arcface") {
      // Examples near their class's centre, and held-out ones of the same
      // classes: accuracy means something at any --classes.
      ClassCentresOptions centres{.classes = options.zoo.classes, .example_shape = shape.example_shape,
                                  .count = count, .seed = args.seed + 1, .sample_seed = args.seed + 2};
      LabelledExamples train_set = class_centre_examples(centres);
      centres.count = std::max<int64_t>(count / 4, 1);
      centres.sample_seed = args.seed + 3;
      LabelledExamples test_set = class_centre_examples(centres);
      train_x = train_set.examples, train_y = train_set.labels;
      test_x = test_set.examples, test_y = test_set.labels;
      has_test = true;
    } else {
      std::tie(train_x, train_y) = synthetic_examples(shape, options.zoo, count, args.seed + 1);
    }
  } else {
    if (args.model == "bert") {
      throw Error(ErrorKind::kInvalidArgument, "--model bert trains on --data synthetic (token ids), not on images");
    }
    FashionMnist data = load_fashion_mnist(args.data);
    train_x = data.train_images;
    train_y = data.train_labels;
    test_x = data.test_images;
    test_y = data.test_labels;
    has_test = true;
    if (args.model.starts_with("resnet")) options.zoo.resnet_width = 16;
  }
  if (!args.test_batch.empty() && rank0) {
    if (!has_test) throw Error(ErrorKind::kInvalidArgument, "--save-test-batch needs a dataset with a test set");
    int64_t n = std::min<int64_t>(16, test_x.sizes()[0]);
    write_npy(args.test_batch + "-images.npy", test_x.slice(0, n).clone());
    write_npy(args.test_batch + "-labels.npy", test_y.slice(0, n).clone());
  }

  if (!args.save_training_graph.empty() && args.model == "arcface" && ranks > 1) {
    // Refused on every rank, before any collective, so no rank waits for one that failed.
    throw Error(ErrorKind::kUnsupported,
                "--save-training-graph with --model arcface on " + std::to_string(ranks) +
                    " ranks: each rank's program holds its own rows of the class centres ('head/weight'), which one "
                    "saved graph cannot carry; save the training graph of one rank, or train --model arcface itself");
  }
  if (!args.save_training_graph.empty() && rank0) {
    // One rank's program, on its share of the batch.
    models::ClassifierGraph step =
        models::build_classifier(args.model, args.batch / ranks, /*training=*/true, options.zoo);
    Strategy strategy = options.strategy;
    strategy.data_parallel.ranks = ranks;
    minimize(*step.graph, step.loss, options.optimizer, strategy);
    if (step.class_centres) {
      // A session fills the head's centres after it starts; a saved graph
      // carries them, or train --graph would start from zeros (0/0 cosines).
      const models::ClassCentres& centres = *step.class_centres;
      Tensor rows(DType::kFloat32, {centres.classes, options.zoo.embedding});
      nn::fill_class_centres(rows, centres.classes, 1, 0, centres.seed);
      step.graph->find_value(centres.weight)->set_data(std::move(rows));
    }
    Model model;
    model.graph = std::move(step.graph);
    save_model(model, args.save_training_graph);
    std::cerr << "saved the training-step graph (initial weights) to " << args.save_training_graph << "\n";
  }
  models::ClassifierTrainingResult result = models::train_classifier(
      options, train_x, train_y, has_test ? &test_x : nullptr, has_test ? &test_y : nullptr);
  if (!rank0) return;
  if (!args.save.empty()) {
    Model model;
    model.graph = std::move(result.inference_graph);
    save_model(model, args.save);
    std::cerr << "saved the trained model to " << args.save << "\n";
  }
  report_strategy(result.training, options.strategy, world.get());
  if (args.model == "arcface") report_margin_head(options.zoo, ranks, args.batch, result.head_state_bytes);
  if (args.print_losses) print_losses(result.losses, result.total_steps - result.steps + 1);
  communication.report(args.print_losses, result.total_steps - result.steps + 1);
  std::printf("steps: %lld\n", static_cast<long long>(result.total_steps));
  std::printf("final_loss: %.9g\n", result.last_loss);
  std::printf("ms_per_step: %.3f\n", result.ms_per_step);
  print_step_rate(args.batch / ranks, result.ms_per_step, result.step_flops);
  std::printf("peak_memory_bytes: %lld\n", static_cast<long long>(result.peak_memory_bytes));
  if (result.test_accuracy >= 0) std::printf("test_accuracy: %.4f\n", result.test_accuracy);
  if (!args.profile.empty()) report_profile(profiler, args.profile, result.steps);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a zoo model (mlp, lenet, resnet18, resnet50, mobilenet_v2, squeezenet, bert, arcface, ctr, word2vec) on a dataset");
  auto* model = cmd->add_option("--model", args->model,
                                "mlp, lenet, resnet18, resnet50, mobilenet_v2, squeezenet, bert, arcface (a conv "
                                "backbone, a 512-d embedding and a margin head whose classes are sharded over the "
                                "ranks: model parallel, the backbone data parallel), ctr (wide & deep on a "
                                "synthetic click log from a known logistic model, ~10^6 feature ids; prints "
                                "test_auc and the true model's best_auc) or word2vec (skip-gram with negative "
                                "sampling on --data FILE, any text, or a synthetic Zipf corpus; prints test_loss)");
  cmd->add_option("--graph", args->graph,
                  "train a saved training-step graph instead (inputs: data, 'lr', 'step'; loss first output)")
      ->excludes(model);
  cmd->add_option("--save-training-graph", args->save_training_graph,
                  "with --model: also write the training-step graph (forward, backward, updates) here");
  cmd->add_option("--data", args->data,
                  "a directory of Fashion-MNIST IDX files (default: " + std::string(kFashionMnistDir) +
                      "), or 'synthetic' for seeded random batches");
  auto* epochs = cmd->add_option("--epochs", args->epochs, "epochs to train (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", args->steps, "steps to train instead of epochs")->check(CLI::PositiveNumber)->excludes(epochs);
  cmd->add_option("--batch", args->batch, "batch size (default 64)")->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", args->optimizer, "sgd, momentum, adagrad, adam, adamw or lamb (default adam)");
  cmd->add_option("--lr", args->lr, "learning rate (default 1e-3)")->check(CLI::PositiveNumber);
  cmd->add_option("--weight-decay", args->weight_decay, "weight decay (default 0)");
  cmd->add_option("--clip-global-norm", args->clip, "clip gradients to this global L2 norm (default: off)");
  cmd->add_option("--seed", args->seed, "parameter initialization seed (default 42)");
  cmd->add_option("--device", args->device,
                  "cpu or cuda[:N]: where the training step runs (default cpu). Under a launcher (graph-runner "
                  "launch, torchrun, mpirun, srun) cuda makes the processes an NCCL world, one per GPU, each rank on "
                  "the GPU of its local rank");
  cmd->add_option("--threads", args->threads, "inter-op threads (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--layers", args->layers, "bert: encoder layers (default 2)")->check(CLI::PositiveNumber);
  cmd->add_option("--amp", args->amp, "mixed precision: bf16 (the CPU's fast one) or fp16 (adds dynamic loss scaling); "
                  "f32 master weights (default: off)");
  cmd->add_option("--recompute", args->recompute,
                  "recompute activations in the backward pass: auto (the fewest recomputed FLOPs within --memory-budget) "
                  "or NAME[,NAME...] "
                  "(forward values to keep) (default: off)");
  cmd->add_option("--memory-budget", args->memory_budget,
                  "with --recompute auto: keep the estimated peak (arena, parameters, optimizer state, data) under "
                  "this many bytes (suffix K, M, G) recomputing the fewest FLOPs, or fail naming the lowest reachable "
                  "(default: a third of the peak without recompute, or the lowest reachable)");
  cmd->add_option("--strategy", args->strategy_file,
                  "a JSON strategy file (Fleet's DistributedStrategy field names; defaults in brackets): amp [false], "
                  "amp_configs {dtype [bf16], custom_white_list, custom_black_list, use_dynamic_loss_scaling [fp16 "
                  "only], init_loss_scaling [65536], incr_every_n_steps [2000], incr_ratio [2], decr_ratio [0.5]}, "
                  "recompute [false], recompute_configs {checkpoints [auto], memory_budget}, fuse_all_reduce_ops "
                  "[true], fuse_grad_size_in_MB [32], first_bucket_MB [1], comm_streams or nccl_comm_num [1], "
                  "overlap_communication [true], fp16_allreduce [false], allreduce_dtype [f32], "
                  "use_hierarchical_allreduce [false], hierarchical_allreduce_inter_nranks [local world size], "
                  "two_d_allreduce_rows [0], gradient_merge [false], gradient_merge_configs {k_steps [1], avg "
                  "[true]}, localsgd [false], localsgd_configs {k_steps [1], begin_step [1]}, adaptive_localsgd "
                  "[false], adaptive_localsgd_configs {init_k_steps [1], begin_step [1]}, dgc [false], dgc_configs "
                  "{rampup_begin_step [0], rampup_step [1], sparsity [[0.999]], clip_norm [0]}. Its fields override "
                  "--amp and --recompute; conflicting ones are refused naming both. More: docs/training.md");
  cmd->add_option("--image-size", args->image_size,
                  "with --data synthetic: the image models' input side, N x N (default 28)")
      ->check(CLI::Range(int64_t{8}, int64_t{1024}));
  cmd->add_option("--synthetic-examples", args->synthetic_examples,
                  "with --data synthetic and --model: examples in the synthetic dataset (default 16 batches, or "
                  "--steps batches when fewer); the same count and --seed give the same examples at any --batch")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--data-parallel", args->data_parallel,
                  "train on N ranks (threads of an in-process world, rank r on cpu:r), each running the same step "
                  "program on batch/N examples, gradients averaged by AllReduce nodes in the graph (default 1). "
                  "Under a launcher (graph-runner launch, torchrun, mpirun, srun) the ranks are the launched "
                  "processes instead, over Gloo, and this stays 1")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--collective-timeout", args->collective_timeout,
                  "in a world of processes (started by graph-runner launch, torchrun, mpirun or srun): seconds the "
                  "rendezvous and each collective may wait for the other ranks before failing (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--simulate-link", args->simulate_link,
                  "GBPS[,LATENCY_US]: every collective waits as long as it would on a link of GBPS Gbit/s with "
                  "LATENCY_US microseconds per message (default 0), the public-cloud case measured on one machine "
                  "(distributed/metered_world.h); the bytes each step sent are printed either way "
                  "(bytes_sent_per_step, rank 0's)");
  cmd->add_option("--job", args->job,
                  "in a world of processes: the job's namespace in the rendezvous store (default weir); jobs "
                  "sharing a store need different names");
  cmd->add_option("--profile", args->profile,
                  "write a Chrome/Perfetto trace of every step here (rank 0's), and print how much of the "
                  "communication ran beside computation (communication_overlap)");
  cmd->add_option("--classes", args->classes,
                  "with --data synthetic: the classes (default 10); --model arcface then trains on examples near "
                  "seeded class centres, with a held-out test set of the same classes")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--margin", args->margin,
                  "arcface: the head's margin, arcface (s 64, cos(theta + 0.5)), cosface (s 64, cos(theta) - 0.4) or "
                  "softmax (plain logits) (default arcface)");
  cmd->add_option("--sample-ratio", args->sample_ratio,
                  "arcface: PartialFC, the fraction of each rank's class centres trained per step, the batch's "
                  "classes always among them (default 1: all)")
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--embedding", args->embedding, "arcface: the embedding's width (default 512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ps", args->ps,
                  "ctr, word2vec: train on parameter servers, one worker of a job started by graph-runner launch "
                  "--servers S --workers W (WEIR_SERVER_ENDPOINTS): sync (every step's gradients applied before "
                  "any worker reads the next step's parameters; equal to one process on the whole batch), async "
                  "(pushes queued, merged and sent by a communicator thread; pulls do not wait), half-async (async "
                  "with a barrier of all workers every --max-merge sends) or geo (Geo-SGD: local training, "
                  "parameter deltas exchanged every --geo-k steps). Each worker trains on its share of every batch");
  cmd->add_option("--geo-k", args->geo_k, "--ps geo: steps between exchanges of parameter deltas (default 100)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trainer-threads", args->trainer_threads,
                  "--ps async|half-async|geo: Hogwild trainer threads in this worker, each running the step on its "
                  "own batches, sharing the worker's parameter client without locks (default 1)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--reader-threads", args->reader_threads,
                  "ctr, word2vec: data-loader threads, each filling its own queue (default 2)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--max-merge", args->max_merge,
                  "--ps async|half-async: pushes of one table merged into one message at most (Paddle's "
                  "max_merge_var_num; 1: no merging) (default 20)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--ids-per-slot", args->ids_per_slot,
                  "ctr: distinct feature ids per slot of the synthetic click log, 8 slots (default 125000: 10^6 ids)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--vocabulary", args->vocabulary, "word2vec --data synthetic: words in the Zipf corpus (default 10000)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shrink-after-passes", args->shrink_after_passes,
                  "--ps: at the end of every epoch (a pass) the workers meet and the servers drop the sparse rows "
                  "that no lookup touched in the last N passes (default 0: never)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--admit-after", args->admit_after,
                  "--ps: a sparse id gets its rows at its N-th lookup, reading zeros before (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_flag("--print-losses", args->print_losses,
                "print every step's loss ('step N loss: X', 9 significant digits) before the result lines");
  cmd->add_option("--mlp-layers", args->mlp_layers, "mlp: hidden layers (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--mlp-width", args->mlp_width, "mlp: hidden width (default 256)")->check(CLI::PositiveNumber);
  cmd->add_option("--save", args->save, "write the trained inference model (.weir / .weirtxt) here");
  cmd->add_option("--checkpoint", args->checkpoint,
                  "write a training checkpoint (.npz) here at the end; with --ps, a directory where the servers "
                  "save their tables once every worker is done, in DIR/step-B (B batches trained), DIR/latest "
                  "naming the newest whole one (the newest two are kept)");
  cmd->add_option("--checkpoint-every", args->checkpoint_every, "also every N steps");
  cmd->add_option("--resume", args->resume,
                  "continue from this checkpoint; with --ps, the directory of a --checkpoint (its latest) or one "
                  "of its step-B directories (same workers and servers): the tables are loaded and each worker's "
                  "data continues where it stopped");
  cmd->add_option("--save-test-batch", args->test_batch,
                  "write the first 16 test images and labels to PREFIX-images.npy and PREFIX-labels.npy");
  cmd->callback([args] { train(*args); });
}

}  // namespace weir::tools
