#!/usr/bin/python3
"""The NKI tutorials' published benchmark shapes on ncore's golden core (size 128), in one run:
  - matmul [4096, 8192] @ [8192, 8192] BF16 (current dialect, both operands in blocks);
  - LayerNorm on (4096, 8192) FP32 (both dialects);
  - Mamba's selective scan at seq_len 8192, 4096 channels, 16 states (legacy);
  - Stable Diffusion attention at 4096 x 128 (legacy, BF16 matmuls).
Per kernel: its program's instructions, the wall time of tracing and compiling it and the rate,
the simulated microseconds (ncore's clock), and each queue's utilization. Runs whose data this
machine holds but whose arithmetic would take the golden core minutes run timing-only (`ncore
run --no-data`: the same cycles, no data). The RTL core is not run at these sizes (the
co-simulation of the full-size table in tb/python/README.md covers its agreement).

  PYTHONPATH=build/python tests/nki/bench_production.py [--only NAME ...]
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as nki  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402

nki.alias_neuronxcc()
nki.alias_nki()
from current import layernorm as current_layernorm  # noqa: E402
from current import matmul as current_matmul  # noqa: E402
from layernorm_bn import layernorm_bn_kernel  # noqa: E402
from mamba import mamba_kernel  # noqa: E402
from sd_attention import sd_attention_kernel  # noqa: E402

bf16 = nki.language.bfloat16


def matmul_inputs():
    return (nki.typed(np.zeros((8192, 4096), np.float32), bf16), nki.typed(np.zeros((8192, 8192), np.float32), bf16),
            256, 512)


def layernorm_inputs():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((4096, 8192)).astype(np.float32), rng.standard_normal((1, 8192)).astype(np.float32),
            rng.standard_normal((1, 8192)).astype(np.float32))


def mamba_inputs():
    shape = (1, 4096, 8192)
    return (np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.zeros((4096, 16), np.float32),
            np.zeros((1, 16, 8192), np.float32), np.zeros((1, 16, 8192), np.float32))


def attention_inputs():
    return tuple(np.zeros((4096, 128), np.float32) for _ in range(3))


# name, dialect, shape, kernel, inputs, timing only
RUNS = [
    ("matmul", "current", "[4096, 8192] @ [8192, 8192] BF16", current_matmul.matmul_fully_blocked, matmul_inputs, True),
    ("layernorm", "legacy", "(4096, 8192) FP32", layernorm_bn_kernel, layernorm_inputs, False),
    ("layernorm", "current", "(4096, 8192) FP32", current_layernorm.layernorm_kernel, layernorm_inputs, False),
    ("mamba", "legacy", "seq 8192, 4096 channels, 16 states", mamba_kernel, mamba_inputs, True),
    ("sd_attention", "legacy", "4096 x 128", sd_attention_kernel, attention_inputs, True),
]


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args()
    print("| kernel | dialect | shape | instructions | trace + compile s | instructions / s | simulated us | "
          "PE | ACT | DVE | DMA | run s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, dialect, shape, kernel, inputs, timing_only in RUNS:
        if a.only and name not in a.only:
            continue
        args = inputs()
        r = nki.benchmark_kernel(kernel, *args, timing_only=timing_only)
        u = r["utilization"]
        rate = r["instructions"] / r["compile_seconds"]
        print(f"| {name} | {dialect} | {shape}{' (timing only)' if timing_only else ''} | {r['instructions']:,} | "
              f"{r['compile_seconds']:.1f} | {rate:,.0f} | {r['microseconds']:,.0f} | {100 * u['pe']:.0f}% | "
              f"{100 * u['act']:.0f}% | {100 * u['dve']:.0f}% | {100 * u['sp']:.0f}% | {r['run_seconds']:.0f} |",
              flush=True)
        del args, r
    return 0


if __name__ == "__main__":
    sys.exit(main())
