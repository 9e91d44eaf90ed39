#!/usr/bin/python3
"""CTest Npy.*: tensors in and out of `ncore run` as NumPy .npy files, checked with numpy.

  npy_io.py NCORE roundtrip   every storage type: numpy writes an input, a program copies it
                              HBM -> SBUF -> HBM, `--outputs` writes both copies; each must equal
                              the input bit for bit with the documented dtype and shape (golden
                              core; FP32 also on the size-8 RTL core in co-simulation)
  npy_io.py NCORE errors      a wrong dtype, shape or path, and malformed files: exit status 1 and
                              a message naming the program line, the tensor, the file, what was
                              expected and what was found

The reference is numpy itself (independent of ncore's reader and writer).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

# ncore type -> (.npy dtype numpy must see, elements per 32-byte row)
TYPES = {
    "fp32": ("<f4", 8), "tf32": ("<f4", 8), "fp16": ("<f2", 16), "bf16": ("<u2", 16),
    "e4m3": ("|u1", 32), "e5m2": ("|u1", 32), "int8": ("|i1", 32), "int16": ("<i2", 16),
    "int32": ("<i4", 8),
}
ROWS = 4

PROGRAM = """\
.tensor A hbm  addr=0x0000 dtype={dtype} shape={rows}x{cols} init={init}
.tensor S sbuf addr=0x0000 dtype={dtype} shape={rows}x{cols} output
.tensor B hbm  addr=0x1000 dtype={dtype} shape={rows}x{cols} output
.sem loaded
.queue sp
.rept i {rows}
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=A+i*32 sbuf_addr=i*SBUF_PARTITION+S bytes=32 count1=1 signal=loaded+=1
.endr
.rept i {rows}
  dma_copy engine=i dir=sbuf_to_hbm hbm_addr=B+i*32 sbuf_addr=i*SBUF_PARTITION+S bytes=32 count1=1 wait=loaded>={rows}
.endr
"""


def random_array(descr, cols, rng):
    dt = np.dtype(descr)
    if dt.kind == "f":  # every bit pattern but NaNs with payloads numpy might not keep
        return rng.standard_normal((ROWS, cols)).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=(ROWS, cols), endpoint=True, dtype=dt)


def run(ncore, program, *args):
    return subprocess.run([ncore, "run", program, *args], capture_output=True, text=True)


def write_program(folder, dtype, cols, init):
    path = os.path.join(folder, f"copy_{dtype}.s")
    with open(path, "w") as f:
        f.write(PROGRAM.format(dtype=dtype, rows=ROWS, cols=cols, init=init))
    return path


def fail(why):
    print(f"npy_io: {why}")
    sys.exit(1)


def roundtrip(ncore, folder):
    rng = np.random.default_rng(20261124)
    cases = [(t, "golden") for t in TYPES] + [("fp32", "cosim")]
    for dtype, engine in cases:
        descr, cols = TYPES[dtype]
        a = random_array(descr, cols, rng)
        np.save(os.path.join(folder, f"in_{dtype}.npy"), a)
        program = write_program(folder, dtype, cols, f"file:in_{dtype}.npy")  # relative to the program
        out = os.path.join(folder, f"out_{dtype}_{engine}")
        args = ["--outputs", out, "--engine", engine] + (["--size", "8"] if engine != "golden" else [])
        r = run(ncore, program, *args)
        if r.returncode != 0:
            fail(f"{dtype} ({engine}): ncore run exited {r.returncode}\n{r.stdout}{r.stderr}")
        for name in ("S", "B"):
            got = np.load(os.path.join(out, f"{name}.npy"))
            if got.dtype.str != descr or got.shape != a.shape:
                fail(f"{dtype} ({engine}) {name}.npy: expected {descr} {a.shape}, found {got.dtype.str} {got.shape}")
            if got.tobytes() != a.tobytes():
                diff = np.flatnonzero(got.view(np.uint8) != a.view(np.uint8))
                fail(f"{dtype} ({engine}) {name}.npy: {diff.size} bytes differ from the input, first at byte {diff[0]}")
        print(f"npy_io: {dtype:6} ({engine}): {a.size} elements in and out bit for bit as {descr}")


def errors(ncore, folder):
    a = np.arange(ROWS * 8, dtype="<f4").reshape(ROWS, 8)
    np.save(os.path.join(folder, "good.npy"), a)
    np.save(os.path.join(folder, "f8.npy"), a.astype("<f8"))
    np.save(os.path.join(folder, "shape.npy"), a.reshape(8, ROWS))
    np.save(os.path.join(folder, "big_endian.npy"), a.astype(">f4"))
    np.save(os.path.join(folder, "fortran.npy"), np.asfortranarray(a))
    with open(os.path.join(folder, "good.npy"), "rb") as f:
        good = f.read()
    with open(os.path.join(folder, "truncated.npy"), "wb") as f:
        f.write(good[:-4])
    with open(os.path.join(folder, "longer.npy"), "wb") as f:
        f.write(good + b"\0\0\0\0")
    with open(os.path.join(folder, "text.npy"), "w") as f:
        f.write("1 2 3\n")
    with open(os.path.join(folder, "header.npy"), "wb") as f:  # a header that is not numpy's dict
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': [4, 8], }".ljust(118) + b"\n"
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + a.tobytes())
    cases = [
        ("f8.npy", ["tensor A", "expected dtype '<f4'", "found '<f8'"]),
        ("shape.npy", ["tensor A", "expected shape (4, 8)", "found (8, 4)"]),
        ("missing.npy", ["missing.npy", "cannot open"]),
        ("big_endian.npy", ["expected a little-endian", "found '>f4'"]),
        ("fortran.npy", ["expected 'fortran_order': False", "found True"]),
        ("truncated.npy", ["expected 128 bytes of data", "found 124"]),
        ("longer.npy", ["expected 128 bytes of data", "found 132"]),
        ("text.npy", ["expected a .npy file"]),
        ("header.npy", ["expected '('", "found '['"]),
    ]
    for file, needles in cases:
        program = write_program(folder, "fp32", 8, f"file:{file}")
        r = run(ncore, program)
        message = r.stderr
        if r.returncode != 1:
            fail(f"{file}: expected exit status 1, found {r.returncode}\n{r.stdout}{r.stderr}")
        for needle in [f"{program}:1:", file] + needles:
            if needle not in message:
                fail(f"{file}: expected '{needle}' in the message, found:\n{message}")
        print(f"npy_io: {file:15} refused: {message.strip().splitlines()[0]}")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("roundtrip", "errors"):
        fail("usage: npy_io.py NCORE roundtrip|errors")
    with tempfile.TemporaryDirectory() as folder:
        (roundtrip if sys.argv[2] == "roundtrip" else errors)(sys.argv[1], folder)


if __name__ == "__main__":
    main()
