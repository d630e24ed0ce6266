#!/usr/bin/env bash
# Inference latency of the zoo's ImageNet-shaped models and a 6-layer
# BERT-style encoder (batch 1, f32), as `graph-runner bench` measures it, at
# each step of the pass pipeline; and ONNX Runtime on the same .onnx files
# when onnxruntime-node is installed (see bench/ort/ort_bench.js).
#
#   bench/inference_models.sh [BUILD_DIR] [OUT_DIR]     # default build/release, /tmp/weir-models
#
# Prints one line per model and configuration: "model config p50_ms".
set -euo pipefail
build=${1:-build/release}
out=${2:-/tmp/weir-models}
runs=${RUNS:-30}
mkdir -p "$out"
export_model() {
  local name=$1 file=$2; shift 2
  [ -f "$out/$file" ] || "$build/bench/weir_zoo_export" "$name" "$out/$file" --batch 1 "$@"
}
for m in resnet50 resnet18 mobilenet_v2 squeezenet; do
  export_model "$m" "$m.onnx" --channels 3 --image-size 224 --classes 1000
done
export_model bert bert6.onnx --layers 6 --hidden 768 --heads 12 --seq 128 --vocab 30522 --classes 2

p50() { "$build/tools/graph-runner/graph-runner" bench "$@" --iterations "$runs" --warmup 5 2>/dev/null | sed -n 's/.*p50=\([0-9.]*\).*/\1/p'; }
for m in resnet50 resnet18 mobilenet_v2 squeezenet bert6; do
  f="$out/$m.onnx"
  echo "$m opt0 $(p50 "$f" --opt-level 0)"
  echo "$m opt2 $(p50 "$f" --opt-level 2)"
  echo "$m opt3-without-layout-and-conv-fusions $(p50 "$f" --opt-level 3 --disable-pass channels_last_layout --disable-pass conv_residual_fusion --disable-pass conv_activation_fusion)"
  echo "$m opt3-without-layout $(p50 "$f" --opt-level 3 --disable-pass channels_last_layout)"
  echo "$m opt3-without-matmul-and-attention-fusion $(p50 "$f" --opt-level 3 --disable-pass matmul_fusion --disable-pass attention_fusion)"
  echo "$m opt3 $(p50 "$f" --opt-level 3)"
  if node -e "require('onnxruntime-node')" 2>/dev/null; then
    echo "$m onnxruntime $(node "$(dirname "$0")/ort/ort_bench.js" "$f" 2 "$runs" | sed -n 's/.*p50=\([0-9.]*\).*/\1/p')"
  fi
done
