// NumPy arrays to Weir tensors and back.
//
// An array that is C-contiguous and of a dtype Weir has becomes a tensor
// over the array's own memory (no copy), which keeps the array alive; other
// arrays are copied into a contiguous one first. A host tensor becomes an
// array over the tensor's memory (no copy), which keeps the tensor's
// storage alive; bf16, which NumPy lacks, is widened to float32 (a copy).
#pragma once

#include <pybind11/numpy.h>

#include <string>

#include "core/dtype.h"
#include "core/tensor.h"

namespace weir::python {

// kInvalidArgument naming `what` for a dtype Weir does not have (object, complex, ...).
DType dtype_of(const pybind11::dtype& dtype, const std::string& what);
// A dtype as Python code gives it: a Weir name ("f32", "float32", "bf16",
// "i64", ...), or anything NumPy reads as a dtype (np.float32, "<f4").
DType parse_python_dtype(const pybind11::handle& dtype);

Tensor to_tensor(const pybind11::handle& object, const std::string& what);
// An owned copy, for data the caller keeps past the call (datasets).
Tensor to_owned_tensor(const pybind11::handle& object, const std::string& what);
pybind11::array to_array(const Tensor& tensor);
// A run's result as Python sees it: an array, a list of arrays for a
// sequence, None for an absent optional.
pybind11::object to_value(const Tensor& tensor);
// A feed for a value of `type`: a list (or tuple) of arrays for a sequence,
// None for an absent optional, else an array as to_tensor reads it.
Tensor to_feed(const pybind11::handle& object, const TensorType& type, const std::string& what);

}  // namespace weir::python
