#!/usr/bin/python3
"""Writes a NeuronCore program for a large BF16 GEMM: C[M, N] = A[K, M]^T @ B[K, N], FP32
accumulation in PSUM, BF16 out. Sizes are limited by HBM, not by the core's queues: the 4096^3
program (the default) has 18,930 instructions (16,958 on pe) and runs on the golden core
(tests/test_program_image.cpp checks its output; bench_core times it).

  tests/gen_gemm.py [--k K] [--m M] [--n N] -o PROGRAM.s

K is a multiple of 128, M of 512 (groups of 4 M tiles), N of 512; K at most 6,912 (SBUF).
A bad size or an output that cannot be written: a message and exit status 1.

The schedule, per block b = (group g of 4 M tiles, N tile nt), g outer:
  - sync queue: A's panel for group g (4 M tiles x every K tile, 1 KiB per K tile and
    partition) when nt == 0, and B's column block nt (every K tile), each over DMA engines 0-7
    (16 partitions each) into one of two buffers; then the store of block b - 1 over engines
    8-15. A buffer is reused once the tensor engine has finished the block two back.
  - tensor engine: waits for the eight load engines' counts, then 4 matmuls per K tile into
    PSUM banks (b % 2) * 4 + j, accumulating over K; one signal per block (a signal drains the
    PE array, so it is paid once per 128 matmuls).
  - vector engine: converts the block's 4 banks to BF16 in one of two SBUF output buffers.
Every DMA engine completes its descriptors in order, so ld<e> >= n means engine e has finished
its first n loads.
"""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tb" / "python"))
from ncore.tool import ArgumentParser  # noqa: E402  (the project's parser: exit status 1 on a bad option)

GROUP = 4                  # M tiles per group (PSUM banks per block; two blocks in flight)
LOAD_ENGINES = 8           # engines 0-7 load, 8-15 store; 16 partitions each
PARTS = 128 // LOAD_ENGINES


def program(k, m, n):
    kt_n, nt_n, g_n = k // 128, n // 512, m // (128 * GROUP)
    row_a, row_b, row_c = 2 * m, 2 * n, 2 * n  # bytes of a row in HBM
    panel = kt_n * 1024                        # bytes per partition of an A panel or a B block
    a_sb, b_sb, c_sb = 0, 2 * panel, 4 * panel
    if c_sb + 2 * GROUP * 1024 > 229376:
        raise SystemExit(f"gen_gemm: --k {k}: needs {c_sb + 2 * GROUP * 1024} bytes of SBUF a partition; it has 229376")
    blocks = g_n * nt_n
    out = [f"# C[{m}, {n}] = A[{k}, {m}]^T @ B[{k}, {n}], BF16 in and out, FP32 accumulation: tests/gen_gemm.py",
           f".tensor A hbm addr=0 dtype=bf16 shape={k}x{m} init=random seed=11",
           f".tensor B hbm addr={k * m * 2} dtype=bf16 shape={k}x{n} init=random seed=12",
           f".tensor C hbm addr={k * m * 2 + k * n * 2} dtype=bf16 shape={m}x{n} output",
           f".equ A_SB {a_sb}", f".equ B_SB {b_sb}", f".equ C_SB {c_sb}"]
    out += [f".sem ld{e}" for e in range(LOAD_ENGINES)]
    out += [f".sem st{e}" for e in range(LOAD_ENGINES)]
    out += [".sem pe_blocks", ".sem evicted"]

    def loads_done(b):  # each load engine's count once block b's operands have landed
        return b + 1 + b // nt_n + 1

    def transfers(engine0, direction, hbm, sbuf, row, planes, sem):
        """A 1 KiB row per partition and plane, 16 partitions per engine, planes 128 rows apart in
        HBM and 1 KiB apart in SBUF."""
        for e in range(LOAD_ENGINES):
            p = e * PARTS
            out.append(f"dma_copy engine={engine0 + e} dir={direction} hbm_addr={hbm}+{p * row} "
                       f"sbuf_addr={p}*SBUF_PARTITION+{sbuf} bytes=1024 count1={PARTS} hbm_stride1={row} "
                       f"sbuf_stride1=SBUF_PARTITION count2={planes} hbm_stride2={128 * row} sbuf_stride2=1024 "
                       f"signal={sem}{e}+=1")

    out.append(".queue sp")
    for b in range(blocks + 1):
        g, nt = divmod(b, nt_n)
        if b < blocks:
            if nt == 0:
                if g >= 2:
                    out.append(f"sem_wait pe_blocks>={(g - 1) * nt_n}")
                transfers(0, "hbm_to_sbuf", f"A+{g * GROUP * 256}", f"A_SB+{(g % 2) * panel}", row_a, kt_n, "ld")
            if b >= 2:
                out.append(f"sem_wait pe_blocks>={b - 1}")
            transfers(0, "hbm_to_sbuf", f"B+{nt * 1024}", f"B_SB+{(b % 2) * panel}", row_b, kt_n, "ld")
        if b >= 1:  # block b - 1 back to HBM: 4 M tiles of 128 rows, 512 columns
            s = b - 1
            sg, snt = divmod(s, nt_n)
            out.append(f"sem_wait evicted>={b}")
            transfers(LOAD_ENGINES, "sbuf_to_hbm", f"C+{sg * GROUP * 128 * row_c + snt * 1024}",
                      f"C_SB+{(s % 2) * GROUP * 1024}", row_c, GROUP, "st")

    out.append(".queue pe")
    for b in range(blocks):
        g = b // nt_n
        for e in range(LOAD_ENGINES):
            out.append(f"sem_wait ld{e}>={loads_done(b)}")
        if b >= 2:
            out.append(f"sem_wait evicted>={b - 1}")  # its PSUM banks are free again
        for kt in range(kt_n):
            for j in range(GROUP):
                last = kt == kt_n - 1 and j == GROUP - 1
                out.append(f"nc_matmul dtype=bf16 k=128 m=128 n=512 "
                           f"stationary=A_SB+{(g % 2) * panel + kt * 1024 + j * 256} "
                           f"moving=B_SB+{(b % 2) * panel + kt * 1024} stride=2 psum_bank={(b % 2) * GROUP + j} "
                           f"accumulate={int(kt > 0)}" + (" signal=pe_blocks+=1" if last else ""))

    out.append(".queue dve")
    for b in range(blocks):
        if b >= 2:  # its SBUF output buffer has gone back to HBM
            for e in range(LOAD_ENGINES):
                out.append(f"sem_wait st{e}>={b - 1}")
        for j in range(GROUP):
            last = j == GROUP - 1
            out.append(f"tensor_copy in0=fp32 out=bf16 partitions=128 src0=psum:{(b % 2) * GROUP + j}*PSUM_BANK "
                       f"src0_ap=[[1,512]] dst=sbuf:C_SB+{(b % 2) * GROUP * 1024 + j * 1024} dst_ap=[[1,512]] "
                       f"wait=pe_blocks>={b + 1}" + (" signal=evicted+=1" if last else ""))
    return "\n".join(out) + "\n"


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    for name, v, mult in (("--k", a.k, 128), ("--m", a.m, 128 * GROUP), ("--n", a.n, 512)):
        if v <= 0 or v % mult:
            ap.error(f"{name}: expected a positive multiple of {mult}, found {v}")
    text = program(a.k, a.m, a.n)
    try:
        with open(a.output, "w") as f:
            f.write(text)
    except OSError as e:
        raise SystemExit(f"gen_gemm: -o {a.output}: cannot write the program ({e.strerror})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
