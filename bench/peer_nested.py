"""PyTorch 1.13's functorch on the workloads of bench/nested_transforms.cpp (issue 6), with
the functions, inputs and timing loop of ../shared/peers/torch/bench_nested.py.

Run: bench/run_nested_comparison.sh (or: python3 bench/peer_nested.py <peer-dir> <threads>)
Prints one line per case, "<case> <median ns>", named as in bench/nested_transforms.cpp;
the depth cases only at 1 thread, as there. Transformed cases are checked once first.
"""
import sys

from peer_common import peer_setup, report

threads = peer_setup(sys.argv)
import torch  # noqa: E402
from functorch import grad, hessian, jacfwd, jacrev, vmap  # noqa: E402

from bench_nested import bench, det, f3, f_hess, g4, hess_analytic  # noqa: E402


def case(name, fn, want=None):
    if want is not None:
        got = fn()
        if got.shape != want.shape or not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
            sys.exit(f"peer_nested: {name} disagrees with its closed form")
    report(name, bench(fn)["median"])


for n in (32, 256):
    x = det((n,), 0.37)
    case(f"Hessian/{n}/{threads}", lambda: hessian(f_hess)(x), hess_analytic(x))
    case(f"HessianClosedForm/{n}/{threads}", lambda: hess_analytic(x))

xs = torch.tensor(0.7)
case(f"GradCubed/{threads}", lambda: grad(grad(grad(f3)))(xs),
     -torch.cos(xs) * xs * xs - 6 * torch.sin(xs) * xs + 6 * torch.cos(xs))
case(f"ScalarFunction/{threads}", lambda: f3(xs))

X = det((64, 64), 0.37)
case(f"VmapVmap/{threads}", lambda: vmap(vmap(g4))(X), g4(X))
case(f"VmapRows/{threads}", lambda: vmap(g4)(X), g4(X))
case(f"EagerG/{threads}", lambda: g4(X))

# bench_nested.py's tanh MLP and its analytic Jacobian (local to its main()).
W1, b1 = det((64, 64), 0.61) / 8.0, det((64,), 0.23) * 0.1
W2, b2 = det((64, 64), 0.79) / 8.0, det((64,), 0.41) * 0.1


def mlp(x):
    return torch.tanh(W2 @ torch.tanh(W1 @ x + b1) + b2)


def jac_analytic(x):
    h = torch.tanh(W1 @ x + b1)
    y = torch.tanh(W2 @ h + b2)
    return ((1 - y * y).unsqueeze(1) * W2) @ ((1 - h * h).unsqueeze(1) * W1)


xm, XB = det((64,), 0.37), det((32, 64), 0.37)
case(f"Jacrev/{threads}", lambda: jacrev(mlp)(xm), jac_analytic(xm))
case(f"Jacfwd/{threads}", lambda: jacfwd(mlp)(xm), jac_analytic(xm))
case(f"VmapJacrev/{threads}", lambda: vmap(jacrev(mlp))(XB), torch.stack([jac_analytic(x) for x in XB]))
case(f"JacobianAnalytic/{threads}", lambda: jac_analytic(xm))


# The depth table's function: the same ten ops in the same order as nested_transforms.cpp.
def nine_ops(x):
    return torch.exp(torch.tanh((torch.square(torch.cos(torch.sin(x) * x + x)) - x) * 0.5))


def ten_ops(x):
    return nine_ops(x).sum()


def nested(levels, transform):
    f = ten_ops
    for _ in range(levels):
        f = transform(f)
    return f


if threads == 1:
    x0 = torch.tensor(0.7)
    case("DepthEager", lambda: ten_ops(x0))
    for levels in range(1, 5):
        xv, f_vmap, f_grad = det((2,) * levels, 0.37), nested(levels, vmap), nested(levels, grad)
        case(f"DepthVmap/{levels}", lambda: f_vmap(xv), nine_ops(xv))
        case(f"DepthGrad/{levels}", lambda: f_grad(x0))
