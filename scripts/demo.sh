#!/usr/bin/env bash
# The README's demo command: on a fresh Debian 12 machine, installs what Weir
# needs, builds it and runs the demo. Until training lands (issue: frontend
# and end-to-end training), the demo builds the tests' smoke model: an MLP
# graph that is verified, saved as .weir and .weirtxt, loaded back and run.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release
cmake --build --preset release --target smoke_model
./build/release/examples/smoke_model build/demo
