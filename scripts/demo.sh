#!/usr/bin/env bash
# The README's demo command: on a fresh Debian 12 machine, installs what Weir
# needs, builds graph-runner, trains LeNet on Fashion-MNIST for one epoch
# (printing test_accuracy), saves the trained model, and runs it with
# graph-runner on the first 16 test images; then trains LeNet again,
# data parallel on 2 processes (graph-runner launch, Gloo), for 200 steps.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release
cmake --build --preset release --target graph-runner

runner=build/release/tools/graph-runner/graph-runner
out=build/demo
mkdir -p "$out"
"$runner" train --model lenet --epochs 1 --batch 64 --optimizer adam --lr 1e-3 \
  --save "$out/lenet.weir" --save-test-batch "$out/test"
"$runner" run "$out/lenet.weir" -i x="$out/test-images.npy" -o "$out/outputs"
echo "demo: the trained model is $out/lenet.weir; its logits for 16 test images are in $out/outputs/logits.npy" \
     "(labels: $out/test-labels.npy)"
# Two processes, each a rank of a Gloo world on 127.0.0.1 (its store on a
# free port), each training on half of every batch of 64; rank 0 prints.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$runner" launch -n 2 --master-port "$port" -- "$runner" train --model lenet --steps 200 --batch 64 \
  --optimizer adam --lr 1e-3 --checkpoint "$out/lenet-2-processes.npz"
echo "demo: 2 processes trained LeNet data parallel; rank 0 wrote $out/lenet-2-processes.npz"
