// DType — the element types a Weir tensor can hold.
//
//   weir::DType t = weir::DType::kBFloat16;
//   weir::dtype_size(t);            // 2
//   weir::dtype_name(t);            // "bf16"
//   weir::parse_dtype("f32");       // DType::kFloat32; throws weir::Error on "f31"
//   weir::is_floating(t);           // true
//
// The numeric values are the ONNX TensorProto.DataType codes, so the model
// format and the ONNX importer share one numbering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace weir {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// All defined dtypes, for tests and for iterating over type constraints.
inline constexpr DType kAllDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
    DType::kUInt8,   DType::kInt16,   DType::kInt32,   DType::kInt64,    DType::kBool,
    DType::kUInt16,  DType::kUInt32,  DType::kUInt64};

// Size of one element in bytes; 0 for kUndefined.
size_t dtype_size(DType dtype);
// Short name: f32, f64, f16, bf16, i8, u8, i16, i32, i64, u16, u32, u64, bool ("undefined").
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; also accepts ONNX-style names (float, float16, int64...)
// and Paddle's fp32 and fp16.
DType parse_dtype(std::string_view name);
// The same, or nullopt for a name that is none of them.
std::optional<DType> find_dtype(std::string_view name);
// True for the codes listed in DType except kUndefined.
bool is_valid_dtype(int32_t code);

bool is_floating(DType dtype);
bool is_integer(DType dtype);  // signed or unsigned; bool is not an integer
bool is_signed(DType dtype);

}  // namespace weir
