#!/usr/bin/python3
"""CTest Nki.Collectives.*: nki.collectives kernels (tests/nki/current/collectives.py) on every
core of a chip (8 ranks) or of a Trn2 instance (16 chips, 128 ranks), one rank per core, each
rank with inputs of its own (seeded by its rank; the seed is printed). Every rank's outputs are
checked against float64 NumPy references computed here (and on a chip, the same kernels on RTL
cores give the golden cores' outputs bit for bit):
  - FP32 sums: within (members - 1) x 2^-24 x sum |terms| (the engine adds in FP32, rank order);
  - BF16 sums: that bound plus one BF16 rounding (2^-8 relative);
  - gathers and all-to-all move bits: exact.
Then the errors, table-driven: groups ncore's engine does not run, ranks outside the system, a
maximum instead of a sum, shapes that do not tile, and ranks whose collectives differ.

  check_collectives.py chip|trn2|errors [--seed N]
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as ncore_nki  # noqa: E402
from ncore.nki import KernelError  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402

ncore_nki.alias_nki()
import nki  # noqa: E402
import nki.collectives as ncc  # noqa: E402
import nki.language as nl  # noqa: E402
from current import collectives as kernels  # noqa: E402

CORES = 8
failures = []


def report(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def bf16(x):
    """x rounded to BF16 (nearest even), as float64."""
    return ncore_nki.dtypes.from_storage(ncore_nki.dtypes.to_storage(np.asarray(x, np.float32),
                                                                     nl.bfloat16), nl.bfloat16).astype(np.float64)


def inputs(rng, ranks, shape, dtype):
    xs = [rng.standard_normal(shape) for _ in range(ranks)]
    if dtype == "bf16":
        return [ncore_nki.typed(x, nl.bfloat16) for x in xs], [bf16(x) for x in xs]
    return [x.astype(np.float32) for x in xs], [x.astype(np.float32).astype(np.float64) for x in xs]


def close(out, ref, members, terms_abs, dtype):
    bound = (members - 1) * 2.0 ** -24 * terms_abs + (2.0 ** -8 * np.abs(ref) if dtype == "bf16" else 0)
    return bool(np.all(np.abs(np.asarray(out, np.float64) - ref) <= bound + 1e-30))


def group_lists(kind, chips):
    ranks = chips * CORES
    return {"all": [list(range(ranks))],
            "cores": [list(range(c * CORES, (c + 1) * CORES)) for c in range(chips)],
            "chips": [list(range(k, ranks, CORES)) for k in range(CORES)]}[kind]


def my_list(lists, r):
    return next(lst for lst in lists if r in lst)


def simulate(kernel, *args, system):
    """The kernel's outputs per rank on golden cores; on a chip also on RTL cores (the Verilated
    nc_core, size 128), whose outputs must be the golden ones bit for bit."""
    golden = ncore_nki.simulate_kernel(kernel, *args, system=system)
    if system == "chip":
        rtl = ncore_nki.simulate_kernel(kernel, *args, system=system, engine="rtl")
        same = all(np.array_equal(np.asarray(g, np.float64), np.asarray(r, np.float64))
                   for gs, rs in zip(golden, rtl) for g, r in zip(gs if isinstance(gs, tuple) else (gs,),
                                                                  rs if isinstance(rs, tuple) else (rs,)))
        report(same, f"{system}: {kernel.__name__} on RTL cores: every rank's outputs the golden ones, bit for bit")
    return golden


def run_all_reduce(rng, system, chips, group, dtype, shape):
    ranks = chips * CORES
    xs, vals = inputs(rng, ranks, shape, dtype)
    outs = simulate(kernels.all_reduce_kernel, ncore_nki.per_rank(xs), group, system=system)
    ok = True
    for r in range(ranks):
        members = my_list(group.rank_lists, r)
        ref = sum(vals[m] for m in members)
        ok &= close(outs[r], ref, len(members), sum(np.abs(vals[m]) for m in members), dtype)
    report(ok, f"{system}: all_reduce {dtype} {shape} over {group.rank_lists[0][:4]}... "
               f"({len(group.rank_lists)} rank-lists of {len(group.rank_lists[0])}), every rank")


def run_moves(rng, system, chips, group, dtype):
    """all_gather, reduce_scatter and all_to_all on one group."""
    ranks = chips * CORES
    members = len(group.rank_lists[0])
    xs, vals = inputs(rng, ranks, (members * 2, 64), dtype)
    gathered = simulate(kernels.all_gather_kernel, ncore_nki.per_rank(xs), group, members, system=system)
    scattered = simulate(kernels.reduce_scatter_kernel, ncore_nki.per_rank(xs), group, members, system=system)
    swapped = simulate(kernels.all_to_all_kernel, ncore_nki.per_rank(xs), group, system=system)
    ok_g = ok_s = ok_a = True
    for r in range(ranks):
        lst = my_list(group.rank_lists, r)
        i = lst.index(r)
        ok_g &= np.array_equal(np.asarray(gathered[r], np.float64), np.concatenate([vals[m] for m in lst]))
        total = sum(vals[m] for m in lst)
        rows = slice(2 * i, 2 * i + 2)
        ok_s &= close(scattered[r], total[rows], members, sum(np.abs(vals[m]) for m in lst)[rows], dtype)
        ok_a &= np.array_equal(np.asarray(swapped[r], np.float64), np.concatenate([vals[m][rows] for m in lst]))
    report(ok_g, f"{system}: all_gather {dtype} of {members} members, rank order, exact")
    report(ok_s, f"{system}: reduce_scatter {dtype}: rank i gets block i of the sum")
    report(ok_a, f"{system}: all_to_all {dtype}: rank i gets block i of every member, rank order, exact")


def run_sbuf_and_list(rng, system, chips):
    ranks = chips * CORES
    group = ncc.ReplicaGroup([list(range(ranks))])
    xs, vals = inputs(rng, ranks, (16, 64), "fp32")
    ys, yvals = inputs(rng, ranks, (4, 128), "fp32")
    outs = simulate(kernels.scaled_sum_kernel, ncore_nki.per_rank(xs), ncore_nki.per_rank(ys), group, system=system)
    scaled = [np.float64(np.float32(vals[r] * (r + 1))) for r in range(ranks)]
    ok = True
    for r in range(ranks):
        out, sa, sb = outs[r]
        ok &= close(out, sum(scaled), ranks, sum(np.abs(s) for s in scaled), "fp32")
        ok &= close(sa, sum(vals), ranks, sum(np.abs(v) for v in vals), "fp32")
        ok &= close(sb, sum(yvals), ranks, sum(np.abs(v) for v in yvals), "fp32")
    report(ok, f"{system}: all_reduce from SBUF into SBUF (rank-scaled partials) and of a list of two HBM tensors")
    if system == "chip":  # the list is coalesced: one all_reduce for both tensors, so two in all
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.s")
            ncore_nki.simulate_kernel(kernels.scaled_sum_kernel, ncore_nki.per_rank(xs), ncore_nki.per_rank(ys),
                                      group, system=system, program_out=path)
            rank0 = open(path).read().split(".if CHIP*CORES+CORE==1")[0]
        cc = [line for line in rank0.splitlines() if line.startswith("all_reduce")]
        report(len(cc) == 2 and "bytes=8192" in cc[1], f"{system}: the list of two tensors is one all_reduce of "
                                                        f"their packed run: {[c.split('#')[0] for c in cc]}")


# -- errors -------------------------------------------------------------------------------------

def line_of(marker):
    with open(os.path.abspath(__file__)) as f:
        for n, text in enumerate(f, 1):
            if marker in text and "line_of" not in text and "ERRORS" not in text:
                return n
    raise AssertionError(marker)


@nki.jit
def reduce_with(x, group, op):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    kernels._hbm_copy(src, x)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=group, op=op)  # MARK-reduce
    return dst


@nki.jit
def gather_too_small(x, group):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    kernels._hbm_copy(src, x)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=group, collective_dim=0)  # MARK-gather
    return dst


@nki.jit
def rank_dependent(x, group):
    rows = 4 if ncc.rank_id() == 3 else 8
    src = nl.ndarray((rows, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray((rows, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    kernels._hbm_copy(src, x[0:rows, :])
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=group, op=nl.add)
    return dst


def errors():
    x = np.ones((8, 64), np.float32)
    everyone = ncc.ReplicaGroup([list(range(8))])
    ERRORS = [
        ("a group ncore's engine does not run", reduce_with, (x, ncc.ReplicaGroup([[0, 1], [2, 3, 4, 5, 6, 7]]), nl.add),
         ["[[0, 1], [2, 3, 4, 5, 6, 7]]", "every rank", "MARK-reduce"]),
        ("ranks outside the system", reduce_with, (x, ncc.ReplicaGroup([list(range(16))]), nl.add),
         ["ranks 0..7", "[8, 9, 10", "do not exist", "MARK-reduce"]),
        ("a maximum", reduce_with, (x, everyone, nl.maximum), ["ncc.all_reduce", "sums", "MARK-reduce"]),
        ("a gather's dst too small", gather_too_small, (x, everyone),
         ["ncc.all_gather", "(8, 64)", "dst = members x src", "MARK-gather"]),
        ("ranks issuing different collectives", rank_dependent, (x, everyone),
         ["rank 0 issues all_reduce of 2048 bytes", "rank 3 all_reduce of 1024 bytes", "group 'all'"]),
    ]
    for name, kernel, args, needles in ERRORS:
        needles = [f"check_collectives.py:{line_of(n)}" if n.startswith("MARK") else n for n in needles]
        try:
            ncore_nki.simulate_kernel(kernel, *args, system="chip")
        except ncore_nki.KernelError as e:
            missing = [n for n in needles if n not in str(e)]
            report(not missing, f"{name}: {e}" + (f" (lacks {missing})" if missing else ""))
        else:
            report(False, f"{name}: ran without an error")
    # The options of a system run, each refused before anything is traced.
    OPTIONS = [
        ("an unknown system", dict(system="trn3"), ValueError, ["system='trn3'", "chip, trn2, trn2u"]),
        ("per_rank of the wrong length", dict(system="chip", per_rank=3), KernelError,
         ["per_rank(...) of 3 arrays", "runs 8 ranks"]),
        ("a co-simulated system", dict(system="chip", engine="cosim"), ValueError, ["engine='cosim'"]),
        ("cores= with a system", dict(system="chip", cores=2), ValueError, ["cores=2", "leave size and cores out"]),
        ("size=8 with a system", dict(system="chip", size=8), ValueError, ["size=8", "size 128"]),
        ("per_rank without a system", dict(per_rank=8), KernelError, ["per_rank(...)", "pass system="]),
    ]
    for name, options, exc_type, needles in OPTIONS:
        copies = options.pop("per_rank", None)
        first = ncore_nki.per_rank([x] * copies) if copies else x
        try:
            ncore_nki.simulate_kernel(reduce_with, first, everyone, nl.add, **options)
        except exc_type as e:
            missing = [n for n in needles if n not in str(e)]
            report(not missing, f"{name}: {type(e).__name__}: {e}" + (f" (lacks {missing})" if missing else ""))
        except Exception as e:  # noqa: BLE001
            report(False, f"{name}: expected {exc_type.__name__}, got {type(e).__name__}: {e}")
        else:
            report(False, f"{name}: ran without an error")
    try:  # a system run may be timing-only (benchmark_kernel), but only on golden cores
        ncore_nki.benchmark_kernel(reduce_with, x, everyone, nl.add, system="chip", engine="rtl", timing_only=True)
        report(False, "timing_only on a system of RTL cores: ran without an error")
    except ValueError as e:
        report("timing_only" in str(e) and "golden cores" in str(e), f"timing_only on a system of RTL cores: {e}")
    try:
        ncc.ReplicaGroup([[0, 1], [1, 2]])
        report(False, "a rank in two rank-lists: accepted")
    except ValueError as e:
        report("[1]" in str(e), f"a rank in two rank-lists: {e}")
    part = ncc.ReplicaGroup.from_partition_op(8, ncc.rg_partition_op.mod, 4)
    report(part.rank_lists == [[0, 4], [1, 5], [2, 6], [3, 7]], f"from_partition_op(8, mod, 4) = {part}")


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["chip", "trn2", "errors"])
    ap.add_argument("--seed", type=int, default=48)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"seed {a.seed}")
    if a.what == "chip":
        everyone = ncc.ReplicaGroup.from_partition_op(8, ncc.rg_partition_op.bitwise_and, 0)
        run_all_reduce(rng, "chip", 1, everyone, "fp32", (64, 512))
        run_all_reduce(rng, "chip", 1, everyone, "bf16", (128, 256))
        run_moves(rng, "chip", 1, everyone, "fp32")
        run_moves(rng, "chip", 1, everyone, "bf16")
        run_sbuf_and_list(rng, "chip", 1)
    elif a.what == "trn2":
        for kind, op, operand in (("all", ncc.rg_partition_op.bitwise_and, 0), ("cores", ncc.rg_partition_op.div, 8),
                                  ("chips", ncc.rg_partition_op.mod, 8)):
            group = ncc.ReplicaGroup.from_partition_op(128, op, operand)
            assert group.rank_lists == group_lists(kind, 16)
            run_all_reduce(rng, "trn2", 16, group, "fp32", (8, 512))
        run_moves(rng, "trn2", 16, ncc.ReplicaGroup.from_partition_op(128, ncc.rg_partition_op.mod, 8), "fp32")
    else:
        errors()
    if failures:
        print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
