#!/usr/bin/python3
"""The example programs built on issue 29's engine operations, against float64 NumPy.

    check_examples.py NCORE PROGRAMS_DIR causal_attention|layernorm|dma_transpose [--engine golden|cosim]
                      [--run-option OPTION ...]

The program runs under `ncore run` with its input tensors marked `output` as well, so the
inputs come back as .npy files exactly as the program's own generator made them; the reference
is then computed from them in float64 (independent of the model under test) and the output
compared within the tolerance each check states. Exit status 1 on any element outside it.
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def bf16_to_f64(bits):
    return (bits.astype("<u4") << 16).view("<f4").astype(np.float64)


def run(ncore, program, engine, inputs, extra):
    """Runs `program` with `inputs` also written out; returns {name: array}."""
    text = program.read_text()
    for name in inputs:
        text, n = re.subn(rf"^(\.tensor {name} .*)$", r"\1 output", text, flags=re.M)
        if n != 1:
            sys.exit(f"check_examples: {program}: no .tensor line for {name}")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / program.name
        copy.write_text(text)
        cmd = [ncore, "run", str(copy), "--engine", engine, "--outputs", tmp] + extra
        print(" ".join(cmd), flush=True)
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(done.stdout)
        if done.returncode != 0:
            sys.exit(f"check_examples: ncore run exited with {done.returncode}")
        return {p.stem: np.load(p) for p in Path(tmp).glob("*.npy")}


def compare(name, got, want, tolerance, why):
    err = np.abs(got - want)
    worst = np.unravel_index(np.argmax(err - tolerance), err.shape)
    bad = int(np.count_nonzero(err > tolerance))
    print(f"{name}: {got.size} elements, max |error| {err.max():.3e}, worst at {tuple(map(int, worst))}: "
          f"found {got[worst]:.6g}, float64 {want[worst]:.6g}, tolerance there {np.broadcast_to(tolerance, err.shape)[worst]:.3e}")
    print(f"  tolerance: {why}")
    if bad:
        print(f"FAIL: {bad} elements outside the tolerance")
        return False
    return True


def causal_attention(t):
    qt, kt, v = bf16_to_f64(t["QT"]), bf16_to_f64(t["KT"]), bf16_to_f64(t["V"])
    o = bf16_to_f64(t["O"])
    n, d = qt.shape[1], qt.shape[0]
    s = qt.T @ kt / np.sqrt(d)                       # S[q, k]
    s[np.triu_indices(n, 1)] = -np.inf               # key k > query q is masked
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v
    # O is a weighted mean of V's rows. The weights pass through BF16 once (E, relative error
    # 2^-9 each; their sum l stays FP32), so O moves by at most 2 * 2^-9 * max|V| from that,
    # and its own BF16 rounding adds 2^-9 |O|; FP32 sums and the ~2-ulp exp and reciprocal
    # are far below both. Tolerance: 2^-7 * max|V| + 2^-8 |O|.
    tol = 2.0 ** -7 * np.abs(v).max() + 2.0 ** -8 * np.abs(want)
    ok = compare("O", o, want, tol, "2^-7 * max|V| + 2^-8 * |O| (BF16 weights and output)")
    # The mask is exact: row 0 sees key 0 only, so O[0] is V[0] rounded to BF16 and back.
    if not np.array_equal(o[0], v[0]):
        print(f"FAIL: O[0] should be V[0] exactly (query 0 sees only key 0): {o[0][:4]} vs {v[0][:4]}")
        ok = False
    return ok


def layernorm(t):
    x, g, b = bf16_to_f64(t["X"]), bf16_to_f64(t["G"]), bf16_to_f64(t["B"])
    y = bf16_to_f64(t["Y"])
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    xn = (x - mean) / np.sqrt(var + 1e-5)
    want = xn * g + b
    # Inputs are exact BF16 values; the statistics, rsqrt (~2 ulp) and both FP32 steps are
    # accurate to ~1e-6 relative, so the error is the output's BF16 rounding, 2^-9 |y|, plus
    # FP32 noise of the two terms: |xn * g| and |b| each within 1e-5 relative.
    tol = 2.0 ** -8 * np.abs(want) + 1e-5 * (np.abs(xn * g) + np.abs(b)) + 1e-30
    ok = compare("Y", y, want, tol, "2^-8 * |y| + 1e-5 * (|xn * g| + |b|) (BF16 output, FP32 steps)")
    return ok


def dma_transpose(t):
    # The DMA moves bits: XT must be X.T exactly.
    x, xt = t["X"], t["XT"]
    bad = int(np.count_nonzero(xt != x.T))
    print(f"XT: {xt.size} elements, {bad} differ from X.T (exact: the DMA moves bits)")
    return xt.shape == x.T.shape and bad == 0


CHECKS = {"causal_attention": (causal_attention, ["QT", "KT", "V"]),
          "layernorm": (layernorm, ["X", "G", "B"]),
          "dma_transpose": (dma_transpose, ["X"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.error = lambda msg: sys.exit(f"check_examples: {msg}")  # a bad option: exit status 1
    ap.add_argument("ncore")
    ap.add_argument("programs", type=Path)
    ap.add_argument("example", choices=sorted(CHECKS))
    ap.add_argument("--engine", default="golden", choices=["golden", "cosim"])
    ap.add_argument("--run-option", action="append", default=[], help="passed on to ncore run (e.g. --timing-band=0.05)")
    a = ap.parse_args()
    check, inputs = CHECKS[a.example]
    tensors = run(a.ncore, a.programs / f"{a.example}.s", a.engine, inputs, a.run_option)
    ok = check(tensors)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
