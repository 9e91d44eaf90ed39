#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every CTest suite except the
# long ones (labels slow/regress), the clang fuzzing runs (label fuzz) and the array sizes only
# an NCORE_ALL_SIZES build has (label sizes); scripts/regress runs those.
# Usage: bash scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 1500 \
  -LE 'slow|regress|fuzz|sizes' "$@"
