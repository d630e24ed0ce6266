#include "ops/elementwise/fused_activation.h"

#include "core/error.h"

namespace weir {

namespace {
constexpr FusedActivation::Kind kKinds[] = {
    FusedActivation::Kind::kNone,    FusedActivation::Kind::kRelu, FusedActivation::Kind::kLeakyRelu,
    FusedActivation::Kind::kClip,    FusedActivation::Kind::kSigmoid, FusedActivation::Kind::kTanh,
    FusedActivation::Kind::kSilu,    FusedActivation::Kind::kGelu, FusedActivation::Kind::kGeluTanh};
}  // namespace

const char* FusedActivation::name(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kRelu: return "Relu";
    case Kind::kLeakyRelu: return "LeakyRelu";
    case Kind::kClip: return "Clip";
    case Kind::kSigmoid: return "Sigmoid";
    case Kind::kTanh: return "Tanh";
    case Kind::kSilu: return "Silu";
    case Kind::kGelu: return "Gelu";
    case Kind::kGeluTanh: return "GeluTanh";
  }
  return "?";
}

std::vector<std::string> FusedActivation::names() {
  std::vector<std::string> result;
  for (Kind kind : kKinds) result.emplace_back(name(kind));
  return result;
}

FusedActivation FusedActivation::from_node(const Node& node) {
  std::string wanted = node.has_attr("activation") ? node.attr("activation").s() : "None";
  FusedActivation result;
  bool found = false;
  for (Kind kind : kKinds) {
    if (wanted == name(kind)) {
      result.kind = kind;
      found = true;
    }
  }
  if (!found) {
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': unknown activation '" + wanted +
                                                 "' (known: " + known + ")")
        .with_node(node.name());
  }
  if (node.has_attr("activation_alpha")) result.alpha = node.attr("activation_alpha").f();
  if (node.has_attr("activation_beta")) result.beta = node.attr("activation_beta").f();
  if (result.kind == Kind::kClip && !(result.alpha <= result.beta)) {
    throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': Clip bounds [" +
                                                 std::to_string(result.alpha) + ", " + std::to_string(result.beta) +
                                                 "] are empty")
        .with_node(node.name());
  }
  return result;
}

void FusedActivation::to_attributes(std::map<std::string, Attribute>& attributes) const {
  attributes["activation"] = Attribute(std::string(name(kind)));
  if (kind == Kind::kLeakyRelu || kind == Kind::kClip) attributes["activation_alpha"] = Attribute(alpha);
  if (kind == Kind::kClip) attributes["activation_beta"] = Attribute(beta);
}

}  // namespace weir
