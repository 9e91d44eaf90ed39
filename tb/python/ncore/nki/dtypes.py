"""NKI's data types and how ncore stores them.

Each type has NKI's name, ncore's assembly name (model/isa/ncore.isa, enum d_type), its size,
and the NumPy storage `ncore run` uses in `.npy` files (tests/programs/README.md): BF16 and the
FP8 types travel as raw bits (`<u2`, `|u1`), since NumPy has no such types. Outputs of those
types come back as float32 arrays holding the exact values.
"""
import numpy as np


class DType:
    def __init__(self, name, isa, size, storage, is_float):
        self.name, self.isa, self.size, self.storage, self.is_float = name, isa, size, np.dtype(storage), is_float

    def __repr__(self):
        return f"nl.{self.name}"

    # Kernels compare and use tensor dtypes as NumPy's (`q.dtype == np.float32`, `.itemsize`,
    # `np.dtype(q.dtype)`): a type equals every spelling lookup() takes for it.
    @property
    def itemsize(self):
        return self.size

    @property
    def dtype(self):
        """The NumPy dtype of the same values (np.dtype(t) uses it); none for BF16, TF32 and FP8."""
        if self.name not in ("float32", "float16", "int8", "int16", "int32"):
            raise AttributeError(f"NumPy has no {self.name}")
        return np.dtype(self.name)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self is other
        try:
            return lookup(other) is self
        except TypeError:
            return NotImplemented

    def __hash__(self):
        try:
            return hash(self.dtype)
        except AttributeError:
            return hash(self.name)


float32 = DType("float32", "fp32", 4, "<f4", True)
tfloat32 = DType("tfloat32", "tf32", 4, "<f4", True)
bfloat16 = DType("bfloat16", "bf16", 2, "<u2", True)
float16 = DType("float16", "fp16", 2, "<f2", True)
float8_e4m3 = DType("float8_e4m3", "e4m3", 1, "|u1", True)
float8_e5m2 = DType("float8_e5m2", "e5m2", 1, "|u1", True)
int8 = DType("int8", "int8", 1, "|i1", False)
int16 = DType("int16", "int16", 2, "<i2", False)
int32 = DType("int32", "int32", 4, "<i4", False)

ALL = [float32, tfloat32, bfloat16, float16, float8_e4m3, float8_e5m2, int8, int16, int32]
_BY_NUMPY = {np.dtype(np.float32): float32, np.dtype(np.float16): float16, np.dtype(np.int8): int8,
             np.dtype(np.int16): int16, np.dtype(np.int32): int32}
# Precision order for the result type of an operation on mixed inputs (NKI promotes likewise).
_RANK = {d.name: r for r, d in enumerate([int8, int16, int32, float8_e5m2, float8_e4m3, bfloat16, float16,
                                         tfloat32, float32])}


def lookup(dtype, where="dtype"):
    """An NKI dtype from an NKI dtype, a NumPy dtype or a name; a clear error otherwise."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        for d in ALL:
            if dtype in (d.name, d.isa):
                return d
    else:
        try:
            found = _BY_NUMPY.get(np.dtype(dtype))
        except TypeError:
            found = None
        if found is not None:
            return found
    names = ", ".join(d.name for d in ALL)
    raise TypeError(f"{where}: {dtype!r} is not a type ncore supports (expected one of {names})")


def promote(*dtypes):
    """The result type of an operation on inputs of these types: the most precise one."""
    return max(dtypes, key=lambda d: _RANK[d.name])


def to_storage(array, dtype):
    """The array's values as `dtype`'s .npy storage. BF16 and FP8 are rounded from float32 by
    ncore's own cast (`ncore cast --sat`: round to nearest even, saturating), the conversion
    the engines use; raw bits (uint16 for BF16, uint8 for FP8) pass as they are. Other types go
    by NumPy's cast."""
    a = np.asarray(array)
    if dtype in _RAW_BITS:
        if a.dtype == dtype.storage:
            return a.copy()
        words = a.astype("<f4").view("<u4")
        return _ncore_cast(words, "fp32", dtype.isa, saturate=True).astype(dtype.storage)
    return a.astype(dtype.storage)


def from_storage(array, dtype):
    """Values from `dtype`'s .npy storage, BF16 and FP8 as float32 holding their exact values:
    BF16 is the top half of an FP32 word; FP8 is widened by `ncore cast`."""
    a = np.asarray(array)
    if dtype is bfloat16:
        return (a.astype("<u4") << 16).view("<f4")
    if dtype in (float8_e4m3, float8_e5m2):
        return _ncore_cast(a.astype("<u4"), dtype.isa, "fp32", saturate=False).astype("<u4").view("<f4")
    return a


_RAW_BITS = (bfloat16, float8_e4m3, float8_e5m2)


def _ncore_cast(words, source, target, saturate):
    """Bit patterns converted by `ncore cast --from source --to target [--sat]`, same shape."""
    import subprocess

    from ..tool import ncore_binary
    flat = np.ascontiguousarray(words).ravel()
    if flat.size == 0:
        return np.zeros(words.shape, np.uint32)
    text = "\n".join(map("{:x}".format, flat.tolist())) + "\n"
    cmd = [ncore_binary(), "cast", "--from", source, "--to", target] + (["--sat"] if saturate else [])
    p = subprocess.run(cmd, input=text, capture_output=True, text=True)
    out = p.stdout.split()
    if p.returncode != 0 or len(out) != flat.size:
        raise RuntimeError(f"{' '.join(cmd[1:])} failed (exit {p.returncode}): "
                           f"{p.stderr.strip() or f'{len(out)} values back for {flat.size}'}")
    return np.array([int(w, 16) for w in out], np.uint32).reshape(words.shape)
