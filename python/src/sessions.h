// weir.Session: a compiled plan and the runtime session that runs it,
// shared by sessions.cc (load, run) and training.cc (a trainer's session).
#pragma once

#include <memory>

#include "runtime/plan.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::python {

struct PythonSession {
  std::shared_ptr<tools::OpSet> ops;  // the plan's kernels live here
  std::shared_ptr<const Plan> plan;
  std::unique_ptr<Session> session;
};

}  // namespace weir::python
