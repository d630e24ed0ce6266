#include "frontend/onnx/onnx_tensor.h"

#include <cstring>
#include <limits>

#include "core/allocation_limits.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/half.h"
#include "core/proto/weir.pb.h"
#include "core/shape.h"
#include "onnx/onnx-data_pb.h"

namespace weir {
namespace {

// protobuf refuses messages over 2 GiB; a .pb tensor file is one message.
constexpr size_t kMaxTensorFileBytes = (size_t{1} << 31) - 1;
// No tensor has more elements than this (2^40): a bound that keeps byte
// counts far from overflow while allowing any real model.
constexpr uint64_t kMaxElements = uint64_t{1} << 40;

// Where ONNX keeps elements of `dtype` when raw_data is not used.
const char* typed_field_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float_data";
    case DType::kFloat64: return "double_data";
    case DType::kInt64: return "int64_data";
    case DType::kUInt32:
    case DType::kUInt64: return "uint64_data";
    default: return "int32_data";
  }
}

uint64_t typed_field_size(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return static_cast<uint64_t>(proto.float_data_size());
    case DType::kFloat64: return static_cast<uint64_t>(proto.double_data_size());
    case DType::kInt64: return static_cast<uint64_t>(proto.int64_data_size());
    case DType::kUInt32:
    case DType::kUInt64: return static_cast<uint64_t>(proto.uint64_data_size());
    default: return static_cast<uint64_t>(proto.int32_data_size());
  }
}

[[noreturn]] void fail_format(const std::string& what, const std::string& message) {
  throw Error(ErrorKind::kFormat, what + ": " + message);
}

std::vector<int64_t> sizes_of(const onnx::TensorProto& proto, const std::string& what) {
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(proto.dims_size()));
  for (int64_t dim : proto.dims()) {
    if (dim < 0) fail_format(what, "dimension " + std::to_string(dim) + " is negative");
    sizes.push_back(dim);
  }
  return sizes;
}

// Copies a typed repeated field into `tensor`, converting each element with
// `convert`; the field must hold exactly one entry per element.
template <typename Out, typename Field, typename Convert>
void copy_field(const Field& field, Tensor& tensor, const std::string& what, const char* field_name,
                Convert convert) {
  if (static_cast<int64_t>(field.size()) != tensor.num_elements()) {
    fail_format(what, std::string(field_name) + " holds " + std::to_string(field.size()) + " values for " +
                          std::to_string(tensor.num_elements()) + " elements of " + tensor.type_string());
  }
  Out* out = static_cast<Out*>(tensor.raw_data());
  for (int i = 0; i < field.size(); ++i) out[i] = convert(field.Get(i));
}

template <typename Out>
void copy_int32_field(const onnx::TensorProto& proto, Tensor& tensor, const std::string& what) {
  copy_field<Out>(proto.int32_data(), tensor, what, "int32_data", [&](int32_t value) {
    if constexpr (std::is_same_v<Out, uint16_t>) {
      if (value < 0 || value > 0xFFFF) fail_format(what, "int32_data value " + std::to_string(value) + " is not 16-bit");
      return static_cast<uint16_t>(value);
    } else if constexpr (std::is_same_v<Out, bool>) {
      return value != 0;
    } else {
      if (value < std::numeric_limits<Out>::min() || value > std::numeric_limits<Out>::max()) {
        fail_format(what, "int32_data value " + std::to_string(value) + " does not fit " +
                              std::string(dtype_name(tensor.dtype())));
      }
      return static_cast<Out>(value);
    }
  });
}

// The populated typed field, for tensors without raw_data.
void read_typed_fields(const onnx::TensorProto& proto, Tensor& tensor, const std::string& what) {
  switch (tensor.dtype()) {
    case DType::kFloat32:
      copy_field<float>(proto.float_data(), tensor, what, "float_data", [](float v) { return v; });
      return;
    case DType::kFloat64:
      copy_field<double>(proto.double_data(), tensor, what, "double_data", [](double v) { return v; });
      return;
    case DType::kInt64:
      copy_field<int64_t>(proto.int64_data(), tensor, what, "int64_data", [](int64_t v) { return v; });
      return;
    case DType::kInt32:
      copy_int32_field<int32_t>(proto, tensor, what);
      return;
    case DType::kInt16:
      copy_int32_field<int16_t>(proto, tensor, what);
      return;
    case DType::kInt8:
      copy_int32_field<int8_t>(proto, tensor, what);
      return;
    case DType::kUInt8:
      copy_int32_field<uint8_t>(proto, tensor, what);
      return;
    case DType::kBool:
      copy_int32_field<bool>(proto, tensor, what);
      return;
    case DType::kUInt16:
      copy_int32_field<uint16_t>(proto, tensor, what);
      return;
    case DType::kUInt32:
      copy_field<uint32_t>(proto.uint64_data(), tensor, what, "uint64_data", [&](uint64_t value) {
        if (value > std::numeric_limits<uint32_t>::max()) {
          fail_format(what, "uint64_data value " + std::to_string(value) + " does not fit u32");
        }
        return static_cast<uint32_t>(value);
      });
      return;
    case DType::kUInt64:
      copy_field<uint64_t>(proto.uint64_data(), tensor, what, "uint64_data", [](uint64_t v) { return v; });
      return;
    case DType::kFloat16:
    case DType::kBFloat16:
      // ONNX stores 16-bit floats as their bit patterns in int32_data.
      copy_int32_field<uint16_t>(proto, tensor, what);
      return;
    case DType::kUndefined:
      break;
  }
  fail_format(what, "has no element data for " + tensor.type_string());
}

}  // namespace

