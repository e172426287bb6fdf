#!/usr/bin/env bash
# Side by side, in one run: Strata's per-call dispatcher costs and libtorch's
# (the peer program ../shared/peers/torch/dispatch_overhead.cpp, built against
# Debian's libtorch-dev), printed as one table with ratios.
#   bench/run_dispatch_comparison.sh [build-dir]      (needs: scripts/install-deps.sh --peers)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
peer_src=${PEER_DIR:-../shared/peers/torch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target dispatch_overhead > /dev/null
"$build/bench/dispatch_overhead" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json > "$work/strata.json" 2> /dev/null

cp -r "$peer_src/." "$work/peer"
(cd "$work/peer" && ./build_cpp.sh > /dev/null 2>&1)
"$work/peer/build/dispatch_overhead" 1 > "$work/peer.txt"

python3 - "$work/strata.json" "$work/peer.txt" <<'PY'
import json, sys
strata = {b["run_name"]: b["real_time"] for b in json.load(open(sys.argv[1]))["benchmarks"]
          if b.get("aggregate_name") == "median"}
peer = {}
for line in open(sys.argv[2]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 4 and cells[0] == "1":
        peer[cells[1]] = float(cells[2])
rows = [
    ("no-op kernel, typed handle", "NoopTypedHandle", None),
    ("add, 1 element, output allocated", "Add1Element", "at::add(a,b) 1-elem"),
    ("add, 1 element, boxed path", "Add1ElementBoxed", "at::add(a,b) 1-elem"),
    ("add, 1 element, kernel without dispatcher", "Add1ElementNoDispatcher", "at::cpu::add(a,b) (no dispatcher)"),
    ("add_ in place, 1 element", "AddInPlace1Element", "c.add_(b) in-place"),
    ("add, 4096 elements", "Add4096", "at::add 4096-elem (for scale)"),
]
print("| what (1 thread, median) | Strata ns | libtorch ns | libtorch / Strata |")
print("|---|---|---|---|")
for label, ours, theirs in rows:
    s = strata.get(ours)
    t = peer.get(theirs) if theirs else None
    ratio = f"{t / s:.1f}x" if (s and t) else "-"
    print(f"| {label} | {s:.1f} | {t if t is not None else '-'} | {ratio} |")
PY
