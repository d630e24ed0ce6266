// weir.optimize, weir.verify and weir.inspect: what graph-runner's
// subcommands of those names do, returning figures instead of printing.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "python/src/bindings.h"
#include "python/src/graphs.h"
#include "tools/graph-runner/graphviz.h"
#include "tools/graph-runner/model_optimization.h"
#include "tools/graph-runner/model_summary.h"
#include "tools/graph-runner/pass_verification.h"

namespace py = pybind11;

namespace weir::python {

namespace {

py::dict optimize(const std::string& model, const std::string& output, int opt_level,
                  const std::vector<std::string>& plugins, const std::vector<std::string>& disable_passes,
                  const std::string& amp, bool pack_weights) {
  std::shared_ptr<tools::OpSet> ops = op_set(plugins);
  const tools::ModelOptions options = model_options(opt_level, disable_passes, "cpu", amp);
  tools::OptimizedModel result;
  {
    py::gil_scoped_release release;
    result = tools::optimize_model(model, output, *ops, options, {}, pack_weights);
  }
  py::dict out;
  out["nodes_before"] = result.nodes_before;
  out["nodes_after"] = result.nodes_after;
  out["output"] = output;
  if (result.packing) {
    py::dict packing;
    packing["kernels"] = result.packing->kernels;
    packing["bytes"] = result.packing->bytes;
    packing["skipped"] = result.packing->skipped.empty() ? py::object(py::none()) : py::str(result.packing->skipped);
    out["packed_weights"] = packing;
  }
  return out;
}

py::dict verify(const std::string& model, double tolerance, int opt_level, const std::vector<std::string>& inputs,
                const std::vector<std::string>& plugins, const std::vector<std::string>& disable_passes,
                const std::string& amp) {
  std::shared_ptr<tools::OpSet> ops = op_set(plugins);
  const tools::ModelOptions options = model_options(opt_level, disable_passes, "cpu", amp);
  tools::PassVerification result;
  {
    py::gil_scoped_release release;
    result = tools::verify_passes(model, *ops, options, inputs, tolerance);
  }
  py::list passes;
  for (const tools::PassCheck& check : result.passes) {
    py::dict p;
    p["pass"] = check.pass;
    p["changed"] = check.changed;
    p["max_abs_diff"] = check.max_abs_diff;
    p["max_abs_diff_total"] = check.max_abs_diff_total;
    p["relative_l2"] = check.relative_l2;
    p["breaks_tolerance"] = check.breaks_tolerance;
    passes.append(p);
  }
  py::dict out;
  out["passes"] = passes;
  out["first_broken"] = result.first_broken.empty() ? py::object(py::none()) : py::str(result.first_broken);
  out["ok"] = result.first_broken.empty();
  return out;
}

py::dict inspect(const std::string& model, int64_t batch, int opt_level, const std::string& dot,
                 const std::vector<std::string>& plugins, const std::vector<std::string>& disable_passes) {
  if (batch < 1) throw Error(ErrorKind::kInvalidArgument, "batch must be positive, got " + std::to_string(batch));
  std::shared_ptr<tools::OpSet> ops = op_set(plugins);
  tools::ModelSummary s;
  {
    py::gil_scoped_release release;
    std::shared_ptr<const Plan> plan = tools::load_runnable(model, *ops, model_options(opt_level, disable_passes));
    s = tools::summarize_model(plan, *ops, batch);
    if (!dot.empty()) write_file_atomically(dot, tools::graphviz(plan->graph(), ops->ops));
  }
  py::dict out;
  out["graph"] = s.graph_name;
  out["nodes"] = s.nodes;
  out["inputs"] = s.inputs;
  out["outputs"] = s.outputs;
  py::dict ops_counts;
  for (const auto& [op, count] : s.ops) ops_counts[py::str(op)] = count;
  out["ops"] = ops_counts;
  out["parameters"] = s.parameters;
  out["parameter_bytes"] = s.parameter_bytes;
  out["constants"] = s.constants;
  out["constant_bytes"] = s.constant_bytes;
  out["estimated_flops"] = s.flops;
  out["symbolic"] = s.symbolic;
  out["planned_peak_memory_bytes"] = s.planned_peak_bytes;
  out["memory_without_reuse_bytes"] = s.total_value_bytes;
  return out;
}

}  // namespace

void bind_model_tools(py::module_& m) {
  const auto no_names = std::vector<std::string>{};
  m.def("optimize", &optimize, py::arg("model"), py::arg("output"), py::arg("opt_level") = 3,
        py::arg("plugins") = no_names, py::arg("disable_passes") = no_names, py::arg("amp") = "off",
        py::arg("pack_weights") = true,
        "Runs the pass pipeline (amp: off, bf16 or fp16, inference in mixed precision) and writes "
        ".weir/.weirtxt or a compiled .weirplan, whose weights are also stored packed for this machine "
        "unless pack_weights is False; returns node counts (and for a plan, 'packed_weights')");
  m.def("verify", &verify, py::arg("model"), py::arg("tolerance") = 1e-4, py::arg("opt_level") = 3,
        py::arg("inputs") = no_names, py::arg("plugins") = no_names, py::arg("disable_passes") = no_names,
        py::arg("amp") = "off",
        "Runs the graph before and after every pass on the same inputs (NAME=FILE.npy, the rest seeded "
        "random); returns each pass's differences and the first past `tolerance` (under amp, `tolerance` "
        "bounds each pass's relative L2 change, as graph-runner verify --amp does)");
  m.def("inspect", &inspect, py::arg("model"), py::arg("batch") = 1, py::arg("opt_level") = 3,
        py::arg("dot") = "", py::arg("plugins") = no_names, py::arg("disable_passes") = no_names,
        "Inputs, outputs, op counts, weights, estimated FLOPs and planned memory (symbolic dims bound to "
        "`batch`); `dot` also writes the graph as Graphviz");
}

}  // namespace weir::python
