#include "passes/training/optimizer_config.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace weir {

const char* optimizer_op_type(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "SGD";
    case OptimizerKind::kMomentum: return "Momentum";
    case OptimizerKind::kAdagrad: return "Adagrad";
    case OptimizerKind::kAdam: return "Adam";
    case OptimizerKind::kAdamW: return "AdamW";
    case OptimizerKind::kLamb: return "LAMB";
  }
  return "SGD";
}

std::vector<const char*> optimizer_state_names(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return {};
    case OptimizerKind::kMomentum: return {"velocity"};
    case OptimizerKind::kAdagrad: return {"accumulator"};
    default: return {"m", "v"};
  }
}

OptimizerKind parse_optimizer_kind(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "sgd") return OptimizerKind::kSgd;
  if (lower == "momentum") return OptimizerKind::kMomentum;
  if (lower == "adagrad") return OptimizerKind::kAdagrad;
  if (lower == "adam") return OptimizerKind::kAdam;
  if (lower == "adamw") return OptimizerKind::kAdamW;
  if (lower == "lamb") return OptimizerKind::kLamb;
  throw Error(ErrorKind::kInvalidArgument,
              "unknown optimizer '" + name + "' (choices: sgd, momentum, adagrad, adam, adamw, lamb)");
}

std::string optimizer_kind_name(OptimizerKind kind) {
  std::string name = optimizer_op_type(kind);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

}  // namespace weir
