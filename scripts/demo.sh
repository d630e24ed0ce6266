#!/usr/bin/env bash
# The README's demo command: on a fresh Debian 12 machine, installs what Weir
# needs, builds graph-runner, trains LeNet on Fashion-MNIST for one epoch
# (printing test_accuracy), saves the trained model, and runs it with
# graph-runner on the first 16 test images.
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
