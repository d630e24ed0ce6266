#include "tools/graph-runner/run_command.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/error.h"
#include "frontend/data/npy.h"
#include "runtime/profiler.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_inputs.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::vector<std::string> inputs;
  std::string output_dir = ".";
  bool random_inputs = false;
  std::string profile;
  bool verbose = false;
  int threads = 1;
};

// A file-system-safe form of a value name ("fc1/Add:0" -> "fc1_Add_0").
std::string file_name_for(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out;
}

void run(const RunArgs& args) {
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  auto load_start = std::chrono::steady_clock::now();
  std::shared_ptr<const Plan> plan = load_runnable(args.model, *ops, args.passes);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  const Graph& graph = plan->graph();
  std::map<std::string, Tensor> feeds = model_inputs(graph, args.model, args.inputs, args.random_inputs);
  SessionOptions options;
  options.inter_op_threads = args.threads;
  Session session(plan, options);
  Profiler profiler;
  RunOptions run_options;
  if (!args.profile.empty()) run_options.profiler = &profiler;
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = session.run(feeds, run_options);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (args.verbose) {
    std::cerr << "plan: " << plan->schedule().steps.size() << " steps on " << plan->devices().size()
              << " device(s), planned arena " << plan->memory().planned_bytes() << " bytes\n"
              << "load and plan: " << load_ms << " ms; first run (kernels set up, constant weights packed): " << ms << " ms\n";
    size_t adopted = 0, packed = 0;
    for (size_t step = 0; step < plan->schedule().steps.size(); ++step) {
      for (const PackedConstant& pack : plan->kernel(step).packed_constants()) ++(pack.adopted ? adopted : packed);
    }
    if (adopted + packed > 0) {
      std::cerr << "packed weights: " << adopted << " from the plan file, " << packed << " packed by this run\n";
    }
  }
  if (!args.profile.empty()) {
    profiler.write_chrome_trace(args.profile);
    std::cerr << "profile: " << args.profile << " (" << profiler.events().size() << " events)\n";
  }
  std::filesystem::create_directories(args.output_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string stem = file_name_for(graph.outputs()[i]->name());
    std::cout << "output " << graph.outputs()[i]->name() << ": " << outputs[i].type_string();
    if (outputs[i].is_none()) {  // an absent optional: no file
      std::cout << "\n";
      continue;
    }
    if (outputs[i].is_sequence()) {  // one file per element: NAME.0.npy, NAME.1.npy, ...
      const std::vector<Tensor>& elements = outputs[i].elements();
      for (size_t k = 0; k < elements.size(); ++k) {
        write_npy(std::filesystem::path(args.output_dir) / (stem + "." + std::to_string(k) + ".npy"), elements[k]);
      }
      std::cout << " -> " << (std::filesystem::path(args.output_dir) / (stem + ".N.npy")).string() << " for N < "
                << elements.size() << "\n";
      continue;
    }
    std::filesystem::path file = std::filesystem::path(args.output_dir) / (stem + ".npy");
    write_npy(file, outputs[i]);
    std::cout << " -> " << file.string() << "\n";
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model (.weir, .weirtxt, .weirplan or .onnx) once; write each output as DIR/NAME.npy");
  cmd->add_option("model", args->model, "the model file")->required();
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("-i,--input", args->inputs, "an input as NAME=FILE.npy or NAME=FILE.pb (ONNX TensorProto); repeatable");
  cmd->add_option("-o,--output-dir", args->output_dir, "where the outputs go (default: .)");
  cmd->add_flag("--random-inputs", args->random_inputs, "seeded random values for inputs not given with -i");
  cmd->add_option("--threads", args->threads, "inter-op threads (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--profile", args->profile, "write a Chrome/Perfetto trace of the run here");
  cmd->add_flag("--verbose", args->verbose, "print the plan's size, the load-and-plan time and the run's time to stderr");
  cmd->callback([args] { run(*args); });
}

}  // namespace weir::tools
