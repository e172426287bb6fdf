"""PyTorch 1.13 / functorch on the workloads of bench/vmap.cpp (issue 5), reusing the
peer scripts' models, data and timing loop from ../shared/peers/torch.

Run: bench/run_vmap_comparison.sh (or: python3 bench/peer_vmap.py <peer-dir> <threads>
[--cpu-time] [--only REGEX]: CPU time instead of wall time, for a loaded machine; only the
cases whose name matches)
Prints one line per case: "<case> <median ns> [<peak MiB>]", with the case names of
bench/vmap.cpp; the peak is measured as there (see measure_peak).
"""
import ctypes
import gc
import re
import sys
import time
import types

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from functorch import grad, make_functional, vmap  # noqa: E402

import bench_per_sample_grads_cnn as cnn_peer  # noqa: E402
import bench_per_sample_grads_mlp as mlp_peer  # noqa: E402

threads = int(sys.argv[2])
options = sys.argv[3:]
only = re.compile(options[options.index("--only") + 1] if "--only" in options else "")
if "--cpu-time" in options:
    # The peer modules' timing loop reads the clock through their module `time`.
    cpu_clock = types.SimpleNamespace(perf_counter=time.process_time,
                                      perf_counter_ns=time.process_time_ns)
    cnn_peer.time = mlp_peer.time = cpu_clock
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
    if not only.search(name):
        return
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


# Issue 26's models (examples/models.h): the GroupNorm CNN and the Transformer block
# classifier, as functions of a dict of parameters.
def gn_cnn_params():
    shapes = [("conv1.weight", (16, 1, 3, 3)), ("conv1.bias", (16,)), ("gn1.weight", (16,)),
              ("gn1.bias", (16,)), ("conv2.weight", (32, 16, 3, 3)), ("conv2.bias", (32,)),
              ("gn2.weight", (32,)), ("gn2.bias", (32,)), ("fc.weight", (10, 800)),
              ("fc.bias", (10,))]
    params = {}
    for i, (name, shape) in enumerate(shapes):
        fan_in = 1
        for s in shape[1:]:
            fan_in *= s
        value = cnn_peer.det(shape, 0.29 + 0.1 * i) * (fan_in ** -0.5 if len(shape) > 1 else 0.1)
        params[name] = value + 1.0 if name.startswith("gn") and name.endswith("weight") else value
    return params


def gn_cnn_loss_one(p, x, t):
    h = F.conv2d(x.unsqueeze(0), p["conv1.weight"], p["conv1.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 4, p["gn1.weight"], p["gn1.bias"])), 2)
    h = F.conv2d(h, p["conv2.weight"], p["conv2.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 8, p["gn2.weight"], p["gn2.bias"])), 2)
    return F.cross_entropy(F.linear(h.flatten(1), p["fc.weight"], p["fc.bias"]), t.unsqueeze(0))


VOCAB, DIM, HEADS, SEQ, HIDDEN, CLASSES = 100, 32, 4, 16, 64, 5


def transformer_params():
    s = DIM ** -0.5
    det = cnn_peer.det
    return {"embed": det((VOCAB, DIM), 0.37), "pos": det((SEQ, DIM), 0.53) * 0.1,
            "ln1.w": det((DIM,), 0.11) * 0.1 + 1.0, "ln1.b": det((DIM,), 0.13) * 0.1,
            "wq": det((DIM, DIM), 0.17) * s, "wk": det((DIM, DIM), 0.19) * s,
            "wv": det((DIM, DIM), 0.23) * s, "wo": det((DIM, DIM), 0.29) * s,
            "bo": det((DIM,), 0.31) * 0.1, "ln2.w": det((DIM,), 0.41) * 0.1 + 1.0,
            "ln2.b": det((DIM,), 0.43) * 0.1, "w1": det((HIDDEN, DIM), 0.47) * s,
            "b1": det((HIDDEN,), 0.59) * 0.1, "w2": det((DIM, HIDDEN), 0.61) * HIDDEN ** -0.5,
            "b2": det((DIM,), 0.67) * 0.1, "head.w": det((CLASSES, DIM), 0.71) * s,
            "head.b": det((CLASSES,), 0.73) * 0.1}


def transformer_loss_one(p, tokens, label):
    def heads(t):
        return t.reshape(SEQ, HEADS, DIM // HEADS).transpose(0, 1)

    x = F.embedding(tokens, p["embed"]) + p["pos"]
    h = F.layer_norm(x, (DIM,), p["ln1.w"], p["ln1.b"])
    q, k, v = (heads(F.linear(h, p[w])) for w in ("wq", "wk", "wv"))
    attended = torch.softmax(q @ k.transpose(-2, -1) * (DIM // HEADS) ** -0.5, -1) @ v
    x = x + F.linear(attended.transpose(0, 1).reshape(SEQ, DIM), p["wo"], p["bo"])
    h2 = F.layer_norm(x, (DIM,), p["ln2.w"], p["ln2.b"])
    x = x + F.linear(F.gelu(F.linear(h2, p["w1"], p["b1"])), p["w2"], p["b2"])
    logits = F.linear(x.mean(0, keepdim=True), p["head.w"], p["head.b"])
    return F.cross_entropy(logits, label.unsqueeze(0))


gn_vmapped = vmap(grad(gn_cnn_loss_one), in_dims=(None, 0, 0))
transformer_vmapped = vmap(grad(transformer_loss_one), in_dims=(None, 0, 0))
gn_params, tf_params = gn_cnn_params(), transformer_params()
x, t = cnn_peer.det((32, 1, 28, 28), 0.37), (torch.arange(32) * 7 + 3) % 10
report("GnCnnVmapGrad/32", lambda: gn_vmapped(gn_params, x, t), bench=cnn_peer.bench, reps=11)


def gn_cnn_batch_loss(p, xs, ts):
    h = F.conv2d(xs, p["conv1.weight"], p["conv1.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 4, p["gn1.weight"], p["gn1.bias"])), 2)
    h = F.conv2d(h, p["conv2.weight"], p["conv2.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 8, p["gn2.weight"], p["gn2.bias"])), 2)
    return F.cross_entropy(F.linear(h.flatten(1), p["fc.weight"], p["fc.bias"]), ts)


gn_batch_grad = grad(gn_cnn_batch_loss)
report("GnCnnBatchGrad/32", lambda: gn_batch_grad(gn_params, x, t), bench=cnn_peer.bench, reps=11)
tokens = (torch.arange(32).unsqueeze(1) * 7 + torch.arange(SEQ).unsqueeze(0) * 3) % VOCAB
labels = torch.arange(32) % CLASSES
report("TransformerVmapGrad/32", lambda: transformer_vmapped(tf_params, tokens, labels),
       bench=cnn_peer.bench, reps=11)

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


if threads == 1 and only.search("VmapAddChain"):
    for levels in range(4):
        f = nested(levels)
        x = torch.full((2,) * levels + (4,), 0.5)
        print(f"VmapAddChain/{levels} {mlp_peer.bench(lambda: f(x))['median']:.0f}", flush=True)
