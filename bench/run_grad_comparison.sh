#!/usr/bin/env bash
# Side by side, in one run: bench/grad.cpp and the same workloads in PyTorch 1.13's
# functorch (bench/peer_grad.py), as one table with ratios.
#   bench/run_grad_comparison.sh [build-dir]      (needs: scripts/install-deps.sh --peers)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/comparison_common.sh
build=${1:-build}
peer_dir=${PEER_DIR:-../shared/peers/torch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target grad > /dev/null
# Rows with a thread count of 2 run unpinned, the rest on one CPU (comparison_common.sh).
run_strata "$build/bench/grad" '^MlpBatchGrad/[0-9]+/2$' "$work/strata.json"
peer_dir=$(cd "$peer_dir" && pwd)
for threads in 1 2; do
  run_peer "$PWD/bench/peer_grad.py" "$peer_dir" "$threads" >> "$work/peer.txt"
done

/usr/bin/python3 - "$work/strata.json" "$work/peer.txt" <<'PY'
import json, sys
strata = {b["run_name"]: b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
          for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
peer = {}
for line in open(sys.argv[2]):
    name, ns = line.split()
    peer.setdefault(name, float(ns))
print("| case (median) | Strata µs | functorch µs | functorch / Strata |")
print("|---|---|---|---|")
for name, ns in strata.items():
    theirs = peer.get(name)
    ratio = f"{theirs / ns:.1f}x" if theirs else "-"
    print(f"| {name} | {ns / 1e3:.2f} | {theirs / 1e3 if theirs else float('nan'):.2f} | {ratio} |")
chain = {int(k.split("/")[1]): v for k, v in strata.items() if k.startswith("AddChain/")}
for levels in (1, 2, 3):
    if levels in chain and 0 in chain:
        per = (chain[levels] - chain[0]) / (64 * levels)
        print(f"Strata overhead per op per grad layer, {levels} layer(s): {per:.0f} ns")
PY
