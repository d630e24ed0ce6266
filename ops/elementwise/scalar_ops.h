// The scalar functions of the elementwise ops, shared by their kernels and
// by FusedElementwise (which must compute exactly what the ops it replaces
// compute): `Op::apply(x)` or `Op::apply(a, b)` in the compute type.
#pragma once

#include <cmath>
#include <type_traits>

namespace weir::elementwise {

struct NegOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_integral_v<C>) {
      using Wide = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
      return static_cast<C>(Wide(0) - static_cast<Wide>(x));  // wraps, as integer Sub does
    } else {
      return -x;
    }
  }
};
struct ReluOp {
  template <typename C> static C apply(C x) { return x > C(0) ? x : C(0); }
};
struct SigmoidOp {
  template <typename C> static C apply(C x) {
    // Two branches so exp() never overflows: for x < 0 use e^x / (1 + e^x).
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  }
};
struct TanhOp {
  template <typename C> static C apply(C x) { return std::tanh(x); }
};
struct ExpOp {
  template <typename C> static C apply(C x) { return std::exp(x); }
};
struct LogOp {
  template <typename C> static C apply(C x) { return std::log(x); }
};
struct SqrtOp {
  template <typename C> static C apply(C x) { return std::sqrt(x); }
};
struct AbsOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? NegOp::apply(x) : x;  // integer minimum wraps to itself, as in NumPy
  }
};
struct SignOp {
  template <typename C> static C apply(C x) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? C(1) : (x < C(0) ? C(0) - C(1) : C(0));
  }
};

// Signed overflow is undefined behaviour in C++; do integer arithmetic in the
// unsigned type, where it wraps, and convert back.
template <typename T>
using Wide = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;

struct AddOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<Wide<C>>(a) + static_cast<Wide<C>>(b));
    else return a + b;
  }
};
struct SubOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<Wide<C>>(a) - static_cast<Wide<C>>(b));
    else return a - b;
  }
};
struct MulOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<Wide<C>>(a) * static_cast<Wide<C>>(b));
    else return a * b;
  }
};
struct DivOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      // min / -1 overflows; its wrapped result is min itself, i.e. -a wrapped.
      if (b == -1) return static_cast<C>(Wide<C>(0) - static_cast<Wide<C>>(a));
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// NaN propagates from either side.
struct MaxOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return a > b ? a : (b > a ? b : a);
  }
};
struct MinOp {
  template <typename C> static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return a < b ? a : (b < a ? b : a);
  }
};
}  // namespace weir::elementwise
