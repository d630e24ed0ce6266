#!/usr/bin/env bash
# Runs Weir's libFuzzer targets (a 'sanitize' build: clang, ASan+UBSan,
# coverage) for SECONDS each, two at a time, and fails if any finds a crash,
# a sanitizer report, an exception other than weir::Error, a hang (10 s per
# input) or an allocation over 512 MB (the targets lower Weir's own caps to
# 64 MB per tensor, so a loader that allocates before checking is caught).
#
#   fuzz/run.sh build/sanitize 60                 # every target, 60 s each (CI)
#   fuzz/run.sh build/sanitize 1800 plan_load     # one target, 30 minutes
#
# Seeds: weir_fuzz_seeds (models, plans, arrays, a checkpoint and table files
# written by Weir itself) and, for ONNX, the models of the four libonnx-testdata suites.
# Each target's corpus grows under BUILD/fuzz-work/corpus/TARGET across runs;
# findings land in BUILD/fuzz-work/findings. Prints one line per target.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2
if [ $# -gt 0 ]; then targets=("$@"); else targets=(onnx_import model_load plan_load npy checkpoint strategy ps_table); fi

work=$build/fuzz-work
rm -rf "$work/seeds" "$work/logs"
mkdir -p "$work/findings" "$work/logs"
"$build/fuzz/weir_fuzz_seeds" "$work/seeds" >/dev/null
testdata=/usr/share/libonnx-testdata/data
if [ -d "$testdata" ]; then
  n=0
  while IFS= read -r model; do
    n=$((n + 1))
    cp "$model" "$work/seeds/onnx_import/testdata_$n.onnx"
  done < <(find "$testdata/node" "$testdata/pytorch-converted" "$testdata/pytorch-operator" "$testdata/simple" \
             -name model.onnx -size -64k | sort)
fi

run_one() {
  local target=$1
  mkdir -p "$work/corpus/$target"
  # -rss_limit_mb bounds the whole process; -malloc_limit_mb one allocation.
  "$build/fuzz/weir_fuzz_$target" "$work/corpus/$target" "$work/seeds/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 -artifact_prefix="$work/findings/$target-" >"$work/logs/$target.log" 2>&1
}

declare -A status=()
running=()
for target in "${targets[@]}"; do
  if [ ! -x "$build/fuzz/weir_fuzz_$target" ]; then
    echo "fuzz: no target weir_fuzz_$target in $build/fuzz" >&2
    exit 2
  fi
  run_one "$target" &
  running+=("$!:$target")
  if [ "${#running[@]}" -ge 2 ]; then
    entry=${running[0]}
    running=("${running[@]:1}")
    if wait "${entry%%:*}"; then status[${entry#*:}]=0; else status[${entry#*:}]=$?; fi
  fi
done
for entry in "${running[@]}"; do
  if wait "${entry%%:*}"; then status[${entry#*:}]=0; else status[${entry#*:}]=$?; fi
done

failed=0
for target in "${targets[@]}"; do
  log=$work/logs/$target.log
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  corpus=$(find "$work/corpus/$target" -type f | wc -l)
  if [ "${status[$target]}" -eq 0 ]; then
    echo "fuzz $target: ${seconds}s, $runs inputs, coverage $cov edges, corpus $corpus, no finding"
  else
    failed=1
    echo "fuzz $target: FINDING (exit ${status[$target]}) after $runs inputs; log $log:"
    grep -E 'ERROR|SUMMARY|Test unit written|terminate|what\(\)' "$log" | head -20
  fi
done
exit $failed
