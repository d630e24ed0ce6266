#!/usr/bin/env bash
# LeNet training ms/step, data parallel on 2 processes (graph-runner launch,
# Gloo, 1 thread each) against one process using 2 threads (the whole batch
# with --threads 2, and an in-process world of 2 ranks), with one process on
# 1 thread for scale; the same batch of 64, in one run (docs/perf.md).
#   bench/data_parallel_processes.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -euo pipefail
build=${1:-build/ci}
steps=${2:-300}
rounds=${3:-3}
gr="$build/tools/graph-runner/graph-runner"
train="train --model lenet --batch 64 --steps $steps --optimizer sgd --lr 0.01"
port=$((30000 + RANDOM % 20000))
ms() { sed -n 's/^\(\[rank 0\] \)\{0,1\}ms_per_step: //p'; }
for round in $(seq "$rounds"); do
  port=$((port + 1))
  one=$("$gr" $train 2>/dev/null | ms)
  threads=$("$gr" $train --threads 2 2>/dev/null | ms)
  in_process=$("$gr" $train --data-parallel 2 2>/dev/null | ms)
  processes=$("$gr" launch -n 2 --master-port "$port" -- "$gr" $train 2>/dev/null | ms)
  echo "round $round: 1 process 1 thread $one ms | 1 process --threads 2 $threads ms |" \
       "1 process 2 in-process ranks $in_process ms | 2 processes (Gloo) $processes ms"
done
