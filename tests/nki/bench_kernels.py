#!/usr/bin/python3
"""The README table of the NKI-style kernels (tb/python/README.md, "Benchmark"): each kernel of
check_kernels.py at full size on the RTL core in co-simulation (RTL and golden cycles), its
tensor-engine utilization and MACs per cycle, the wall time of the compile and of the run, and
the compiler's DMA policy against a naive one (every transfer whole, on one engine, in program
order) on the golden core, side by side in one run.

  PYTHONPATH=build/python tests/nki/bench_kernels.py [--engine cosim|golden] [CASE ...]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_kernels  # noqa: E402
import ncore.nki as nki  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", choices=[[], *check_kernels.CASES], default=[])
    ap.add_argument("--engine", choices=["cosim", "golden"], default="cosim")
    ap.add_argument("--seed", type=int, default=28)
    a = ap.parse_args()
    print("| kernel | RTL cycles | golden cycles | golden / RTL | TE utilization | MACs / cycle | "
          "compile (s) | run (s) | naive DMA cycles (golden) | naive / compiler |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in a.cases or list(check_kernels.CASES):
        kernel, inputs, _, _, _ = check_kernels.CASES[name](np.random.default_rng(a.seed), 128)
        r = nki.benchmark_kernel(kernel, *inputs, engine=a.engine, size=128)
        naive = nki.benchmark_kernel(kernel, *inputs, engine="golden", size=128, dma_policy=nki.DmaPolicy.naive())
        golden = r["golden_cycles"]
        rtl = f"{r['cycles']:,}" if a.engine == "cosim" else "-"
        ratio = f"{golden / r['cycles']:.3f}" if a.engine == "cosim" else "-"
        print(f"| {name} | {rtl} | {golden:,} | {ratio} | {100 * r['te_utilization']:.1f}% | "
              f"{r['te_macs'] / r['cycles']:,.0f} | {r['compile_seconds']:.3f} | {r['run_seconds']:.1f} | "
              f"{naive['golden_cycles']:,} | {naive['golden_cycles'] / golden:.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
