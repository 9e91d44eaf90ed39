#!/usr/bin/python3
"""CTest Nki.BackendMatchesReference: the compiler's passes in C++ (ncore.nki._backend,
tb/python/backend) against plain Python statements of them written here, brute force:

  - overlap: random byte boxes (HBM ones with walks of byte runs) against the sets of the bytes
    they touch;
  - hoisting loads: each load walks back over the operations before it, as compiler.py's
    docstring says, with conflicts found by comparing every pair of byte runs;
  - placing tiles: each tile, in the order of its first use, at the first address from a
    cursor (then from 0) where its bytes are free of every tile still live, inside one PSUM
    bank for PSUM tiles of a bank or less;
  - synchronisation: each instruction waits, per other semaphore, for the newest earlier
    instruction with a read/write hazard that its queue does not know to be done, found by
    comparing it with every earlier instruction (no index); then the pe, act and dve
    instructions nothing waits for lose their signal and the rest are counted again;
  - the check that programs on different cores of a chip touch no HBM bytes in common (one of
    them writing), swept by address in compiler.py: random accesses against every pair.

On every kernel of check_kernels.py at size 8 and the size-128 ones of up to 1,500
instructions, and once with a semaphore limit low enough to make epochs (3). The seed is fixed
(printed; --seed changes it).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check_kernels  # noqa: E402
from ncore.nki import _backend  # noqa: E402
from ncore.nki import compiler  # noqa: E402
from ncore.nki.simulate import trace_kernel  # noqa: E402
from ncore.nki import dtypes  # noqa: E402
from ncore.nki.tracer import HbmTensor, KernelError, Op  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402


def byte_runs(box):
    """The [first, end) byte runs of a box: an HBM box's walk enumerated, else its extent."""
    if len(box) < 6:
        return [(box[3], box[4])]
    base, walks, row = box[5]
    starts = [base]
    for count, stride in walks:
        starts = [s + i * stride for s in starts for i in range(count)]
    return [(s, s + row) for s in starts]


def overlap_reference(a, b):
    if a[0] != b[0] or not (a[1] < b[2] and b[1] < a[2]):
        return False
    if len(a) < 6 or len(b) < 6:  # one of them is known by its extent only
        return a[3] < b[4] and b[3] < a[4]
    return any(x0 < y1 and y0 < x1 for x0, x1 in byte_runs(a) for y0, y1 in byte_runs(b))


def random_box(rng):
    space = ["hbm", "sbuf", "psum"][rng.integers(3)]
    if space != "hbm" or rng.random() < 0.2:
        p0 = int(rng.integers(0, 8))
        b0 = int(rng.integers(0, 256))
        return (space, p0, p0 + int(rng.integers(1, 4)), b0, b0 + int(rng.integers(1, 64)))
    base, row = int(rng.integers(0, 512)), int(rng.integers(1, 48))
    walks = tuple((int(rng.integers(2, 5)), int(rng.integers(-96, 97))) for _ in range(rng.integers(0, 3)))
    walks = tuple(w for w in walks if w[1])
    starts = [base]
    for count, stride in walks:
        starts = [s + i * stride for s in starts for i in range(count)]
    return ("hbm", 0, 1, min(starts), max(starts) + row, (base, walks, row))


def check_overlap(rng, trials=20000):
    bad = 0
    for _ in range(trials):
        a, b = random_box(rng), random_box(rng)
        want = overlap_reference(a, b) and bool(set().union(*[range(x, y) for x, y in byte_runs(a)]) &
                                                set().union(*[range(x, y) for x, y in byte_runs(b)]))
        if _backend.overlap(a, b) != want:
            bad += 1
            if bad <= 5:
                print(f"FAIL overlap {a} {b}: expected {want}")
    print(f"{'ok  ' if not bad else 'FAIL'} overlap: {trials} random pairs of boxes, {bad} wrong")
    return not bad


def hoist_reference(ops, depth, window):
    def views(op):
        return [(v, False) for v in op.reads] + [(v, True) for v in op.writes]

    def storage(arr):  # a reshape or access pattern of an HBM tensor names its bytes
        return arr.base if isinstance(arr, HbmTensor) and arr.base is not None else arr

    def conflict(a, b):
        for va, wa in views(a):
            for vb, wb in views(b):
                if (wa or wb) and storage(va.array) is storage(vb.array):
                    if not isinstance(va.array, HbmTensor):
                        return True
                    if overlap_reference(compiler._box(va), compiler._box(vb)):
                        return True
        return False

    def is_load(op):
        return op.opcode == "dma_copy" and op.fields["dir"] == "hbm_to_sbuf"

    out = []
    for op in ops:
        at = len(out)
        if is_load(op):
            stores = 0
            while at > 0 and len(out) - at < window:
                prev = out[at - 1]
                store = prev.opcode == "dma_copy" and not is_load(prev)
                if is_load(prev) or (store and stores == depth) or conflict(prev, op):
                    break
                stores += store
                at -= 1
        out.insert(at, op)
    return out


