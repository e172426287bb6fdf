#!/usr/bin/env python3
"""Runs `nested_transforms --profile=NAME --json` and checks the JSON it prints:
it parses, has every field, and its numbers agree with each other (self times add
up to the total, FLOPs per op and per level both add up to total_flops). The
VmapGrad workload runs its user-level ops under vmap/grad and has batching rules
for all of them (no loop fallback)."""
import json
import subprocess
import sys

OP_FIELDS = {"op": str, "level": str, "depth": int, "calls": int, "time_ns": int,
             "self_ns": int, "flops": int, "loop_fallback_calls": int}
LEVEL_FIELDS = {"level": str, "root_calls": int, "time_ns": int, "flops": int}


def check(binary, workload):
    out = subprocess.run([binary, f"--profile={workload}", "--json"], check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["workload"] == workload, doc["workload"]
    prof = doc["profile"]
    for key in ("total_ns", "total_flops", "loop_fallback_calls", "ops", "levels"):
        assert key in prof, f"{workload}: no field {key}"
    assert prof["ops"], f"{workload}: no ops"
    for entries, fields in ((prof["ops"], OP_FIELDS), (prof["levels"], LEVEL_FIELDS)):
        for entry in entries:
            for name, kind in fields.items():
                assert isinstance(entry.get(name), kind), f"{workload}: {entry} lacks {name}"
    ops, levels = prof["ops"], prof["levels"]
    assert sum(o["self_ns"] for o in ops) == prof["total_ns"], workload
    assert sum(o["flops"] for o in ops) == prof["total_flops"], workload
    assert sum(l["flops"] for l in levels) == prof["total_flops"], workload
    assert sum(o["loop_fallback_calls"] for o in ops) == prof["loop_fallback_calls"], workload
    for o in ops:
        assert o["depth"] == (0 if o["level"] == "none" else o["level"].count("/") + 1), o
    return prof


def main():
    binary = sys.argv[1]
    prof = check(binary, "VmapGrad")
    levels = {o["level"] for o in prof["ops"]}
    assert {"vmap/grad", "vmap", "none"} <= levels, levels
    assert prof["loop_fallback_calls"] == 0, prof["loop_fallback_calls"]
    assert prof["total_flops"] > 0
    user_tanh = [o for o in prof["ops"] if o["op"] == "strata::tanh" and o["level"] == "vmap/grad"]
    assert len(user_tanh) == 1 and user_tanh[0]["calls"] == 2, user_tanh  # two layers
    for workload in ("Hessian", "GradCubed", "DepthVmap4"):
        check(binary, workload)
    print("profile JSON ok")


if __name__ == "__main__":
    main()
