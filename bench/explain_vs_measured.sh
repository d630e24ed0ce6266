#!/usr/bin/env bash
# graph-runner explain's estimated step time against measured runs of the
# same step on 1, 2 and 4 processes (graph-runner launch, Gloo over
# loopback): ResNet-18 on 32x32 synthetic images, 16 examples per rank,
# momentum, Fleet's default buckets. The link is measured first with
# comm-bench (a 32 MiB allreduce on 2 processes: its algorithm bandwidth
# and the latency of a 4 KiB one), and explain measures one rank's compute
# here with the cores each rank gets (cores / N, at least 1), once with
# communication overlapping computation and once on the same cores
# (--shared-cores); docs/perf.md.
#   bench/explain_vs_measured.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build/ci}
steps=${2:-10}
gr="$build/tools/graph-runner/graph-runner"
cores=$(nproc)
port=$((30000 + RANDOM % 20000))
field() { sed -n "s/^\(\[rank 0\] \)\{0,1\}$1: //p"; }
bench=$("$gr" launch -n 2 --master-port "$port" -- "$gr" comm-bench --op allreduce --sizes 4K,32M --iterations 5 2>/dev/null)
algbw=$(echo "$bench" | sed -n 's/.*bytes=33554432 .*algbw_GBps=\([0-9.]*\).*/\1/p')
small_ms=$(echo "$bench" | sed -n 's/.*bytes=4096 ms=\([0-9.]*\).*/\1/p')
# A 2-rank ring allreduce of 4 KiB is 2 messages: half its time is one.
latency_us=$(awk -v ms="$small_ms" 'BEGIN { printf "%.1f", ms * 1000 / 2 }')
echo "link: allreduce 32 MiB algbw $algbw GB/s; 4 KiB in $small_ms ms -> latency $latency_us us"
for n in 1 2 4; do
  port=$((port + 1))
  per_rank=$(( cores / n )); [ "$per_rank" -ge 1 ] || per_rank=1
  train="train --model resnet18 --image-size 32 --data synthetic --batch $((16 * n)) --steps $steps --optimizer momentum --lr 0.01"
  if [ "$n" = 1 ]; then
    measured=$("$gr" $train 2>/dev/null | field ms_per_step)
  else
    measured=$("$gr" launch -n "$n" --master-port "$port" -- "$gr" $train 2>/dev/null | field ms_per_step)
  fi
  # explain's link bandwidth is the per-rank link; a ring's algorithm bandwidth
  # on 2 ranks is the link's (it sends n bytes each way).
  estimate=$("$gr" explain --model resnet18 --image-size 32 --batch 16 --world "$n" --bandwidth "$algbw" \
             --latency "$latency_us" --cores-per-rank "$per_rank" 2>/dev/null)
  shared=$("$gr" explain --model resnet18 --image-size 32 --batch 16 --world "$n" --bandwidth "$algbw" \
           --latency "$latency_us" --cores-per-rank "$per_rank" --shared-cores 2>/dev/null)
  compute=$(echo "$estimate" | field compute | sed 's/ ms per step.*//')
  echo "$n process(es), $per_rank core(s) each: measured $measured ms/step; explain $(echo "$estimate" | field estimated_step_ms), with --shared-cores $(echo "$shared" | field estimated_step_ms) (compute $compute ms)"
done
