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
//
// Row shards. A value held in row shards over the ranks of a world (a
// model-parallel head's class centres and their optimizer state) is saved
// whole, as a one-rank run holds it, so the checkpoint resumes on any world
// size: the caller gathers it and passes it as `whole`. Loading with
// `shards` gives each such value this rank's rows of the whole one.
//
//   weir::save_checkpoint("ckpt.npz", session, 500, {{"head/weight", gathered}});   // gathered: [C, D]
//   weir::load_checkpoint("ckpt.npz", session, {{"head/weight", {.rows = C, .start = 51, .count = 50}}});
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "runtime/session.h"

namespace weir {

// This rank's part of a row-sharded value: rows [start, start + count) of
// the whole value's `rows`, in its tensor's first `count` rows. Any rows
// past them are padding of its own (a shard padded to every rank's width),
// which loading leaves as they are.
struct RowShard {
  int64_t rows = 0;
  int64_t start = 0;
  int64_t count = 0;
};
using RowShards = std::map<std::string, RowShard>;  // by value name

// The row-sharded value `name` whole, on rank 0: rank r holds rows
// `parts[r]` in the first rows of its tensor (every rank's padded to one
// height). In an in-process world (`comm` nullptr) rank r's tensor is
// `in_process(r)`; in a world of processes rank 0 receives the others' over
// `comm` while they send `own` and get an empty tensor. Throws
// kInvalidArgument naming the rank whose part does not fit.
Tensor gather_row_shard(const std::string& name, const std::vector<RowShard>& parts, const Tensor& own,
                        Communicator* comm, const std::function<Tensor(int rank)>& in_process);

// `whole`: values written instead of the session's own (row-sharded values, gathered).
void save_checkpoint(const std::filesystem::path& path, const Session& session, int64_t step,
                     const std::map<std::string, Tensor>& whole = {});
// Restores the session's persistent values and RNG state; returns the step.
// The values named in `shards` are whole in the checkpoint; this rank's rows are taken.
int64_t load_checkpoint(const std::filesystem::path& path, Session& session, const RowShards& shards = {});

}  // namespace weir
