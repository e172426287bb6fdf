"""PyTorch peer of bench/conv2d.cpp: conv2d forward, input gradient and weight gradient
on the two convolutions of a small MNIST CNN (batch 64, float32), at 1 and 2 threads.

    /usr/bin/python3 bench/peer_conv2d.py                         # PyTorch alone
    /usr/bin/python3 bench/peer_conv2d.py --strata build/bench/conv2d   # side by side

With --strata it runs Strata's benchmark binary in the same session and prints both, the
fastest of 5 timed runs each, with the ratio PyTorch / Strata (> 1: Strata is faster). Debian's python3-torch 1.13 runs
float32 convolutions through oneDNN (MKL-DNN).
"""
import argparse
import json
import subprocess
import time

import torch
import torch.nn.functional as F

LAYERS = [(64, 1, 28, 32, 3), (64, 32, 26, 64, 3)]  # batch, in, size, out, kernel
PASSES = ["Conv2dForward", "Conv2dBackwardInput", "Conv2dBackwardWeight"]


def seconds_per_call(fn, min_time=0.3, repetitions=5):
    """The fastest of `repetitions` timed runs of at least min_time each: on a shared
    machine the minimum is the measurement least disturbed by other processes."""
    fn()
    fn()
    runs = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        runs.append(elapsed / calls)
    return min(runs)


def torch_times():
    times = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for index, (n, c, size, o, k) in enumerate(LAYERS):
            x = torch.randn(n, c, size, size)
            w = torch.randn(o, c, k, k)
            b = torch.randn(o)
            gy = torch.randn(n, o, size - k + 1, size - k + 1)

            def backward(mask):
                return torch.ops.aten.convolution_backward(
                    gy, x, w, [o], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask)

            with torch.no_grad():
                fns = {
                    "Conv2dForward": lambda: F.conv2d(x, w, b),
                    "Conv2dBackwardInput": lambda: backward([True, False, False]),
                    "Conv2dBackwardWeight": lambda: backward([False, True, False]),
                }
                for name, fn in fns.items():
                    times[(name, index, threads)] = seconds_per_call(fn) * 1e3
    return times


def strata_times(binary):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_repetitions=5",
                          "--benchmark_min_time=0.3"],
                         check=True, capture_output=True, text=True).stdout
    times = {}
    for row in json.loads(out)["benchmarks"]:
        if row.get("run_type") != "iteration":
            continue
        name, layer, threads = row["run_name"].split("/")[:3]
        key = (name, int(layer.split(":")[1]), int(threads.split(":")[1]))
        times[key] = min(times.get(key, float("inf")), row["real_time"])
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", help="path of Strata's conv2d benchmark binary")
    args = parser.parse_args()
    strata = strata_times(args.strata) if args.strata else {}
    peer = torch_times()
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}")
    print("| pass | layer | threads | Strata ms | PyTorch ms | PyTorch / Strata |")
    print("|---|---|---|---|---|---|")
    for name in PASSES:
        for index, (n, c, size, o, k) in enumerate(LAYERS):
            for threads in (1, 2):
                key = (name, index, threads)
                mine = strata.get(key)
                layer = f"{c}->{o} {k}x{k} on [{n},{c},{size},{size}]"
                ratio = f"{peer[key] / mine:.2f}x" if mine else "-"
                mine_text = f"{mine:.2f}" if mine else "-"
                print(f"| {name} | {layer} | {threads} | {mine_text} | {peer[key]:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
