#!/usr/bin/python3
"""CTest Nki.TracedOncePerSpecialization: a kernel is traced and compiled once per distinct
specialization (launch grid, core size, each tensor's shape and type, every other argument's
value), and a later call with new data reuses the program, with the new data: each call's
outputs are checked against NumPy, and the cache's hits and misses counted."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as nki  # noqa: E402

nki.alias_neuronxcc()
from rmsnorm import rmsnorm_kernel  # noqa: E402
from tensor_add import tensor_add_kernel  # noqa: E402
from tensor_add_out_arg import tensor_add_out_arg_kernel  # noqa: E402

failures = []
rng = np.random.default_rng(48)


def step(what, run, expect_hits, expect_misses):
    before = nki.trace_cache_info()
    ok = run()
    after = nki.trace_cache_info()
    hits, misses = after["hits"] - before["hits"], after["misses"] - before["misses"]
    good = ok and (hits, misses) == (expect_hits, expect_misses)
    print(f"{'ok  ' if good else 'FAIL'} {what}: outputs {'right' if ok else 'WRONG'}, {hits} hit(s), {misses} miss(es)")
    if not good:
        failures.append(what)


def add(rows, grid=None):
    """tensor_add over [rows, 64]: its grid is rows / 8 tiles of the size-8 core by 2 column halves."""
    grid = grid or (rows // 8, 2)
    a, b = (rng.standard_normal((rows, 64)).astype(np.float32) for _ in range(2))
    return lambda: np.array_equal(nki.simulate_kernel(tensor_add_kernel[grid], a, b, size=8), a + b)


step("first call", add(16), 0, 1)
step("new data, same shapes", add(16), 1, 0)
step("new data again", add(16), 1, 0)
step("another shape", add(32), 0, 1)
step("another launch grid", add(16, (2, 1)), 0, 1)


def norm(eps):
    x = rng.standard_normal((8, 64)).astype(np.float32)
    g = rng.standard_normal((1, 64)).astype(np.float32)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * g
    return lambda: bool(np.allclose(nki.simulate_kernel(rmsnorm_kernel, x, g, eps, size=8), ref, rtol=1e-5,
                                    atol=1e-6))


step("a number among the arguments", norm(1e-6), 0, 1)
step("the same number", norm(1e-6), 1, 0)
step("another number: traced anew", norm(1e-3), 0, 1)


def into():
    a, b = (rng.standard_normal((8, 64)).astype(np.float32) for _ in range(2))
    c = np.zeros_like(a)
    nki.simulate_kernel(tensor_add_out_arg_kernel, a, b, c, size=8)
    return np.array_equal(c, a + b)


step("an output argument", into, 0, 1)
step("another output array: filled, not the first one", into, 1, 0)

if failures:
    print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
