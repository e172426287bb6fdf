"""PyTorch 1.13 / functorch on the workloads of bench/grad.cpp (issue 4), reusing the
peer scripts' models and timing loop from ../shared/peers/torch.

Run: bench/run_grad_comparison.sh (or: python3 bench/peer_grad.py <peer-dir> <threads>)
Prints one line per case: "<case> <median ns>".
"""
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
from functorch import grad  # noqa: E402

from bench_nested import f3  # noqa: E402
from bench_per_sample_grads_mlp import batch_grad, bench, make_batch, make_params  # noqa: E402

threads = int(sys.argv[2])
torch.set_num_threads(threads)
params = make_params()
for batch in (32, 256):
    x, y = make_batch(batch)
    print(f"MlpBatchGrad/{batch}/{threads} {bench(lambda: batch_grad(params, x, y))['median']:.0f}")

CHAIN = 64


def add_chain(x):
    y = x
    for _ in range(CHAIN):
        y = y + x
    return y


def nested(levels):
    f = add_chain
    for _ in range(levels):
        f = grad(f)
    return f


x = torch.tensor(0.5)
for levels in range(4):
    f = nested(levels)
    print(f"AddChain/{levels} {bench(lambda: f(x))['median']:.0f}")
third = grad(grad(grad(f3)))
x = torch.tensor(0.7)
print(f"GradCubed {bench(lambda: third(x))['median']:.0f}")
print(f"ScalarFunction {bench(lambda: f3(x))['median']:.0f}")
