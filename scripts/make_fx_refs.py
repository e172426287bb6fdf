#!/usr/bin/python3
"""Writes the make_fx reference graphs that tests/transforms/trace_make_fx_test.cpp
compares Strata's trace against: one file per function, one line per op call,
"aten::name.overload Dtype[sizes]" (the op and the shape of its result).

Needs PyTorch 1.13 with functorch (Debian: apt-get install python3-torch), so CI
does not run it; run it by hand after changing a function below or its twin in
the test:
    /usr/bin/python3 scripts/make_fx_refs.py tests/transforms/make_fx_refs
The functions and input shapes here must match the test's.
"""
import pathlib
import sys

import torch
import torch.nn.functional as F
from functorch import grad, make_fx, vmap
from torch.fx.passes.shape_prop import ShapeProp

DTYPES = {torch.float32: "Float32", torch.float64: "Float64", torch.int64: "Int64"}


def mlp_loss(w1, w2, x, y):
    h = F.linear(x, w1).tanh()
    return F.mse_loss(F.linear(h, w2), y)


def cases():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, generator=gen)
    b = torch.randn(3, 4, generator=gen)
    w1 = torch.randn(32, 16, generator=gen)
    w2 = torch.randn(8, 32, generator=gen)
    x = torch.randn(4, 16, generator=gen)
    y = torch.randn(4, 8, generator=gen)
    per_sample = vmap(grad(mlp_loss), in_dims=(None, None, 0, 0))
    return {
        "sin": (lambda t: t.sin(), (a,)),
        "mul": (lambda s, t: s * t, (a, b)),
        "add": (lambda s, t: s + t, (a, b)),
        "sum": (lambda t: t.sum(), (a,)),
        "mlp_loss": (mlp_loss, (w1, w2, x, y)),
        "vmap_grad_mlp_loss": (per_sample, (w1, w2, x, y)),
    }


def result_text(meta):
    if not hasattr(meta, "shape"):  # a tuple of results (TensorMetadata is a tuple too)
        return ", ".join(result_text(m) for m in meta)
    sizes = ", ".join(str(s) for s in meta.shape)
    return f"{DTYPES[meta.dtype]}[{sizes}]"


def graph_lines(f, args):
    gm = make_fx(f)(*args)
    ShapeProp(gm).propagate(*args)
    lines = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        packet, overload = str(node.target).removeprefix("aten.").rsplit(".", 1)
        lines.append(f"aten::{packet}.{overload} {result_text(node.meta['tensor_meta'])}")
    return lines


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, (f, args) in cases().items():
        header = f"# make_fx({name}), PyTorch {torch.__version__}; written by scripts/make_fx_refs.py"
        (out / f"{name}.txt").write_text("\n".join([header, *graph_lines(f, args)]) + "\n")


if __name__ == "__main__":
    main()
