// libFuzzer target: what graph-runner train parses from the user beside
// models: strategy files (JSON, protobuf's parser and Weir's field checks)
// and --simulate-link texts; the first byte picks which. A weir::Error is
// the expected answer to bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "distributed/metered_world.h"
#include "frontend/strategy/strategy_file.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] % 2 == 0) {
      weir::parse_strategy_json(text, "fuzz.json");
    } else {
      weir::parse_simulated_link(text);
    }
  } catch (const weir::Error&) {
  }
  return 0;
}
