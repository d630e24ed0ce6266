// Strategy switches from text: what graph-runner train's --recompute and
// --memory-budget accept. The Strategy itself is the training pipeline's
// (passes/training/training_strategy.h).
//
//   weir::Strategy strategy;
//   strategy.recompute = weir::parse_recompute("auto");              // or "off", or "h1,h2"
//   strategy.recompute.memory_budget = weir::parse_byte_size("512M");
#pragma once

#include <cstdint>
#include <string>

#include "passes/training/training_strategy.h"

namespace weir {

// --recompute: "auto", "off", or comma-separated checkpoint value names.
RecomputeStrategy parse_recompute(const std::string& text);
// --memory-budget: bytes, with an optional K/M/G (powers of 1024) suffix.
int64_t parse_byte_size(const std::string& text);

}  // namespace weir
