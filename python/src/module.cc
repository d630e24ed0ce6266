// The extension module weir._weir; python/weir/__init__.py re-exports it.
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

PYBIND11_MODULE(_weir, m) {
  m.doc() = "Weir: load, optimize, run and train static-dataflow-graph models";
  weir::python::bind_errors(m);
  weir::python::bind_graphs(m);
  weir::python::bind_sessions(m);
  weir::python::bind_model_tools(m);
  weir::python::bind_builder(m);
  weir::python::bind_training(m);
  weir::python::bind_data(m);
}
