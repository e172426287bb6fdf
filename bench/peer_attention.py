"""PyTorch peer of bench/attention.cpp: scaled dot-product attention on [32, 4, L, 32]
Float32, L = 64 and 128, with and without the causal mask, at 1 and 2 threads: the
forward alone, and the gradient of sum(attention(q, k, v)) w.r.t. q, k and v.

    /usr/bin/python3 bench/peer_attention.py                               # PyTorch alone
    /usr/bin/python3 bench/peer_attention.py --strata build/bench/attention  # side by side
    taskset -c 1 /usr/bin/python3 bench/peer_attention.py --strata build/bench/attention \
        --threads 1 --cpu-time    # one pinned thread, CPU time (a loaded machine)

PyTorch 1.13 has no public fused attention on the CPU; the peer is its math written out
(the same ops PyTorch 2's CPU path composes): softmax(q k^T / sqrt(E) masked) v. With
--strata it runs Strata's binary in the same session; each side's time is the fastest of
5 timed runs, the ratio PyTorch / Strata (> 1: Strata is faster).
"""
import argparse
import json
import math
import subprocess
import time

import torch

BATCH, HEADS, EMBED = 32, 4, 32
LENGTHS = (64, 128)


def seconds_per_call(fn, clock, min_time=0.3, repetitions=5):
    """The fastest of `repetitions` timed runs of at least min_time each, by `clock`."""
    fn()
    fn()
    runs = []
    for _ in range(repetitions):
        calls, start = 0, clock()
        while True:
            fn()
            calls += 1
            elapsed = clock() - start
            if elapsed >= min_time:
                break
        runs.append(elapsed / calls)
    return min(runs)


def attention(q, k, v, causal):
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.size(-1)))
    if causal:
        length = q.size(-2)
        after = torch.ones(length, length, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(after, float("-inf"))
    return torch.softmax(scores, -1) @ v


def torch_times(thread_counts, clock):
    times = {}
    gen = torch.Generator().manual_seed(26)
    for threads in thread_counts:
        torch.set_num_threads(threads)
        for length in LENGTHS:
            q, k, v = (torch.randn(BATCH, HEADS, length, EMBED, generator=gen) for _ in range(3))
            for causal in (0, 1):
                def forward():
                    with torch.no_grad():
                        return attention(q, k, v, causal)

                def grad():
                    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                    return torch.autograd.grad(attention(*leaves, causal).sum(), leaves)

                times[("AttentionForward", length, causal, threads)] = seconds_per_call(forward, clock)
                times[("AttentionGrad", length, causal, threads)] = seconds_per_call(grad, clock)
    return {key: t * 1e3 for key, t in times.items()}


def strata_times(binary, thread_counts, field):
    threads = "|".join(str(t) for t in thread_counts)
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_repetitions=5",
                          "--benchmark_min_time=0.3", f"--benchmark_filter=/threads:({threads})/"],
                         check=True, capture_output=True, text=True).stdout
    times = {}
    for row in json.loads(out)["benchmarks"]:
        if row.get("run_type") != "iteration":
            continue
        name, *args = row["run_name"].split("/")
        key = (name, *(int(a.split(":")[1]) for a in args[:3]))
        times[key] = min(times.get(key, float("inf")), row[field])
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", help="path of Strata's attention benchmark binary")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="thread counts to run (default: 1 2)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="compare process CPU time, not wall time (for a loaded machine)")
    args = parser.parse_args()
    field = "cpu_time" if args.cpu_time else "real_time"
    strata = strata_times(args.strata, args.threads, field) if args.strata else {}
    peer = torch_times(args.threads, time.process_time if args.cpu_time else time.perf_counter)
    print(f"torch {torch.__version__}")
    print("| pass | L | causal | threads | Strata ms | PyTorch ms | PyTorch / Strata |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(peer):
        mine = strata.get(key)
        ratio = f"{peer[key] / mine:.2f}x" if mine else "-"
        mine_text = f"{mine:.2f}" if mine else "-"
        name, length, causal, threads = key
        print(f"| {name} | {length} | {causal} | {threads} | {mine_text} | {peer[key]:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
