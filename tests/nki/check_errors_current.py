#!/usr/bin/python3
"""CTest Nki.CurrentDialectErrors: kernels in the current dialect (`import nki`) that ncore cannot
run get a KernelError naming the call and the kernel's file:line, never a wrong answer. Each row
of CASES is a kernel, its inputs and the words its error must hold. Then the programs of two
kernels show nc_matmul's accumulation as NKI documents it."""
import os
import sys
import tempfile

import numpy as np

import ncore.nki as ncore_nki

ncore_nki.alias_nki()
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

HERE = os.path.abspath(__file__)
failures = []


def line_of(marker):
    with open(HERE) as f:
        for n, text in enumerate(f, 1):
            if marker in text and "line_of" not in text and "CASES" not in text:
                return n
    raise AssertionError(marker)


def tile(shape, dtype=nl.float32, buffer=nl.sbuf):
    return nl.ndarray(shape, dtype=dtype, buffer=buffer)


def unsupported_call(a):
    t = tile(a.shape)
    nisa.dma_compute(dst=t, srcs=[a], reduce_op=nl.add)  # MARK-unsupported


def matmul_into_sbuf(a):
    t, out = tile(a.shape), tile((8, 64))
    nisa.dma_copy(dst=t, src=a)
    nisa.nc_matmul(dst=out, stationary=t[:, 0:8], moving=t)  # MARK-matmul-sbuf


def matmul_partly_written(a):
    t, acc = tile(a.shape), tile((8, 64), buffer=nl.psum)
    nisa.dma_copy(dst=t, src=a)
    nisa.nc_matmul(dst=acc[:, 0:32], stationary=t[:, 0:8], moving=t[:, 0:32])
    nisa.nc_matmul(dst=acc[:, 16:48], stationary=t[:, 0:8], moving=t[:, 0:32])  # MARK-partly


def placed_by_hand(a):
    nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf, address=(0, 128))  # MARK-address


def block_dimension(a):
    nl.ndarray((2, nl.par_dim(8), 64), dtype=a.dtype, buffer=nl.sbuf)  # MARK-block


def hbm_to_hbm(a):
    out = nl.ndarray((8, 64), dtype=nl.float16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)  # MARK-hbm-hbm
    return out


def wrong_dst_shape(a):
    t, d = tile(a.shape), tile((8, 32))
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_tensor(dst=d, data1=t, data2=t, op=nl.add)  # MARK-shape


def registers_across_instructions(a):
    t, d, s = tile(a.shape), tile(a.shape), tile((8, 1))
    nisa.dma_copy(dst=t, src=a)
    nisa.activation(dst=d, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=s,  # MARK-reduce-cmd
                    reduce_cmd=nisa.reduce_cmd.reduce)


def two_dimensional_pattern(a):
    t, d = tile(a.shape), tile(a.shape)
    nisa.dma_copy(dst=t, src=a)
    nisa.affine_select(dst=d, pattern=[[1, 2], [-1, 32]], channel_multiplier=1, on_true_tile=t,  # MARK-pattern
                       on_false_value=0.0)


def too_many_partitions(a):
    nl.ndarray((16, 64), dtype=a.dtype, buffer=nl.sbuf)  # MARK-partitions


def with_a_mask(a):
    t, d = tile(a.shape), tile(a.shape)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_copy(dst=d, src=t, mask=None)  # MARK-mask


def tiled_matmul_mode(a):
    t, acc = tile(a.shape), tile((8, 64), buffer=nl.psum)
    nisa.dma_copy(dst=t, src=a)
    nisa.nc_matmul(dst=acc, stationary=t[:, 0:8], moving=t, tile_position=(0, 0), tile_size=(32, 32))  # MARK-tiling


def removed_mgrid(a):
    i_p, i_f = nl.mgrid[0:8, 0:64]  # MARK-mgrid


def dma_into_psum(a):
    acc = tile(a.shape, buffer=nl.psum)
    nisa.dma_copy(dst=acc, src=a)  # MARK-psum


def ap_dynamic(a):
    t = tile(a.shape)
    nisa.dma_copy(dst=t, src=a.ap([[64, 8], [1, 64]], scalar_offset=t[0:1, 0:1]))  # MARK-ap-dynamic


