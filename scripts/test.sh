#!/usr/bin/env bash
# The README's test command: on a fresh Debian 12 machine, installs what Weir
# needs, builds it as CI does (release, warnings as errors, ccache when
# present) and runs the whole test suite under CTest. .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset ci
cmake --build --preset ci
ctest --preset ci
