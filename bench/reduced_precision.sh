#!/usr/bin/env bash
# Reduced-precision inference against f32 and ONNX Runtime f32, same files,
# same minutes: for each model, p50 latency (batch 1, 2 threads) of Weir
# f32, Weir --amp bf16, Weir int8 (when MODEL.int8.onnx exists, written by
# `graph-runner quantize`) and ONNX Runtime f32, taking turns for PAIRS
# rounds; then the top-1 agreement of bf16 (and int8) with f32 on 100
# seeded smooth images (bench/precision_agreement.cc).
#
#   NODE_PATH=/tmp/ort/node_modules bench/reduced_precision.sh [BUILD_DIR] [MODEL_DIR]
#   # defaults build/release and /tmp/weir-models, the files of bench/inference_models.sh
set -euo pipefail
build=${1:-build/release}
dir=${2:-/tmp/weir-models}
runs=${RUNS:-30}
pairs=${PAIRS:-2}
runner="$build/tools/graph-runner/graph-runner"
p50() { "$runner" bench "$@" --iterations "$runs" --warmup 5 2>/dev/null | sed -n 's/.*p50=\([0-9.]*\).*/\1/p'; }
have_ort=0
if node -e "require('onnxruntime-node')" 2>/dev/null; then have_ort=1; fi
for m in ${MODELS:-resnet50 resnet18 mobilenet_v2 bert6}; do
  f="$dir/$m.onnx"
  [ -f "$f" ] || { echo "$m: no $f (make it with bench/inference_models.sh)"; continue; }
  for ((i = 0; i < pairs; ++i)); do
    line="$m f32 $(p50 "$f") bf16 $(p50 "$f" --amp bf16)"
    [ -f "$dir/$m.int8.onnx" ] && line="$line int8 $(p50 "$dir/$m.int8.onnx")"
    if [ $have_ort = 1 ]; then
      line="$line onnxruntime_f32 $(node "$(dirname "$0")/ort/ort_bench.js" "$f" 2 "$runs" | sed -n 's/.*p50=\([0-9.]*\).*/\1/p')"
    fi
    echo "$line"
  done
done
for m in ${MODELS:-resnet50 resnet18 mobilenet_v2 bert6}; do
  f="$dir/$m.onnx"
  [ -f "$f" ] || continue
  extra=()
  [ "$m" = bert6 ] && extra=(--int-range 30522)
  "$build/bench/weir_precision_agreement" "$f" --amp bf16 --inputs 100 "${extra[@]}"
  if [ -f "$dir/$m.int8.onnx" ]; then
    "$build/bench/weir_precision_agreement" "$f" --against "$dir/$m.int8.onnx" --inputs 100 --seed 1000 "${extra[@]}"
  fi
done
