#!/usr/bin/env bash
# Parameter-server training of --model ctr on this machine, in one run
# (docs/perf.md): the synthetic click log with 8 x 125,000 = 10^6 feature
# ids (200,000 training examples, 50,000 held out), Adagrad lr 0.05, batch
# 256 per worker, STEPS steps per worker, 2 parameter servers (graph-runner
# launch --servers 2 --workers W), each mode with 1 and 2 workers:
#   local        one process, the tables as [10^6, w] parameters (the baseline)
#   sync         every step's gradients applied before the next step's pulls
#   async        the communicator merges up to 20 pushes per table (--max-merge 20)
#   async-nomerge  the same, one push per message (--max-merge 1)
#   half-async   async with a barrier every 20 pushes
#   geo          Geo-SGD, deltas every 10 steps
#   async-t2, geo-t2  the same with 2 Hogwild trainer threads in each worker
#                (--trainer-threads 2; STEPS counts the worker's steps)
# Prints per run: the workers' examples per second (summed), ms per step
# (worker 0), bytes pushed per step (worker 0: ids and gradients sent to
# the servers), and worker 0's test AUC beside the true model's.
#   bench/ps_training.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build/ci}
steps=${2:-400}
gr="$build/tools/graph-runner/graph-runner"
common="train --model ctr --optimizer adagrad --lr 0.05 --steps $steps --synthetic-examples 200000 --collective-timeout 600"
field() { sed -n "s/^\(\[rank $2\] \)\{0,1\}$1: //p"; }

printf "%-14s %7s %12s %11s %12s %9s %9s\n" mode workers examples/s ms/step bytes/step test_auc best_auc
run() {
  local mode=$1 workers=$2 out
  shift 2
  if [ "$mode" = local ]; then
    out=$("$gr" $common --batch 256 2>&1)
  else
    out=$("$gr" launch --servers 2 --workers "$workers" -- "$gr" $common --batch $((256 * workers)) "$@" 2>&1)
  fi
  local rate=0
  for ((w = 0; w < workers; w++)); do
    rate=$(awk -v a="$rate" -v b="$(echo "$out" | field examples_per_second "$w")" 'BEGIN { print a + b }')
  done
  printf "%-14s %7s %12.0f %11s %12s %9s %9s\n" "$mode" "$workers" "$rate" "$(echo "$out" | field ms_per_step 0)" \
    "$(echo "$out" | field bytes_pushed_per_step 0)" "$(echo "$out" | field test_auc 0)" "$(echo "$out" | field best_auc 0)"
}
run local 1
for workers in 1 2; do
  run sync "$workers" --ps sync
  run async "$workers" --ps async
  run async-nomerge "$workers" --ps async --max-merge 1
  run half-async "$workers" --ps half-async
  run geo "$workers" --ps geo --geo-k 10
  run async-t2 "$workers" --ps async --trainer-threads 2
  run geo-t2 "$workers" --ps geo --geo-k 10 --trainer-threads 2
done
