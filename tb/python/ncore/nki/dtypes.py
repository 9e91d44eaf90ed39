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
    """The array's values as `dtype`'s .npy storage: BF16 rounded to nearest even from float32,
    FP8 rounded to nearest even with saturation; other types by NumPy's cast."""
    a = np.asarray(array)
    if dtype is bfloat16:
        if a.dtype == np.uint16:
            return a.astype("<u2")
        bits = a.astype("<f4").view("<u4").astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        nan = np.isnan(a.astype(np.float32))
        return np.where(nan, 0x7FC0, rounded).astype("<u2")
    if dtype in (float8_e4m3, float8_e5m2):
        if a.dtype == np.uint8:
            return a.astype("|u1")
        table = fp8_values(dtype)
        finite = np.where(np.isfinite(table), table, np.nan)
        codes = np.arange(256)[np.isfinite(finite)]
        values = finite[codes]
        order = np.argsort(values, kind="stable")
        codes, values = codes[order], values[order]
        x = a.astype(np.float64).ravel()
        idx = np.clip(np.searchsorted(values, x), 1, len(values) - 1)
        lo, hi = values[idx - 1], values[idx]
        pick_hi = (hi - x < x - lo) | ((hi - x == x - lo) & (codes[idx] % 2 == 0))
        out = np.where(pick_hi, codes[idx], codes[idx - 1])
        out = np.where(x >= values[-1], codes[-1], np.where(x <= values[0], codes[0], out))
        return out.reshape(a.shape).astype("|u1")
    return a.astype(dtype.storage)


def from_storage(array, dtype):
    """Values from `dtype`'s .npy storage: BF16 and FP8 as float32 holding their exact values."""
    a = np.asarray(array)
    if dtype is bfloat16:
        return (a.astype("<u4") << 16).view("<f4")
    if dtype in (float8_e4m3, float8_e5m2):
        return fp8_values(dtype)[a.astype(np.int64)].astype(np.float32)
    return a


def fp8_values(dtype):
    """The value of each of the 256 codes of an FP8 type (NaN where the code is NaN)."""
    exp_bits, man_bits, bias = (4, 3, 7) if dtype is float8_e4m3 else (5, 2, 15)
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    e = (codes >> man_bits) & ((1 << exp_bits) - 1)
    m = codes & ((1 << man_bits) - 1)
    normal = (1 + m / (1 << man_bits)) * np.exp2(e.astype(np.float64) - bias)
    subnormal = (m / (1 << man_bits)) * np.exp2(1.0 - bias)
    v = sign * np.where(e == 0, subnormal, normal)
    if dtype is float8_e4m3:  # OCP E4M3: no infinities, S.1111.111 is NaN
        v = np.where((codes & 0x7F) == 0x7F, np.nan, v)
    else:  # E5M2: IEEE-like
        top = e == (1 << exp_bits) - 1
        v = np.where(top & (m == 0), sign * np.inf, np.where(top, np.nan, v))
    return v
