#!/usr/bin/python3
"""Writes the .npy inputs of the system workloads next to this script (seeded: the same bytes on
every run). BF16 arrays hold raw bits as <u2 (tests/programs/README.md).

  mlp_xt.npy  [64, 128]   X^T: 128 tokens of width 64      (tp_mlp.s)
  mlp_w1.npy  [64, 512]   W1: 64 -> 512                    (tp_mlp.s; core k takes columns 64k..)
  mlp_w2.npy  [512, 64]   W2: 512 -> 64                    (tp_mlp.s; core k takes rows 64k..)
  dp_x.npy    [576, 64]   a pool of activations            (dp_step.s; rank r, layer l: rows 4r+l..+64)
  dp_dy.npy   [576, 64]   a pool of output gradients       (dp_step.s; the same rows)
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bf16_bits(a):
    """FP32 values to BF16 raw bits, rounded to nearest even."""
    u = np.asarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def main():
    rng = np.random.default_rng(2026)
    arrays = {
        "mlp_xt": rng.standard_normal((64, 128)),
        "mlp_w1": rng.standard_normal((64, 512)) / 8,
        "mlp_w2": rng.standard_normal((512, 64)) / 16,
        "dp_x": rng.standard_normal((576, 64)),
        "dp_dy": rng.standard_normal((576, 64)) / 4,
    }
    for name, values in arrays.items():
        np.save(os.path.join(HERE, name + ".npy"), bf16_bits(values))


if __name__ == "__main__":
    main()
