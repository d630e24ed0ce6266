#!/usr/bin/env bash
# Packs what the CUDA checks need on a GPU machine that has CUDA but none of
# Debian's libraries (the lent H100/H200 machines: docs/developing.md, CUDA):
# graph-runner, the CUDA tests, weir_zoo_export and every shared library
# they load that a stock Linux with CUDA lacks, as one .tar.xz (oneDNN alone
# is 40 MB; compressed, the bundle is about a quarter of its size).
#   scripts/cuda_bundle.sh [BUILD_DIR] [OUT_DIR]     (defaults: build/ci, .cuda-bundle)
# bench/cuda_issue29.sh unpacks and runs it there.
set -euo pipefail
build=${1:-build/ci}
out=${2:-.cuda-bundle}
binaries=("$build/tools/graph-runner/graph-runner" "$build/tests/cuda/weir_cuda_tests" "$build/bench/weir_zoo_export")
for binary in "${binaries[@]}"; do
  [[ -x $binary ]] || { echo "cuda_bundle: $binary is missing: build it first (cmake --build $build)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/weir/bin" "$stage/weir/lib" "$out"
cp "${binaries[@]}" "$stage/weir/bin/"
# Everything ldd resolves, except what every glibc system has. The CUDA
# runtime goes too (under 1 MB), so a machine with the driver alone starts:
# cuBLASLt, cuDNN and NCCL are opened from the machine's CUDA or its wheels.
ldd "${binaries[@]}" | awk '/=> \//{print $3}' | sort -u | while read -r library; do
  case "$(basename "$library")" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$library" "$stage/weir/lib/" ;;
  esac
done
tar -C "$stage" -cf - weir | xz -T2 -6 > "$out/weir-cuda-bundle.tar.xz"
echo "$out/weir-cuda-bundle.tar.xz: $(du -h "$out/weir-cuda-bundle.tar.xz" | cut -f1) ($(ls "$stage/weir/lib" | wc -l) libraries)"
