#!/usr/bin/env bash
# Speed of two revisions measured in one run, so that a change to the
# runtime can show it costs nothing: the zoo's five inference models (batch
# 1, f32, opt level 3, `graph-runner bench` p50) and LeNet's training step
# (`graph-runner train --data synthetic`, ms/step). The two revisions run
# alternately, ROUNDS times each, and the medians are printed.
#
#   bench/compare_revisions.sh BASE [HEAD]      # e.g. bench/compare_revisions.sh HEAD~3
#
# BASE (and HEAD, default: the working tree) are built with the `ci` preset
# in git worktrees under build/revisions/ (ccache'd); only graph-runner and
# weir_zoo_export are built. Models are exported once, by HEAD, to
# build/revisions/models. Prints one line per figure:
#   "figure base head change%"
# Run on an otherwise idle machine: timings are only comparable then.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BASE [HEAD]" >&2
  exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
rounds=${ROUNDS:-3}
runs=${RUNS:-20}
work=$root/build/revisions
mkdir -p "$work"

# Builds revision $1 and prints its build directory.
build_revision() {
  local revision=$1
  local source
  if [ "$revision" = "WORKTREE" ]; then
    source=$root
  else
    local sha
    sha=$(git rev-parse --short=12 "$revision^{commit}")
    source=$work/$sha
    if [ ! -d "$source" ]; then git worktree add --detach "$source" "$sha" >&2; fi
  fi
  (
    cd "$source"
    export CCACHE_BASEDIR=$source CCACHE_NOHASHDIR=1
    [ -f build/ci/CMakeCache.txt ] || cmake --preset ci >&2
    cmake --build build/ci --target graph-runner weir_zoo_export >&2
  )
  echo "$source/build/ci"
}

base_build=$(build_revision "$1")
head_build=$(build_revision "${2:-WORKTREE}")

models=$work/models
mkdir -p "$models"
export_model() {
  local name=$1 file=$2
  shift 2
  [ -f "$models/$file" ] || "$head_build/bench/weir_zoo_export" "$name" "$models/$file" --batch 1 "$@" >&2
}
for m in resnet50 resnet18 mobilenet_v2 squeezenet; do
  export_model "$m" "$m.onnx" --channels 3 --image-size 224 --classes 1000
done
export_model bert bert6.onnx --layers 6 --hidden 768 --heads 12 --seq 128 --vocab 30522 --classes 2

p50() {
  "$1/tools/graph-runner/graph-runner" bench "$2" --opt-level 3 --iterations "$runs" --warmup 5 2>/dev/null |
    sed -n 's/.*p50=\([0-9.]*\).*/\1/p'
}
lenet_ms() {
  "$1/tools/graph-runner/graph-runner" train --model lenet --data synthetic --steps 30 --batch 64 2>/dev/null |
    sed -n 's/^ms_per_step: //p'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A samples=()
figures=(resnet50 resnet18 mobilenet_v2 squeezenet bert6 lenet_train_step)
for ((round = 1; round <= rounds; round++)); do
  for side in base head; do
    build=$base_build
    [ "$side" = head ] && build=$head_build
    for m in resnet50 resnet18 mobilenet_v2 squeezenet bert6; do
      samples[$m.$side]+="$(p50 "$build" "$models/$m.onnx") "
    done
    samples[lenet_train_step.$side]+="$(lenet_ms "$build") "
  done
done

echo "figure base_ms head_ms change%  (median of $rounds rounds; base $1, head ${2:-working tree})"
for f in "${figures[@]}"; do
  b=$(tr ' ' '\n' <<<"${samples[$f.base]}" | grep . | median)
  h=$(tr ' ' '\n' <<<"${samples[$f.head]}" | grep . | median)
  awk -v f="$f" -v b="$b" -v h="$h" 'BEGIN { printf "%s %.3f %.3f %+.1f\n", f, b, h, 100 * (h - b) / b }'
done
