// Small models for the fuzz targets and their seed corpora: a tiny MLP's
// training step compiled into a session (checkpoints load into it).
#pragma once

#include <memory>
#include <string>

#include "runtime/session.h"

namespace weir::fuzz {

std::unique_ptr<Session> small_training_session();
// The session's persistent values and RNG state as bytes, to tell whether a
// rejected checkpoint changed anything.
std::string state_fingerprint(const Session& session);

}  // namespace weir::fuzz
