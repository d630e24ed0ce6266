#!/usr/bin/env bash
# Allreduce bus bandwidth of Weir's Gloo world (graph-runner comm-bench
# under graph-runner launch, each algorithm) against raw Gloo's ring
# allreduce, in one run, on the same sizes (docs/perf.md).
#   bench/comm_bench.sh [BUILD_DIR] [PROCESSES] [ROUNDS]
# ROUNDS alternates the runs (raw, rank-order, ring) that many times and
# prints every round, so drift on a noisy machine shows.
set -euo pipefail
build=${1:-build/ci}
processes=${2:-2}
rounds=${3:-3}
sizes=4K,64K,1M,16M,64M
gr="$build/tools/graph-runner/graph-runner"
raw="$build/bench/weir_gloo_allreduce_bench"
port=$((30000 + RANDOM % 20000))
for round in $(seq "$rounds"); do
  echo "## round $round: $processes processes, f32 allreduce"
  "$raw" "$processes" 20 4K 64K 1M 16M 64M
  for algorithm in rank-order ring; do
    port=$((port + 1))
    "$gr" launch -n "$processes" --master-port "$port" -- "$gr" comm-bench --sizes "$sizes" --iterations 20 \
      --algorithm "$algorithm" | sed -n "s/^\[rank 0\] allreduce /weir-$algorithm allreduce /p"
  done
done
