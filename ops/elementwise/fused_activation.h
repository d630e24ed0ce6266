// The activation a fused op (FusedConv, FusedGemm) applies to its result in
// the same pass over the output, read from the node's attributes:
//
//   activation        "None", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh",
//                     "Silu" (x * sigmoid(x)), "Gelu" (erf form), "GeluTanh"
//   activation_alpha  LeakyRelu: the negative slope; Clip: the lower bound
//   activation_beta   Clip: the upper bound
//
//   FusedActivation act = FusedActivation::from_node(node);   // throws naming the node on an unknown name
//   float y = act.apply(x);
//
// oneDNN runs these as an eltwise post-op; apply() is the reference and the
// path for dtypes oneDNN lacks.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir {

struct FusedActivation {
  enum class Kind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kSilu, kGelu, kGeluTanh };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;

  // Throws weir::Error(kInvalidArgument) naming the node and the known names.
  static FusedActivation from_node(const Node& node);
  static std::vector<std::string> names();
  static const char* name(Kind kind);
  // Writes the activation's attributes onto `attributes`.
  void to_attributes(std::map<std::string, Attribute>& attributes) const;

  bool none() const { return kind == Kind::kNone; }

  template <typename C>
  C apply(C x) const {
    switch (kind) {
      case Kind::kNone: return x;
      case Kind::kRelu: return x > C(0) ? x : C(0);
      case Kind::kLeakyRelu: return x >= C(0) ? x : static_cast<C>(alpha) * x;
      case Kind::kClip: return std::min(std::max(x, static_cast<C>(alpha)), static_cast<C>(beta));
      case Kind::kSigmoid: return C(1) / (C(1) + std::exp(-x));
      case Kind::kTanh: return std::tanh(x);
      case Kind::kSilu: return x / (C(1) + std::exp(-x));
      case Kind::kGelu: return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(std::numbers::sqrt2 / 2)));
      case Kind::kGeluTanh: {
        constexpr double kSqrt2OverPi = 0.7978845608028654;
        return C(0.5) * x * (C(1) + std::tanh(static_cast<C>(kSqrt2OverPi) * (x + C(0.044715) * x * x * x)));
      }
    }
    return x;
  }
};

}  // namespace weir
