// Conversion between ONNX TensorProto messages and Weir tensors.
//
//   weir::Tensor x = weir::read_onnx_tensor_file("test_data_set_0/input_0.pb");
//   weir::Tensor w = weir::tensor_from_onnx(initializer, "initializer 'W'", &external_reader);
//   onnx::TensorProto proto = weir::tensor_to_onnx(w, "W");
//
// Every element field ONNX defines is read (raw_data and the typed fields).
// External data goes through Weir's ExternalDataReader, so a location outside
// the model's directory or a range past the end of its file is refused.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <string>

#include "core/dtype.h"
#include "core/external_data.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"  // defines ONNX_API, then includes onnx-ml.pb.h

namespace weir {

// The Weir dtype for an ONNX TensorProto::DataType code; kUndefined where
// Weir has none (string, uint16/32/64, complex, float8 ...).
DType dtype_from_onnx(int32_t onnx_type);
// The ONNX name of a TensorProto::DataType code ("STRING", "UINT32", ...).
std::string onnx_type_name(int32_t onnx_type);

// Bytes that `owner` keeps alive: a tensor made from them may view them
// instead of copying. Without an owner they are copied.
struct HeldBytes {
  std::string_view bytes;
  std::shared_ptr<void> owner;
};

// Reads `proto` into a CPU tensor. `what` names the tensor in errors
// ("initializer 'W'"). `external` resolves external data; nullptr refuses it.
// `proto_owner`, when given, keeps `proto` itself alive for as long as any
// tensor holds it: aligned raw_data is then viewed, not copied. Without it
// the proto's bytes are copied, since the caller may free the proto.
// `raw_data`, when given, stands for the proto's raw_data field (the
// importer lifts the payloads out of the file before parsing, onnx_wire.h)
// together with whatever keeps those bytes alive. A view is only ever made
// of bytes whose owner is known, never of a proto that may be freed.
// Throws weir::Error(kFormat) for a malformed tensor (wrong element count,
// field that does not fit the type) and kUnsupported for a type Weir lacks.
Tensor tensor_from_onnx(const onnx::TensorProto& proto, const std::string& what,
                        ExternalDataReader* external, const std::shared_ptr<void>& proto_owner = nullptr,
                        const std::optional<HeldBytes>& raw_data = std::nullopt);

// Serializes `tensor` with raw_data (little-endian, like ONNX).
onnx::TensorProto tensor_to_onnx(const Tensor& tensor, const std::string& name);

// Reads a serialized TensorProto file (the ONNX backend tests' *.pb).
Tensor read_onnx_tensor_file(const std::string& path, std::string* name = nullptr);

// Reads a serialized value for a value of `type`: a TensorProto, or a
// SequenceProto (seq) or OptionalProto (opt) file, the forms the ONNX backend
// tests write. bf16 data that ONNX wrote as UINT16 (NumPy has no bfloat16)
// is read as bf16 when `type.dtype` is bf16.
Tensor read_onnx_value_file(const std::string& path, const TensorType& type);

}  // namespace weir
