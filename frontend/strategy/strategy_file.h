// Strategy files: graph-runner train --strategy FILE, a JSON object whose
// field names follow Fleet's DistributedStrategy where one exists (so a
// Paddle user's strategy reads the same), with Weir's additions. The fields
// and their defaults are in docs/training.md; the schema is
// strategy_file.proto.
//
//   {
//     "amp": true, "amp_configs": {"dtype": "bf16"},
//     "fuse_all_reduce_ops": true, "fuse_grad_size_in_MB": 32, "first_bucket_MB": 1,
//     "comm_streams": 2, "fp16_allreduce": true,
//     "use_hierarchical_allreduce": true, "hierarchical_allreduce_inter_nranks": 2
//   }
//
//   weir::Strategy strategy = weir::read_strategy_file("strategy.json", from_flags);
//
// A field left out keeps the value in `base` (the command line's, else
// Weir's defaults). Refused with weir::Error naming the file and the field:
// a file that cannot be read (kIo), malformed JSON, an unknown field or a
// value of the wrong type (kFormat), a value out of range, and a feature
// this build does not have yet (kUnsupported).
#pragma once

#include <string>

#include "passes/training/training_strategy.h"

namespace weir {

Strategy read_strategy_file(const std::string& path, const Strategy& base = {});
// The same from text; `source` (the file's path) names it in errors.
Strategy parse_strategy_json(const std::string& json, const std::string& source, const Strategy& base = {});

}  // namespace weir
