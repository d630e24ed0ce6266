// weir.load(path) and weir.Session: run a model on NumPy arrays.
//
//   s = weir.load("resnet18.onnx", opt_level=3)
//   out = s.run({"input": x})["output"]
//
// Feeds that are C-contiguous arrays of the input's dtype are read in
// place and outputs are arrays over the session's result memory: no copies
// on either side. The GIL is released while a model compiles and runs, so
// other Python threads go on (and several may run one session at once).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <map>

#include "core/error.h"
#include "python/src/bindings.h"
#include "python/src/graphs.h"
#include "python/src/ndarray.h"
#include "python/src/sessions.h"
#include "runtime/device_support.h"

namespace py = pybind11;

namespace weir::python {

namespace {

SessionOptions session_options(int inter_op_threads) {
  SessionOptions options;
  options.inter_op_threads = inter_op_threads;
  return options;
}

std::shared_ptr<PythonSession> load(const std::filesystem::path& path, int opt_level,
                                    const std::vector<std::string>& plugins, const std::string& device,
                                    const std::vector<std::string>& disable_passes, int inter_op_threads,
                                    const std::string& amp) {
  const tools::ModelOptions options = model_options(opt_level, disable_passes, device, amp);
  auto s = std::make_shared<PythonSession>();
  s->ops = op_set(plugins);
  py::gil_scoped_release release;
  s->plan = tools::load_runnable(path, *s->ops, options);
  s->session = std::make_unique<Session>(s->plan, session_options(inter_op_threads));
  return s;
}

std::shared_ptr<PythonSession> from_graph(const Graph& graph, int opt_level, const std::string& device,
                                          int inter_op_threads) {
  auto s = std::make_shared<PythonSession>();
  s->ops = op_set({});
  py::gil_scoped_release release;
  CompileOptions options;
  options.opt_level = opt_level;
  options.default_device = Device::parse(device);
  options.host_fallback = true;  // as graph-runner: a GPU's missing kernels run on the host
  check_device_usable(options.default_device);
  s->plan = compile(graph, options);
  s->session = std::make_unique<Session>(s->plan, session_options(inter_op_threads));
  return s;
}

py::dict run(PythonSession& s, const py::dict& feeds) {
  std::map<std::string, Tensor> tensors;
  for (const auto& [key, value] : feeds) {
    const std::string name = py::str(key);
    const Value* input = s.plan->graph().find_value(name);
    TensorType type = input != nullptr ? input->type() : TensorType();
    tensors.emplace(name, to_feed(value, type, "feed '" + name + "'"));
  }
  std::vector<Tensor> outputs;
  {
    py::gil_scoped_release release;
    outputs = s.session->run(tensors);
  }
  py::dict result;
  const std::vector<Value*>& values = s.plan->graph().outputs();
  for (size_t i = 0; i < outputs.size(); ++i) result[py::str(values[i]->name())] = to_value(outputs[i]);
  return result;
}

}  // namespace

void bind_sessions(py::module_& m) {
  py::class_<PythonSession, std::shared_ptr<PythonSession>>(m, "Session", R"doc(
A compiled model, ready to run. Made by weir.load(path) or Session(graph).

run({name: array}) feeds every graph input and returns {name: array} of
the graph outputs. Inputs of the right dtype that are C-contiguous are read
without a copy; outputs are arrays over Weir's memory (no copy).)doc")
      .def(py::init(&from_graph), py::arg("graph"), py::arg("opt_level") = 0, py::arg("device") = "cpu",
           py::arg("inter_op_threads") = 1,
           "Compiles a graph; opt_level 0 keeps it as built (what a training step needs), 1-3 run the inference passes")
      .def_property_readonly("input_names", [](const PythonSession& s) { return value_names(s.plan->graph().inputs()); })
      .def_property_readonly("output_names", [](const PythonSession& s) { return value_names(s.plan->graph().outputs()); })
      .def_property_readonly("inputs", [](const PythonSession& s) { return typed_names(s.plan->graph().inputs()); },
                             "[(name, type)], e.g. ('input', 'f32[1,3,224,224]')")
      .def_property_readonly("num_nodes", [](const PythonSession& s) { return s.plan->graph().num_nodes(); })
      .def("run", &run, py::arg("feeds"))
      .def("state_names", [](const PythonSession& s) { return value_names(s.plan->graph().persistents()); },
           "The persistent values (parameters, optimizer state) by name")
      .def("state", [](const PythonSession& s, const std::string& name) {
        return to_array(s.session->host_state(name).clone());
      }, py::arg("name"), "A copy of a persistent value")
      .def("set_state", [](PythonSession& s, const std::string& name, const py::handle& value) {
        s.session->set_state(name, to_owned_tensor(value, "state '" + name + "'"));
      }, py::arg("name"), py::arg("value"))
      .def("__repr__", [](const PythonSession& s) {
        return "<weir.Session '" + s.plan->graph().name() + "': " + std::to_string(s.plan->graph().num_nodes()) +
               " nodes>";
      });

  m.def("load", &load, py::arg("path"), py::arg("opt_level") = 3, py::arg("plugins") = std::vector<std::string>{},
        py::arg("device") = "cpu", py::arg("disable_passes") = std::vector<std::string>{},
        py::arg("inter_op_threads") = 1, py::arg("amp") = "off",
        "Loads .weir, .weirtxt, .weirplan or .onnx (by extension), optimizes it at opt_level (amp: off, bf16 "
        "or fp16, the convs and matmuls in mixed precision) and compiles it");
}

}  // namespace weir::python
