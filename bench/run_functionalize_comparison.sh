#!/usr/bin/env bash
# Side by side, in one run: bench/functionalize.cpp and the same workloads in PyTorch
# 1.13's functorch.experimental.functionalize (bench/peer_functionalize.py), 1 thread,
# pinned; a table of per-op level costs and of functionalized / eager ratios.
#   bench/run_functionalize_comparison.sh [build-dir]   (needs: scripts/install-deps.sh --peers)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/comparison_common.sh
build=${1:-build}
peer_dir=$(cd "${PEER_DIR:-../shared/peers/torch}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target functionalize > /dev/null
pin_one_cpu "$build/bench/functionalize" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=json > "$work/strata.json"
run_peer "$PWD/bench/peer_functionalize.py" "$peer_dir" 1 > "$work/peer.txt"

/usr/bin/python3 - "$work/strata.json" "$work/peer.txt" <<'PY'
import json, sys
unit = {"ns": 1, "us": 1e3, "ms": 1e6}
strata = {b["run_name"]: b["cpu_time"] * unit[b["time_unit"]]
          for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
peer = {}
for line in open(sys.argv[2]):
    name, ns = line.split()[:2]
    peer[name] = float(ns)
names = {1: "functionalize", 2: "vmap", 3: "functionalize (views too)"}

print("One level's cost per op (64 ops on a [4] tensor): (t_level - t_eager) / 64, ns\n")
print("| chain | level | Strata | PyTorch | target |")
print("|---|---|---|---|---|")
for chain, hows in (("AddChain", (1, 2)), ("InplaceChain", (1,))):
    for how in hows:
        cells = []
        for table in (strata, peer):
            base, at = table.get(f"{chain}/how:0"), table.get(f"{chain}/how:{how}")
            cells.append(f"{(at - base) / 64:.0f}" if base and at else "-")
        print(f"| {chain} | {names[how]} | " + " | ".join(cells) + " | ≤ 150 |")

print("\nMutation-heavy function (1000 in-place ops through slices): time, and / eager\n")
print("| how | Strata µs | / eager | PyTorch µs | / eager | target |")
print("|---|---|---|---|---|---|")
for how, label in ((0, "eager"), (1, "functionalize"), (3, "functionalize (views too)")):
    cells = []
    for table in (strata, peer):
        at, base = table.get(f"SliceUpdates/how:{how}"), table.get("SliceUpdates/how:0")
        cells += [f"{at / 1e3:.0f}" if at else "-", f"{at / base:.2f}x" if at and base else "-"]
    print(f"| {label} | " + " | ".join(cells) + f" | {'≤ 1.3x' if how else ''} |")
PY
