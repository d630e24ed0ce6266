#include "ops/dnnl_eltwise.h"

#include "core/error.h"

namespace weir {

std::tuple<dnnl::algorithm, float, float> dnnl_eltwise(const FusedActivation& act) {
  using K = FusedActivation::Kind;
  using A = dnnl::algorithm;
  switch (act.kind) {
    case K::kRelu: return {A::eltwise_relu, 0.0f, 0.0f};
    case K::kLeakyRelu: return {A::eltwise_relu, act.alpha, 0.0f};  // relu's alpha is the negative slope
    case K::kClip: return {A::eltwise_clip, act.alpha, act.beta};
    case K::kSigmoid: return {A::eltwise_logistic, 0.0f, 0.0f};
    case K::kTanh: return {A::eltwise_tanh, 0.0f, 0.0f};
    case K::kSilu: return {A::eltwise_swish, 1.0f, 0.0f};  // x * sigmoid(alpha * x)
    case K::kGelu: return {A::eltwise_gelu_erf, 0.0f, 0.0f};
    case K::kGeluTanh: return {A::eltwise_gelu_tanh, 0.0f, 0.0f};
    case K::kNone: break;
  }
  throw Error(ErrorKind::kInternal, "activation None has no oneDNN post-op");
}

}  // namespace weir
