#!/usr/bin/env bash
# Model-parallel classification (PLSC) on this machine, --model arcface
# (a conv backbone on 16x16 synthetic images, a 512-d embedding, the
# ArcFace head sharded over Gloo processes started by graph-runner launch),
# batch 64, Momentum lr 0.001, in one run (docs/perf.md):
#   memory:  rank 0's head state (centres and velocity) and allocator peak
#            for 100,000 classes on 1, 2 and 4 processes;
#   budget:  the largest C (to 1,000 classes) whose step fits --memory-budget
#            BUDGET (the planner's estimate of parameters, optimizer state
#            and the step's memory, per rank) on 1 process and on 2, and
#            the measured peak at that C;
#   million: 1,000,000 classes on 2 processes, STEPS steps with the whole
#            head and with PartialFC (--sample-ratio 0.1): losses and steps/s.
#   bench/plsc.sh [BUILD_DIR] [memory|budget|million|all] [BUDGET] [STEPS]
set -euo pipefail
build=${1:-build/ci}
part=${2:-all}
budget=${3:-1G}
steps=${4:-60}
gr="$build/tools/graph-runner/graph-runner"
train="train --model arcface --data synthetic --image-size 16 --batch 64 --optimizer momentum --lr 0.001"
port=$((30000 + RANDOM % 20000))
field() { sed -n "s/^\(\[rank 0\] \)\{0,1\}$1: //p"; }
# run N ARGS...: graph-runner train on N processes (1: no launcher).
run() {
  local n=$1
  shift
  port=$((port + 1))
  if [ "$n" = 1 ]; then "$gr" $train "$@" 2>&1; else "$gr" launch -n "$n" --master-port "$port" -- "$gr" $train --collective-timeout 600 "$@" 2>&1; fi
}

if [ "$part" = memory ] || [ "$part" = all ]; then
  printf "%-9s %18s %18s\n" processes head_state_bytes peak_memory_bytes
  for n in 1 2 4; do
    out=$(run "$n" --classes 100000 --steps 2 --synthetic-examples 128)
    printf "%-9s %18s %18s\n" "$n" "$(echo "$out" | field head_state_bytes)" "$(echo "$out" | field peak_memory_bytes)"
  done
fi

if [ "$part" = budget ] || [ "$part" = all ]; then
  printf "%-9s %10s %14s %18s\n" processes budget largest_classes peak_memory_bytes
  for n in 1 2; do
    lo=0 hi=4000  # thousands of classes
    while [ $((hi - lo)) -gt 1 ]; do
      mid=$(((lo + hi) / 2))
      if run "$n" --classes $((mid * 1000)) --steps 1 --synthetic-examples 64 --memory-budget "$budget" > /dev/null; then lo=$mid; else hi=$mid; fi
    done
    peak=$(run "$n" --classes $((lo * 1000)) --steps 2 --synthetic-examples 128 --memory-budget "$budget" | field peak_memory_bytes)
    printf "%-9s %10s %14s %18s\n" "$n" "$budget" $((lo * 1000)) "$peak"
  done
fi

if [ "$part" = million ] || [ "$part" = all ]; then
  for ratio in 1 0.1; do
    out=$(run 2 --classes 1000000 --steps "$steps" --synthetic-examples 640 --sample-ratio "$ratio" --print-losses)
    echo "$out" | field "margin head"
    losses=$(echo "$out" | sed -n 's/^\[rank 0\] step \([0-9]*\) loss: //p' | awk 'NR == 1 || NR % 10 == 0 { printf "%.2f ", $1 }')
    ms=$(echo "$out" | field ms_per_step)
    printf "sample_ratio %s: steps/s %.3f (ms_per_step %s), peak_memory_bytes %s, losses at steps 1, 10, 20, ...: %s\n" \
      "$ratio" "$(awk -v ms="$ms" 'BEGIN { print 1000 / ms }')" "$ms" "$(echo "$out" | field peak_memory_bytes)" "$losses"
  done
fi
