#!/usr/bin/python3
"""CTest Llama.Sweep: scripts/sweep's llm-layer grids (issue 51's sweeps run through issue 50's
sweep engine). Two batch sizes of Llama-3.1-8B's layer on a chip (tp 8, a short context, the
layer alone): the CSV has a passing row per point, in order, and point 0's layer_us is the one a
direct scripts/llm-layer run of that point gives; the plot is written. A grid naming an unknown
model, or an axis the driver does not have, is refused naming the key (exit 1).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SWEEP, DRIVER = os.path.join(ROOT, "scripts", "sweep"), os.path.join(ROOT, "scripts", "llm-layer")
OPTIONS = ["--system", "chip", "--tp", "8", "--context", "256", "--layer-only"]
failures = []


def report(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def sweep(work, grid, name):
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(grid, f)
    return subprocess.run([sys.executable, SWEEP, path, "--jobs", "2", "--timeout", "600", "--out",
                           os.path.join(work, name)], capture_output=True, text=True), path


with tempfile.TemporaryDirectory() as work:
    grid = {"run": "llm-layer", "models": ["llama-3.1-8b"], "axes": {"batch": [1, 2]}, "options": OPTIONS,
            "metric": "layer_us"}
    p, _ = sweep(work, grid, "batch")
    report(p.returncode == 0, f"the sweep runs (exit {p.returncode}) {p.stderr.strip()[-300:]}")
    rows = list(csv.DictReader(open(os.path.join(work, "batch", "sweep.csv")))) if p.returncode == 0 else []
    report([(r["program"], r["batch"], r["status"]) for r in rows] == [("llama-3.1-8b", "1", "pass"),
                                                                       ("llama-3.1-8b", "2", "pass")],
           f"a passing row per point, in order: {[(r['program'], r['batch'], r['status']) for r in rows]}")
    report(os.path.getsize(os.path.join(work, "batch", "sweep.png")) > 0 if rows else False, "the plot is written")
    if rows:
        direct = subprocess.run([sys.executable, DRIVER, "--model", "llama-3.1-8b", "--batch", "1", *OPTIONS, "--json"],
                                capture_output=True, text=True)
        want = json.loads(direct.stdout)["layer_us"] if direct.returncode == 0 else None
        report(want is not None and float(rows[0]["layer_us"]) == want,
               f"point 0's layer_us {rows[0]['layer_us']} is a direct run's ({want})")
    for key, bad, needle in (("models", ["llama-9"], "key 'models': expected a non-empty list of the driver's models"),
                             ("axes", {"heads": [8]}, "key 'axes.heads': expected one of the driver's options")):
        p, path = sweep(work, {**grid, key: bad}, f"bad_{key}")
        report(p.returncode == 1 and needle in p.stdout + p.stderr,
               f"a grid with {key} {bad}: exit {p.returncode}, says {(p.stdout + p.stderr).strip()[-160:]!r}")
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
