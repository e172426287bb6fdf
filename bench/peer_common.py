"""Pieces shared by the PyTorch side of a side-by-side benchmark (bench/peer_*.py, run as
`python3 bench/peer_X.py <peer-dir> <threads>`) and by the report that puts it next to
Strata's Google Benchmark JSON (bench/run_*_comparison.sh)."""
import json
import sys


def peer_setup(argv):
    """Puts the peer scripts (argv[1]) on the import path and gives torch argv[2] intra-op
    threads; returns that thread count."""
    sys.path.insert(0, argv[1])
    import torch

    threads = int(argv[2])
    torch.set_num_threads(threads)
    return threads


def report(name, ns):
    """One case's line, as strata_medians' counterpart peer_medians reads it."""
    print(f"{name} {ns:.0f}", flush=True)


def peer_medians(path):
    """{case: ns} from the lines `report` printed."""
    medians = {}
    with open(path) as lines:
        for line in lines:
            name, ns = line.split()[:2]
            medians[name] = float(ns)
    return medians


def strata_medians(path):
    """From Google Benchmark JSON with repetitions: ({run name: median real time in ns},
    {run name: error message} for the benchmarks that failed, e.g. their result check)."""
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    medians, errors = {}, {}
    with open(path) as report_file:
        benchmarks = json.load(report_file)["benchmarks"]
    for b in benchmarks:
        if b.get("error_occurred"):
            errors[b["run_name"]] = b.get("error_message", "failed")
        elif b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b["real_time"] * unit[b["time_unit"]]
    return medians, errors
