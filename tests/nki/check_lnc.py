#!/usr/bin/python3
"""CTest Nki.Lnc2CoreBarrier: a kernel launched on the two cores of a logical NeuronCore (LNC=2:
kernel[2] with cores=2, tests/nki/current/lnc.py) trades halves of its input through shared HBM
across a nisa.core_barrier. The output is checked exactly against float64 NumPy (2a - 2b of FP32
values is one rounding of an exact result), on golden cores and with both cores RTL. Then system
runs at LNC=2 (a rank per pair of cores, on a chip and a Trn2 instance): each rank's halves make
one src, and an all_reduce over the ranks sums each rank's once (within the FP32 bound of rank
order); also on 2 x 1 x 1 chips of a Trn2 instance (simulate_kernel's torus=). Then the errors: no
barrier between a write and the partner's read, a barrier only one core passes, a barrier
outside an LNC=2 launch, and cores other than (0, 1).

  check_lnc.py [--seed N]
"""
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as ncore_nki  # noqa: E402
from ncore.nki import KernelError  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402

ncore_nki.alias_nki()
import nki.collectives as ncc  # noqa: E402
from current import lnc  # noqa: E402

failures = []


def report(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def expect_error(what, kernel, args, needles, **options):
    try:
        ncore_nki.simulate_kernel(kernel, *args, **options)
    except KernelError as e:
        missing = [n for n in needles if n not in str(e)]
        report(not missing, f"{what}: {e}" + (f" (missing {missing})" if missing else ""))
        return
    report(False, f"{what}: accepted")


def main():
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=52)
    args = ap.parse_args()
    print(f"seed {args.seed}")
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    wide = x.astype(np.float64)
    half = x.shape[0] // 2
    want = np.concatenate([2 * wide[:half] - 2 * wide[half:], 2 * wide[half:] - 2 * wide[:half]]).astype(np.float32)
    for engine in ("golden", "rtl"):
        out = ncore_nki.simulate_kernel(lnc.trade_halves_kernel[2], x, engine=engine, cores=2)
        report(np.array_equal(out, want), f"LNC=2 on {engine} cores: each core's output is its half less its "
                                          "partner's, read after the barrier (exact)")
    with tempfile.TemporaryDirectory(prefix="ncore_check_lnc_") as tmp:
        program = os.path.join(tmp, "trade_halves.s")
        ncore_nki.simulate_kernel(lnc.trade_halves_kernel[2], x, cores=2, program_out=program)
        with open(program) as f:
            text = f.read()
    report(text.count("core_barrier group=pair") == 2 and ".if CORE==1" in text,
           "the program gives each core's cc queue one core_barrier of the pair")
    # A system run at LNC=2: 4 ranks a chip (each a pair of cores), an all_reduce over the chip's.
    for system, chips, engine, torus in (("chip", 1, "golden", None), ("chip", 1, "rtl", None),
                                         ("trn2", 16, "golden", None), ("trn2", 2, "golden", (2, 1, 1))):
        ranks = chips * 4
        xs = [rng.standard_normal((128, 64)).astype(np.float32) for _ in range(ranks)]
        group = ncc.ReplicaGroup([list(range(ranks))])
        outs = ncore_nki.simulate_kernel(lnc.rank_all_reduce_kernel, ncore_nki.per_rank(xs), group, system=system,
                                         lnc=2, engine=engine, torus=torus)
        terms = [x.astype(np.float64) for x in xs]
        ref, bound = sum(terms), (ranks - 1) * 2.0 ** -24 * sum(np.abs(t) for t in terms)
        ok = len(outs) == ranks and all(np.all(np.abs(o.astype(np.float64) - ref) <= bound) for o in outs)
        report(ok, f"LNC=2 on {'a' if torus is None else 'x'.join(map(str, torus)) + ' chips of a'} {system} of "
                   f"{engine} cores: each of the {ranks} ranks (a pair of cores, its halves "
                   "in one shared src) gets the sum of the ranks' srcs, once each (within (ranks - 1) x 2^-24 x sum|x|)")
    expect_error("a write and the partner's read with no barrier between", lnc.unsynchronized_kernel[2], (x,),
                 ["touch the same HBM bytes", "no core barrier between them", "core 1", "core 0"], cores=2)
    expect_error("a barrier only one core passes", lnc.one_sided_barrier_kernel[2], (x[:128],),
                 ["the cores pass 1 and 0 core barriers"], cores=2)
    expect_error("a barrier on one core", lnc.trade_halves_kernel[2], (x,),
                 ["nisa.core_barrier", "a launch of 2 program(s) on 1 core(s)", "cores=2, LNC=2"])
    expect_error("a barrier of cores (0, 2)", lnc.wrong_cores_kernel[2], (x[:128],),
                 ["nisa.core_barrier", "cores=(0, 2)", "expected (0, 1)"], cores=2)
    expect_error("an SBUF tile's all_reduce at LNC=2", lnc.sbuf_all_reduce_kernel,
                 (x[:128], ncc.ReplicaGroup([[0, 1, 2, 3]])), ["ncc.all_reduce", "at LNC=2 a collective's srcs and dsts are HBM tensors"], system="chip", lnc=2)
    try:
        ncore_nki.simulate_kernel(lnc.trade_halves_kernel[2], x, lnc=2)
        report(False, "lnc=2 without system=: accepted")
    except ValueError as e:
        report("without system=" in str(e), f"lnc=2 without system=: {e}")
    for torus, options, needle in (((5, 1, 1), {"system": "trn2"}, "each from 1 to the trn2's 4 x 4 x 1"),
                                   ((2, 1), {"system": "trn2"}, "expected (x, y, z)"),
                                   ((2, 1, 1), {}, "without system=")):
        try:
            ncore_nki.simulate_kernel(lnc.rank_all_reduce_kernel, x[:128], ncc.ReplicaGroup([[0]]), torus=torus,
                                      lnc=2, **options)
            report(False, f"torus={torus} {options}: accepted")
        except ValueError as e:
            report(needle in str(e), f"torus={torus} {options}: {e}")
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
