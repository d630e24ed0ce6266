// The pieces of the _weir extension module, one file each; module.cc calls
// them in order (errors first: every other piece's functions raise
// weir.Error).
#pragma once

#include <pybind11/pybind11.h>

namespace weir::python {

void bind_errors(pybind11::module_& m);           // errors.cc
void bind_graphs(pybind11::module_& m);           // graphs.cc: Graph, load_graph
void bind_sessions(pybind11::module_& m);         // sessions.cc: load, Session
void bind_model_tools(pybind11::module_& m);      // model_tools.cc: optimize, verify, inspect
void bind_builder(pybind11::module_& m);          // builder.cc: GraphBuilder, Var, weir.nn
void bind_training(pybind11::module_& m);         // training.cc: Optimizer, Strategy, minimize, Trainer
void bind_data(pybind11::module_& m);             // data.cc: weir.data (IDX, Fashion-MNIST)

}  // namespace weir::python
