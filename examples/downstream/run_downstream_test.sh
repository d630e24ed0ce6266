#!/usr/bin/env bash
# The installed package, end to end (CTest's Examples.DownstreamProjectAgainstInstalledWeir):
#   1. cmake --install BUILD_DIR into a fresh prefix under WORK_DIR;
#   2. configures and builds examples/downstream against it (find_package(Weir))
#      and runs it: a plugin built with Weir::plugin, a model and training with Weir::weir;
#   3. compiles the same program with pkg-config's flags alone and runs it;
#   4. runs the installed graph-runner on the model the program saved;
#   5. imports the installed Python package and runs that model from it.
#
#   run_downstream_test.sh BUILD_DIR SOURCE_DIR WORK_DIR PYTHON
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2") work=$3 python=${4:-}
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
prefix=$work/prefix

echo "== install into $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/lib/cmake/Weir/WeirConfig.cmake"
test -x "$prefix/bin/graph-runner"

echo "== downstream project with find_package(Weir)"
ccache=$(command -v ccache || true)  # empty without ccache
launcher=()
if [ -n "$ccache" ]; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$ccache"); fi
cmake -S "$source/examples/downstream" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/downstream" "$work/build/libsilu_gate.so" "$work/regression.weir"

echo "== the same program with pkg-config's flags"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046  # the flags are words
$ccache c++ -O1 "$source/examples/downstream/downstream.cc" -o "$work/downstream-pkg-config" \
  $(pkg-config --cflags --libs weir)
"$work/downstream-pkg-config" "$work/build/libsilu_gate.so"

echo "== installed graph-runner"
"$prefix/bin/graph-runner" inspect "$work/regression.weir" --dot "$work/regression.dot"
grep -q '^digraph' "$work/regression.dot"

if [ -n "$python" ]; then
  echo "== installed Python package"
  PYTHONPATH="$prefix/lib/python3/dist-packages" "$python" - "$work/regression.weir" "$prefix" <<'PY'
import sys
import numpy as np
import weir
assert weir.__file__.startswith(sys.argv[2]), weir.__file__  # the installed package, not the build tree's
session = weir.load(sys.argv[1])
x = np.array([[0.0], [1.0]], dtype=np.float32)
y = next(iter(session.run({"x": x}).values()))
# The program trained y = 3x - 1.
assert np.allclose(y[:, 0], [-1.0, 2.0], atol=0.05), y
print("python from the installed prefix:", weir.__file__, "y =", y[:, 0])
PY
fi
echo "downstream test: ok"
