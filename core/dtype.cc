#include "core/dtype.h"

#include <optional>
#include <string>

#include "core/error.h"

namespace weir {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kInt8: return "i8";
    case DType::kUInt8: return "u8";
    case DType::kInt16: return "i16";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kUInt16: return "u16";
    case DType::kUInt32: return "u32";
    case DType::kUInt64: return "u64";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

std::optional<DType> find_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"f32", DType::kFloat32},   {"float", DType::kFloat32},   {"float32", DType::kFloat32}, {"fp32", DType::kFloat32},
      {"f64", DType::kFloat64},   {"double", DType::kFloat64},  {"float64", DType::kFloat64},
      {"f16", DType::kFloat16},   {"float16", DType::kFloat16}, {"half", DType::kFloat16},  {"fp16", DType::kFloat16},
      {"bf16", DType::kBFloat16}, {"bfloat16", DType::kBFloat16},
      {"i8", DType::kInt8},       {"int8", DType::kInt8},
      {"u8", DType::kUInt8},      {"uint8", DType::kUInt8},
      {"i16", DType::kInt16},     {"int16", DType::kInt16},
      {"i32", DType::kInt32},     {"int32", DType::kInt32},
      {"i64", DType::kInt64},     {"int64", DType::kInt64},
      {"u16", DType::kUInt16},    {"uint16", DType::kUInt16},
      {"u32", DType::kUInt32},    {"uint32", DType::kUInt32},
      {"u64", DType::kUInt64},    {"uint64", DType::kUInt64},
      {"bool", DType::kBool},
  };
  for (const Alias& alias : kAliases) {
    if (alias.name == name) return alias.dtype;
  }
  return std::nullopt;
}

DType parse_dtype(std::string_view name) {
  if (std::optional<DType> dtype = find_dtype(name)) return *dtype;
  throw Error(ErrorKind::kInvalidArgument,
              "unknown dtype '" + std::string(name) +
                  "' (expected one of f32, f64, f16, bf16, i8, u8, i16, i32, i64, u16, u32, u64, bool)");
}

bool is_valid_dtype(int32_t code) {
  for (DType dtype : kAllDTypes) {
    if (static_cast<int32_t>(dtype) == code) return true;
  }
  return false;
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool is_integer(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kInt16 ||
         dtype == DType::kInt32 || dtype == DType::kInt64 || dtype == DType::kUInt16 ||
         dtype == DType::kUInt32 || dtype == DType::kUInt64;
}

bool is_signed(DType dtype) {
  return is_floating(dtype) || dtype == DType::kInt8 || dtype == DType::kInt16 ||
         dtype == DType::kInt32 || dtype == DType::kInt64;
}

}  // namespace weir
