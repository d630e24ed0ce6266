// Training from Python: weir.Optimizer, weir.Strategy, weir.minimize,
// weir.Trainer and weir.launched_world (frontend/optim, frontend/strategy,
// frontend/train; tools/graph-runner/launched_world.h).
//
//   step = weir.minimize(graph, "loss", weir.Optimizer("adam"), strategy)
//   trainer = weir.Trainer(step, {"x": images, "labels": labels}, batch_size=64, lr=1e-3)
//   trainer.run_epochs(1); trainer.save("ckpt.npz")
//
// Data parallel: with strategy.data_parallel.ranks = N the graph is one
// rank's, built at batch_size / N rows, and the trainer runs the N ranks
// as threads; under `graph-runner launch` or mpirun, give the trainer
// weir.launched_world() and each process feeds its share of every batch.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <iostream>

#include "core/error.h"
#include "core/world.h"
#include "frontend/data/data_loader.h"
#include "frontend/optim/optimizer.h"
#include "frontend/strategy/strategy.h"
#include "frontend/strategy/strategy_file.h"
#include "frontend/train/trainer.h"
#include "python/src/bindings.h"
#include "python/src/graphs.h"
#include "python/src/ndarray.h"
#include "runtime/in_process_ranks.h"
#include "tools/graph-runner/launched_world.h"

namespace py = pybind11;

