#!/usr/bin/env bash
# The CUDA backend's first figures (docs/perf.md): the zoo's MLP (784 ->
# 2048 -> 2048 -> 10, trained 2 steps and saved) run by graph-runner bench
# on the CPU and on cuda:0 at batch 1 and 256, opt-level 2 (level 3 fuses
# into ops that have no CUDA kernel yet), and the largest relative
# difference between the two devices' logits. Needs a GPU and python3 with
# NumPy (for the inputs).
#   bench/cuda_mlp.sh [GRAPH_RUNNER]
set -euo pipefail
gr=${1:-build/ci/tools/graph-runner/graph-runner}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gr" train --model mlp --steps 2 --data synthetic --mlp-width 2048 --mlp-layers 2 --save "$work/mlp.weir" >/dev/null 2>&1
python3 -c "
import numpy as np
for b in (1, 256): np.save('$work/x%d.npy' % b, np.random.RandomState(b).rand(b, 1, 28, 28).astype(np.float32))"
for batch in 1 256; do
  for device in cpu cuda:0; do
    out="$work/out-$batch-${device%:0}"
    mkdir -p "$out"
    "$gr" run "$work/mlp.weir" --opt-level 2 --device "$device" -i x="$work/x$batch.npy" -o "$out" >/dev/null
    printf "batch %-4s %-7s " "$batch" "$device"
    "$gr" bench "$work/mlp.weir" --opt-level 2 --device "$device" -i x="$work/x$batch.npy" --warmup 10 \
      --iterations 200 2>/dev/null | grep latency_ms
  done
  python3 -c "
import numpy as np
a = np.load('$work/out-$batch-cpu/logits.npy'); c = np.load('$work/out-$batch-cuda/logits.npy')
print('batch $batch logits: cuda vs cpu max relative difference %.2e' % (np.abs(a - c).max() / np.abs(a).max()))"
done
