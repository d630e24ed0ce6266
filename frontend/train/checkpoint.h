// Checkpoints: every persistent value of a session (parameters, optimizer
// state, running statistics), the training step and the session's RNG
// state, in one .npz written atomically (temp file, then rename).
//
//   weir::save_checkpoint("ckpt.npz", session, /*step=*/500);
//   int64_t step = weir::load_checkpoint("ckpt.npz", session);   // 500
//
// Loading checks the checkpoint against the session's graph: a missing or
// unexpected value, or one of another dtype or shape, is a weir::Error
// naming the value and the file, and the session is left unchanged.
#pragma once

#include <cstdint>
#include <filesystem>

#include "runtime/session.h"

namespace weir {

void save_checkpoint(const std::filesystem::path& path, const Session& session, int64_t step);
// Restores the session's persistent values and RNG state; returns the step.
int64_t load_checkpoint(const std::filesystem::path& path, Session& session);

}  // namespace weir
