#!/usr/bin/env bash
# Builds and runs the DLPack cross-check against PyTorch 1.13's libtorch
# (tests/tensor/dlpack_torch_test.cpp; needs `scripts/install-deps.sh --peers`).
#   scripts/dlpack_torch_check.sh [build-dir]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake -S . -B "$build" -G Ninja -DSTRATA_TORCH_DLPACK_CHECK=ON >/dev/null
ninja -C "$build" dlpack_torch_tests
"$build/tests/dlpack_torch_tests"
