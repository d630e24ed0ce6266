// Calls a templated lambda with the C++ type of a runtime DType.
//
//   dispatch_dtype(tensor.dtype(), [&]<typename T>() { sum<T>(tensor.data<T>(), n); });
//
// ComputeType<T> is the type arithmetic happens in: float for f16 and bf16
// (converted on load and store), T itself otherwise.
#pragma once

#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/tensor.h"

namespace weir {

template <typename T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<Float16> { using type = float; };
template <> struct ComputeTypeOf<BFloat16> { using type = float; };
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T>
inline ComputeType<T> load(T value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return value.to_float();
  } else {
    return value;
  }
}

template <typename T>
inline T store(ComputeType<T> value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(value);
  } else {
    return static_cast<T>(value);
  }
}

template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn.template operator()<float>();
    case DType::kFloat64: return fn.template operator()<double>();
    case DType::kFloat16: return fn.template operator()<Float16>();
    case DType::kBFloat16: return fn.template operator()<BFloat16>();
    case DType::kInt8: return fn.template operator()<int8_t>();
    case DType::kUInt8: return fn.template operator()<uint8_t>();
    case DType::kInt16: return fn.template operator()<int16_t>();
    case DType::kInt32: return fn.template operator()<int32_t>();
    case DType::kInt64: return fn.template operator()<int64_t>();
    case DType::kUInt16: return fn.template operator()<uint16_t>();
    case DType::kUInt32: return fn.template operator()<uint32_t>();
    case DType::kUInt64: return fn.template operator()<uint64_t>();
    case DType::kBool: return fn.template operator()<bool>();
    case DType::kUndefined: break;
  }
  throw Error(ErrorKind::kInternal, "dispatch on undefined dtype");
}

// The f32/f64-only kernels' dispatch: calls fn with float or double and
// returns true, or returns false (calling nothing) for any other dtype, so
// the kernel fails naming what it got.
//
//   if (!dispatch_f32_f64(x.dtype(), run)) ctx.fail("supports f32 and f64, got " + x.type_string());
template <typename Fn>
bool dispatch_f32_f64(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat32) {
    fn.template operator()<float>();
  } else if (dtype == DType::kFloat64) {
    fn.template operator()<double>();
  } else {
    return false;
  }
  return true;
}

}  // namespace weir
