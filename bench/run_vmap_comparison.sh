#!/usr/bin/env bash
# Side by side, in one run: bench/vmap.cpp and the same workloads in PyTorch 1.13's
# functorch (bench/peer_vmap.py) at 1 and 2 threads, as tables with ratios.
#   bench/run_vmap_comparison.sh [build-dir]      (needs: scripts/install-deps.sh --peers)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/comparison_common.sh
build=${1:-build}
peer_dir=${PEER_DIR:-../shared/peers/torch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target vmap > /dev/null
# Rows with a thread count of 2 run unpinned, the rest on one CPU (comparison_common.sh).
run_strata "$build/bench/vmap" '^(Mlp|Cnn|GnCnn|Transformer)[A-Za-z]+/[0-9]+/2$' "$work/strata.json"
peer_dir=$(cd "$peer_dir" && pwd)
for threads in 1 2; do
  run_peer "$PWD/bench/peer_vmap.py" "$peer_dir" "$threads" >> "$work/peer.txt"
done

/usr/bin/python3 - "$work/strata.json" "$work/peer.txt" <<'PY'
import json, sys
unit = {"ns": 1, "us": 1e3, "ms": 1e6}
strata, strata_peak = {}, {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        strata[b["run_name"]] = b["real_time"] * unit[b["time_unit"]]
        if "peak_MiB" in b:
            strata_peak[b["run_name"]] = b["peak_MiB"]
peer, peer_peak = {}, {}
for line in open(sys.argv[2]):
    name, ns, *peak = line.split()
    peer[name] = float(ns)
    if peak:
        peer_peak[name] = float(peak[0])

def ms(ns):
    return f"{ns / 1e6:.3f}" if ns is not None else "-"

def ratio(theirs, ours):
    return f"{theirs / ours:.2f}x" if theirs and ours else "-"

def peak(table, name):
    return f"{table[name]:.1f}" if name in table else "-"

print("Strata vmap(grad) against PyTorch's three ways (ratio: PyTorch time / Strata time)\n")
print("| workload | threads | Strata vmap(grad) ms | functorch vmap(grad) ms | ratio "
      "| PyTorch einsum ms | ratio | PyTorch loop ms | ratio | peak MiB Strata / functorch |")
print("|---|---|---|---|---|---|---|---|---|---|")
for model, batches in (("Mlp", (32, 256)), ("Cnn", (32, 64))):
    for threads in (1, 2):
        for batch in batches:
            def key(method):
                return f"{model}{method}/{batch}/{threads}"
            vg = key("VmapGrad")
            ours = strata.get(vg)
            cells = [ms(ours)]
            for method in ("VmapGrad", "HandWritten", "Loop"):
                theirs = peer.get(key(method))
                cells += [ms(theirs), ratio(theirs, ours)]
            print(f"| {model.upper()} B={batch} | {threads} | " + " | ".join(cells)
                  + f" | {peak(strata_peak, vg)} / {peak(peer_peak, vg)} |")

print("\nIssue 26's models, vmap(grad) at B=32 (ratio: functorch / Strata; target >= 3x)\n")
print("| workload | threads | Strata ms | functorch ms | ratio | peak MiB Strata / functorch |")
print("|---|---|---|---|---|---|")
for model in ("GnCnn", "Transformer"):
    for threads in (1, 2):
        name = f"{model}VmapGrad/32/{threads}"
        ours, theirs = strata.get(name), peer.get(name)
        print(f"| {model} | {threads} | {ms(ours)} | {ms(theirs)} | {ratio(theirs, ours)} "
              f"| {peak(strata_peak, name)} / {peak(peer_peak, name)} |")

print("\nMLP against its write floor (zeroing the per-sample gradients' bytes in reused memory, "
      "MlpWriteFloor): the issue's 3x-functorch time next to it\n")
print("| workload | threads | floor ms | Strata ms | Strata / floor | functorch / 3 ms | functorch / 3 / floor |")
print("|---|---|---|---|---|---|---|")
for threads in (1, 2):
    for batch in (32, 256):
        floor = strata.get(f"MlpWriteFloor/{batch}/{threads}")
        ours = strata.get(f"MlpVmapGrad/{batch}/{threads}")
        theirs = peer.get(f"MlpVmapGrad/{batch}/{threads}")
        target = theirs / 3 if theirs else None
        cells = [ms(floor), ms(ours), ratio(ours, floor), ms(target), ratio(target, floor)]
        print(f"| MLP B={batch} | {threads} | " + " | ".join(cells) + " |")

print("\nCNNs: per-sample gradients over the plain batch gradient (grad of the mean loss, "
      "*BatchGrad), both Strata, same run: what per-sample costs over the batch\n")
print("| workload | threads | batch grad ms | vmap(grad) ms | vmap(grad) / batch grad |")
print("|---|---|---|---|---|")
for model, label, batches in (("Cnn", "CNN", (32, 64)), ("GnCnn", "GroupNorm CNN", (32,))):
    for threads in (1, 2):
        for batch in batches:
            floor = strata.get(f"{model}BatchGrad/{batch}/{threads}")
            ours = strata.get(f"{model}VmapGrad/{batch}/{threads}")
            print(f"| {label} B={batch} | {threads} | {ms(floor)} | {ms(ours)} | {ratio(ours, floor)} |")

print("\nLike for like (ratio: PyTorch / Strata)\n")
print("| case | Strata ms | PyTorch ms | ratio | peak MiB Strata / PyTorch |")
print("|---|---|---|---|---|")
for name, ns in strata.items():
    method = name.split("/")[0]
    if method.startswith(("Mlp", "Cnn")) and not method.endswith(("VmapGrad", "Floor", "BatchGrad")):
        theirs = peer.get(name)
        print(f"| {name} | {ms(ns)} | {ms(theirs)} | {ratio(theirs, ns)} "
              f"| {peak(strata_peak, name)} / {peak(peer_peak, name)} |")

print("\nvmap overhead: 64 adds on a [4] sample under L nested vmaps (batch 2 each), 1 thread\n")
print("| L | Strata ns/op | functorch ns/op | Strata ns per op per level | functorch ns per op per level |")
print("|---|---|---|---|---|")
for levels in range(4):
    name = f"VmapAddChain/{levels}"
    ours, theirs = strata.get(name), peer.get(name)
    row = [f"{ours / 64:.0f}" if ours else "-", f"{theirs / 64:.0f}" if theirs else "-"]
    for table in (strata, peer):
        base, at = table.get("VmapAddChain/0"), table.get(name)
        row.append(f"{(at - base) / (64 * levels):.0f}" if levels and base and at else "-")
    print(f"| {levels} | " + " | ".join(row) + " |")
PY
