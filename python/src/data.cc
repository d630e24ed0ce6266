// weir.data: the readers of frontend/data for Python (IDX files, Debian's
// Fashion-MNIST), returning NumPy arrays.
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include "frontend/data/idx.h"
#include "python/src/bindings.h"
#include "python/src/ndarray.h"

namespace py = pybind11;

namespace weir::python {

void bind_data(py::module_& m) {
  py::module_ data = m.def_submodule("data", "Dataset readers (frontend/data)");
  data.def("read_idx", [](const std::filesystem::path& path) {
    Tensor tensor;
    {
      py::gil_scoped_release release;
      tensor = read_idx(path);
    }
    return to_array(tensor);
  }, py::arg("path"), "The array in an IDX file (the MNIST family's format), plain or gzip-compressed");
  data.def("load_fashion_mnist", [](const std::filesystem::path& dir) {
    FashionMnist set;
    {
      py::gil_scoped_release release;
      set = load_fashion_mnist(dir);
    }
    py::dict out;
    out["train_images"] = to_array(set.train_images);
    out["train_labels"] = to_array(set.train_labels);
    out["test_images"] = to_array(set.test_images);
    out["test_labels"] = to_array(set.test_labels);
    return out;
  }, py::arg("dir") = std::filesystem::path(kFashionMnistDir),
     "Fashion-MNIST from Debian's dataset-fashion-mnist: train_images f32[60000,1,28,28] in [0, 1], "
     "train_labels i64[60000], test_images, test_labels");
}

}  // namespace weir::python
