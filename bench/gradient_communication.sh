#!/usr/bin/env bash
# ResNet-18 on 32x32 synthetic images, data parallel on 2 processes
# (graph-runner launch, Gloo, 1 thread each): ms/step with one AllReduce per
# gradient, with buckets (Fleet's defaults: 32 MiB, the first 1 MiB) that
# wait for the whole backward pass (no overlap), with buckets that start as
# soon as their gradients exist (overlap, the default), with buckets on 2
# communication streams, and with f16 and bf16 communication, and one
# process on the whole batch for scale; in one run (docs/perf.md). Each 2-
# process run also reports the fraction of its communication time that ran
# beside computation, read from rank 0's trace (train --profile).
#   bench/gradient_communication.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -euo pipefail
build=${1:-build/ci}
steps=${2:-10}
rounds=${3:-2}
gr="$build/tools/graph-runner/graph-runner"
train="train --model resnet18 --image-size 32 --data synthetic --batch 32 --steps $steps --optimizer momentum --lr 0.01"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo '{"fuse_all_reduce_ops": false}' > "$dir/separate.json"
echo '{"overlap_communication": false}' > "$dir/no-overlap.json"
echo '{}' > "$dir/buckets.json"
echo '{"comm_streams": 2}' > "$dir/streams.json"
echo '{"fp16_allreduce": true}' > "$dir/f16.json"
echo '{"allreduce_dtype": "bf16"}' > "$dir/bf16.json"
port=$((30000 + RANDOM % 20000))
field() { sed -n "s/^\(\[rank 0\] \)\{0,1\}$1: //p"; }
for round in $(seq "$rounds"); do
  line="round $round: 1 process $("$gr" $train 2>/dev/null | field ms_per_step) ms"
  for strategy in separate no-overlap buckets streams f16 bf16; do
    port=$((port + 1))
    out=$("$gr" launch -n 2 --master-port "$port" -- "$gr" $train --strategy "$dir/$strategy.json" \
          --profile "$dir/trace.json" 2>/dev/null)
    line="$line | $strategy $(echo "$out" | field ms_per_step) ms ($(echo "$out" | field bytes_communicated_per_step) B, overlap $(echo "$out" | field communication_overlap))"
  done
  echo "$line"
done