def place_reference(ops, tiles):
    """{id(tile): address} of every tile an operation touches."""
    uses = {}
    for n, op in enumerate(ops):
        for v in op.reads + op.writes:
            if not isinstance(v.array, HbmTensor):
                first, _ = uses.get(id(v.array), (n, n))
                uses[id(v.array)] = (first, n)
    placed = {}
    for buffer, capacity in (("sbuf", compiler.SBUF_PARTITION), ("psum", compiler.PSUM_PARTITION)):
        order = sorted((t for t in tiles if t.buffer == buffer and id(t) in uses), key=lambda t: uses[id(t)][0])
        cursor = 0
        for tile in order:
            size = -(-tile.free_bytes // 32) * 32
            live = [t for t in order if id(t) in placed and uses[id(t)][1] >= uses[id(tile)][0]]

            def free(at):
                if buffer == "psum" and size <= compiler.PSUM_BANK and \
                        at // compiler.PSUM_BANK != (at + size - 1) // compiler.PSUM_BANK:
                    return False
                return all(at + size <= placed[id(t)] or placed[id(t)] + -(-t.free_bytes // 32) * 32 <= at
                           for t in live)
            # first-fit over the 32-byte boundaries (every tile's address is one)
            at = next((a for a in range(cursor, capacity - size + 1, 32) if free(a)), None)
            if at is None:
                at = next(a for a in range(0, capacity - size + 1, 32) if free(a))
            placed[id(tile)] = at
            cursor = at + size
    return placed


def synchronise_reference(instrs, limit):
    """[(semaphore, count, waits)], epochs."""
    def sem(ins):
        return f"dma{ins.engine}" if ins.queue == "sp" else f"{ins.queue}_done"

    def hazard(p, i):
        return (any(overlap_reference(w, x) for w in p.writes for x in i.reads + i.writes) or
                any(overlap_reference(r, w) for r in p.reads for w in i.writes))

    counts, clocks, epochs, done, issued = {}, {}, [], [], []
    epoch_start = 0
    for seq, ins in enumerate(instrs):
        s = sem(ins)
        if counts.get(s, 0) == limit:
            epochs.append((seq, dict(counts)))
            counts, clocks, epoch_start = {}, {}, seq
        counts[s] = counts.get(s, 0) + 1
        vc = clocks.setdefault(ins.queue, {})
        newest = {}
        for p in range(epoch_start, seq):
            ps, pc = done[p][0], done[p][1]
            if ps != s and pc > vc.get(ps, 0) and hazard(instrs[p], ins):
                newest[ps] = p
        waits = []
        for p in sorted(newest.values(), reverse=True):
            ps, pc = done[p][0], done[p][1]
            if vc.get(ps, 0) >= pc:
                continue
            waits.append((ps, pc))
            for k, v in issued[p].items():
                vc[k] = max(vc.get(k, 0), v)
            vc[ps] = max(vc.get(ps, 0), pc)
        issued.append(dict(vc))
        done.append((s, counts[s], waits))
    return only_waited_signals(done, epochs)


def only_waited_signals(done, epochs):
    """The second pass: a pe, act or dve instruction whose count nothing waits for (no wait and
    no epoch's barrier) does not signal (None, 0); the rest are counted again, per epoch."""
    bounds = [seq for seq, _ in epochs]
    epoch = [sum(1 for b in bounds if b <= seq) for seq in range(len(done))]
    waited = {(epoch[seq], s, c) for seq, (_, _, waits) in enumerate(done) for s, c in waits}
    waited |= {(e, s, c) for e, (_, final) in enumerate(epochs) for s, c in final.items()}
    new, counts = {}, {}
    for seq, (s, c, _) in enumerate(done):
        if not s.endswith("_done") or s == "cc_done" or (epoch[seq], s, c) in waited:
            counts[(epoch[seq], s)] = counts.get((epoch[seq], s), 0) + 1
            new[(epoch[seq], s, c)] = counts[(epoch[seq], s)]
    renumbered = []
    for seq, (s, c, waits) in enumerate(done):
        count = new.get((epoch[seq], s, c))
        renumbered.append((s if count else None, count or 0, [(ws, new[(epoch[seq], ws, wc)]) for ws, wc in waits]))
    return renumbered, [(seq, {s: new[(e, s, c)] for s, c in final.items()}) for e, (seq, final) in enumerate(epochs)]


def check_kernel(name, size, rng, limit=compiler.SEMAPHORE_MAX):
    case = check_kernels.CASES[name](rng, size)
    if case is None:
        return True, 0
    trace, _, _ = trace_kernel(case[0], case[1], size, {}, 1)
    trace.live_ops()
    c = compiler.Compiler(trace, name, None)
    c.place_hbm()
    before = list(c.trace.ops)
    want = hoist_reference(before, c.policy.hoist_depth, compiler.HOIST_WINDOW)
    c.hoist_loads(c.policy.hoist_depth)
    ok = [id(op) for op in c.trace.ops] == [id(op) for op in want]
    if not ok:
        print(f"FAIL {name} size {size}: the hoisted order differs from the reference")
    want_addr = place_reference(c.trace.ops, c.trace.tiles)
    c.place_tiles()
    got_addr = {id(t): t.addr for t in c.trace.tiles if id(t) in want_addr}
    if got_addr != want_addr:
        print(f"FAIL {name} size {size}: tile addresses differ from the reference")
        ok = False
    c.lower()
    if len(c.instrs) > 1500:
        return ok, 0
    saved = compiler.SEMAPHORE_MAX
    compiler.SEMAPHORE_MAX = limit
    try:
        c.synchronise()
    finally:
        compiler.SEMAPHORE_MAX = saved
    got = [(i.sem, i.count, [tuple(w) for w in i.waits]) for i in c.instrs]
    want_done, want_epochs = synchronise_reference(c.instrs, limit)
    same = got == want_done and [(p, dict(f)) for p, f in c.epochs] == want_epochs
    if not same:
        first = next((k for k, (g, w) in enumerate(zip(got, want_done)) if g != w), None)
        print(f"FAIL {name} size {size}: synchronisation differs from the reference (first at instruction {first}: "
              f"{got[first] if first is not None else ''} against {want_done[first] if first is not None else ''})")
    return ok and same, len(c.instrs) if limit == compiler.SEMAPHORE_MAX else len(c.epochs)


def check_cores_apart(rng, trials=300):
    """Random HBM accesses (strided slices of three tensors) by programs on 3 cores: the
    compiler's sweep refuses exactly the launches in which some pair of accesses from two cores,
    one writing, shares a byte."""
    bad = refused = 0
    for trial in range(trials):
        tensors = []
        for i in range(3):
            t = HbmTensor(f"t{i}", (16, 64), dtypes.float32, "input")
            t.addr = 4096 * i + 1024 * int(rng.integers(0, 3))  # some tensors overlap others' bytes
            tensors.append(t)
        groups, accesses = [[], [], []], []
        for n in range(int(rng.integers(2, 7))):
            t = tensors[int(rng.integers(0, 3))]
            r0, c0 = int(rng.integers(0, 16)), int(rng.integers(0, 64))
            view = t[r0:int(rng.integers(r0 + 1, 17)):int(rng.integers(1, 3)), c0:int(rng.integers(c0 + 1, 65))]
            write, core = bool(rng.random() < 0.3), int(rng.integers(0, 3))
            op = Op("sp", "dma_copy", [] if write else [view], [view] if write else [])
            op.where, op.program = f"access {n}", core
            groups[core].append(op)
            accesses.append((core, write, compiler._box(view)))
        want = any(ka != kb and (wa or wb) and overlap_reference(ba, bb)
                   for i, (ka, wa, ba) in enumerate(accesses) for kb, wb, bb in accesses[i + 1:])
        try:
            compiler._check_cores_apart(groups)
            got = False
        except KernelError:
            got = True
        refused += got
        if got != want:
            bad += 1
            if bad <= 3:
                print(f"FAIL cores apart, trial {trial}: refused {got}, expected {want}")
    print(f"{'ok  ' if not bad and 0 < refused < trials else 'FAIL'} cores apart: {trials} random launches, "
          f"{refused} refused, {bad} wrong")
    return not bad and 0 < refused < trials


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=48)
    a = ap.parse_args()
    print(f"seed {a.seed}")
    rng = np.random.default_rng(a.seed)
    ok = check_overlap(rng)
    ok = check_cores_apart(rng) and ok
    compared = waits = 0
    for name in check_kernels.CASES:
        for size in (8, 128):
            good, n = check_kernel(name, size, np.random.default_rng(a.seed))
            ok = ok and good
            compared += n > 0
            waits += n
    good, epochs = check_kernel("matmul_tiled", 8, np.random.default_rng(a.seed), limit=3)
    ok = ok and good
    print(f"{'ok  ' if ok else 'FAIL'} hoisting, placing tiles and synchronisation: {compared} programs of {waits} instructions, "
          f"and matmul_tiled with a semaphore limit of 3 ({epochs} epochs)")
    if compared < 40 or epochs == 0:
        print("FAIL: too few programs were compared")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
