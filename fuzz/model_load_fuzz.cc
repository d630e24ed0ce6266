// libFuzzer target: Weir's own model format, binary (.weir) and text
// (.weirtxt); the first byte picks which. A weir::Error is the expected
// answer to bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/model_io.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static weir::fuzz::FuzzInputFile binary("model.weir");
  static weir::fuzz::FuzzInputFile text("model.weirtxt");
  if (size == 0) return 0;
  weir::fuzz::FuzzInputFile& file = data[0] % 2 == 0 ? binary : text;
  const std::filesystem::path& path = file.write(data + 1, size - 1);
  try {
    weir::load_model(path);
  } catch (const weir::Error&) {
  }
  return 0;
}
