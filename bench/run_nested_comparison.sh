#!/usr/bin/env bash
# Side by side, in one run: bench/nested_transforms.cpp and the same workloads in PyTorch
# 1.13's functorch (bench/peer_nested.py) at 1 and 2 threads, as markdown tables with
# ratios and the issue's targets, plus a plot (PNG, log scale; python3-matplotlib).
#   bench/run_nested_comparison.sh [build-dir]     (needs: scripts/install-deps.sh --peers)
# PLOT=path.png chooses where the plot goes (default bench/nested_transforms.png).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/comparison_common.sh
build=${1:-build}
peer_dir=$(cd "${PEER_DIR:-../shared/peers/torch}" && pwd)
plot=${PLOT:-bench/nested_transforms.png}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target nested_transforms > /dev/null
# A benchmark whose result fails its check is reported with its error (no time).
# Rows with a thread count of 2 run unpinned, the rest on one CPU (comparison_common.sh).
run_strata "$build/bench/nested_transforms" '^(Hessian|HessianClosedForm)/[0-9]+/2$|^(GradCubed|ScalarFunction|VmapVmap|VmapRows|EagerG|Jacrev|Jacfwd|VmapJacrev|JacobianAnalytic)/2$' "$work/strata.json"
for threads in 1 2; do
  run_peer "$PWD/bench/peer_nested.py" "$peer_dir" "$threads" >> "$work/peer.txt"
done

/usr/bin/python3 - "$work/strata.json" "$work/peer.txt" "$plot" <<'PY'
import sys

sys.path.insert(0, "bench")
from peer_common import peer_medians, strata_medians

strata, errors = strata_medians(sys.argv[1])
peer = peer_medians(sys.argv[2])
US = 1e3


def at_most(us, times=None):
    """Target: Strata within `us` µs (and at least `times` x faster than functorch)."""
    text = f"≤ {us} µs" + (f", ≥ {times}× functorch" if times else "")
    return text, lambda ours, theirs: ours <= us * US and (not times or theirs >= times * ours)


ROWS = [  # label, benchmark name without the thread count, target
    ("hessian n=32 (jacfwd∘jacrev)", "Hessian/32", at_most(40, 10)),
    ("hessian n=32, closed form (floor)", "HessianClosedForm/32", None),
    ("hessian n=256 (jacfwd∘jacrev)", "Hessian/256", at_most(150, 10)),
    ("hessian n=256, closed form (floor)", "HessianClosedForm/256", None),
    ("grad(grad(grad(f))), 0-dim", "GradCubed", at_most(20)),
    ("f = sin(x)·x² alone", "ScalarFunction", None),
    ("vmap(vmap(g)) 64×64", "VmapVmap", at_most(10)),
    ("vmap(g) over rows", "VmapRows", None),
    ("g(X) eager", "EagerG", None),
    ("jacrev, tanh MLP 64→64→64", "Jacrev", at_most(40)),
    ("jacfwd, tanh MLP", "Jacfwd", at_most(50)),
    ("vmap(jacrev), batch 32", "VmapJacrev", None),
    ("analytic Jacobian (floor)", "JacobianAnalytic", None),
]


def us(ns):
    return "-" if ns is None else f"{ns / US:.1f}" if ns < 1e5 else f"{ns / US:.0f}"


def strata_cell(name):
    return f"FAILED: {errors[name]}" if name in errors else us(strata.get(name))


def ratio(theirs, ours):
    return f"{theirs / ours:.1f}×" if theirs and ours else "-"


print("Nested transforms, Strata against functorch 1.13 (µs per call, medians; "
      "ratio: functorch / Strata)\n")
print("| row | threads | Strata µs | functorch µs | ratio | target | met? |")
print("|---|---|---|---|---|---|---|")
for label, base, target in ROWS:
    for threads in (1, 2):
        name = f"{base}/{threads}"
        ours, theirs = strata.get(name), peer.get(name)
        text, met = target if target else ("-", None)
        verdict = "-" if met is None or ours is None or theirs is None else (
            "yes" if met(ours, theirs) else "**no**")
        print(f"| {label} | {threads} | {strata_cell(name)} | {us(theirs)} | "
              f"{ratio(theirs, ours)} | {text} | {verdict} |")


def depth_series(table, kind):
    return [table.get("DepthEager")] + [table.get(f"Depth{kind}/{level}") for level in range(1, 5)]


series = {(who, kind): depth_series(table, kind)
          for kind in ("Vmap", "Grad") for who, table in (("Strata", strata), ("functorch", peer))}
print("\nDepth: one 10-op function of a 0-dim sample under L nested vmaps (batch 2 each) or "
      "grads, 1 thread (L = 0: eager); Δ = t(L) − t(L−1), the cost of one more level\n")
print("| L | Strata vmap µs | Δ | functorch vmap µs | Δ | ratio "
      "| Strata grad µs | Δ | functorch grad µs | Δ | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for level in range(5):
    cells = []
    for kind in ("Vmap", "Grad"):
        for who in ("Strata", "functorch"):
            times = series[who, kind]
            now, before = times[level], times[level - 1] if level else None
            cells += [us(now), us(now - before) if now is not None and before is not None else "-"]
        cells.append(ratio(series["functorch", kind][level], series["Strata", kind][level]))
    print(f"| {level} | " + " | ".join(cells) + " |")
print("\n(The L-th derivative of the function has more ops than the (L−1)-th, so under grad "
      "a level costs more at each depth for both; compare the ratios.)")
for (who, kind), times in series.items():
    deltas = [b - a for a, b in zip(times, times[1:]) if a is not None and b is not None]
    if len(deltas) == 4:
        spread = max(deltas) / min(deltas) if min(deltas) > 0 else float("inf")
        print(f"\n{who} {kind.lower()}: Δ {min(deltas) / US:.1f}–{max(deltas) / US:.1f} µs per level, "
              f"largest / smallest {spread:.1f} (roughly constant, ≤ 2: "
              f"{'yes' if spread <= 2 else 'no'})")
for name, error in errors.items():
    if name.startswith("Depth"):
        print(f"\n{name} FAILED: {error}")

try:
    import matplotlib
except ImportError:
    sys.exit("\nno plot: python3-matplotlib is missing (scripts/install-deps.sh --peers)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, (bars, depth) = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [3, 2]})
labels = [label for label, _, _ in ROWS][::-1]
for offset, (who, table) in ((0.2, ("Strata", strata)), (-0.2, ("functorch", peer))):
    values = [table.get(f"{base}/1", float("nan")) / US for _, base, _ in ROWS][::-1]
    bars.barh([i + offset for i in range(len(labels))], values, height=0.4, label=who)
bars.set_yticks(range(len(labels)), labels)
bars.set_xscale("log")
bars.set_xlabel("µs per call, 1 thread (log scale)")
bars.legend()
for (who, kind), times in series.items():
    points = [(level, t / US) for level, t in enumerate(times) if t is not None]
    if points:
        depth.plot(*zip(*points), marker="o", linestyle="-" if who == "Strata" else "--",
                   label=f"{who} {kind.lower()}")
depth.set_yscale("log")
depth.set_xticks(range(5))
depth.set_xlabel("nesting depth L (0 = eager)")
depth.set_ylabel("µs per call (log scale)")
depth.set_title("10-op function under L nested transforms")
depth.legend()
fig.suptitle("Nested transforms: Strata vs functorch 1.13 (medians)")
fig.tight_layout()
fig.savefig(sys.argv[3], dpi=110)
print(f"\nplot: {sys.argv[3]}")
PY
