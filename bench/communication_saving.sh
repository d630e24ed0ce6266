#!/usr/bin/env bash
# The public-cloud case on one machine: LeNet on Fashion-MNIST, 2 processes
# (graph-runner launch, Gloo), Momentum 0.9, batch 64, one epoch (937
# steps), every collective slowed to a simulated link (--simulate-link) of
# 1 and 10 Gbit/s with 50 us per message: dense data parallelism, deep
# gradient compression (the paper's ramp [0.75, 0.9375, 0.984375, 0.996,
# 0.999] over the first 20% of the steps), LocalSGD k=4 and adaptive
# LocalSGD (init_k_steps 4), in one run (docs/perf.md). Prints per run:
# the epoch's training time (ms_per_step x steps, the loop with its data),
# test accuracy, rank 0's bytes sent per step (mean, and the last step's)
# and the steps that communicated at all.
#   bench/communication_saving.sh [BUILD_DIR] [EPOCHS]
set -euo pipefail
build=${1:-build/ci}
epochs=${2:-1}
gr="$build/tools/graph-runner/graph-runner"
train="train --model lenet --epochs $epochs --batch 64 --optimizer momentum --lr 0.02 --print-losses"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ramp=$((937 * epochs / 5))
echo '{}' > "$dir/dense.json"
echo "{\"dgc\": true, \"dgc_configs\": {\"rampup_begin_step\": 0, \"rampup_step\": $ramp, \"sparsity\": [0.75, 0.9375, 0.984375, 0.996, 0.999]}}" > "$dir/dgc.json"
echo '{"localsgd": true, "localsgd_configs": {"k_steps": 4, "begin_step": 1}}' > "$dir/localsgd.json"
echo '{"adaptive_localsgd": true, "adaptive_localsgd_configs": {"init_k_steps": 4, "begin_step": 1}}' > "$dir/adaptive.json"
port=$((30000 + RANDOM % 20000))
field() { sed -n "s/^\(\[rank 0\] \)\{0,1\}$1: //p"; }
printf "%-10s %-8s %10s %9s %14s %14s %12s\n" link strategy epoch_s accuracy bytes/step last_step_bytes comm_steps
for link in 1,50 10,50; do
  for strategy in dense dgc localsgd adaptive; do
    port=$((port + 1))
    out=$("$gr" launch -n 2 --master-port "$port" -- "$gr" $train --strategy "$dir/$strategy.json" \
          --simulate-link "$link" 2>/dev/null)
    steps=$(echo "$out" | field steps)
    ms=$(echo "$out" | field ms_per_step)
    comm=$(echo "$out" | sed -n 's/^\[rank 0\] step [0-9]* bytes_sent: //p' | awk '$1 > 0' | wc -l)
    printf "%-10s %-8s %10.1f %9s %14s %14s %12s\n" "${link%%,*} Gbit/s" "$strategy" \
      "$(awk -v ms="$ms" -v n="$steps" 'BEGIN { print ms * n / 1000 }')" "$(echo "$out" | field test_accuracy)" \
      "$(echo "$out" | field bytes_sent_per_step)" "$(echo "$out" | field bytes_sent_last_step)" "$comm/$steps"
  done
done
