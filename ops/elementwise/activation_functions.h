// The scalar functions of the parametrized activations, each with its
// derivative, so one definition gives both the forward kernel and the
// backward op's kernel (`<Op>Grad(dY, X) = dY * f'(X)`).
//
//   EluFunction f(node);          // reads alpha
//   float y = f.value(x), d = f.derivative(x);
//
// Attributes follow ONNX, with ONNX's defaults.
#pragma once

#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"
#include "core/graph.h"
#include "ops/node_attributes.h"

namespace weir {

struct LeakyReluFunction {
  double alpha;
  explicit LeakyReluFunction(const Node& node) : alpha(float_attr(node, "alpha", 0.01)) {}
  template <typename C> C value(C x) const { return x >= C(0) ? x : static_cast<C>(alpha) * x; }
  template <typename C> C derivative(C x) const { return x >= C(0) ? C(1) : static_cast<C>(alpha); }
};

struct EluFunction {
  double alpha;
  explicit EluFunction(const Node& node) : alpha(float_attr(node, "alpha", 1.0)) {}
  template <typename C> C value(C x) const { return x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x); }
  template <typename C> C derivative(C x) const { return x > C(0) ? C(1) : static_cast<C>(alpha) * std::exp(x); }
};

struct SeluFunction {
  double alpha, gamma;
  explicit SeluFunction(const Node& node)
      : alpha(float_attr(node, "alpha", 1.67326319217681884765625)),
        gamma(float_attr(node, "gamma", 1.05070102214813232421875)) {}
  template <typename C> C value(C x) const {
    return static_cast<C>(gamma) * (x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x));
  }
  template <typename C> C derivative(C x) const {
    return static_cast<C>(gamma) * (x > C(0) ? C(1) : static_cast<C>(alpha) * std::exp(x));
  }
};

// approximate = "none": x * Phi(x); "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluFunction {
  bool tanh_form;
  explicit GeluFunction(const Node& node) : tanh_form(false) {
    std::string approximate = node.has_attr("approximate") ? node.attr("approximate").s() : "none";
    if (approximate != "none" && approximate != "tanh") {
      throw Error(ErrorKind::kInvalidArgument, "Gelu '" + node.name() + "': approximate '" + approximate +
                                                   "' is not 'none' or 'tanh'").with_node(node.name());
    }
    tanh_form = approximate == "tanh";
  }
  static constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
  template <typename C> C value(C x) const {
    if (tanh_form) return C(0.5) * x * (C(1) + std::tanh(static_cast<C>(kSqrt2OverPi) * (x + C(0.044715) * x * x * x)));
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(std::numbers::sqrt2 / 2)));
  }
  template <typename C> C derivative(C x) const {
    if (tanh_form) {
      C inner = static_cast<C>(kSqrt2OverPi) * (x + C(0.044715) * x * x * x);
      C t = std::tanh(inner);
      C d_inner = static_cast<C>(kSqrt2OverPi) * (C(1) + C(3 * 0.044715) * x * x);
      return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * d_inner;
    }
    C cdf = C(0.5) * (C(1) + std::erf(x * static_cast<C>(std::numbers::sqrt2 / 2)));
    C pdf = std::exp(C(-0.5) * x * x) * static_cast<C>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return cdf + x * pdf;
  }
};

struct ErfFunction {
  explicit ErfFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::erf(x); }
  template <typename C> C derivative(C x) const { return static_cast<C>(2 * std::numbers::inv_sqrtpi) * std::exp(-x * x); }
};

// log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|) so it never overflows.
struct SoftplusFunction {
  explicit SoftplusFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::max(x, C(0)) + std::log1p(std::exp(-std::fabs(x))); }
  template <typename C> C derivative(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  }
};

struct SoftsignFunction {
  explicit SoftsignFunction(const Node&) {}
  template <typename C> C value(C x) const { return x / (C(1) + std::fabs(x)); }
  template <typename C> C derivative(C x) const {
    C d = C(1) + std::fabs(x);
    return C(1) / (d * d);
  }
};

struct HardSigmoidFunction {
  double alpha, beta;
  explicit HardSigmoidFunction(const Node& node)
      : alpha(float_attr(node, "alpha", 0.2)), beta(float_attr(node, "beta", 0.5)) {}
  // NaN stays NaN (std::min(1, NaN) would give 1).
  template <typename C> C value(C x) const {
    if (x != x) return x;
    return std::max(C(0), std::min(C(1), static_cast<C>(alpha) * x + static_cast<C>(beta)));
  }
  template <typename C> C derivative(C x) const {
    C t = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return t > C(0) && t < C(1) ? static_cast<C>(alpha) : C(0);
  }
};

