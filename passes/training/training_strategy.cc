#include "passes/training/training_strategy.h"

#include "core/error.h"

namespace weir {

const char* ps_mode_name(PsMode mode) {
  switch (mode) {
    case PsMode::kOff: return "off";
    case PsMode::kSync: return "sync";
    case PsMode::kAsync: return "async";
    case PsMode::kHalfAsync: return "half-async";
    case PsMode::kGeo: return "geo";
  }
  return "?";
}

PsMode parse_ps_mode(const std::string& name) {
  for (PsMode mode : {PsMode::kOff, PsMode::kSync, PsMode::kAsync, PsMode::kHalfAsync, PsMode::kGeo}) {
    if (name == ps_mode_name(mode)) return mode;
  }
  throw Error(ErrorKind::kInvalidArgument,
              "unknown parameter-server mode '" + name + "' (expected sync, async, half-async, geo or off)");
}

}  // namespace weir
