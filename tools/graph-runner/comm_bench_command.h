// `graph-runner comm-bench [--op allreduce|allgather|reduce_scatter|broadcast]
// [--sizes 4K,1M,16M,64M] [--dtype f32|bf16|f16] [--iterations N]
// [--algorithm rank-order|ring|bcube]`, run under a launcher (graph-runner
// launch -n N): times one collective of the world's communicator on each
// size, and rank 0 prints one line per size,
//   allreduce bytes=B ms=T algbw_GBps=A busbw_GBps=U
// with the bandwidths as nccl-tests defines them (algbw = bytes / time;
// busbw = algbw x 2(N-1)/N for allreduce, x (N-1)/N for allgather and
// reduce_scatter, x 1 for broadcast; bytes is the whole buffer: the
// output for allgather, the input for reduce_scatter).
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_comm_bench_command(CLI::App& app);

}  // namespace weir::tools
