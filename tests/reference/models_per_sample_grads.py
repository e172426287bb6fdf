#!/usr/bin/env python3
"""Reference per-sample gradients of examples/models.h's Transformer block classifier
and GroupNorm CNN by functorch's vmap(grad) (PyTorch 1.13, Debian's python3-torch), in
Float64, for tests/func/models_torch_reference_test.cpp.

Neither side shares a random generator: parameter k (in the order of PARAMS below) is
scale * sin(0.37 i + k) + offset over its flat index i, the CNN's images are
sin(0.11 i + 0.5), the tokens (7 i + 3) mod 100 and the labels i mod classes. The
models are written out from their C++ definitions (examples/models.h).

Usage: models_per_sample_grads.py > models_per_sample_grads.txt

Output, one record a line (every number with 17 significant digits):
  model <name> <batch>
  loss <per-sample losses>
  param <name> <numel> <ndim> <dims...>
  sample <b> <sum> <sum |g|> <sum g^2> <count> <flat index> <value> ...
where the listed entries are all of them for a parameter of at most 64 values and
16 at evenly spaced flat indices otherwise (the file stays small).
"""
import math

import torch
import torch.nn.functional as F
from functorch import grad, vmap

torch.set_default_dtype(torch.float64)
BATCH = 3
VOCAB, DIM, HEADS, SEQ, HIDDEN, CLASSES = 100, 32, 4, 16, 64, 5


def fan_in_scale(shape):
    fan_in = math.prod(shape[1:])
    return 1.0 / math.sqrt(fan_in) if len(shape) > 1 else 0.1


# (name, shape, scale, offset) in the order that numbers them.
S = 1.0 / math.sqrt(DIM)
TRANSFORMER_PARAMS = [
    ("embed", (VOCAB, DIM), 1.0, 0.0), ("pos", (SEQ, DIM), 0.1, 0.0),
    ("ln1.w", (DIM,), 0.1, 1.0), ("ln1.b", (DIM,), 0.1, 0.0),
    ("wq", (DIM, DIM), S, 0.0), ("wk", (DIM, DIM), S, 0.0),
    ("wv", (DIM, DIM), S, 0.0), ("wo", (DIM, DIM), S, 0.0), ("bo", (DIM,), 0.1, 0.0),
    ("ln2.w", (DIM,), 0.1, 1.0), ("ln2.b", (DIM,), 0.1, 0.0),
    ("w1", (HIDDEN, DIM), S, 0.0), ("b1", (HIDDEN,), 0.1, 0.0),
    ("w2", (DIM, HIDDEN), 1.0 / math.sqrt(HIDDEN), 0.0), ("b2", (DIM,), 0.1, 0.0),
    ("head.w", (CLASSES, DIM), S, 0.0), ("head.b", (CLASSES,), 0.1, 0.0)]
GN_SHAPES = [("conv1.weight", (16, 1, 3, 3)), ("conv1.bias", (16,)), ("gn1.weight", (16,)),
             ("gn1.bias", (16,)), ("conv2.weight", (32, 16, 3, 3)), ("conv2.bias", (32,)),
             ("gn2.weight", (32,)), ("gn2.bias", (32,)), ("fc.weight", (10, 800)),
             ("fc.bias", (10,))]
GN_CNN_PARAMS = [(name, shape, fan_in_scale(shape),
                  1.0 if name.startswith("gn") and name.endswith("weight") else 0.0)
                 for name, shape in GN_SHAPES]


def make_params(table):
    params = {}
    for k, (name, shape, scale, offset) in enumerate(table):
        i = torch.arange(math.prod(shape), dtype=torch.float64)
        params[name] = (scale * torch.sin(0.37 * i + k) + offset).reshape(shape)
    return params


def split_heads(x):
    return x.reshape(SEQ, HEADS, DIM // HEADS).transpose(0, 1)


def transformer_loss(p, tokens, label):
    x = p["embed"][tokens] + p["pos"]
    h = F.layer_norm(x, (DIM,), p["ln1.w"], p["ln1.b"], 1e-5)
    q, k, v = (split_heads(F.linear(h, p[w])) for w in ("wq", "wk", "wv"))
    scores = q @ k.transpose(-2, -1) / math.sqrt(DIM // HEADS)
    attended = torch.softmax(scores, -1) @ v
    x = x + F.linear(attended.transpose(0, 1).reshape(SEQ, DIM), p["wo"], p["bo"])
    h2 = F.layer_norm(x, (DIM,), p["ln2.w"], p["ln2.b"], 1e-5)
    x = x + F.linear(F.gelu(F.linear(h2, p["w1"], p["b1"])), p["w2"], p["b2"])
    logits = F.linear(x.mean(0, keepdim=True), p["head.w"], p["head.b"])
    return F.cross_entropy(logits, label.unsqueeze(0))


def gn_cnn_loss(p, x, label):
    h = F.conv2d(x.unsqueeze(0), p["conv1.weight"], p["conv1.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 4, p["gn1.weight"], p["gn1.bias"], 1e-5)), 2)
    h = F.conv2d(h, p["conv2.weight"], p["conv2.bias"])
    h = F.max_pool2d(F.relu(F.group_norm(h, 8, p["gn2.weight"], p["gn2.bias"], 1e-5)), 2)
    logits = F.linear(h.flatten(1), p["fc.weight"], p["fc.bias"])
    return F.cross_entropy(logits, label.unsqueeze(0))


def listed_indices(numel):
    return range(numel) if numel <= 64 else [j * (numel - 1) // 15 for j in range(16)]


def g17(v):
    return "%.17g" % v


def emit(name, loss_fn, table, inputs, labels):
    params = make_params(table)
    losses = vmap(loss_fn, in_dims=(None, 0, 0))(params, inputs, labels)
    grads = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, inputs, labels)
    print("model", name, BATCH)
    print("loss", " ".join(g17(v) for v in losses.tolist()))
    for pname, shape, _, _ in table:
        g = grads[pname]
        numel = math.prod(shape)
        print("param", pname, numel, len(shape), *shape)
        for b in range(BATCH):
            flat = g[b].reshape(-1)
            idx = listed_indices(numel)
            entries = " ".join("%d %s" % (i, g17(flat[i].item())) for i in idx)
            print("sample", b, g17(flat.sum().item()), g17(flat.abs().sum().item()),
                  g17((flat * flat).sum().item()), len(idx), entries)


def main():
    n_tokens = BATCH * SEQ
    tokens = ((torch.arange(n_tokens) * 7 + 3) % VOCAB).reshape(BATCH, SEQ)
    emit("transformer", transformer_loss, TRANSFORMER_PARAMS, tokens,
         torch.arange(BATCH) % CLASSES)
    images = torch.sin(0.11 * torch.arange(BATCH * 28 * 28, dtype=torch.float64) + 0.5)
    emit("gn_cnn", gn_cnn_loss, GN_CNN_PARAMS, images.reshape(BATCH, 1, 28, 28),
         torch.arange(BATCH) % 10)


if __name__ == "__main__":
    main()
