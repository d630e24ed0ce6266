// libFuzzer target: training checkpoints, loaded into a session of a small
// MLP training step (the .npz reader, then the step, RNG state and every
// persistent value checked against the graph). A weir::Error is the expected
// answer to bad input; anything else is a finding. A rejected checkpoint must
// leave the session as it was (checked on each rejection).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "frontend/train/checkpoint.h"
#include "fuzz/fuzz_input_file.h"
#include "fuzz/fuzz_models.h"
#include "runtime/session.h"

namespace {

weir::Session& session() {
  static std::unique_ptr<weir::Session> instance = weir::fuzz::small_training_session();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  session();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static weir::fuzz::FuzzInputFile file("ck.npz");
  const std::string before = weir::fuzz::state_fingerprint(session());
  try {
    weir::load_checkpoint(file.write(data, size), session());
  } catch (const weir::Error&) {
    if (weir::fuzz::state_fingerprint(session()) != before) std::abort();  // a rejected checkpoint changed the session
  }
  return 0;
}