// x * HardSigmoid(x) with alpha 1/6, beta 1/2.
struct HardSwishFunction {
  explicit HardSwishFunction(const Node&) {}
  template <typename C> C value(C x) const { return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5))); }
  template <typename C> C derivative(C x) const {
    if (x < C(-3)) return C(0);
    if (x > C(3)) return C(1);
    return x / C(3) + C(0.5);
  }
};

struct SinFunction {
  explicit SinFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::sin(x); }
  template <typename C> C derivative(C x) const { return std::cos(x); }
};

// Trigonometric and hyperbolic functions and their inverses (ONNX Tan ...
// Atanh). Outside an inverse's domain the value is NaN, as std:: gives it.
#define WEIR_SCALAR_FUNCTION(Name, VALUE, DERIVATIVE)                \
  struct Name {                                                       \
    explicit Name(const Node&) {}                                     \
    template <typename C> C value(C x) const { return VALUE; }        \
    template <typename C> C derivative(C x) const { return DERIVATIVE; } \
  };
WEIR_SCALAR_FUNCTION(TanFunction, std::tan(x), C(1) / (std::cos(x) * std::cos(x)))
WEIR_SCALAR_FUNCTION(AsinFunction, std::asin(x), C(1) / std::sqrt(C(1) - x * x))
WEIR_SCALAR_FUNCTION(AcosFunction, std::acos(x), C(-1) / std::sqrt(C(1) - x * x))
WEIR_SCALAR_FUNCTION(AtanFunction, std::atan(x), C(1) / (C(1) + x * x))
WEIR_SCALAR_FUNCTION(SinhFunction, std::sinh(x), std::cosh(x))
WEIR_SCALAR_FUNCTION(CoshFunction, std::cosh(x), std::sinh(x))
WEIR_SCALAR_FUNCTION(AsinhFunction, std::asinh(x), C(1) / std::sqrt(x * x + C(1)))
WEIR_SCALAR_FUNCTION(AcoshFunction, std::acosh(x), C(1) / std::sqrt(x * x - C(1)))
WEIR_SCALAR_FUNCTION(AtanhFunction, std::atanh(x), C(1) / (C(1) - x * x))
#undef WEIR_SCALAR_FUNCTION

// X where X > alpha, else 0.
struct ThresholdedReluFunction {
  double alpha;
  explicit ThresholdedReluFunction(const Node& node) : alpha(float_attr(node, "alpha", 1.0)) {}
  template <typename C> C value(C x) const { return x > static_cast<C>(alpha) ? x : C(0); }
  template <typename C> C derivative(C x) const { return x > static_cast<C>(alpha) ? C(1) : C(0); }
};

// X - bias where X > lambd, X + bias where X < -lambd, else 0.
struct ShrinkFunction {
  double bias, lambd;
  explicit ShrinkFunction(const Node& node) : bias(float_attr(node, "bias", 0.0)), lambd(float_attr(node, "lambd", 0.5)) {}
  template <typename C> C value(C x) const {
    if (x < -static_cast<C>(lambd)) return x + static_cast<C>(bias);
    return x > static_cast<C>(lambd) ? x - static_cast<C>(bias) : C(0);
  }
  template <typename C> C derivative(C x) const {
    return (x < -static_cast<C>(lambd) || x > static_cast<C>(lambd)) ? C(1) : C(0);
  }
};

// max(0, X) + min(0, alpha * (e^(X / alpha) - 1)).
struct CeluFunction {
  double alpha;
  explicit CeluFunction(const Node& node) : alpha(float_attr(node, "alpha", 1.0)) {}
  template <typename C> C value(C x) const {
    return x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x / static_cast<C>(alpha));
  }
  template <typename C> C derivative(C x) const { return x > C(0) ? C(1) : std::exp(x / static_cast<C>(alpha)); }
};

struct CosFunction {
  explicit CosFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::cos(x); }
  template <typename C> C derivative(C x) const { return -std::sin(x); }
};

struct ReciprocalFunction {
  explicit ReciprocalFunction(const Node&) {}
  template <typename C> C value(C x) const { return C(1) / x; }
  template <typename C> C derivative(C x) const { return C(-1) / (x * x); }
};

// Flat functions: their derivative is zero almost everywhere.
struct FloorFunction {
  explicit FloorFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::floor(x); }
  template <typename C> C derivative(C) const { return C(0); }
};
struct CeilFunction {
  explicit CeilFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::ceil(x); }
  template <typename C> C derivative(C) const { return C(0); }
};
// Halves round to even, as ONNX specifies (std::nearbyint in the default rounding mode).
struct RoundFunction {
  explicit RoundFunction(const Node&) {}
  template <typename C> C value(C x) const { return std::nearbyint(x); }
  template <typename C> C derivative(C) const { return C(0); }
};

}  // namespace weir
