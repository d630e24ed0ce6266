// OptimizerConfig — which update rule a training step applies, and its
// hyperparameters (the learning rate is a feed: training_step.h's lr_input).
//
//   weir::OptimizerConfig adam{.kind = weir::parse_optimizer_kind("adam"), .weight_decay = 1e-4};
//   weir::optimizer_kind_name(adam.kind);     // "adam"
//   weir::optimizer_op_type(adam.kind);       // "Adam": the update op (ops/optimizer)
#pragma once

#include <string>
#include <vector>

namespace weir {

enum class OptimizerKind { kSgd, kMomentum, kAdagrad, kAdam, kAdamW, kLamb };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double weight_decay = 0.0;    // L2 for SGD/Momentum/Adam; decoupled for AdamW/LAMB
  double momentum = 0.9;        // Momentum
  bool nesterov = false;        // Momentum
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = 0.0;         // 0: the op's default (1e-8; Adagrad and LAMB 1e-6)
  double clip_global_norm = 0;  // > 0: gradients scaled to this global L2 norm at most
};

// "sgd", "momentum", "adagrad", "adam", "adamw", "lamb"; throws naming the choices otherwise.
OptimizerKind parse_optimizer_kind(const std::string& name);
std::string optimizer_kind_name(OptimizerKind kind);
// The update op of `kind` ("SGD", "Momentum", "Adagrad", "Adam", "AdamW",
// "LAMB") and the optimizer state it keeps per parameter ("velocity";
// "accumulator"; "m", "v").
const char* optimizer_op_type(OptimizerKind kind);
std::vector<const char*> optimizer_state_names(OptimizerKind kind);

}  // namespace weir
