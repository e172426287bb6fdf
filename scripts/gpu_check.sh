#!/usr/bin/env bash
# The GPU check of issue 25, in one go on a machine with a GPU (no network used):
# configure with the CUDA backend on for this GPU's architecture, build the
# library, the CUDA tests and the GPU benchmarks, run the tests (each in its own
# process, so one crash cannot hide the rest), the benchmarks, and, when torch
# with CUDA is importable, the torch.func peer. Logs go to $OUT (or build-gpu/logs).
#   scripts/gpu_check.sh [all|build|test|bench] [build-dir]
# The phases let a session with a 10-minute limit per command build in one call
# and test and benchmark in the next (the build directory stays on the machine).
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-all}
build=${2:-build-gpu}
case $phase in all | build | test | bench) ;; *) echo "unknown phase '$phase'"; exit 2 ;; esac
runs() { [[ $phase == all || $phase == "$1" ]]; }
logs=${OUT:-$build/logs}
mkdir -p "$logs"
jobs=$(nproc 2>/dev/null || echo 8)
status=0
step() { echo; echo "== $* ($(date +%T))"; }

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv | tee "$logs/device.txt"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${arch:-90}

if runs build; then
step "configure (sm_$arch)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DSTRATA_BUILD_EXAMPLES=OFF >"$logs/configure.txt" 2>&1; then
  tail -30 "$logs/configure.txt"; echo "configure failed"; exit 1
fi
grep "Strata:" "$logs/configure.txt"

step "build (-j$jobs)"
if ! cmake --build "$build" -j "$jobs" --target strata cuda_tests cuda_ops >"$logs/build.txt" 2>&1; then
  grep -E "error|Error" "$logs/build.txt" | head -40; echo "build failed"; exit 1
fi
fi

if runs test; then
step "CUDA tests"
ctest --test-dir "$build" -R '^gpu\.' -j "$jobs" --timeout 120 --output-on-failure \
  >"$logs/tests.txt" 2>&1 || status=1
grep -E "tests passed|tests failed|Total Test time" "$logs/tests.txt"
grep -E "\*\*\*Failed|\*\*\*Exception|Timeout|SEGFAULT" "$logs/tests.txt" | head -40
echo "skipped: $(grep -c 'Skipped' "$logs/tests.txt")"
# Which ops still lack a CUDA kernel: the skip reasons of the op-table suites
# (forward, grad, vmap(grad)), counted per missing operator.
"$build/tests/cuda_tests" --gtest_filter='CudaForward.*:CudaGrad.*:CudaVmapGrad.*' 2>&1 |
  grep -o "not on CUDA yet: .*" | sed 's/not on CUDA yet: //' | sort | uniq -c |
  sort -rn >"$logs/skips.txt" || true
echo "ops without a CUDA kernel yet (tests skipped per missing op):"
head -20 "$logs/skips.txt"
fi

if runs bench; then
step "GPU benchmarks"
"$build/bench/cuda_ops" --benchmark_min_time=0.3 2>&1 | tee "$logs/bench.txt" || status=1

step "torch.func peer"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  timeout 240 python3 bench/peer_cuda.py 2>&1 | tee "$logs/peer.txt" || status=1
else
  echo "torch with CUDA is not importable here: no peer numbers"
fi
fi
exit $status
