#!/usr/bin/env bash
# Installs every Debian 12 package that Weir's build, tests and demo need.
# Idempotent: re-running it only refreshes the package lists and installs what
# is missing. Uses sudo when not run as root.
set -euo pipefail

# One list, grouped by what needs it. Later issues add their packages here.
packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # core: model format, logging
  libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev
  # ops: oneDNN for matmul/conv (its CMake config needs the OpenCL headers);
  # LLVM's OpenMP runtime, which runs oneDNN's and Weir's parallel regions at
  # less cost than libgomp (docs/threads.md)
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libomp-dev
  # frontend: ONNX import/export (protos and op schemas), the ONNX backend
  # node tests used as the conformance suite, and python3-onnx whose checker
  # the exporter's tests run on exported models
  libonnx-dev libonnx-testdata python3-onnx
  # runtime: the compiled plan format (flatc generates its reader)
  libflatbuffers-dev flatbuffers-compiler
  # frontend: gzip'ed IDX datasets and .npz files (zlib), the Fashion-MNIST data the
  # demo and the training tests use, CLI11 for graph-runner
  zlib1g-dev dataset-fashion-mnist libcli11-dev
  # distributed: Gloo's collectives over TCP between processes; the
  # parameter server's RPC (gRPC and its protoc plugin)
  libgloo-dev libgrpc++-dev protobuf-compiler-grpc
  # mpirun, a launcher graph-runner train runs under (tests/tools/multi_process_training_test.cc)
  openmpi-bin
  # the Python package weir (python/): pybind11, Debian's Python headers
  # and NumPy; pytest runs its tests
  pybind11-dev python3-dev python3-numpy python3-pytest
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the sanitizer suite and fuzzing (.ci/run): clang with its sanitizer
  # runtimes and libFuzzer
  clang libclang-rt-14-dev libfuzzer-14-dev
)

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages already installed"
fi
