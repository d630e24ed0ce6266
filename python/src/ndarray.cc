#include "python/src/ndarray.h"

#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace py = pybind11;

namespace weir::python {

namespace {

// A reference to a Python object that a tensor's storage holds: released
// with the GIL taken, since the last tensor view may die on any thread
// (inside a run, whose threads do not hold it).
std::shared_ptr<void> hold(py::object object) {
  return std::shared_ptr<void>(new py::object(std::move(object)), [](void* held) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(held);
  });
}

py::array contiguous(const py::handle& object, const std::string& what) {
  py::array array = py::array::ensure(object, py::array::c_style);
  if (!array) {
    PyErr_Clear();
    throw Error(ErrorKind::kInvalidArgument, what + ": expected an array (or something NumPy makes one of), got " +
                                                 std::string(py::str(py::type::of(object).attr("__name__"))));
  }
  return array;
}

}  // namespace

DType dtype_of(const py::dtype& dtype, const std::string& what) {
  switch (dtype.kind()) {
    case 'f':
      if (dtype.itemsize() == 4) return DType::kFloat32;
      if (dtype.itemsize() == 8) return DType::kFloat64;
      if (dtype.itemsize() == 2) return DType::kFloat16;
      break;
    case 'i':
      if (dtype.itemsize() == 1) return DType::kInt8;
      if (dtype.itemsize() == 2) return DType::kInt16;
      if (dtype.itemsize() == 4) return DType::kInt32;
      if (dtype.itemsize() == 8) return DType::kInt64;
      break;
    case 'u':
      if (dtype.itemsize() == 1) return DType::kUInt8;
      if (dtype.itemsize() == 2) return DType::kUInt16;
      if (dtype.itemsize() == 4) return DType::kUInt32;
      if (dtype.itemsize() == 8) return DType::kUInt64;
      break;
    case 'b':
      return DType::kBool;
    default:
      break;
  }
  const std::string numpy_name = py::str(static_cast<const py::handle&>(dtype));
  throw Error(ErrorKind::kInvalidArgument,
              what + ": NumPy dtype " + numpy_name + " has no Weir dtype (f32, f64, f16, i8, u8, i16, i32, i64, u16, u32, u64, bool)");
}

DType parse_python_dtype(const py::handle& dtype) {
  if (py::isinstance<py::str>(dtype)) return parse_dtype(dtype.cast<std::string>());
  return dtype_of(py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype)), "dtype");
}

namespace {

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
    case DType::kFloat16: return py::dtype("float16");
    case DType::kInt8: return py::dtype::of<int8_t>();
    case DType::kUInt8: return py::dtype::of<uint8_t>();
    case DType::kInt16: return py::dtype::of<int16_t>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kUInt16: return py::dtype::of<uint16_t>();
    case DType::kUInt32: return py::dtype::of<uint32_t>();
    case DType::kUInt64: return py::dtype::of<uint64_t>();
    case DType::kBool: return py::dtype::of<bool>();
    default: break;
  }
  throw Error(ErrorKind::kUnsupported, "no NumPy dtype for " + std::string(dtype_name(dtype)));
}

std::vector<int64_t> sizes_of(const py::array& array) {
  return std::vector<int64_t>(array.shape(), array.shape() + array.ndim());
}

}  // namespace

Tensor to_tensor(const py::handle& object, const std::string& what) {
  py::array array = contiguous(object, what);
  const DType dtype = dtype_of(array.dtype(), what);
  // The data pointer is not written through for feeds; mutable_data() would
  // refuse read-only arrays (np.frombuffer over bytes, say).
  void* data = const_cast<void*>(array.data());
  std::vector<int64_t> sizes = sizes_of(array);
  return Tensor::wrap(dtype, std::move(sizes), data, Device::cpu(), hold(std::move(array)));
}

Tensor to_owned_tensor(const py::handle& object, const std::string& what) {
  py::array array = contiguous(object, what);
  Tensor tensor(dtype_of(array.dtype(), what), sizes_of(array));
  if (tensor.nbytes() > 0) std::memcpy(tensor.raw_data(), array.data(), tensor.nbytes());
  return tensor;
}

py::array to_array(const Tensor& tensor) {
  if (tensor.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kInvalidArgument, "tensor on " + tensor.device().to_string() + " is not in host memory");
  }
  std::vector<py::ssize_t> shape(tensor.sizes().begin(), tensor.sizes().end());
  if (tensor.dtype() == DType::kBFloat16) {
    py::array_t<float> widened(shape);
    const uint16_t* bits = static_cast<const uint16_t*>(tensor.raw_data());
    for (int64_t i = 0; i < tensor.num_elements(); ++i) widened.mutable_data()[i] = bf16_bits_to_float(bits[i]);
    return widened;
  }
  // The array's base is a capsule owning a copy of the tensor handle, so the
  // storage lives as long as the array (and every view NumPy makes of it).
  auto* owner = new Tensor(tensor);
  py::capsule base(owner, [](void* held) { delete static_cast<Tensor*>(held); });
  return py::array(numpy_dtype(tensor.dtype()), shape, tensor.raw_data(), base);
}

py::object to_value(const Tensor& tensor) {
  if (tensor.is_none()) return py::none();
  if (tensor.is_sequence()) {
    py::list elements;
    for (const Tensor& element : tensor.elements()) elements.append(to_array(element));
    return elements;
  }
  return to_array(tensor);
}

Tensor to_feed(const py::handle& object, const TensorType& type, const std::string& what) {
  if (type.optional && object.is_none()) return Tensor::none(type.dtype, type.sequence);
  if (!type.sequence) return to_tensor(object, what);
  if (!py::isinstance<py::list>(object) && !py::isinstance<py::tuple>(object)) {
    throw Error(ErrorKind::kInvalidArgument, what + " is " + type.to_string() + ": give a list of arrays");
  }
  std::vector<Tensor> elements;
  size_t index = 0;
  for (const py::handle& item : object) {
    // The sequence outlives the call in the run's values: its elements own copies.
    elements.push_back(to_owned_tensor(item, what + " element " + std::to_string(index++)));
  }
  return Tensor::sequence(type.dtype, std::move(elements));
}

}  // namespace weir::python
