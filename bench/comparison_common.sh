# Sourced by the bench/run_*_comparison.sh scripts.
#
# Single-threaded runs, Strata's and the peer's alike, go to one CPU (BENCH_CPU,
# default the last). On a 2-vCPU VM one CPU also takes the host's interrupts: the
# same single-threaded benchmark ran up to 2x slower there, and which CPU a
# process lands on was chance, so unpinned ratios compared different machines.

# The CPU count comes from getconf: nproc answers OMP_NUM_THREADS, which the peer's
# single-threaded run sets to 1.
pin_one_cpu() {
  local cpus
  cpus=$(getconf _NPROCESSORS_ONLN)
  if command -v taskset > /dev/null && [ "$cpus" -ge 2 ]; then
    taskset -c "${BENCH_CPU:-$((cpus - 1))}" "$@"
  else
    "$@"
  fi
}

# run_strata BINARY MULTI_THREAD_REGEX OUT_JSON: the benchmarks matching the regex
# (those run with several threads) unpinned, the others on one CPU; one JSON report.
run_strata() {
  local binary=$1 multi=$2 out=$3
  local args=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true
    --benchmark_format=json)
  pin_one_cpu "$binary" "${args[@]}" "--benchmark_filter=-$multi" > "$out.one" 2> /dev/null
  "$binary" "${args[@]}" "--benchmark_filter=$multi" > "$out.multi" 2> /dev/null
  /usr/bin/python3 - "$out.one" "$out.multi" "$out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["benchmarks"] += json.load(open(sys.argv[2]))["benchmarks"]
json.dump(report, open(sys.argv[3], "w"))
PY
}

# run_peer SCRIPT PEER_DIR THREADS: the peer's run.sh (it picks the Python with torch
# and libtorch's BLAS), one process per thread count as the peer scripts do.
run_peer() {
  local script=$1 peer_dir=$2 threads=$3 pin=()
  if [ "$threads" = 1 ]; then pin=(pin_one_cpu); fi
  OMP_NUM_THREADS=$threads "${pin[@]}" "$peer_dir/run.sh" "$script" "$peer_dir" "$threads"
}
