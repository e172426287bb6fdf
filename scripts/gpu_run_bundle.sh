#!/usr/bin/env bash
# On a GPU machine: unpacks gpu-bundle/bundle.tar.xz (scripts/gpu_bundle.sh),
# runs every CUDA test suite in its own process (one crash cannot hide the rest),
# then the MPI collectives' test with CUDA tensors over NCCL (one rank), the GPU
# benchmarks and, when torch with CUDA is importable, the torch.func peer. Logs
# go to $OUT (or gpu-bundle/logs).
#   scripts/gpu_run_bundle.sh [all|test|dist|bench]
#   scripts/gpu_run_bundle.sh sanitize   (each CUDA suite under compute-sanitizer's
#     memcheck and racecheck; not part of all: ~3 minutes on an H200)
#   scripts/gpu_run_bundle.sh bt GTEST_FILTER   (a backtrace of a crash, by cuda-gdb)
#   scripts/gpu_run_bundle.sh dp "ARGS" ...     (DP-SGD runs on the GPU, side by side:
#     one process per quoted set of dp_sgd_distributed options; DP_SECONDS bounds each)
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-all}
runs() { [[ $phase == all || $phase == "$1" ]]; }
logs=${OUT:-gpu-bundle/logs}
mkdir -p "$logs"
dir=$(mktemp -d)
tar -C "$dir" -xJf gpu-bundle/bundle.tar.xz
# CUDA's libraries from the machine: the toolkit's or the PyTorch wheels'.
# NCCL is loaded at run time by the collectives of CUDA tensors.
cuda_libs=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13' -o -name 'libcudnn.so.9' \
  -o -name 'libcudart.so.13' -o -name 'libcublasLt.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
  xargs -r -n1 dirname | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$dir/lib:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv | tee "$logs/device.txt"
ldd "$dir/cuda_tests" | grep "not found" && exit 1

# The CUDA test suites' names, one a line: each runs in a process of its own.
list_suites() { "$dir/cuda_tests" --gtest_list_tests | grep -v '^ ' | tr -d '.'; }

if [[ $phase == bt ]]; then
  for filter in ${2//:/ }; do
    echo "== backtrace of $filter"
    timeout 120 cuda-gdb -batch -ex run -ex bt --args "$dir/cuda_tests" --gtest_filter="$filter" 2>&1 |
      grep -v "^\[New Thread\|^\[Thread\|^\[Detaching" | tail -40
  done
fi

if [[ $phase == dp ]]; then
  echo "== DP-SGD on Fashion-MNIST, CUDA ($(date +%T))"
  shift
  i=0
  for args in "$@"; do
    i=$((i + 1))
    # shellcheck disable=SC2086  # each quoted set is split into its options
    OPAL_PREFIX="$dir/ompi" PATH="$dir/ompi/bin:$PATH" timeout "${DP_SECONDS:-400}" \
      "$dir/ompi/bin/mpirun" --allow-run-as-root -np 1 "$dir/dp_sgd_distributed" \
      --device cuda --data gpu-bundle/fashion-mnist $args >"$dir/dp_$i.txt" 2>&1 &
  done
  wait
  for ((k = 1; k <= i; ++k)); do
    echo "-- run $k"
    sed "s/^/[$k] /" "$dir/dp_$k.txt" >>"$logs/dp.txt"
    grep -E "^DP-SGD|^epoch|^final|rror" "$dir/dp_$k.txt" | awk 'NR <= 2 || /final|rror/ || NR % 10 == 0'
  done
fi

if runs test; then
  echo "== CUDA tests ($(date +%T))"
  list_suites >"$dir/suites"
  run_suite() {
    timeout 200 "$1/cuda_tests" --gtest_filter="$2.*" >"$1/suite_$2.txt" 2>&1
    echo "exit $? $2" >>"$1/suite_$2.txt"
  }
  export -f run_suite
  xargs -P 6 -I{} bash -c 'run_suite "$0" {}' "$dir" <"$dir/suites"
  cat "$dir"/suite_*.txt >"$logs/tests.txt"
  grep -E '^exit' "$logs/tests.txt"
  grep -E '^exit [^0]' "$logs/tests.txt" && status=1
  grep -E '^\[  FAILED  \]|^\[  PASSED  \]' "$logs/tests.txt" | sort | uniq -c | sort -rn | head -60
  echo "skipped: $(grep -c '^\[  SKIPPED \]' "$logs/tests.txt")"
  grep -o "not on CUDA yet: .*" "$logs/tests.txt" | sed 's/not on CUDA yet: //' | sort | uniq -c |
    sort -rn >"$logs/skips.txt" || true
  head -25 "$logs/skips.txt"
fi

if [[ $phase == sanitize ]]; then
  echo "== CUDA tests under compute-sanitizer ($(date +%T))"
  # Suites that make no CUDA call (the tool reports that as an error) are left
  # out, and CudaAllocator, which runs out of memory on purpose (memcheck reports
  # the API error).
  list_suites | grep -v -x -E 'CublasLibrary|CudaAllocator|OpTable|OpFunctionalizeCheck' >"$dir/suites"
  sanitize_suite() {
    timeout 250 compute-sanitizer --tool "$2" --error-exitcode 9 --print-limit 5 \
      "$1/cuda_tests" --gtest_filter="$3.*" >"$1/$2_$3.txt" 2>&1
    echo "$2 exit $? $3"
  }
  export -f sanitize_suite
  export PATH="$PATH:/usr/local/cuda/bin"
  for tool in memcheck racecheck; do
    xargs -P 8 -I{} bash -c "sanitize_suite \"\$0\" $tool {}" "$dir" <"$dir/suites" |
      tee -a "$logs/sanitize.txt" | grep -v ' exit 0 ' && status=1
  done
  cat "$dir"/memcheck_*.txt "$dir"/racecheck_*.txt >>"$logs/sanitize.txt"
  grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY" "$dir"/*check_*.txt | sort | uniq -c
fi

if runs dist; then
  echo "== MPI collectives with CUDA tensors ($(date +%T))"
  OPAL_PREFIX="$dir/ompi" PATH="$dir/ompi/bin:$PATH" timeout 120 "$dir/ompi/bin/mpirun" \
    --allow-run-as-root -np 1 "$dir/dist_group_tests" 2>&1 | tee "$logs/dist.txt" | tail -25
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi

if runs bench; then
  echo "== GPU benchmarks ($(date +%T))"
  timeout 200 "$dir/cuda_ops" --benchmark_min_time=0.2 2>&1 | tee "$logs/bench.txt" || status=1
  echo "== torch.func peer ($(date +%T))"
  if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    PYTHONUNBUFFERED=1 timeout 150 python3 bench/peer_cuda.py 2>&1 | tee "$logs/peer.txt" || status=1
  else
    echo "torch with CUDA is not importable here: no peer numbers"
  fi
fi
exit $status
