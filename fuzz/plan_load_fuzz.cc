// libFuzzer target: compiled plans (.weirplan): header, flatbuffers table,
// graph, schedule, memory plan and zero-copy weights. A weir::Error is the
// expected answer to bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "fuzz/fuzz_input_file.h"
#include "runtime/plan_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static weir::fuzz::FuzzInputFile file("model.weirplan");
  const std::filesystem::path& path = file.write(data, size);
  try {
    weir::load_plan(path);
  } catch (const weir::Error&) {
  }
  return 0;
}
