// libFuzzer target: NumPy arrays (.npy) and archives (.npz: zip, deflate,
// CRC); the first byte picks which. A weir::Error is the expected answer to
// bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "frontend/data/npy.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static weir::fuzz::FuzzInputFile npy("array.npy");
  static weir::fuzz::FuzzInputFile npz("arrays.npz");
  if (size == 0) return 0;
  try {
    if (data[0] % 2 == 0) {
      weir::read_npy(npy.write(data + 1, size - 1));
    } else {
      weir::read_npz(npz.write(data + 1, size - 1));
    }
  } catch (const weir::Error&) {
  }
  return 0;
}