namespace weir::python {

namespace {

struct TrainingStep {
  GraphHandle graph;  // the whole step: forward, backward, updates
  TrainingGraph info;
};

struct PythonTrainer {
  std::shared_ptr<const Plan> plan;
  std::unique_ptr<InProcessRanks> ranks;
  std::unique_ptr<Session> session;
  std::unique_ptr<DataLoader> loader;
  std::unique_ptr<Trainer> trainer;
  Session& rank0() { return ranks ? ranks->session(0) : *session; }
};

const char* recompute_mode_name(RecomputeMode mode) {
  switch (mode) {
    case RecomputeMode::kOff: return "off";
    case RecomputeMode::kCheckpoints: return "checkpoints";
    case RecomputeMode::kAuto: return "auto";
  }
  return "off";
}

RecomputeMode parse_recompute_mode(const std::string& name) {
  if (name == "off") return RecomputeMode::kOff;
  if (name == "checkpoints") return RecomputeMode::kCheckpoints;
  if (name == "auto") return RecomputeMode::kAuto;
  throw Error(ErrorKind::kInvalidArgument, "recompute mode '" + name + "' (expected off, checkpoints or auto)");
}

TrainingStep minimize_graph(const Graph& graph, const std::string& loss, const OptimizerConfig& optimizer,
                            const Strategy& strategy) {
  TrainingStep step{.graph = GraphHandle(graph.clone()), .info = {}};
  py::gil_scoped_release release;
  step.info = minimize(*step.graph, loss, optimizer, strategy);
  return step;
}

std::unique_ptr<PythonTrainer> make_trainer(const TrainingStep& step, const py::dict& data, int64_t batch_size,
                                            double lr, uint64_t seed, const std::shared_ptr<World>& world,
                                            int inter_op_threads, const std::string& checkpoint,
                                            int64_t checkpoint_every, bool log, int num_workers) {
  if (data.empty()) throw Error(ErrorKind::kInvalidArgument, "Trainer: data is empty (expected {input name: array})");
  auto t = std::make_unique<PythonTrainer>();
  std::vector<Tensor> fields;
  std::vector<std::string> feeds;
  for (const auto& [key, value] : data) {
    feeds.push_back(py::str(key));
    fields.push_back(to_owned_tensor(value, "data '" + feeds.back() + "'"));
  }
  const int ranks = step.info.ranks;
  if (world != nullptr && world->size() != ranks) {
    throw Error(ErrorKind::kInvalidArgument, "Trainer: the step is data parallel over " + std::to_string(ranks) +
                                                 " ranks but the world has " + std::to_string(world->size()) +
                                                 " (set strategy.data_parallel.ranks = world.size before minimize)");
  }
  py::gil_scoped_release release;
  t->plan = compile(*step.graph);
  SessionOptions session_options;
  session_options.inter_op_threads = inter_op_threads;
  DataLoaderOptions loader_options{.batch_size = batch_size, .shuffle = true, .drop_last = true, .seed = seed,
                                   .num_workers = num_workers};
  if (world != nullptr) {
    session_options.world = world;
    loader_options.shards = world->size();
    loader_options.shard = world->rank();
    t->session = std::make_unique<Session>(t->plan, session_options);
  } else if (ranks > 1) {
    t->ranks = std::make_unique<InProcessRanks>(t->plan, ranks, session_options);
  } else {
    t->session = std::make_unique<Session>(t->plan, session_options);
  }
  t->loader = std::make_unique<DataLoader>(std::make_shared<TensorDataset>(std::move(fields)), loader_options);
  TrainerOptions options{.feeds = feeds, .lr = LrSchedule::constant(lr), .log = log ? &std::cerr : nullptr,
                         .checkpoint = std::filesystem::path(checkpoint), .checkpoint_every = checkpoint_every};
  t->trainer = t->ranks ? std::make_unique<Trainer>(*t->ranks, step.info, *t->loader, options)
                        : std::make_unique<Trainer>(*t->session, step.info, *t->loader, options);
  return t;
}

py::dict stats_dict(const TrainStats& s) {
  py::dict out;
  out["steps"] = s.steps;
  out["seconds"] = s.seconds;
  out["ms_per_step"] = s.ms_per_step;
  out["last_loss"] = s.last_loss;
  out["mean_loss"] = s.mean_loss;
  out["losses"] = s.losses;
  return out;
}

}  // namespace

void bind_training(py::module_& m) {
  py::class_<OptimizerConfig>(m, "Optimizer", "The optimizer minimize() appends: its kind and hyper-parameters")
      .def(py::init([](const std::string& kind, double weight_decay, double momentum, bool nesterov, double beta1,
                       double beta2, double epsilon, double clip_global_norm) {
             return OptimizerConfig{.kind = parse_optimizer_kind(kind), .weight_decay = weight_decay,
                                    .momentum = momentum, .nesterov = nesterov, .beta1 = beta1, .beta2 = beta2,
                                    .epsilon = epsilon, .clip_global_norm = clip_global_norm};
           }),
           py::arg("kind") = "adam", py::arg("weight_decay") = 0.0, py::arg("momentum") = 0.9,
           py::arg("nesterov") = false, py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 0.0,
           py::arg("clip_global_norm") = 0.0, "kind: sgd, momentum, adagrad, adam, adamw or lamb")
      .def_property_readonly("kind", [](const OptimizerConfig& c) { return optimizer_kind_name(c.kind); })
      .def_readwrite("weight_decay", &OptimizerConfig::weight_decay)
      .def_readwrite("momentum", &OptimizerConfig::momentum)
      .def_readwrite("clip_global_norm", &OptimizerConfig::clip_global_norm);

  py::class_<AmpStrategy>(m, "AmpStrategy")
      .def_readwrite("enabled", &AmpStrategy::enabled)
      .def_property("dtype", [](const AmpStrategy& a) { return std::string(dtype_name(a.dtype)); },
                    [](AmpStrategy& a, const std::string& name) { a.dtype = parse_dtype(name); }, "bf16 or f16");
  py::class_<RecomputeStrategy>(m, "RecomputeStrategy")
      .def_property("mode", [](const RecomputeStrategy& r) { return recompute_mode_name(r.mode); },
                    [](RecomputeStrategy& r, const std::string& name) { r.mode = parse_recompute_mode(name); },
                    "off, checkpoints or auto")
      .def_readwrite("checkpoints", &RecomputeStrategy::checkpoints)
      .def_readwrite("memory_budget", &RecomputeStrategy::memory_budget, "bytes (auto); 0: the lowest peak");
  py::class_<DataParallelStrategy>(m, "DataParallelStrategy")
      .def_readwrite("ranks", &DataParallelStrategy::ranks);
  py::class_<GradientCommunicationStrategy>(m, "GradientCommunicationStrategy")
      .def_readwrite("fuse_all_reduce_ops", &GradientCommunicationStrategy::fuse_all_reduce_ops)
      .def_readwrite("fuse_grad_size_in_MB", &GradientCommunicationStrategy::fuse_grad_size_in_MB)
      .def_readwrite("first_bucket_MB", &GradientCommunicationStrategy::first_bucket_MB)
      .def_readwrite("comm_streams", &GradientCommunicationStrategy::comm_streams)
      .def_readwrite("overlap_communication", &GradientCommunicationStrategy::overlap_communication)
      .def_property("allreduce_dtype", [](const GradientCommunicationStrategy& c) { return std::string(dtype_name(c.allreduce_dtype)); },
                    [](GradientCommunicationStrategy& c, const std::string& name) { c.allreduce_dtype = parse_dtype(name); })
      .def_readwrite("use_hierarchical_allreduce", &GradientCommunicationStrategy::use_hierarchical_allreduce)
      .def_readwrite("hierarchical_allreduce_inter_nranks", &GradientCommunicationStrategy::hierarchical_allreduce_inter_nranks);
  py::class_<GradientMergeStrategy>(m, "GradientMergeStrategy")
      .def_readwrite("enabled", &GradientMergeStrategy::enabled)
      .def_readwrite("k_steps", &GradientMergeStrategy::k_steps)
      .def_readwrite("avg", &GradientMergeStrategy::avg);
  py::class_<LocalSgdStrategy>(m, "LocalSgdStrategy")
      .def_readwrite("enabled", &LocalSgdStrategy::enabled)
      .def_readwrite("adaptive", &LocalSgdStrategy::adaptive)
      .def_readwrite("k_steps", &LocalSgdStrategy::k_steps)
      .def_readwrite("begin_step", &LocalSgdStrategy::begin_step);
  py::class_<DgcStrategy>(m, "DgcStrategy")
      .def_readwrite("enabled", &DgcStrategy::enabled)
      .def_readwrite("rampup_begin_step", &DgcStrategy::rampup_begin_step)
      .def_readwrite("sparsity", &DgcStrategy::sparsity);
  py::class_<Strategy>(m, "Strategy", R"doc(
What minimize() turns on beyond plain differentiation: AMP, recompute, data
parallelism and how gradients travel. Fields as in C++ (strategy.amp.enabled,
strategy.data_parallel.ranks, strategy.communication.fuse_grad_size_in_MB,
...); Strategy.from_json() reads Fleet-style strategy files.)doc")
      .def(py::init<>())
      .def_readwrite("amp", &Strategy::amp)
      .def_readwrite("recompute", &Strategy::recompute)
      .def_readwrite("data_parallel", &Strategy::data_parallel)
      .def_readwrite("communication", &Strategy::communication)
      .def_readwrite("gradient_merge", &Strategy::gradient_merge)
      .def_readwrite("localsgd", &Strategy::localsgd)
      .def_readwrite("dgc", &Strategy::dgc)
      .def_static("from_json", [](const std::string& json, const std::string& source) {
        return parse_strategy_json(json, source);
      }, py::arg("json"), py::arg("source") = "<python>", "A strategy file's JSON (docs/training.md lists the fields)")
      .def_static("load", [](const std::string& path) { return read_strategy_file(path); }, py::arg("path"));

  py::class_<TrainingStep>(m, "TrainingStep", "A training step: the graph minimize() made and what its passes did")
      .def_readonly("graph", &TrainingStep::graph)
      .def_property_readonly("loss", [](const TrainingStep& s) { return s.info.loss; })
      .def_property_readonly("parameters", [](const TrainingStep& s) { return s.info.parameters; })
      .def_property_readonly("ranks", [](const TrainingStep& s) { return s.info.ranks; })
      .def_property_readonly("allreduces", [](const TrainingStep& s) { return s.info.allreduces; })
      .def_property_readonly("amp_low_precision_nodes", [](const TrainingStep& s) { return s.info.amp_low_precision_nodes; })
      .def_property_readonly("recomputed_nodes", [](const TrainingStep& s) { return s.info.recomputed_nodes; });

  m.def("minimize", &minimize_graph, py::arg("graph"), py::arg("loss"), py::arg("optimizer") = OptimizerConfig{},
        py::arg("strategy") = Strategy{},
        "A training step for a copy of `graph` whose output `loss` (a scalar) is minimized: autodiff, the "
        "strategy's rewrites and one update per parameter");

  py::class_<World, std::shared_ptr<World>>(m, "World", "The processes of a launched job (Gloo over TCP)")
      .def_property_readonly("size", &World::size)
      .def_property_readonly("rank", &World::rank)
      .def_property_readonly("local_size", &World::local_size)
      .def("__repr__", [](const World& w) {
        return "<weir.World rank " + std::to_string(w.rank()) + " of " + std::to_string(w.size()) + ">";
      });
  m.def("launched_world", [](const std::string& job, double timeout_s) {
    py::gil_scoped_release release;
    return tools::launched_world(
        {.job = job, .timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000))});
  }, py::arg("job") = "weir", py::arg("timeout_s") = 60.0,
        "The world `graph-runner launch`, torchrun or mpirun started this process into; None when not launched "
        "(or a world of one). Rendezvous and every collective wait at most timeout_s");

  py::class_<PythonTrainer>(m, "Trainer", R"doc(
Runs a training step over in-memory data: {input name: array}, examples
along axis 0, shuffled by `seed`, batch_size rows a step (the whole step's:
each rank of a data-parallel step gets its share). lr is constant.)doc")
      .def(py::init(&make_trainer), py::arg("step"), py::arg("data"), py::arg("batch_size") = 64,
           py::arg("lr") = 1e-3, py::arg("seed") = 1, py::arg("world") = std::shared_ptr<World>(),
           py::arg("inter_op_threads") = 1, py::arg("checkpoint") = "",
           py::arg("checkpoint_every") = 0, py::arg("log") = false, py::arg("num_workers") = 2)
      .def_property_readonly("step", [](const PythonTrainer& t) { return t.trainer->step(); }, "steps completed")
      .def_property_readonly("epoch", [](const PythonTrainer& t) { return t.trainer->epoch(); })
      .def("run_steps", [](PythonTrainer& t, int64_t steps) {
        TrainStats stats;
        {
          py::gil_scoped_release release;
          stats = t.trainer->run_steps(steps);
        }
        return stats_dict(stats);
      }, py::arg("steps"), "Returns {steps, seconds, ms_per_step, last_loss, mean_loss, losses}")
      .def("run_epochs", [](PythonTrainer& t, int64_t epochs) {
        TrainStats stats;
        {
          py::gil_scoped_release release;
          stats = t.trainer->run_epochs(epochs);
        }
        return stats_dict(stats);
      }, py::arg("epochs"))
      .def("save", [](const PythonTrainer& t, const std::filesystem::path& path) {
        py::gil_scoped_release release;
        t.trainer->save(path);
      }, py::arg("path"), "A checkpoint (.npz; temp file, then rename), written by rank 0")
      .def("resume", [](PythonTrainer& t, const std::filesystem::path& path) {
        py::gil_scoped_release release;
        t.trainer->resume(path);
      }, py::arg("path"))
      .def("state", [](PythonTrainer& t, const std::string& name) { return to_array(t.rank0().host_state(name).clone()); },
           py::arg("name"), "A copy of a parameter or optimizer state (rank 0's)")
      .def("bake", [](PythonTrainer& t, Graph& graph) { bake_state(t.rank0(), graph); }, py::arg("graph"),
           "Writes the trained values into `graph`'s parameters of the same names (an inference graph), so "
           "graph.save() saves the trained model");
}

}  // namespace weir::python