DType dtype_from_onnx(int32_t onnx_type) {
  // Weir's DType codes are ONNX's TensorProto::DataType codes.
  return is_valid_dtype(onnx_type) ? static_cast<DType>(onnx_type) : DType::kUndefined;
}

std::string onnx_type_name(int32_t onnx_type) {
  if (onnx::TensorProto::DataType_IsValid(onnx_type)) {
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type));
  }
  return "type code " + std::to_string(onnx_type);
}

Tensor tensor_from_onnx(const onnx::TensorProto& proto, const std::string& what, ExternalDataReader* external,
                        const std::shared_ptr<void>& proto_owner, const std::optional<HeldBytes>& raw_data) {
  const bool has_raw = raw_data.has_value() || proto.has_raw_data();
  const std::string_view raw_bytes = raw_data ? raw_data->bytes : std::string_view(proto.raw_data());
  // Whoever keeps `raw_bytes` alive: the lifted payload's owner, or the
  // proto's. nullptr means nobody does beyond this call.
  const std::shared_ptr<void>& owner = raw_data ? raw_data->owner : proto_owner;
  if (!proto.has_data_type() || proto.data_type() == onnx::TensorProto::UNDEFINED) {
    fail_format(what, "has no data_type");
  }
  DType dtype = dtype_from_onnx(proto.data_type());
  if (dtype == DType::kUndefined) {
    throw Error(ErrorKind::kUnsupported, what + ": element type " + onnx_type_name(proto.data_type()) +
                                             " is not supported by Weir");
  }
  if (proto.has_segment()) throw Error(ErrorKind::kUnsupported, what + ": segmented tensors are not supported");
  std::vector<int64_t> sizes = sizes_of(proto, what);
  // Sizes are checked against the data before anything is allocated, so a
  // corrupted dims field cannot ask for terabytes.
  uint64_t count = 1;
  for (int64_t size : sizes) {
    if (size != 0 && count > kMaxElements / static_cast<uint64_t>(size)) {
      fail_format(what, "dims " + Shape::from_sizes(sizes).to_string() + " are too large");
    }
    count *= static_cast<uint64_t>(size);
  }
  size_t expected_bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (proto.data_location() != onnx::TensorProto::EXTERNAL) {
    if (has_raw) {
      if (raw_bytes.size() != expected_bytes) {
        fail_format(what, "raw_data holds " + std::to_string(raw_bytes.size()) + " bytes; " +
                              std::string(dtype_name(dtype)) + Shape::from_sizes(sizes).to_string() + " needs " +
                              std::to_string(expected_bytes));
      }
    } else if (typed_field_size(proto, dtype) != count) {
      fail_format(what, "its " + std::string(typed_field_name(dtype)) + " holds " +
                            std::to_string(typed_field_size(proto, dtype)) + " values for " + std::to_string(count) +
                            " elements of " + std::string(dtype_name(dtype)) + Shape::from_sizes(sizes).to_string());
    }
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (external == nullptr) fail_format(what, "refers to external data, which is not allowed here");
    proto::ExternalData reference;
    bool has_location = false;
    bool has_length = false;
    for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
      try {
        if (entry.key() == "location") {
          reference.set_location(entry.value());
          has_location = true;
        } else if (entry.key() == "offset") {
          reference.set_offset(std::stoll(entry.value()));
        } else if (entry.key() == "length") {
          reference.set_length(std::stoll(entry.value()));
          has_length = true;
        }
      } catch (const std::exception&) {
        fail_format(what, "external_data " + entry.key() + " '" + entry.value() + "' is not a number");
      }
    }
    if (!has_location) fail_format(what, "external_data has no location");
    if (!has_length) reference.set_length(static_cast<int64_t>(expected_bytes));
    // The file and range first: a missing file or short range must not cost
    // an allocation of the declared size.
    external->check(reference, expected_bytes, what);
    charge_allocation(expected_bytes, what);
    Tensor tensor = Tensor::uninitialized(dtype, sizes);
    external->read(reference, tensor.raw_data(), expected_bytes, what);
    return tensor;
  }
  charge_allocation(expected_bytes, what);
  // A view of the bytes when their owner keeps them alive and they are
  // aligned for any element type: ResNet-50's 100 MB of weights are not copied.
  if (owner != nullptr && has_raw && dtype != DType::kBool && expected_bytes > 0 &&
      reinterpret_cast<uintptr_t>(raw_bytes.data()) % alignof(std::max_align_t) == 0) {
    return Tensor::wrap(dtype, sizes, const_cast<char*>(raw_bytes.data()), Device::cpu(), owner);
  }
  Tensor tensor = Tensor::uninitialized(dtype, sizes);

  if (has_raw) {
    const std::string_view raw = raw_bytes;
    if (dtype == DType::kBool) {
      bool* out = tensor.data<bool>();
      for (size_t i = 0; i < raw.size(); ++i) out[i] = raw[i] != 0;
    } else if (expected_bytes > 0) {
      std::memcpy(tensor.raw_data(), raw.data(), expected_bytes);
    }
    return tensor;
  }
  read_typed_fields(proto, tensor, what);
  return tensor;
}

