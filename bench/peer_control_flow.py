"""PyTorch 1.13 on the workloads of bench/control_flow.cpp (issue 23). PyTorch 1.13 has
no scan or while_loop (functorch.experimental.cond only traces), so the peer numbers are
the plain Python loops and, for Newton, the hand-vectorised loop (torch.where until
every lane is done): what vmap(while_loop) automates.

Run: python3 bench/peer_control_flow.py <threads>
Prints one line per case: "<case> <median us>".
"""
import statistics
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
torch.manual_seed(3)
STEPS, HIDDEN, INPUT = 256, 32, 16


def median_us(f, repeats=30):
    f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


w = (torch.randn(HIDDEN, HIDDEN, dtype=torch.float64) * 0.1).requires_grad_()
u = (torch.randn(HIDDEN, INPUT, dtype=torch.float64) * 0.1).requires_grad_()
h0 = torch.zeros(HIDDEN, dtype=torch.float64)
xs = torch.randn(STEPS, INPUT, dtype=torch.float64)


def loop_rnn(w, u):
    h, ys = h0, []
    for t in range(STEPS):
        h = torch.tanh(w @ h + u @ xs[t])
        ys.append(h)
    return torch.stack(ys)


def loop_rnn_grad():
    return torch.autograd.grad(loop_rnn(w, u).sum(), (w, u))


with torch.no_grad():
    print(f"LoopRnn {median_us(lambda: loop_rnn(w, u)):.0f}")
print(f"LoopRnnGrad {median_us(loop_rnn_grad):.0f}")


def newton(a):
    x = a.clone()
    while bool((x * x - a).abs() > a * 1e-10):
        x = (x + a / x) * 0.5
    return x


def newton_vectorised(a):
    x = a.clone()
    while True:
        go = (x * x - a).abs() > a * 1e-10
        if not bool(go.any()):
            return x
        x = torch.where(go, (x + a / x) * 0.5, x)


for b in (8, 64):
    a = 1.0 + 10.0 ** (12.0 * torch.arange(b, dtype=torch.float64) / b)
    print(f"LoopNewton/{b} {median_us(lambda: torch.stack([newton(a[i]) for i in range(b)])):.0f}")
    print(f"VectorisedNewton/{b} {median_us(lambda: newton_vectorised(a)):.0f}")
