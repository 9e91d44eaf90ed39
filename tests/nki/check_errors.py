#!/usr/bin/python3
"""CTest Nki.BadKernelsNameTheCallAndLine: kernels ncore cannot run get a clear error naming the
call and the kernel's file:line, and never a wrong answer; the user's own exceptions come back
unchanged. Near misses must work instead: tensors named like the program's own names, NumPy's
dtypes in a kernel, and NKI's older output arguments. And the compiled programs of some kernels
take the paths those kernels exist for (descriptor lists, a masked operation's partitions)."""
import os
import sys
import traceback

import numpy as np

import ncore.nki as nki
import ncore.nki.isa as nisa
import ncore.nki.language as nl

HERE = os.path.abspath(__file__)
failures = []


def line_of(marker):
    with open(HERE) as f:
        for n, text in enumerate(f, 1):
            if marker in text and "line_of" not in text:
                return n
    raise AssertionError(marker)


def expect(name, kernel, inputs, exc_type, *needles, size=8, engine="golden", cores=1):
    try:
        nki.simulate_kernel(kernel, *inputs, size=size, engine=engine, cores=cores)
    except exc_type as e:
        text = str(e)
        missing = [n for n in needles if n not in text]
        if missing:
            failures.append(f"{name}: message lacks {missing}: {text}")
        else:
            print(f"ok   {name}: {type(e).__name__}: {text}")
        return e
    except Exception as e:  # noqa: BLE001
        failures.append(f"{name}: expected {exc_type.__name__}, got {type(e).__name__}: {e}")
        return None
    failures.append(f"{name}: ran without an error")
    return None


a8 = np.ones((8, 64), np.float32)


@nki.jit
def unsupported_call(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.dropout(a, prob=0.5))  # MARK-unsupported
    return out


expect("unsupported call", unsupported_call, [a8], nki.KernelError, "nisa.dropout", "not supported",
       f"check_errors.py:{line_of('MARK-unsupported')}")


@nki.jit
def grid_axis_it_lacks(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.mgrid[0:8, 0:64]
    nl.store(out[i.p, i.y], nl.load(a[i.p, i.x]))  # MARK-grid-axis
    return out


expect("an index grid's axis it lacks", grid_axis_it_lacks, [a8], nki.KernelError, "nl.mgrid(...).y",
       f"check_errors.py:{line_of('MARK-grid-axis')}", "2 axes")


@nki.jit
def takes_a_list(arrays):
    out = nl.ndarray((8, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.load(arrays[0]))
    return out


expect("a list of arrays as one argument", takes_a_list, [[a8, a8]], nki.KernelError, "arrays",
       "give each array as its own argument")


@nki.jit
def block_sliced(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(8), 64), dtype=a.dtype, buffer=nl.sbuf)
    t[0] = nl.load(a)
    nl.store(out, nl.exp(t[0:1]))  # MARK-block-slice
    return out


expect("a block tile's block dimension sliced", block_sliced, [a8], nki.KernelError,
       f"check_errors.py:{line_of('MARK-block-slice')}", "index the block dimensions with integers")


@nki.jit
def block_whole(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(8), 64), dtype=a.dtype, buffer=nl.sbuf)
    t[1] = nl.load(a)
    nl.store(out, nl.exp(t))  # MARK-block-whole
    return out


expect("a block tile as one operand", block_whole, [a8], nki.KernelError, "nl.exp",
       f"check_errors.py:{line_of('MARK-block-whole')}", "index its block dimensions")


@nki.jit
def block_psum(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(8), 64), dtype=nl.float32, buffer=nl.psum)  # MARK-block-psum
    nl.store(out, nl.load(a))
    return out


expect("block dimensions on a PSUM tile", block_psum, [a8], nki.KernelError, "nl.ndarray",
       f"check_errors.py:{line_of('MARK-block-psum')}", "PSUM")


@nki.jit
def joined_predicate(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:8, 0:64]
    nl.store(out, nisa.affine_select((i_p < 4) & (i_f < 8), nl.load(a), 0.0))  # MARK-joined
    return out


expect("a predicate of two masks", joined_predicate, [a8], nki.KernelError, "nisa.affine_select",
       f"check_errors.py:{line_of('MARK-joined')}", "one comparison")


@nki.jit
def bn_stats_too_wide(a):
    out = nl.ndarray((8, 6), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.bn_stats(nl.load(a)))  # MARK-bn
    return out


expect("bn_stats over 512 elements", bn_stats_too_wide, [np.ones((8, 600), np.float32)], nki.KernelError,
       "nisa.bn_stats", f"check_errors.py:{line_of('MARK-bn')}", "at most 512")