onnx::TensorProto tensor_to_onnx(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t size : tensor.sizes()) proto.add_dims(size);
  if (tensor.dtype() == DType::kBool) {
    std::string raw(static_cast<size_t>(tensor.num_elements()), '\0');
    const bool* values = tensor.data<bool>();
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = values[i] ? 1 : 0;
    proto.set_raw_data(std::move(raw));
  } else {
    proto.set_raw_data(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  }
  return proto;
}

namespace {

Tensor value_tensor(onnx::TensorProto proto, DType declared) {
  if (declared == DType::kBFloat16 && proto.data_type() == onnx::TensorProto::UINT16) {
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  }
  return tensor_from_onnx(proto, "tensor '" + proto.name() + "'", nullptr);
}

Tensor value_sequence(const onnx::SequenceProto& proto, DType declared) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED) {
    throw Error(ErrorKind::kUnsupported, "sequence '" + proto.name() + "' holds non-tensors (elem_type " +
                                             std::to_string(proto.elem_type()) + "); Weir's sequences hold tensors");
  }
  std::vector<Tensor> elements;
  for (const onnx::TensorProto& element : proto.tensor_values()) elements.push_back(value_tensor(element, declared));
  DType dtype = !elements.empty() ? elements.front().dtype() : declared;
  if (dtype == DType::kUndefined) throw Error(ErrorKind::kFormat, "empty sequence '" + proto.name() + "' of unknown dtype");
  return Tensor::sequence(dtype, std::move(elements));
}

}  // namespace

Tensor read_onnx_value_file(const std::string& path, const TensorType& type) {
  std::string bytes = read_file(path, kMaxTensorFileBytes);
  try {
    if (type.is_tensor()) {
      onnx::TensorProto proto;
      if (!proto.ParseFromString(bytes)) throw Error(ErrorKind::kFormat, "not a serialized ONNX TensorProto");
      return value_tensor(proto, type.dtype);
    }
    if (type.optional) {
      onnx::OptionalProto proto;
      if (!proto.ParseFromString(bytes)) throw Error(ErrorKind::kFormat, "not a serialized ONNX OptionalProto");
      if (proto.has_tensor_value()) return value_tensor(proto.tensor_value(), type.dtype);
      if (proto.has_sequence_value()) return value_sequence(proto.sequence_value(), type.dtype);
      if (type.dtype == DType::kUndefined) throw Error(ErrorKind::kFormat, "an absent optional of unknown dtype");
      return Tensor::none(type.dtype, type.sequence);
    }
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes)) throw Error(ErrorKind::kFormat, "not a serialized ONNX SequenceProto");
    return value_sequence(proto, type.dtype);
  } catch (Error& error) {
    throw error.with_file(path);
  }
}

Tensor read_onnx_tensor_file(const std::string& path, std::string* name) {
  std::string bytes = read_file(path, kMaxTensorFileBytes);
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    throw Error(ErrorKind::kFormat, "not a serialized ONNX TensorProto").with_file(path);
  }
  if (name != nullptr) *name = proto.name();
  try {
    return tensor_from_onnx(proto, "tensor '" + proto.name() + "'", nullptr);
  } catch (Error& error) {
    throw error.with_file(path);
  }
}

}  // namespace weir
