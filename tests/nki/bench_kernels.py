#!/usr/bin/python3
"""The README table of the NKI-style kernels (tb/python/README.md, "Benchmark"): each kernel of
check_kernels.py (both dialects) at full size on the RTL core in co-simulation: its program's
instructions, the wall time of tracing and compiling it, the simulated microseconds, each
engine's utilization (PE, ACT, DVE, and the DMA engines behind sp), RTL and golden cycles, the
wall time of the run, and the compiler's DMA policy against a naive one (every transfer whole,
on one engine, in program order) on the golden core, side by side in one run.

  PYTHONPATH=build/python tests/nki/bench_kernels.py [--engine cosim|golden] [CASE ...]
  PYTHONPATH=build/python tests/nki/bench_kernels.py --sweep [--engine golden|rtl] [CASE ...]

--sweep compares DMA policies instead: the split into up to 1, 4, 8 or 16 pieces, loads not
hoisted or hoisted past one store (the default: past two), and stores on engines of their own.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_kernels  # noqa: E402
import ncore.nki as nki  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", metavar="CASE", help=f"one of {', '.join(check_kernels.CASES)} (default: all)")
    ap.add_argument("--engine", choices=["cosim", "golden", "rtl"], default=None)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--sweep", action="store_true")
    a = ap.parse_args()
    unknown = [c for c in a.cases if c not in check_kernels.CASES]
    if unknown:
        ap.error(f"unknown case {', '.join(unknown)} (expected one of {', '.join(check_kernels.CASES)})")
    if a.sweep:
        return sweep(a.cases or list(check_kernels.CASES), a.engine or "golden", a.seed)
    a.engine = a.engine or "cosim"
    print("| kernel | instructions | trace + compile (s) | simulated us | PE | ACT | DVE | DMA | RTL cycles | "
          "golden cycles | golden / RTL | run (s) | naive DMA cycles (golden) | naive / compiler |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.cases or list(check_kernels.CASES):
        kernel, inputs, *_ = check_kernels.CASES[name](np.random.default_rng(a.seed), 128)
        nki.clear_trace_cache()  # each compile timed from scratch
        r = nki.benchmark_kernel(kernel, *inputs, engine=a.engine, size=128)
        naive = nki.benchmark_kernel(kernel, *inputs, engine="golden", size=128, dma_policy=nki.DmaPolicy.naive())
        golden = r["golden_cycles"]
        u = r["utilization"]
        rtl = f"{r['cycles']:,}" if a.engine == "cosim" else "-"
        ratio = f"{golden / r['cycles']:.3f}" if a.engine == "cosim" else "-"
        print(f"| {name} | {r['instructions']:,} | {r['compile_seconds']:.3f} | {r['microseconds']:.1f} | "
              f"{100 * u['pe']:.0f}% | {100 * u['act']:.0f}% | {100 * u['dve']:.0f}% | {100 * u['sp']:.0f}% | {rtl} | "
              f"{golden:,} | {ratio} | {r['run_seconds']:.1f} | {naive['golden_cycles']:,} | "
              f"{naive['golden_cycles'] / golden:.2f}x |", flush=True)


def sweep(names, engine, seed):
    policies = {"split 1": nki.DmaPolicy(split=1), "split 4": nki.DmaPolicy(split=4),
                "split 8": nki.DmaPolicy(split=8), "split 16 (default)": nki.DmaPolicy(),
                "not hoisted": nki.DmaPolicy(hoist_depth=0), "hoisted past 1 store": nki.DmaPolicy(hoist_depth=1),
                "4 store engines": nki.DmaPolicy(store_engines=4)}
    print(f"| kernel ({engine} cycles) | " + " | ".join(policies) + " |")
    print("|---" * (len(policies) + 1) + "|")
    for name in names:
        kernel, inputs, *_ = check_kernels.CASES[name](np.random.default_rng(seed), 128)
        cycles = [nki.benchmark_kernel(kernel, *inputs, engine=engine, size=128, dma_policy=p)["cycles"]
                  for p in policies.values()]
        best = min(cycles)
        print(f"| {name} | " + " | ".join(f"**{c:,}**" if c == best else f"{c:,}" for c in cycles) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