@nki.jit
def bf16_reduce_res(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    r = nl.ndarray((8, 1), dtype=nl.bfloat16)
    t = nisa.tensor_scalar_reduce(data=nl.load(a), op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=r)  # MARK-tsr
    nl.store(out, t)
    return out


expect("a BF16 reduce_res", bf16_reduce_res, [a8], nki.KernelError, "nisa.tensor_scalar_reduce",
       f"check_errors.py:{line_of('MARK-tsr')}", "FP32")


@nki.jit
def subtract_scan(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nisa.tensor_tensor_scan(t, t, 0.0, nl.subtract, nl.add))  # MARK-scan
    return out


expect("a scan ncore cannot order", subtract_scan, [a8], nki.KernelError, "nisa.tensor_tensor_scan",
       "reverse0", f"check_errors.py:{line_of('MARK-scan')}")


@nki.jit
def wide_matmul(a, b):
    out = nl.ndarray((8, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(nl.load(a), nl.load(b), transpose_x=True))  # MARK-wide
    return out


expect("matmul wider than a PSUM bank", wide_matmul, [np.ones((8, 8), np.float32), np.ones((8, 1024), np.float32)],
       nki.KernelError, "nl.matmul", "N at most 512", f"check_errors.py:{line_of('MARK-wide')}")


@nki.jit
def integer_matmul(a):
    out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nl.matmul(t, t, transpose_x=True))  # MARK-int
    return out


expect("integer matmul", integer_matmul, [np.ones((8, 8), np.int32)], nki.KernelError, "nl.matmul",
       "float types", f"check_errors.py:{line_of('MARK-int')}")


@nki.jit
def too_big(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    tiles = [nl.ndarray((8, 16384), dtype=nl.float32) for _ in range(4)]  # MARK-big
    for x in tiles:
        nisa.dma_copy(x[0:8, 0:64], a)
    s = tiles[0][0:8, 0:64]
    for x in tiles[1:]:
        s = nl.add(s, x[0:8, 0:64])
    nl.store(out, nl.add(t, s))
    return out


expect("SBUF overflow", too_big, [a8], nki.KernelError, "sbuf tile", "bytes per partition",
       f"check_errors.py:{line_of('MARK-big')}")


@nki.jit
def psum_too_big(a):
    out = nl.ndarray((8, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    banks = [nl.matmul(t[:, 0:8], t, transpose_x=True) for _ in range(9)]  # MARK-psum
    total = banks[0]
    for b in banks[1:]:
        total = nl.add(total, b)
    nl.store(out, total)
    return out


expect("PSUM overflow", psum_too_big, [np.ones((8, 512), np.float32)], nki.KernelError, "psum tile",
       "16384 bytes per partition", f"check_errors.py:{line_of('MARK-psum')}")


@nki.jit
def raises(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    raise ZeroDivisionError("the kernel's own error")  # MARK-raise


e = expect("user exception", raises, [a8], ZeroDivisionError, "the kernel's own error")
if e is not None:
    last = traceback.extract_tb(e.__traceback__)[-1]
    if last.lineno != line_of("MARK-raise") or os.path.abspath(last.filename) != HERE:
        failures.append(f"user exception: its traceback ends at {last.filename}:{last.lineno}, not the kernel's line")


@nki.jit
def plain_add(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), 1.0))
    return out


expect("float64 input", plain_add, [np.ones((8, 64))], nki.KernelError, "float64")
expect("bool input", plain_add, [np.ones((8, 64), bool)], TypeError, "not a type ncore supports")
expect("bad engine", plain_add, [a8], ValueError, "engine", engine="verilog")
expect("misaligned rows", plain_add, [np.ones((8, 6), np.int32)], nki.KernelError, "32-byte bursts", "24 bytes")
expect("too many partitions", plain_add, [np.ones((16, 64), np.float32)], nki.KernelError,
       "partition dimension of 1..8")


@nki.jit
def off_the_end(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = 4 + nl.arange(8)[:, None]
    nl.store(out[0:8, 0:64], nl.load(a[i_p, nl.arange(64)[None, :]]))  # MARK-oob
    return out


expect("shape that does not tile", off_the_end, [a8], nki.KernelError, "leave 0..7", "give a mask",
       f"check_errors.py:{line_of('MARK-oob')}")


@nki.jit
def masked_matmul(a):
    out = nl.ndarray((8, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(8)[:, None]
    t = nl.load(a)
    nl.store(out, nl.matmul(t, t, transpose_x=True, mask=(i_p < 4)))  # MARK-masked-matmul
    return out


expect("mask on an operation that takes none", masked_matmul, [a8], nki.KernelError, "nl.matmul", "mask=",
       f"check_errors.py:{line_of('MARK-masked-matmul')}")


@nki.jit
def mask_of_another_size(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(4)[:, None]
    nl.store(out, nl.exp(nl.load(a), mask=(i_p < 2)))  # MARK-mask-size
    return out


expect("a mask whose index has another size", mask_of_another_size, [a8], nki.KernelError, "nl.exp",
       "4 values", f"check_errors.py:{line_of('MARK-mask-size')}")


@nki.jit
def unknown_keyword(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), 1.0, engine="gpsimd"))
    return out


expect("unknown keyword", unknown_keyword, [a8], nki.KernelError, "nl.add", "engine=")


@nki.jit
def partition_reduce(a):
    out = nl.ndarray((1, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.sum(nl.load(a), axis=0))
    return out


expect("reduce over partitions", partition_reduce, [a8], nki.KernelError, "partition dimension")

@nki.jit
def overlapping_programs(a):
    out = nl.ndarray((8, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a[0:8, 0:64]), float(nl.program_id(0))))  # MARK-cores
    return out


expect("programs on different cores writing the same bytes", overlapping_programs[2], [a8], nki.KernelError,
       "core 1", "core 0", f"check_errors.py:{line_of('MARK-cores')}", size=128, engine="golden", cores=2)
expect("co-simulation on a chip", plain_add[2], [a8], ValueError, "cores=2", size=128, engine="cosim", cores=2)

@nki.jit
def transposing_index(a):
    out = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:8, 0:64]
    t = nl.load(a)
    nl.store(out, nl.copy(t[i_f, i_p]))  # MARK-transposing
    return out


expect("an index that transposes, into an engine", transposing_index, [a8], nki.KernelError, "swap its dimensions",
       f"check_errors.py:{line_of('MARK-transposing')}")

@nki.jit
def dma_into_psum(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((8, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.dma_copy(acc, a)  # MARK-psumdma
    nl.store(out, acc)
    return out


expect("a DMA into PSUM", dma_into_psum, [a8], nki.KernelError, "SBUF only",
       f"check_errors.py:{line_of('MARK-psumdma')}")

@nki.jit
def branches_on_data(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    if nl.max(t, axis=1)[0:1] > 0:  # MARK-branch
        t = nl.exp(t)
    nl.store(out, t)
    return out


expect("a Python branch on tile values", branches_on_data, [a8], nki.KernelError, "not known while ncore traces",
       f"check_errors.py:{line_of('MARK-branch')}")


@nki.jit
def names_the_program_uses(dma0, CORE):
    out = nl.ndarray(dma0.shape, dtype=dma0.dtype, buffer=nl.shared_hbm, name="pe_done")
    other = nl.ndarray(dma0.shape, dtype=dma0.dtype, buffer=nl.shared_hbm, name="2nd out")
    nl.store(other, nl.load(dma0))
    nl.store(out, nl.add(nl.load(dma0), nl.load(CORE)))
    return out


def program_of(kernel, *inputs):
    """The assembly the compiler writes for the kernel (the run's outputs are check_kernels')."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.s")
        nki.simulate_kernel(kernel, *inputs, size=8, program_out=path)
        with open(path) as f:
            return f.read()


def expect_works(name, run, check):
    """Not an error: run() must succeed and check(result) hold."""
    try:
        result = run()
    except Exception as e:  # noqa: BLE001
        failures.append(f"{name}: {type(e).__name__}: {e}")
        return
    if check(result):
        print(f"ok   {name}")
    else:
        failures.append(f"{name}: wrong result")


# Tensors named like the program's semaphores or the assembler's symbols are renamed.
expect_works("names the program uses", lambda: nki.simulate_kernel(names_the_program_uses, a8, a8 + 1, size=8),
             lambda got: np.array_equal(got, 2 * a8 + 1))


@nki.jit
def numpy_dtypes(a):
    """Tensor dtypes used as the tutorials use NumPy's: compared with np.float32, np.dtype(),
    .itemsize, and np.float32 given as a dtype."""
    assert a.dtype == np.float32 and np.dtype(np.float32) == a.dtype and a.dtype.itemsize == 4
    assert a.dtype != nl.bfloat16 and np.dtype(a.dtype) == np.float32
    out = nl.ndarray(a.shape, dtype=np.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(nl.load(a), dtype=np.dtype(np.float32)))
    return out


expect_works("NumPy's dtypes as a kernel's", lambda: nki.simulate_kernel(numpy_dtypes, a8, size=8),
             lambda got: np.array_equal(got, a8))


@nki.jit
def many_tiles(a):
    """1,100 column tiles, each loaded, incremented and stored: 2,200 instructions on the sync
    queue, past the 2,048 a queue's instruction memory held before the core fetched (issue 47)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[1] // 32):
        nl.store(out[:, i * 32:(i + 1) * 32], nl.add(nl.load(a[:, i * 32:(i + 1) * 32]), 1.0))  # MARK-many
    return out


wide = np.arange(8 * 32 * 1100, dtype=np.float32).reshape(8, 32 * 1100) % 97
expect_works("more instructions on one queue than 2,048", lambda: nki.simulate_kernel(many_tiles, wide, size=8),
             lambda got: np.array_equal(got, wide + 1))

# A semaphore counts to 65,535 and every instruction adds 1 to its queue's: past that the program
# starts a new epoch (every queue finishes, meets the others, resets its semaphores). Checked with
# the limit lowered to 500 (a kernel past the real one compiles for minutes): 1,100 loads on sp
# make two epochs, and the outputs must still be right, on the golden core and in co-simulation.
import ncore.nki.compiler as nki_compiler  # noqa: E402

real_limit, nki_compiler.SEMAPHORE_MAX = nki_compiler.SEMAPHORE_MAX, 500
nki.clear_trace_cache()  # the kernel above was compiled with the real limit
for engine in ("golden", "cosim"):
    expect_works(f"more signals than a semaphore counts: epochs ({engine})",
                 lambda: (nki.simulate_kernel(many_tiles, wide, size=8, engine=engine), program_of(many_tiles, wide)),
                 lambda got: np.array_equal(got[0], wide + 1) and got[1].count("end of epoch 2:") > 0 and
                 "end of epoch 3:" not in got[1])
nki_compiler.SEMAPHORE_MAX = real_limit
nki.clear_trace_cache()

sys.path.insert(0, os.path.dirname(HERE))
nki.alias_neuronxcc()
from tensor_add_out_arg import tensor_add_out_arg_kernel  # noqa: E402
from mgrid_scale import mgrid_scale_kernel  # noqa: E402
from strided_copy import long_rows_kernel, many_planes_kernel, strided_copy_kernel  # noqa: E402


# The programs take the paths their kernels exist for (the outputs alone would not show it: a
# masked multiply's extra rows are never stored; a transfer may be right without a list).
rng = np.random.default_rng(5)
expect_works("a transfer of three free dimensions, rows over 64 KiB, planes over 4,095: dma_list",
             lambda: [program_of(strided_copy_kernel, rng.standard_normal((8, 4, 2, 64)).astype(np.float32)),
                      program_of(long_rows_kernel, rng.standard_normal((8, 20000)).astype(np.float32)),
                      program_of(many_planes_kernel, np.zeros((8, 5000, 64), np.int8))],
             lambda texts: all("dma_list engine=" in t and ".list " in t for t in texts))
expect_works("a masked multiply on the last, partial tile runs on its rows alone",
             lambda: program_of(mgrid_scale_kernel, rng.standard_normal((20, 64)).astype(np.float32),
                                rng.standard_normal((1, 64)).astype(np.float32)),
             lambda text: [line.split("partitions=")[1].split()[0] for line in text.splitlines()
                           if line.startswith("tensor_tensor")] == ["8", "8", "4"])

# Multiple buffering hoists each load past up to two stores; when the tiles that keeps alive do
# not fit in SBUF the compiler hoists less (Compiler.build). Four column tiles, each loaded,
# exponentiated and stored: at 4 KiB a partition the default program is the depth-2 one; at 64
# KiB a partition four live tiles (depth 2) exceed the 224 KiB of a partition and three (depth
# 1) fit, so the default program is the depth-1 one, not the unhoisted one, and still right.
@nki.jit
def column_tiles(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    w = a.shape[1] // 4
    for i in nl.affine_range(4):
        nl.store(out[:, i * w:(i + 1) * w], nl.exp(nl.load(a[:, i * w:(i + 1) * w])))
    return out


def programs_by_depth(a):
    """{policy: (program text, outputs right)} for the default policy and hoist depths 2, 1, 0."""
    import tempfile
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, policy in (("default", None), (2, nki.DmaPolicy(hoist_depth=2)), (1, nki.DmaPolicy(hoist_depth=1)),
                              (0, nki.DmaPolicy(hoist_depth=0))):
            path = os.path.join(tmp, f"{label}.s")
            r = nki.benchmark_kernel(column_tiles, a, size=8, program_out=path, dma_policy=policy)
            with open(path) as f:
                got[label] = (f.read(), bool(np.allclose(r["outputs"], np.exp(a.astype(np.float64)), rtol=1e-6)))
    return got


rng = np.random.default_rng(7)
expect_works("tiles that fit: the default hoists two deep",
             lambda: programs_by_depth(rng.standard_normal((8, 4 * 1024)).astype(np.float32)),
             lambda p: p["default"] == p[2] and p[2][0] != p[1][0] and p[2][1])
expect_works("tiles that do not fit two deep: the compiler hoists one deep",
             lambda: programs_by_depth(rng.standard_normal((8, 4 * 16384)).astype(np.float32)),
             lambda p: p["default"] == p[1] and p[1][0] != p[0][0] and p[1][1])

# A load is never hoisted above a store to the same HBM bytes, also when the store writes them
# through another name (a reshape of the tensor): the load must read what the store wrote.
@nki.jit
def store_through_alias(a):
    scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    pairs = (a.shape[0], a.shape[1] // 2, 2)
    nl.store(scratch.reshape(pairs), nl.exp(nl.load(a.reshape(pairs))))
    nl.store(out, nl.add(nl.load(scratch), 1.0))
    return out


expect_works("a load after a store to the same bytes through a reshape reads what was stored",
             lambda: nki.simulate_kernel(store_through_alias, a8, size=8),
             lambda got: np.allclose(got, np.exp(a8.astype(np.float64)) + 1.0, rtol=1e-6))


# A load is hoisted past at most HOIST_WINDOW operations: b's load, after 100 exponentials of a's
# tile, climbs 64 of them (to operation 37), or with the window widened up to a's load.
@nki.jit
def long_compute(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for _ in range(100):
        t = nl.exp(t)
    nl.store(out, nl.add(t, nl.load(b)))
    return out


def load_positions(window):
    """Where the loads stand after hoisting, with HOIST_WINDOW set to `window`."""
    from ncore.nki.simulate import trace_kernel
    real, nki_compiler.HOIST_WINDOW = nki_compiler.HOIST_WINDOW, window
    try:
        t, _, _ = trace_kernel(long_compute, [a8, a8], 8)
        t.live_ops()
        c = nki_compiler.Compiler(t, "long_compute")
        c.place_hbm()
        c.hoist_loads(2)
        return [op.index for op in t.ops if op.opcode == "dma_copy" and op.fields["dir"] == "hbm_to_sbuf"]
    finally:
        nki_compiler.HOIST_WINDOW = real


expect_works("a load hoisted past at most HOIST_WINDOW operations",
             lambda: (nki_compiler.HOIST_WINDOW, load_positions(nki_compiler.HOIST_WINDOW), load_positions(1000)),
             lambda got: got[0] == 64 and got[1] == [0, 101 - 64] and got[2] == [0, 1])

# NKI's older style: the output argument is filled in place, and nothing is returned.
a_in, b_in, c_out = a8 + 1, a8 * 3, np.zeros_like(a8)
expect_works("output argument filled in place (cosim)",
             lambda: nki.simulate_kernel(tensor_add_out_arg_kernel, a_in, b_in, c_out, size=8, engine="cosim"),
             lambda returned: returned is None and np.array_equal(c_out, a_in + b_in))

# nki.benchmark's and nki.profile's options (refused when the decorator is made) and
# benchmark_kernel's timing_only (refused before tracing), each before a run.
import tempfile  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    for name, make, needles in (
            ("benchmark warmup=-1", lambda: nki.benchmark(warmup=-1, iters=3), ["nki.benchmark", "warmup=-1", "at least 0"]),
            ("benchmark iters=0", lambda: nki.benchmark(warmup=1, iters=0), ["iters=0", "at least 1"]),
            ("benchmark iters='10'", lambda: nki.benchmark(iters="10"), ["iters='10'", "whole number"]),
            ("profile profile_nth=0", lambda: nki.profile(working_directory=tmp, profile_nth=0),
             ["nki.profile", "profile_nth=0"]),
            ("profile save_trace_name=''", lambda: nki.profile(working_directory=tmp, save_trace_name=""),
             ["save_trace_name=''", "is a folder"]),
            ("timing_only on the RTL", lambda: nki.benchmark_kernel(plain_add, a8, size=8, engine="rtl", timing_only=True),
             ["timing_only", "golden core"])):
        try:
            make()
            failures.append(f"{name}: accepted")
        except ValueError as e:
            missing = [n for n in needles if n not in str(e)]
            if missing:
                failures.append(f"{name}: message lacks {missing}: {e}")
            else:
                print(f"ok   {name}: ValueError: {e}")

if failures:
    print("\n".join("FAIL " + f for f in failures))
sys.exit(1 if failures else 0)
