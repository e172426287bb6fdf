#!/usr/bin/env bash
# Configures and builds Strata into build/ (or $BUILD_DIR), passing extra CMake flags.
#   scripts/build.sh                         # Release build, tests, benchmarks, examples
#   BUILD_DIR=build-asan scripts/build.sh -DSTRATA_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
