#!/usr/bin/env bash
# Configures and builds Strata into build/ (or $BUILD_DIR). Options (-D...) go to CMake's
# configure step; any other argument names a target to build (default: everything).
#   scripts/build.sh                         # Release build: library, tests, benchmarks, examples
#   scripts/build.sh per_sample_grads_mlp    # the library and that example only
#   BUILD_DIR=build-asan scripts/build.sh -DSTRATA_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake_flags=()
targets=()
for arg in "$@"; do
  if [[ "$arg" == -* ]]; then cmake_flags+=("$arg"); else targets+=(--target "$arg"); fi
done
cmake -S . -B "$build_dir" -G Ninja "${cmake_flags[@]}"
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
