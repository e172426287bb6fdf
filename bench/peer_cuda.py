"""torch.func on the GPU, beside bench/cuda_ops.cpp (scripts/gpu_run_bundle.sh runs it when
torch with CUDA is importable): the same add, mm and per-sample MLP and CNN gradients.
Prints one line per case: "<case> <median ms> [peak MiB]"."""
import statistics
import time

import torch
from torch.func import functional_call, grad, vmap

assert torch.cuda.is_available(), "no CUDA device for torch"
dev = torch.device("cuda")


def median_ms(fn, repeats=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def peak_mib(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


n = 64 << 20
a = torch.full((n,), 1.5, device=dev)
b = torch.full((n,), 2.5, device=dev)
print(f"TorchAdd64M {median_ms(lambda: a + b):.4f}")
print(f"TorchDeviceCopy64M {median_ms(lambda: b.copy_(a)):.4f}")
print(f"TorchSum64M {median_ms(lambda: a.sum()):.4f}")
m = torch.full((4096, 4096), 0.5, device=dev)
k = torch.full((4096, 4096), 0.25, device=dev)
torch.backends.cuda.matmul.allow_tf32 = False
print(f"TorchMm4096 {median_ms(lambda: m @ k):.4f}")

model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)).to(dev)
params = {name: p.detach() for name, p in model.named_parameters()}


def sample_loss(p, x, y):
    logits = functional_call(model, p, (x.unsqueeze(0),))
    return torch.nn.functional.cross_entropy(logits, y.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))
for batch in (256, 4096):
    x = torch.randn(batch, 784, device=dev)
    y = torch.arange(batch, device=dev) % 10
    run = lambda: per_sample(params, x, y)  # noqa: E731
    print(f"TorchMlpVmapGrad/{batch} {median_ms(run):.4f} {peak_mib(run):.1f}")


class Cnn(torch.nn.Module):
    """The examples' CNN (examples/models.h): conv 1->32 3x3, conv 32->64 3x3, a
    2x2 max pool, fc 9216->128, fc 128->10, relu between."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.fc1 = torch.nn.Linear(9216, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = torch.relu(self.conv2(h))
        h = torch.nn.functional.max_pool2d(h, 2).flatten(1)
        return self.fc2(torch.relu(self.fc1(h)))


torch.backends.cudnn.allow_tf32 = False
cnn = Cnn().to(dev)
cnn_params = {name: p.detach() for name, p in cnn.named_parameters()}


def cnn_sample_loss(p, x, y):
    logits = functional_call(cnn, p, (x.unsqueeze(0),))
    return torch.nn.functional.cross_entropy(logits, y.unsqueeze(0))


cnn_per_sample = vmap(grad(cnn_sample_loss), in_dims=(None, 0, 0))
for batch in (64, 256):
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.arange(batch, device=dev) % 10
    run = lambda: cnn_per_sample(cnn_params, x, y)  # noqa: E731
    print(f"TorchCnnVmapGrad/{batch} {median_ms(run):.4f} {peak_mib(run):.1f}")