def ap_outside(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    t.ap([[64, 8], [2, 64]])  # MARK-ap-outside


def ap_indexed(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    t.ap([[64, 8], [1, 64]])[0:4]  # MARK-ap-index


def fp8_transpose(a):
    t = nl.ndarray((8, 8), dtype=nl.float8_e4m3, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t, src=tile(a.shape)[:, 0:8])
    out = nl.ndarray((8, 8), dtype=nl.float8_e4m3, buffer=nl.psum)
    nisa.nc_transpose(dst=out, data=t)  # MARK-fp8-transpose


a8 = np.ones((8, 64), np.float32)
CASES = [
    ("a transpose of FP8 (16-bit PSUM elements)", fp8_transpose, "nisa.nc_transpose", "float8_e4m3",
     "transpose it in BF16", "MARK-fp8-transpose"),
    ("a dynamic offset", ap_dynamic, "tensor.ap", "dynamic offsets", "MARK-ap-dynamic"),
    ("an access pattern that leaves the tile", ap_outside, "tensor.ap", "leaves", "MARK-ap-outside"),
    ("indexing an access pattern", ap_indexed, ".ap(...)[...]", "give the pattern", "MARK-ap-index"),
    ("a call ncore does not run", unsupported_call, "nisa.dma_compute", "not supported", "MARK-unsupported"),
    ("nc_matmul into SBUF", matmul_into_sbuf, "nisa.nc_matmul: dst", "PSUM", "MARK-matmul-sbuf"),
    ("nc_matmul over part of an earlier write", matmul_partly_written, "only in part", "accumulate=True",
     "MARK-partly"),
    ("manual placement", placed_by_hand, "nl.ndarray", "address=", "MARK-address"),
    ("a block dimension", block_dimension, "nl.par_dim", "block dimensions were removed", "MARK-block"),
    ("HBM to HBM with a cast", hbm_to_hbm, "nisa.dma_copy", "float32 to float16", "MARK-hbm-hbm"),
    ("a dst of another shape", wrong_dst_shape, "nisa.tensor_tensor", "(8, 32)", "(8, 64)", "MARK-shape"),
    ("reduction registers kept between instructions", registers_across_instructions, "nisa.activation",
     "reduce_cmd", "MARK-reduce-cmd"),
    ("a pattern of two dimensions", two_dimensional_pattern, "nisa.affine_select", "pattern", "MARK-pattern"),
    ("more partitions than the core has", too_many_partitions, "nl.ndarray", "(16, 64)", "MARK-partitions"),
    ("mask= (removed in NKI 0.2.0)", with_a_mask, "nisa.tensor_copy", "mask=", "MARK-mask"),
    ("the tensor engine's tiling mode", tiled_matmul_mode, "nisa.nc_matmul", "tile_position", "MARK-tiling"),
    ("nl.mgrid (removed in NKI 0.2.0)", removed_mgrid, "nl.mgrid", "removed in NKI 0.2.0", "MARK-mgrid"),
    ("a DMA into PSUM", dma_into_psum, "nisa.dma_copy", "PSUM", "MARK-psum"),
]

for name, body, *needles in CASES:
    marker = needles.pop()
    needles.append(f"check_errors_current.py:{line_of(marker)}")
    try:
        ncore_nki.simulate_kernel(nki.jit(body), a8, size=8)
    except ncore_nki.KernelError as e:
        missing = [n for n in needles if n not in str(e)]
        if missing:
            failures.append(f"{name}: message lacks {missing}: {e}")
        else:
            print(f"ok   {name}: {e}")
    except Exception as e:  # noqa: BLE001
        failures.append(f"{name}: expected KernelError, got {type(e).__name__}: {e}")
    else:
        failures.append(f"{name}: ran without an error")

try:
    nki.jit(platform_target="trn1")
    failures.append("platform_target='trn1': accepted")
except ncore_nki.KernelError as e:
    print(f"ok   a target other than Trainium2: {e}")

# HBM to HBM goes through SBUF: views of one shape, and contiguous runs of one length in other
# shapes (a flat copy of a [16, 64] tensor into a [4, 256] one, and into the middle of a longer one).
@nki.jit
def copies(a):
    same = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    flat = nl.ndarray((4, 256), dtype=a.dtype, buffer=nl.shared_hbm)
    inner = nl.ndarray((3 * 1024,), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=same[0:8, :], src=a[0:8, :])
    nisa.dma_copy(dst=same[8:16, :], src=a[8:16, :])
    nisa.dma_copy(dst=flat, src=a)
    nisa.dma_copy(dst=inner[1024:2048], src=a)
    return same, flat, inner


a16 = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
for engine in ("golden", "cosim"):
    same, flat, inner = ncore_nki.simulate_kernel(nki.jit(copies), a16, size=8, engine=engine)
    good = (np.array_equal(same, a16) and np.array_equal(flat, a16.reshape(4, 256)) and
            np.array_equal(inner[1024:2048], a16.reshape(-1)))
    print(f"{'ok  ' if good else 'FAIL'} HBM to HBM through SBUF ({engine}): exact")
    if not good:
        failures.append(f"HBM to HBM ({engine})")

# nc_matmul's accumulation in the programs: accumulate=None overwrites on a PSUM tile's first
# write and accumulates after (matmul_tiled: K/128 = 4 matmuls per output tile); accumulate=k > 0
# restarts each group on one reused tile (matmul_into).
sys.path.insert(0, os.path.dirname(HERE))
from current import matmul  # noqa: E402


def flags(kernel, *inputs):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.s")
        ncore_nki.simulate_kernel(kernel, *inputs, size=8, program_out=path)
        with open(path) as f:
            return [int(line.split("accumulate=")[1].split()[0]) for line in f if line.startswith("nc_matmul")]


rng = np.random.default_rng(3)
lhsT, rhs = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 64)).astype(np.float32)
expected = [0, 1, 1, 1] * 2
for name, got in (("matmul_tiled", flags(matmul.matmul_tiled, lhsT, rhs)),
                  ("matmul_into", flags(matmul.matmul_into, lhsT, rhs, np.zeros((16, 64), np.float32)))):
    if got != expected:
        failures.append(f"{name}: nc_matmul accumulate flags {got}, expected {expected}")
    else:
        print(f"ok   {name}: nc_matmul accumulate flags {got}")

if failures:
    print("\n".join("FAIL " + f for f in failures))
sys.exit(1 if failures else 0)
