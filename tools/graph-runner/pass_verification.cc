#include "tools/graph-runner/pass_verification.h"

#include <cmath>

#include "core/type_inference.h"
#include "ops/dtype_dispatch.h"
#include "ops/graph_evaluator.h"
#include "passes/pass_manager.h"
#include "tools/graph-runner/model_inputs.h"

namespace weir::tools {

namespace {

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

}  // namespace

PassVerification verify_passes(const std::string& model, const OpSet& ops, const ModelOptions& model_options,
                               const std::vector<std::string>& inputs, double tolerance,
                               const std::function<void(const PassCheck&)>& after_each) {
  std::unique_ptr<Graph> graph = load_graph(model, ops);
  infer_graph_types(*graph, ops.ops);
  std::map<std::string, Tensor> feeds = model_inputs(*graph, model, inputs, /*random_rest=*/true);
  EvaluateOptions evaluate{.kernels = &ops.kernels, .allocator = nullptr};
  const std::vector<Tensor> reference = evaluate_graph(*graph, feeds, evaluate);
  std::vector<Tensor> previous = reference;
  PassVerification result;
  const bool amp = amp_precision(model_options).has_value();
  auto pipeline = inference_pipeline(model_options.opt_level, {model_options.disabled.begin(), model_options.disabled.end()},
                                     amp_precision(model_options));
  pipeline->set_after_pass([&](const Pass& pass, const Graph& g, bool changed) {
    PassCheck check{.pass = pass.name(), .changed = changed};
    if (changed) {
      std::vector<Tensor> now = evaluate_graph(g, feeds, evaluate);
      check.max_abs_diff = largest_difference(previous, now);
      check.max_abs_diff_total = largest_difference(reference, now);
      check.relative_l2 = relative_l2(reference, now);
      check.relative_l2_step = relative_l2(previous, now);
      check.breaks_tolerance = amp ? check.relative_l2_step > tolerance : check.max_abs_diff > tolerance;
      if (check.breaks_tolerance && result.first_broken.empty()) result.first_broken = pass.name();
      previous = std::move(now);
    }
    if (after_each) after_each(check);
    result.passes.push_back(std::move(check));
  });
  PassContext context(ops.ops, &ops.kernels);
  pipeline->run(*graph, context);
  return result;
}

}  // namespace weir::tools
