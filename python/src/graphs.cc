// weir.Graph (a graph being built, trained or saved) and weir.load_graph.
#include "python/src/graphs.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <map>

#include "core/error.h"
#include "passes/precision/auto_mixed_precision.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_exporter.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace weir::python {

std::shared_ptr<tools::OpSet> op_set(const std::vector<std::string>& plugins) {
  if (plugins.empty()) {
    static const std::shared_ptr<tools::OpSet> builtin = tools::make_op_set({});
    return builtin;
  }
  return tools::make_op_set(plugins);
}

std::vector<std::string> value_names(const std::vector<Value*>& values) {
  std::vector<std::string> names;
  for (const Value* v : values) names.push_back(v->name());
  return names;
}

std::vector<std::pair<std::string, std::string>> typed_names(const std::vector<Value*>& values) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Value* v : values) out.emplace_back(v->name(), v->type().to_string());
  return out;
}

tools::ModelOptions model_options(int opt_level, const std::vector<std::string>& disable_passes,
                                  const std::string& device, const std::string& amp) {
  if (opt_level < 0 || opt_level > 3) {
    throw Error(ErrorKind::kInvalidArgument, "opt_level must be 0 to 3, got " + std::to_string(opt_level));
  }
  if (amp != "off") {
    try {
      parse_amp_dtype(amp);
    } catch (const Error& e) {
      throw Error(e.kind(), "amp: " + e.message());
    }
  }
  return {.opt_level = opt_level, .disabled = disable_passes, .device = device, .amp = amp};
}

void bind_graphs(py::module_& m) {
  py::class_<Graph, GraphHandle>(m, "Graph", "A dataflow graph: a model, or a training step made of one")
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def_property_readonly("inputs", [](const Graph& g) { return typed_names(g.inputs()); },
                             "[(name, type)] of the graph inputs, e.g. ('x', 'f32[N,784]')")
      .def_property_readonly("outputs", [](const Graph& g) { return typed_names(g.outputs()); })
      .def_property_readonly("input_names", [](const Graph& g) { return value_names(g.inputs()); })
      .def_property_readonly("output_names", [](const Graph& g) { return value_names(g.outputs()); })
      .def("op_counts", [](const Graph& g) {
        std::map<std::string, int> counts;
        for (const Node* node : g.nodes()) ++counts[node->op_type()];
        return counts;
      }, "{op type: nodes of that type}")
      .def("clone", [](const Graph& g) { return GraphHandle(g.clone()); })
      .def("save", [](const Graph& g, const std::filesystem::path& path) {
        Model model;
        model.graph = g.clone();
        py::gil_scoped_release release;
        save_model(model, path);
      }, py::arg("path"), "Writes .weir (binary) or .weirtxt (text) by the extension, atomically")
      .def("export_onnx", [](const Graph& g, const std::string& path) {
        Model model;
        model.graph = g.clone();
        py::gil_scoped_release release;
        export_onnx_model(model, path);
      }, py::arg("path"), "Writes the graph as an ONNX model")
      .def("to_text", [](const Graph& g) {
        Model model;
        model.graph = g.clone();
        return model_to_text(model);
      })
      .def("__repr__", [](const Graph& g) {
        return "<weir.Graph '" + g.name() + "': " + std::to_string(g.num_nodes()) + " nodes>";
      });

  m.def("load_graph", [](const std::filesystem::path& path, const std::vector<std::string>& plugins) {
    std::shared_ptr<tools::OpSet> ops = op_set(plugins);
    py::gil_scoped_release release;
    return GraphHandle(tools::load_graph(path, *ops));
  }, py::arg("path"), py::arg("plugins") = std::vector<std::string>{},
        "The graph of a .weir, .weirtxt or .onnx file, not optimized");
}

}  // namespace weir::python
