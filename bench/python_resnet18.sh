#!/usr/bin/env bash
# ResNet-18 from .onnx (batch 1, f32, opt-level 3) run from Python (weir.load + Session.run) against
# `graph-runner run` / `graph-runner bench` on the same file and input: the outputs must be equal and
# the latencies comparable. Rounds alternate between the two so that drift hits both.
#
#   bench/python_resnet18.sh [BUILD_DIR] [OUT_DIR]     # default build/ci, /tmp/weir-python-bench
#
# Prints each round's p50 for both, the median of the rounds and their ratio, and the largest
# difference between the outputs.
set -euo pipefail
build=$(realpath "${1:-build/ci}")
out=${2:-/tmp/weir-python-bench}
rounds=${ROUNDS:-5}
iterations=${ITERATIONS:-50}
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
model=$out/resnet18.onnx
[ -f "$model" ] || "$build/bench/weir_zoo_export" resnet18 "$model" --batch 1 --channels 3 --image-size 224 --classes 1000
export PYTHONPATH="$build/python"
input_name=$("$python" -c "import weir, sys; print(weir.load(sys.argv[1], opt_level=0).input_names[0])" "$model")
"$python" -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32))" "$out/input.npy"

"$build/tools/graph-runner/graph-runner" run "$model" -i "$input_name=$out/input.npy" -o "$out/graph-runner-out" > /dev/null
gr=() py=()
for r in $(seq "$rounds"); do
  g=$("$build/tools/graph-runner/graph-runner" bench "$model" -i "$input_name=$out/input.npy" \
        --iterations "$iterations" --warmup 5 2>/dev/null | sed -n 's/.*p50=\([0-9.]*\).*/\1/p')
  p=$("$python" "$here/python_session_bench.py" "$model" "$out/input.npy" "$out/python-out.npy" "$iterations" 5 \
        | sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p')
  echo "round $r graph-runner_p50_ms=$g python_p50_ms=$p"
  gr+=("$g") py+=("$p")
done
"$python" - "$out" "${gr[*]}" "${py[*]}" <<'PY'
import glob, sys
import numpy as np
out, gr, py = sys.argv[1], [float(v) for v in sys.argv[2].split()], [float(v) for v in sys.argv[3].split()]
expected = np.load(glob.glob(f"{out}/graph-runner-out/*.npy")[0])
got = np.load(f"{out}/python-out.npy")
print(f"resnet18 graph-runner median_p50_ms={np.median(gr):.3f} python median_p50_ms={np.median(py):.3f} "
      f"python/graph-runner={np.median(py) / np.median(gr):.3f}")
print(f"outputs max_abs_diff={np.max(np.abs(expected - got)):.3g} (shape {got.shape})")
PY
