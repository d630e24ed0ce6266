#include "tools/graph-runner/run_command.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "core/error.h"
#include "frontend/data/npy.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir = ".";
  bool random_inputs = false;
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

Tensor random_input(const Value& input, uint64_t seed) {
  std::vector<int64_t> sizes;
  for (const Dim& d : input.shape().dims()) sizes.push_back(d.is_static() ? d.size() : 1);
  Tensor t(input.dtype(), sizes);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    switch (input.dtype()) {
      case DType::kFloat32: t.data<float>()[i] = static_cast<float>(u); break;
      case DType::kFloat64: t.data<double>()[i] = u; break;
      case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(u * 10); break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(u * 10); break;
      case DType::kBool: t.data<bool>()[i] = u < 0.5; break;
      default:
        throw Error(ErrorKind::kUnsupported, "--random-inputs cannot make input '" + input.name() + "' of type " +
                                                 input.type().to_string());
    }
  }
  return t;
}

void run(const RunArgs& args) {
  std::shared_ptr<const Plan> plan = load_runnable(args.model);
  const Graph& graph = plan->graph();
  std::map<std::string, Tensor> feeds;
  for (const std::string& spec : args.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::kInvalidArgument, "-i '" + spec + "': expected NAME=FILE.npy");
    }
    std::string name = spec.substr(0, eq);
    const Value* input = graph.find_value(name);
    if (input == nullptr || input->kind() != ValueKind::kInput) {
      std::string names;
      for (const Value* v : graph.inputs()) names += (names.empty() ? "" : ", ") + v->name() + ": " + v->type().to_string();
      throw Error(ErrorKind::kInvalidArgument, "-i '" + spec + "': the model has no input '" + name + "' (inputs: " + names + ")");
    }
    feeds[name] = read_npy(spec.substr(eq + 1));
  }
  uint64_t seed = 1;
  for (const Value* input : graph.inputs()) {
    if (feeds.count(input->name())) continue;
    if (!args.random_inputs) {
      throw Error(ErrorKind::kInvalidArgument, "input '" + input->name() + "' (" + input->type().to_string() +
                                                   ") is not given; pass -i " + input->name() +
                                                   "=FILE.npy or --random-inputs");
    }
    feeds[input->name()] = random_input(*input, seed++);
  }
  SessionOptions options;
  options.inter_op_threads = args.threads;
  Session session(plan, options);
  std::vector<Tensor> outputs = session.run(feeds);
  std::filesystem::create_directories(args.output_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::filesystem::path file = std::filesystem::path(args.output_dir) / (file_name_for(graph.outputs()[i]->name()) + ".npy");
    write_npy(file, outputs[i]);
    std::cout << "output " << graph.outputs()[i]->name() << ": " << outputs[i].type_string() << " -> " << file.string() << "\n";
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model (.weir, .weirtxt, .weirplan or .onnx) once; write each output as DIR/NAME.npy");
  cmd->add_option("model", args->model, "the model file")->required();
  cmd->add_option("-i,--input", args->inputs, "an input as NAME=FILE.npy (repeatable)");
  cmd->add_option("-o,--output-dir", args->output_dir, "where the outputs go (default: .)");
  cmd->add_flag("--random-inputs", args->random_inputs, "seeded random values for inputs not given with -i");
  cmd->add_option("--threads", args->threads, "inter-op threads (default 1)")->check(CLI::Range(1, 256));
  cmd->callback([args] { run(*args); });
}

}  // namespace weir::tools
