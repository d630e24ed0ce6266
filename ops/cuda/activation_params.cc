#include "ops/cuda/activation_params.h"

#include <limits>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/elementwise/activation_functions.h"

namespace weir::cuda {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {
      "LeakyRelu", "Elu",  "Selu", "Erf",   "Softplus", "Softsign", "HardSigmoid",     "HardSwish",
      "Sin",       "Cos",  "Tan",  "Asin", "Acos",  "Atan",     "Sinh",     "Cosh",            "Asinh",
      "Acosh",     "Atanh", "ThresholdedRelu", "Shrink", "Celu", "Reciprocal"};
  return names;
}

Activation activation_of(const std::string& name, const Node& node) {
  // The CPU casts each double attribute to the compute type, f32, where it
  // uses it; so do these.
  auto f = [](double value) { return static_cast<float>(value); };
  if (name == "LeakyRelu") return {UnaryOp::kLeakyRelu, {f(LeakyReluFunction(node).alpha), 0.0f}};
  if (name == "Elu") return {UnaryOp::kElu, {f(EluFunction(node).alpha), 0.0f}};
  if (name == "Selu") {
    SeluFunction selu(node);
    return {UnaryOp::kSelu, {f(selu.alpha), f(selu.gamma)}};
  }
  if (name == "HardSigmoid") {
    HardSigmoidFunction hard_sigmoid(node);
    return {UnaryOp::kHardSigmoid, {f(hard_sigmoid.alpha), f(hard_sigmoid.beta)}};
  }
  if (name == "ThresholdedRelu") return {UnaryOp::kThresholdedRelu, {f(ThresholdedReluFunction(node).alpha), 0.0f}};
  if (name == "Shrink") {
    ShrinkFunction shrink(node);
    return {UnaryOp::kShrink, {f(shrink.bias), f(shrink.lambd)}};
  }
  if (name == "Celu") return {UnaryOp::kCelu, {f(CeluFunction(node).alpha), 0.0f}};
  static const std::pair<const char*, UnaryOp> kPlain[] = {
      {"Erf", UnaryOp::kErf},     {"Softplus", UnaryOp::kSoftplus}, {"Softsign", UnaryOp::kSoftsign},
      {"HardSwish", UnaryOp::kHardSwish}, {"Sin", UnaryOp::kSin},   {"Cos", UnaryOp::kCos},
      {"Tan", UnaryOp::kTan},     {"Asin", UnaryOp::kAsin},         {"Acos", UnaryOp::kAcos},
      {"Atan", UnaryOp::kAtan},   {"Sinh", UnaryOp::kSinh},         {"Cosh", UnaryOp::kCosh},
      {"Asinh", UnaryOp::kAsinh}, {"Acosh", UnaryOp::kAcosh},       {"Atanh", UnaryOp::kAtanh},
      {"Reciprocal", UnaryOp::kReciprocal}};
  for (const auto& [plain, op] : kPlain) {
    if (name == plain) return {op, {}};
  }
  throw Error(ErrorKind::kInternal, "no CUDA activation '" + name + "' (node '" + node.name() + "')").with_node(node.name());
}

ClipBounds clip_bounds(const KernelContext& ctx, size_t first) {
  ClipBounds bounds;
  bounds.values = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_input(first + k)) continue;
    const Tensor& bound = ctx.input(first + k);
    if (bound.num_elements() != 1 || bound.dtype() != ctx.input(0).dtype()) {
      ctx.fail(std::string(k == 0 ? "min" : "max") + " must be a scalar of the input's dtype, got " + bound.type_string());
    }
    if (bound.device().type == DeviceType::kCpu) {
      float value = 0.0f;
      dispatch_dtype(bound.dtype(), [&]<typename T>() {
        if constexpr (std::is_same_v<ComputeType<T>, float>) value = load(bound.data<T>()[0]);
      });
      (k == 0 ? bounds.values.alpha : bounds.values.beta) = value;
    } else {
      (k == 0 ? bounds.low : bounds.high) = bound.raw_data();
    }
  }
  return bounds;
}

}  // namespace weir::cuda
