#!/usr/bin/python3
"""CTest Nki.ProfileTraceHasEveryTrack: simulate_kernel(trace=...) (and so `ncore run
--trace-json` and `ncore tlm run --trace-json`) writes a Chrome/Perfetto trace-event file in which
  - every instruction the core ran is one slice, on its queue's track or its DMA engine's,
    named with its kernel file:line;
  - the slices of one track nest (a viewer draws nothing else);
  - each queue's semaphore waits are slices on a track of their own, and add up to the run's
    semaphore-wait cycles;
  - instruction-fetch stalls have tracks of their own;
on the golden core, the RTL core (co-simulation) and a chip of two cores. nki.benchmark and
nki.profile report the latency in microseconds and write the trace where asked.
With --screenshot PNG it also opens the trace in Chromium's trace viewer (scripts/trace-screenshot).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ncore.nki as nki  # noqa: E402

nki.alias_nki()
from current import matmul, tensor_add  # noqa: E402

failures = []


def check(cond, what):
    if cond:
        print(f"ok   {what}")
    else:
        failures.append(what)


def tracks_and_slices(path):
    events = json.load(open(path))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] == "X"]
    return names, slices


def nested(slices):
    """Whether the slices of every track nest: each starts after the previous ends or ends inside it."""
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for track in by_track.values():
        open_ends = []
        for e in sorted(track, key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= e["ts"] + 1e-9:
                open_ends.pop()
            if open_ends and e["ts"] + e["dur"] > open_ends[-1] + 1e-9:
                return False
            open_ends.append(e["ts"] + e["dur"])
    return True


def check_run(label, report, path, source, cores=1):
    names, slices = tracks_and_slices(path)
    track_names = set(names.values())
    instr = [e for e in slices if "complete_cycle" in e.get("args", {})]
    check(len(instr) == report["instructions"], f"{label}: {len(instr)} instruction slices for the run's "
                                                f"{report['instructions']} instructions")
    file = os.path.basename(source.__file__)
    sourced = [e for e in instr if e["args"].get("source", "").rsplit("/", 1)[-1].startswith(file + ":")]
    named = all(e["name"].endswith(e["args"]["source"].rsplit("/", 1)[-1]) for e in sourced)
    check(named and len(sourced) == len(instr), f"{label}: all {len(sourced)} instruction slices named with their "
                                                f"kernel line ({file}:N)")
    lines = {e["args"]["source"].rsplit(":", 1)[1] for e in sourced}
    compute = next(n for n, text in enumerate(open(source.__file__), 1)
                   if "nisa.nc_matmul(dst=acc" in text or "nisa.tensor_tensor(" in text)
    check(str(compute) in lines, f"{label}: the compute line ({file}:{compute}) has its slices")
    for want in ("dve", "dma 0", "dma 15", "dve semaphore waits", "sp instruction fetch"):
        check(any(n.endswith(want) for n in track_names), f"{label}: a track '{want}'")
    dma_slices = [e for e in instr if e["name"].startswith("dma_copy")]
    check(all(" dma " in names[(e["pid"], e["tid"])] for e in dma_slices),
          f"{label}: every dma_copy on its DMA engine's track")
    check(nested(slices), f"{label}: the slices of each track nest")
    if cores == 1:
        waits = [e for e in slices if e["name"].startswith("wait ")]
        per_queue = {}
        for e in waits:
            q = e["args"]["queue"]
            per_queue[q] = per_queue.get(q, 0) + e["args"]["end_cycle"] - e["args"]["begin_cycle"]
        expected = {q: w for q, w in report["wait_cycles"].items() if w}
        check(per_queue == expected, f"{label}: semaphore-wait slices {per_queue} add up to the run's wait cycles "
                                     f"{expected}")
    else:
        cores_seen = {n.split()[1] for n in track_names if n.startswith("core ")}
        check(len(cores_seen) == cores, f"{label}: tracks for each of the {cores} cores")


def run(label, kernel, args, ref, source, **options):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        r = nki.benchmark_kernel(kernel, *args, trace=path, **options)
        check(np.abs(r["outputs"] - ref).max() < 1e-3, f"{label}: the outputs still right with a trace")
        check_run(label, r, path, source, options.get("cores", 1))


rng = np.random.default_rng(4)
small = (rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 64)).astype(np.float32))
full = (rng.standard_normal((256, 128)).astype(np.float32), rng.standard_normal((256, 512)).astype(np.float32))
run("golden core, size 128", matmul.matmul_tiled, full, full[0].T.astype(np.float64) @ full[1], matmul)
run("RTL core in co-simulation, size 8", matmul.matmul_tiled, small, small[0].T.astype(np.float64) @ small[1], matmul,
    engine="cosim", size=8)
a, b = full[1], full[1][::-1].copy()
run("a chip of two cores", tensor_add.tensor_add_kernel[2], (a, b), a.astype(np.float64) + b, tensor_add, cores=2)

with tempfile.TemporaryDirectory() as tmp:
    bench = nki.benchmark(warmup=1, iters=3, timing="uniform")(matmul.matmul_tiled)
    bench(*full)
    us = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    report = bench.benchmark_result.report
    check(us > 0 and us == report["microseconds"] == bench.benchmark_result.nc_latency.get_latency_percentile(99),
          f"nki.benchmark: p50 = p99 = {us:.4f} us, the run's {report['cycles']} cycles")
    # At trn2's timing (the default): the same outputs, a time in ns at the 4.8 GHz base clock,
    # the tensor engine's cycles at 2.4 GHz, and slower than the uniform timing (fixed costs,
    # slower clocks).
    silicon = nki.benchmark(warmup=1, iters=3)(matmul.matmul_tiled)
    out = silicon(*full)
    r2 = silicon.benchmark_result.report
    check(np.array_equal(out, report["outputs"]) and r2["time_ns"] == r2["cycles"] / 4.8
          and r2["engine_cycles"]["pe"] == r2["cycles"] // 2 and r2["microseconds"] > us,
          f"nki.benchmark (trn2, the default): {r2['microseconds']:.4f} us against {us:.4f} at uniform, the same outputs")
    # A launch overhead (the timing's launch.overhead_ns) is reported beside the kernel's time and
    # added to nki.benchmark's latency, as neuron-bench's includes it; the kernel's time is as before.
    launch = os.path.join(tmp, "launch.json")
    with open(launch, "w") as f:
        f.write('{"preset": "trn2", "launch": {"overhead_ns": 5000}}')
    launched = nki.benchmark(warmup=1, iters=3, timing=launch)(matmul.matmul_tiled)
    launched(*full)
    r3 = launched.benchmark_result.report
    p50 = launched.benchmark_result.nc_latency.get_latency_percentile(50)
    check(r3["launch_overhead_ns"] == 5000 and r3["microseconds"] == r2["microseconds"]
          and abs(p50 - (r2["microseconds"] + 5.0)) < 1e-9,
          f"nki.benchmark with a 5 us launch overhead: p50 {p50:.4f} us = the kernel's {r3['microseconds']:.4f} + 5")
    prof = nki.profile(working_directory=tmp, save_trace_name="mm.json")(matmul.matmul_tiled)
    prof(*full)
    check(os.path.exists(os.path.join(tmp, "mm.json")), "nki.profile: the trace in its working directory")
    try:
        nki.profile(working_directory=tmp, save_trace_name="mm.json")
        failures.append("nki.profile: an existing trace overwritten without overwrite=True")
    except nki.KernelError as e:
        print(f"ok   nki.profile refuses to overwrite: {e}")
    if len(sys.argv) > 2 and sys.argv[1] == "--screenshot":
        shot = subprocess.run([os.path.join(ROOT, "scripts", "trace-screenshot"), os.path.join(tmp, "mm.json"),
                               sys.argv[2]], capture_output=True, text=True)
        print(shot.stdout + shot.stderr, end="")
        check(shot.returncode == 0 and os.path.getsize(sys.argv[2]) > 10000,
              "the trace opens in Chromium's trace viewer (a screenshot written)")

if failures:
    print("\n".join("FAIL " + f for f in failures))
sys.exit(1 if failures else 0)
