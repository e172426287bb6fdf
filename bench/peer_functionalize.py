"""PyTorch 1.13's functorch.experimental.functionalize on the workloads of
bench/functionalize.cpp (issue 21), timed with the peer scripts' loop.

Run: bench/run_functionalize_comparison.sh (or: python3 bench/peer_functionalize.py
<peer-dir> 1). Prints "<case> <median CPU ns per call>" with bench/functionalize.cpp's
case names (how: 0 eager, 1 functionalize, 2 vmap, 3 functionalize removing views).
"""
import sys

from peer_common import peer_setup, report

peer_setup(sys.argv)
import torch  # noqa: E402
from functorch import vmap  # noqa: E402
from functorch.experimental import functionalize  # noqa: E402

import statistics  # noqa: E402
import time  # noqa: E402

CHAIN = 64
ROUNDS = 500


def add_chain(x):
    y = x
    for _ in range(CHAIN):
        y = y + x
    return y


def inplace_chain(x):
    y = x.clone()
    for _ in range(CHAIN):
        y.add_(x)
    return y


def cpu_ns(fn, reps=7, min_rep_ns=5e7):
    """Median over reps of the thread's CPU time per call, as Google Benchmark's cpu_time
    on the Strata side (a shared machine inflates wall time)."""
    for _ in range(3):
        fn()
    t0 = time.thread_time_ns()
    fn()
    inner = max(1, int(min_rep_ns / max(time.thread_time_ns() - t0, 1)))
    samples = []
    for _ in range(reps):
        t0 = time.thread_time_ns()
        for _ in range(inner):
            fn()
        samples.append((time.thread_time_ns() - t0) / inner)
    return statistics.median(samples)


half = torch.tensor(0.5)


def slice_updates(x):
    y = x.clone()
    for i in range(ROUNDS):
        y.narrow(0, (i * 7) % 60, 4).mul_(half).add_(x.narrow(0, i % 60, 4))
    return y


def variants(f):
    return {0: f, 1: functionalize(f), 2: lambda x: vmap(f)(x.unsqueeze(0)),
            3: functionalize(f, remove="mutations_and_views")}


small = torch.full((4,), 0.5)
big = (torch.arange(64 * 16, dtype=torch.float32) * 0.01).reshape(64, 16)
for name, f, x, hows in (("AddChain", add_chain, small, (0, 1, 2)),
                         ("InplaceChain", inplace_chain, small, (0, 1)),
                         ("SliceUpdates", slice_updates, big, (0, 1, 3))):
    fs = variants(f)
    expected = f(x)
    for how in hows:
        assert torch.allclose(fs[how](x), expected), (name, how)
        report(f"{name}/how:{how}", cpu_ns(lambda: fs[how](x)))
