// libFuzzer target: ONNX import from a file (the payload splitter, the
// protobuf parse, tensors, attributes, sub-graphs, opset adapters and the
// verifier). A weir::Error is the expected answer to bad input; anything
// else (a crash, a sanitizer report, another exception, a hang, an
// allocation past the caps) is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_wire.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static weir::fuzz::FuzzInputFile file("model.onnx");
  const std::filesystem::path& path = file.write(data, size);
  try {
    weir::import_onnx_model(path.string());
  } catch (const weir::Error&) {
  }
  return 0;
}
