#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite with CTest.
#   scripts/test.sh                  # in build/
#   BUILD_DIR=build-asan scripts/test.sh -DSTRATA_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
scripts/build.sh "$@"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)"
