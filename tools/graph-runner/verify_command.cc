#include "tools/graph-runner/verify_command.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/dtype_dispatch.h"
#include "ops/graph_evaluator.h"
#include "passes/pass_manager.h"
#include "tools/graph-runner/model_inputs.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

namespace {

struct VerifyArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::vector<std::string> inputs;
  double tolerance = 1e-4;
};

// The largest |a - b| over all outputs; infinity when shapes or dtypes
// differ or exactly one side is NaN.
double largest_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype() || a[i].sizes() != b[i].sizes()) return INFINITY;
    dispatch_dtype(a[i].dtype(), [&]<typename T>() {
      for (int64_t j = 0; j < a[i].num_elements(); ++j) {
        double x = static_cast<double>(load(a[i].data<T>()[j])), y = static_cast<double>(load(b[i].data<T>()[j]));
        if (std::isnan(x) && std::isnan(y)) continue;
        double d = std::isnan(x) != std::isnan(y) ? INFINITY : std::abs(x - y);
        worst = std::max(worst, d);
      }
    });
  }
  return worst;
}

// ||a - b|| / ||a|| over all outputs together (0 when both are zero).
double relative_l2(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype() || a[i].sizes() != b[i].sizes()) return INFINITY;
    dispatch_dtype(a[i].dtype(), [&]<typename T>() {
      for (int64_t j = 0; j < a[i].num_elements(); ++j) {
        double x = static_cast<double>(load(a[i].data<T>()[j])), y = static_cast<double>(load(b[i].data<T>()[j]));
        diff += (x - y) * (x - y);
        norm += x * x;
      }
    });
  }
  return diff == 0 ? 0 : std::sqrt(diff / norm);
}

void verify(const VerifyArgs& args) {
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  std::unique_ptr<Graph> graph = load_graph(args.model, *ops);
  infer_graph_types(*graph, ops->ops);
  std::map<std::string, Tensor> feeds = model_inputs(*graph, args.model, args.inputs, /*random_rest=*/true);
  EvaluateOptions evaluate{.kernels = &ops->kernels, .allocator = nullptr};
  const std::vector<Tensor> reference = evaluate_graph(*graph, feeds, evaluate);
  std::vector<Tensor> previous = reference;
  std::string first_broken;
  auto pipeline = inference_pipeline(args.passes.opt_level, {args.passes.disabled.begin(), args.passes.disabled.end()});
  pipeline->set_after_pass([&](const Pass& pass, const Graph& g, bool changed) {
    if (!changed) {
      std::printf("pass %-34s unchanged\n", pass.name().c_str());
      return;
    }
    std::vector<Tensor> now = evaluate_graph(g, feeds, evaluate);
    double step = largest_difference(previous, now), total = largest_difference(reference, now);
    std::printf("pass %-34s max_abs_diff=%.3g (vs original %.3g, relative L2 %.3g)%s\n", pass.name().c_str(), step,
                total, relative_l2(reference, now), step > args.tolerance ? "  BREAKS TOLERANCE" : "");
    if (step > args.tolerance && first_broken.empty()) first_broken = pass.name();
    previous = std::move(now);
  });
  PassContext context(ops->ops, &ops->kernels);
  pipeline->run(*graph, context);
  if (!first_broken.empty()) {
    throw Error(ErrorKind::kInvalidGraph, "pass '" + first_broken + "' changed the outputs by more than " +
                                              std::to_string(args.tolerance)).with_file(args.model);
  }
  std::printf("verified: every pass within %.3g\n", args.tolerance);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand("verify", "Check each pass numerically: outputs before and after, same random inputs");
  cmd->add_option("model", args->model, "the model file (.weir, .weirtxt or .onnx)")->required();
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("-i,--input", args->inputs, "an input as NAME=FILE.npy or NAME=FILE.pb; others are seeded random");
  cmd->add_option("--tolerance", args->tolerance, "the largest absolute difference a pass may make (default 1e-4)");
  cmd->callback([args] { verify(*args); });
}

}  // namespace weir::tools
