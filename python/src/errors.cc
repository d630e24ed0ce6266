// weir::Error reaches Python as weir.Error (a RuntimeError) carrying Weir's
// whole message (the node, file or rank it names included) and its kind as
// `kind` ("invalid argument", "shape", "io", ...).
#include <pybind11/pybind11.h>

#include "core/error.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace weir::python {

void bind_errors(py::module_& m) {
  static py::exception<Error> error_type(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      py::object instance = py::reinterpret_borrow<py::object>(error_type.ptr())(e.what());
      instance.attr("kind") = error_kind_name(e.kind());
      PyErr_SetObject(error_type.ptr(), instance.ptr());
    }
  });
}

}  // namespace weir::python
