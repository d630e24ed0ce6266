#!/usr/bin/env bash
# The README's test command: on a fresh Debian 12 machine, installs what Weir
# needs, then runs three suites (docs/reliability.md):
#   1. release build as CI builds it (warnings as errors), the whole suite;
#   2. ThreadSanitizer build (gcc), the runtime, data-loader and checkpoint
#      tests on one core, so OpenMP regions run single-threaded (libgomp and
#      oneDNN are not instrumented);
#   3. clang ASan+UBSan build with libFuzzer coverage: every fuzz target for
#      WEIR_FUZZ_SECONDS (60) seconds, then the whole suite but LeNet's
#      one-epoch accuracy run.
# ccache serves all three trees; .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
# Paths under the checkout are hashed relative to it, so a clone elsewhere
# (CI's fresh clones) reuses what an earlier build put in the cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

echo "== release (ci preset)"
cmake --preset ci
cmake --build --preset ci
ctest --preset ci

echo "== ThreadSanitizer (tsan preset): runtime, data loader, checkpoints, parameter-server tables"
cmake --preset tsan
cmake --build --preset tsan --target weir_runtime_tests weir_frontend_tests weir_ps_tests
# On one core (taskset), every OpenMP region, Weir's and oneDNN's, runs on
# the calling thread, while Weir's own threads (inter-op, streams,
# communicators, loader workers) still interleave. Nothing is suppressed:
# tsan.supp is for runs on several cores (docs/reliability.md).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
WEIR_TEST_TMPDIR=build/tsan/tmp taskset -c 0 build/tsan/tests/runtime/weir_runtime_tests
WEIR_TEST_TMPDIR=build/tsan/tmp taskset -c 0 build/tsan/tests/frontend/weir_frontend_tests \
  --gtest_filter='DataLoader*:Checkpoints*'
# The tables' shard locks and the synchronous rounds' barrier, without
# gRPC: Debian's gRPC and Abseil are not built for ThreadSanitizer, whose
# reports inside them say nothing about Weir.
WEIR_TEST_TMPDIR=build/tsan/tmp build/tsan/tests/distributed/weir_ps_tests \
  --gtest_filter='SparseTable*:DenseTable*:SyncRounds*'
unset TSAN_OPTIONS

echo "== AddressSanitizer + UndefinedBehaviorSanitizer (sanitize preset): fuzzing, then the suite"
cmake --preset sanitize
cmake --build --preset sanitize
./fuzz/run.sh build/sanitize "${WEIR_FUZZ_SECONDS:-60}"
# LeNet's one-epoch accuracy run takes over 10 minutes under ASan on two
# cores; the zoo training tests run LeNet's step under ASan already.
ctest --preset sanitize -E '^FashionMnistTraining\.Lenet'
