"""PyTorch 1.13 / functorch on the workloads of bench/vmap.cpp (issue 5), reusing the
peer scripts' models, data and timing loop from ../shared/peers/torch.

Run: bench/run_vmap_comparison.sh (or: python3 bench/peer_vmap.py <peer-dir> <threads>)
Prints one line per case: "<case> <median ns> [<peak MiB>]", with the case names of
bench/vmap.cpp; the peak is measured as there (see measure_peak).
"""
import ctypes
import gc
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from functorch import grad, make_functional, vmap  # noqa: E402

import bench_per_sample_grads_cnn as cnn_peer  # noqa: E402
import bench_per_sample_grads_mlp as mlp_peer  # noqa: E402

threads = int(sys.argv[2])
torch.set_num_threads(threads)
libc = ctypes.CDLL("libc.so.6")


def status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    raise KeyError(field)


def measure_peak(fn):
    """Resident memory one call adds at its peak: the RSS high-water mark (reset through
    /proc/self/clear_refs) minus the RSS before the call, free lists released first."""
    fn()
    gc.collect()
    libc.malloc_trim(0)
    before = status_kib("VmRSS:")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    fn()
    return (status_kib("VmHWM:") - before) / 1024.0


def report(name, fn, bench=mlp_peer.bench, reps=15):
    peak = measure_peak(fn)
    print(f"{name}/{threads} {bench(fn, reps=reps)['median']:.0f} {peak:.2f}", flush=True)


params = mlp_peer.make_params()
for batch in (32, 256):
    x, y = mlp_peer.make_batch(batch)
    report(f"MlpVmapGrad/{batch}", lambda: mlp_peer.psg_vmap(params, x, y))
    report(f"MlpHandWritten/{batch}", lambda: mlp_peer.psg_einsum(params, x, y))
    report(f"MlpLoop/{batch}", lambda: mlp_peer.psg_loop(params, x, y), reps=7)

# The CNN peer builds its model inside main(); the same model, initialisation and
# per-sample functions, from its module's pieces.
model = cnn_peer.SimpleCNN()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        fan_in = p[0].numel() if p.dim() > 1 else 1
        p.copy_(cnn_peer.det(tuple(p.shape), 0.31 + 0.1 * i) / (fan_in ** 0.5 if p.dim() > 1 else 10.0))
fmodel, cnn_params = make_functional(model)
cnn_params = tuple(p.detach() for p in cnn_params)
plist = list(model.parameters())


def cnn_loss_one(params, x, t):
    return F.nll_loss(fmodel(params, x.unsqueeze(0)), t.unsqueeze(0))


cnn_vmapped = vmap(grad(cnn_loss_one), in_dims=(None, 0, 0))


def cnn_loop(x, t):
    outs = [[] for _ in plist]
    for i in range(x.shape[0]):
        loss = F.nll_loss(model(x[i:i + 1]), t[i:i + 1])
        for o, g in zip(outs, torch.autograd.grad(loss, plist)):
            o.append(g)
    return tuple(torch.stack(o) for o in outs)


for batch in (32, 64):
    x, t = cnn_peer.det((batch, 1, 28, 28), 0.37), (torch.arange(batch) * 7 + 3) % 10
    report(f"CnnVmapGrad/{batch}", lambda: cnn_vmapped(cnn_params, x, t), bench=cnn_peer.bench, reps=11)
    report(f"CnnLoop/{batch}", lambda: cnn_loop(x, t), bench=cnn_peer.bench, reps=5)

CHAIN = 64


def add_chain(x):
    y = x
    for _ in range(CHAIN):
        y = y + x
    return y


def nested(levels):
    f = add_chain
    for _ in range(levels):
        f = vmap(f)
    return f


if threads == 1:
    for levels in range(4):
        f = nested(levels)
        x = torch.full((2,) * levels + (4,), 0.5)
        print(f"VmapAddChain/{levels} {mlp_peer.bench(lambda: f(x))['median']:.0f}", flush=True)
