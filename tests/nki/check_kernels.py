#!/usr/bin/python3
"""CTest Nki.*: the NKI-style kernels of tests/nki on ncore, checked against NumPy in float64.

  check_kernels.py CASE --engine cosim --size 8      small shapes on the size-8 RTL core, in
                                                     lockstep with the golden core (bit for bit)
  check_kernels.py CASE --engine golden --size 128   full-size shapes on the golden core
  check_kernels.py CASE --cores 8                    a launch grid over the 8 cores of a chip
                                                     (golden cores, size 128, shared HBM)
  check_kernels.py all ...                           every case

Inputs are random from a fixed seed (printed; --seed changes it). Each output must be within
|out - ref| <= atol + rtol * |ref| of a float64 reference computed here from the same inputs;
the tolerances are each case's, stated below with the rounding that sets them (a case may give
the bound per element instead: its atol is then an array).
"""
import argparse
import os
import sys

import math

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as nki  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402

nki.alias_neuronxcc()

import matmul  # noqa: E402
from assign import assign_kernel  # noqa: E402
from cast import cast_kernel  # noqa: E402
from attention import attention_kernel  # noqa: E402
from attention_causal import attention_causal_kernel  # noqa: E402
from fill import fill_kernel  # noqa: E402
from layernorm_bn import layernorm_bn_kernel  # noqa: E402
from gelu import gelu_kernel  # noqa: E402
from layernorm import layernorm_kernel  # noqa: E402
from row_stats import row_stats_kernel  # noqa: E402
from scan import recurrence_kernel  # noqa: E402
from transpose2d import transpose2d_kernel  # noqa: E402
from two_pass import two_pass_kernel  # noqa: E402
from rmsnorm import rmsnorm_kernel  # noqa: E402
from softmax import softmax_kernel  # noqa: E402
from tensor_add import tensor_add_kernel  # noqa: E402
from tensor_add_masked import tensor_add_masked_kernel  # noqa: E402
from strided_copy import long_rows_kernel, many_planes_kernel, strided_copy_kernel  # noqa: E402
from mgrid_scale import mgrid_scale_kernel  # noqa: E402
from tiled_copy import tiled_copy_kernel  # noqa: E402
from transposed_access import transposed_access_kernel  # noqa: E402
from sd_attention import sd_attention_kernel  # noqa: E402
from mamba import mamba_kernel  # noqa: E402
from rotary import rotary_kernel  # noqa: E402
import dma_transpose  # noqa: E402

# The current dialect (`import nki`, Neuron 2.27 and later): tests/nki/current.
nki.alias_nki()
from current import attention_causal as current_attention_causal  # noqa: E402
from current import avgpool as current_avgpool  # noqa: E402
from current import scan as current_scan  # noqa: E402
from current import access_patterns as current_access_patterns  # noqa: E402
from current import dma_transpose as current_dma_transpose  # noqa: E402
from current import layernorm as current_layernorm  # noqa: E402
from current import matmul as current_matmul  # noqa: E402
from current import rmsnorm as current_rmsnorm  # noqa: E402
from current import softmax as current_softmax  # noqa: E402
from current import tensor_add as current_tensor_add  # noqa: E402


def rows_cols(size, small, full):
    return small if size == 8 else full


def case_tensor_add(rng, size):
    """FP32 in and out: the sum is one FP32 rounding (rtol 2^-24 covers it)."""
    rows, cols = rows_cols(size, (16, 64), (512, 1024))
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((rows, cols)).astype(np.float32)
    ref = a.astype(np.float64) + b.astype(np.float64)
    return tensor_add_kernel[rows // size, 2], (a, b), ref, 6e-8, 0.0


def case_tensor_add_masked(rng, size):
    """Rows that leave the last tile part empty: masked loads and stores (FP16 in and out: one
    FP16 rounding, rtol 2^-11)."""
    rows, cols = rows_cols(size, (20, 64), (300, 512))
    a = rng.standard_normal((rows, cols)).astype(np.float16)
    b = rng.standard_normal((rows, cols)).astype(np.float16)
    ref = a.astype(np.float64) + b.astype(np.float64)
    return tensor_add_masked_kernel, (a, b), ref, 2 ** -11, 0.0


def case_strided_copy(rng, size):
    """A load walking three free dimensions in HBM: descriptor lists. A multiply by 2 is exact."""
    shape = (size, 4, 2, 64) if size == 8 else (128, 8, 4, 128)
    x = rng.standard_normal(shape).astype(np.float32)
    return strided_copy_kernel, (x,), x[:, :, :, :shape[3] // 2].astype(np.float64) * 2, 0.0, 0.0


def case_long_rows(rng, size):
    """Rows of 80,000 bytes, past a descriptor's 64 KiB: lists of row pieces. A copy is exact."""
    x = rng.standard_normal((size, 20000)).astype(np.float32)
    return long_rows_kernel, (x,), x.astype(np.float64), 0.0, 0.0


def case_many_planes(rng, size):
    """5,000 planes, past a descriptor's 4,095: lists of plane runs. A copy is exact. (8 rows at
    either size: 5,000 planes of 32-byte bursts on 128 rows take the golden core 45 s.)"""
    x = rng.integers(-128, 128, (8, 5000, 64)).astype(np.int8)
    return many_planes_kernel, (x,), x[:, :, :32].astype(np.float64), 0.0, 0.0


def case_mgrid_scale(rng, size):
    """An index grid's .p and .x, loop offsets and a masked last tile: one FP32 multiply."""
    rows, cols = rows_cols(size, (20, 64), (300, 512))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    scale = rng.standard_normal((1, cols)).astype(np.float32)
    return mgrid_scale_kernel, (x, scale), x.astype(np.float64) * scale.astype(np.float64), 6e-8, 0.0


def case_tiled_copy(rng, size):
    """A tuple and a bool among the arguments; a negation is exact."""
    rows, cols = rows_cols(size, (16, 128), (512, 1024))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    return tiled_copy_kernel, (x, (size, 64), True), -x.astype(np.float64), 0.0, 0.0


def case_assign(rng, size):
    """FP32 exp (2^-20 relative) and two FP32 adds: rtol 1e-5."""
    x = rng.standard_normal((size, 64)).astype(np.float32)
    x64 = x.astype(np.float64)
    return assign_kernel, (x,), np.exp(x64) + x64 + 1, 1e-5, 1e-6


def case_gelu(rng, size):
    """Against math.erf and the tanh formula in float64: the exact form within 1e-6 (1 + |x|)
    (erf's rational approximation 1.5e-7, FP32 roundings); the tanh form within the scalar
    engine's tanh and FP32 roundings, 1e-5 (1 + |x|)."""
    x = (3 * rng.standard_normal((size, 64))).astype(np.float32)
    x64 = x.astype(np.float64)
    exact = 0.5 * x64 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2)))
    approx = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    return gelu_kernel, (x,), (exact, approx), 0.0, (1e-6 * (1 + np.abs(x64)), 1e-5 * (1 + np.abs(x64)))


def case_cast(rng, size):
    """FP32 to FP8, exact: each output is the code nearest x (ties to the even code), found here
    by the formats' tables. The engines do not saturate unless told (tb/python/README.md): past
    the largest finite value E4M3 gives NaN (it has no infinity) and E5M2 gives +-Inf."""
    x = (rng.standard_normal((size, 64)) * np.exp2(rng.integers(-12, 17, (size, 64)))).astype(np.float32)
    return cast_kernel, (x,), (nearest_fp8(x, True), nearest_fp8(x, False)), 0.0, (0.0, 0.0)


def nearest_fp8(x, e4m3):
    table = fp8_table(e4m3)
    codes = np.arange(256)[np.isfinite(table)]
    order = np.argsort(table[codes], kind="stable")
    codes, vals = codes[order], table[codes][order]
    flat = x.astype(np.float64).ravel()
    hi = np.clip(np.searchsorted(vals, flat), 1, len(vals) - 1)
    lo = hi - 1
    up = (vals[hi] - flat < flat - vals[lo]) | ((vals[hi] - flat == flat - vals[lo]) & (codes[hi] % 2 == 0))
    out = np.where(up, vals[hi], vals[lo])
    # Overflow is decided after rounding (model/README.md): past the tie between the largest
    # finite value and the next one the format would have. E4M3: 448 and 480, the tie 464 goes
    # to the even 448. E5M2: 57344 and 65536, the tie 61440 goes to the even 65536, infinity.
    over = np.abs(flat) > 464 if e4m3 else np.abs(flat) >= 61440
    out = np.where(over, np.nan if e4m3 else np.sign(flat) * np.inf, out)
    return out.reshape(x.shape)


def case_two_pass(rng, size):
    """FP32 exp (2^-20 relative) and an add: rtol 1e-5. A load moved ahead of the store or read
    it depends on reads stale bytes and fails this by far."""
    rows, cols = rows_cols(size, (32, 64), (512, 512))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    return two_pass_kernel, (x,), np.exp(x.astype(np.float64)) + 1, 1e-5, 1e-6


def case_softmax(rng, size):
    """FP32: exp on the scalar engine (its approximation, rtl/scalar/README.md, within 2^-20
    relative) and the reciprocal: rtol 1e-5."""
    rows, cols = rows_cols(size, (16, 64), (256, 512))
    x = (2 * rng.standard_normal((rows, cols))).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return softmax_kernel, (x,), e / e.sum(axis=1, keepdims=True), 1e-5, 1e-7


def case_rmsnorm(rng, size):
    """FP32: square sums in FP32 (d terms), rsqrt: rtol 1e-5."""
    rows, d = rows_cols(size, (16, 64), (256, 512))
    x = rng.standard_normal((rows, d)).astype(np.float32)
    g = rng.standard_normal((1, d)).astype(np.float32)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * g
    return rmsnorm_kernel, (x, g), ref, 1e-5, 1e-6


def case_rmsnorm_bf16(rng, size):
    """BF16 in and out (FP32 inside): the output's BF16 rounding, 2^-8 relative, sets rtol 1e-2."""
    rows, d = rows_cols(size, (16, 64), (256, 512))
    x = nki.typed(rng.standard_normal((rows, d)), nki.language.bfloat16)
    g = nki.typed(rng.standard_normal((1, d)), nki.language.bfloat16)
    x64, g64 = values(x), values(g)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * g64
    return rmsnorm_kernel, (x, g), ref, 1e-2, 1e-2


def _layernorm_case(rng, rows, d):
    """FP32 inputs (x off-centre) and the float64 LayerNorm of them, eps 1e-5."""
    x = (rng.standard_normal((rows, d)) + 0.5).astype(np.float32)
    gamma = rng.standard_normal((1, d)).astype(np.float32)
    beta = rng.standard_normal((1, d)).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    return (x, gamma, beta), (x64 - mean) / np.sqrt(var + 1e-5) * gamma + beta


def case_layernorm(rng, size):
    """FP32: two FP32 means of d terms and an rsqrt: rtol 1e-5."""
    inputs, ref = _layernorm_case(rng, *rows_cols(size, (16, 64), (256, 512)))
    return layernorm_kernel, inputs, ref, 1e-5, 1e-5


def case_layernorm_bn(rng, size):
    """FP32 through bn_stats / bn_aggr (shifted sums, one division each) and two
    scalar_tensor_tensor: a few FP32 roundings per element, rtol 1e-5; more than 512 columns at
    full size, so bn_aggr joins two chunks."""
    inputs, ref = _layernorm_case(rng, *rows_cols(size, (16, 64), (256, 1024)))
    # The variance sums 512 squares per chunk in FP32 (about 1e-6 relative), which moves y by up to
    # |xn * gamma| ~ 10 times that: atol 3e-5.
    return layernorm_bn_kernel, inputs, ref, 1e-5, 3e-5


def case_fill(rng, size):
    """iota and memset: exact."""
    p, f = rows_cols(size, (8, 24), (128, 512))
    i_p, i_f = np.mgrid[0:p, 0:f]
    return fill_kernel, (np.zeros((p, f), np.float32),), ((f * i_p - i_f + 3).astype(np.float64),
                                                           np.full((p, f), 2.5)), 0.0, (0.0, 0.0)


def values(typed):
    """The exact values of a typed input's bits, decoded here (independently of ncore's cast):
    BF16 is the top half of an FP32 word, FP8 by the table of its format; other types as
    NumPy holds them."""
    bits = np.asarray(typed.storage)
    if typed.dtype is nki.language.bfloat16:
        return (bits.astype("<u4") << 16).view("<f4").astype(np.float64)
    if typed.dtype in (nki.language.float8_e4m3, nki.language.float8_e5m2):
        return fp8_table(typed.dtype is nki.language.float8_e4m3)[bits.astype(np.int64)]
    return bits.astype(np.float64)


def fp8_table(e4m3):
    """The value of each of the 256 codes: OCP E4M3 (bias 7, S.1111.111 NaN, no infinities) or
    E5M2 (bias 15, IEEE-like)."""
    exp_bits, man_bits, bias = (4, 3, 7) if e4m3 else (5, 2, 15)
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    e = (codes >> man_bits) & ((1 << exp_bits) - 1)
    m = codes & ((1 << man_bits) - 1)
    v = sign * np.where(e == 0, m / (1 << man_bits) * 2.0 ** (1 - bias),
                        (1 + m / (1 << man_bits)) * np.exp2(e.astype(np.float64) - bias))
    if e4m3:
        return np.where((codes & 0x7F) == 0x7F, np.nan, v)
    top = e == (1 << exp_bits) - 1
    return np.where(top & (m == 0), sign * np.inf, np.where(top, np.nan, v))


def case_transpose2d(rng, size):
    """Bits moved by the tensor engine's transpose mode: exact."""
    rows, cols = rows_cols(size, (16, 32), (256, 512))
    dtype = nki.language.float32 if size == 8 else nki.language.bfloat16
    x = nki.typed(rng.standard_normal((rows, cols)), dtype)
    return transpose2d_kernel, (x,), values(x).T, 0.0, 0.0


def _matmul_case(rng, size, kernel, shape, dtype):
    """BF16 (or FP32) products summed in FP32 over K in the PE array and PSUM: each element within
    K * 2^-23 * sum |a b| of the exact sum (FP32 products of FP32 inputs round too)."""
    k, m, n = shape
    a = nki.typed(rng.standard_normal((k, m)), dtype)
    b = nki.typed(rng.standard_normal((k, n)), dtype)
    ref = values(a).T @ values(b)
    bound = k * 2.0 ** -23 * (np.abs(values(a)).T @ np.abs(values(b)))
    return kernel, (a, b), ref, 0.0, bound


def case_matmul_basic(rng, size):
    return _matmul_case(rng, size, matmul.matmul_basic, (size, size, 64 if size == 8 else 512),
                        nki.language.float32 if size == 8 else nki.language.bfloat16)


def case_matmul_tiled(rng, size):
    return _matmul_case(rng, size, matmul.matmul_tiled, rows_cols(size, (32, 16, 64), (512, 256, 1024)),
                        nki.language.float32 if size == 8 else nki.language.bfloat16)


def case_matmul_hoisted(rng, size):
    return _matmul_case(rng, size, matmul.matmul_hoisted, rows_cols(size, (32, 16, 64), (512, 256, 1024)),
                        nki.language.float32 if size == 8 else nki.language.bfloat16)


def case_matmul_block_tiles(rng, size):
    """matmul_hoisted's program, written with block tiles: the same cycles."""
    return _matmul_case(rng, size, matmul.matmul_block_tiles, rows_cols(size, (32, 16, 64), (512, 256, 1024)),
                        nki.language.float32 if size == 8 else nki.language.bfloat16)


def case_matmul_blocked(rng, size):
    return _matmul_case(rng, size, matmul.matmul_blocked, rows_cols(size, (32, 16, 64), (512, 256, 2048)),
                        nki.language.bfloat16)


def case_matmul_block_free(rng, size):
    """Blocks of 4 x 2 result tiles: two blocks of M, and of N two at full size (one at size 8)."""
    return _matmul_case(rng, size, matmul.matmul_block_free, rows_cols(size, (32, 64, 128), (512, 1024, 2048)),
                        nki.language.bfloat16)


def case_attention(rng, size):
    """The probabilities go to the second matmul in BF16 (2^-8 relative each), as NKI's kernels
    do; exp and reciprocal add about 2^-20: within 1e-2 of sum |p v| / sum p per element."""
    d, sq, sk = size, size, 4 * size
    dtype = nki.language.float32 if size == 8 else nki.language.bfloat16
    q = nki.typed(rng.standard_normal((d, sq)), dtype)
    k = nki.typed(rng.standard_normal((d, sk)), dtype)
    v = nki.typed(rng.standard_normal((sk, d)), dtype)
    s = values(q).T @ values(k) / math.sqrt(d)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return attention_kernel, (q, k, v), p @ values(v), 0.0, 1e-2 * (p @ np.abs(values(v))) + 1e-6


def case_attention_causal(rng, size):
    """As attention, with query i seeing keys 0..i (affine_select): within 1e-2 of
    sum |p v| / sum p per element."""
    d = s = size
    dtype = nki.language.float32 if size == 8 else nki.language.bfloat16
    q = nki.typed(rng.standard_normal((d, s)), dtype)
    k = nki.typed(rng.standard_normal((d, s)), dtype)
    v = nki.typed(rng.standard_normal((s, d)), dtype)
    scores = values(q).T @ values(k) / math.sqrt(d)
    scores[np.triu_indices(s, 1)] = -np.inf
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return attention_causal_kernel, (q, k, v), p @ values(v), 0.0, 1e-2 * (p @ np.abs(values(v))) + 1e-6


def case_scan(rng, size):
    """FP32 h[i] = a[i] h[i-1] + x[i], |a| < 1: each step two FP32 roundings, a few ulps over the
    rows: rtol 1e-5, atol 1e-6."""
    rows, steps = size, size
    a = rng.uniform(-0.9, 0.9, (steps, rows)).astype(np.float32)
    x = rng.standard_normal((steps, rows)).astype(np.float32)
    h0 = np.zeros((rows, 8), np.float32)
    h0[:, 0] = rng.standard_normal(rows)
    ref = np.zeros((rows, steps))
    prev = h0[:, 0].astype(np.float64)
    for i in range(steps):
        prev = a[i].astype(np.float64) * prev + x[i]
        ref[:, i] = prev
    return recurrence_kernel, (a, x, h0[:, 0:1].copy()), ref, 1e-5, 1e-6


def case_matmul_fp8(rng, size):
    """FP8 E4M3 products are exact in FP32; the sum rounds in FP32 (the matmul bound)."""
    return _matmul_case(rng, size, matmul.matmul_blocked, rows_cols(size, (32, 32, 64), (512, 256, 1024)),
                        nki.language.float8_e4m3)


def case_tensor_add_int16(rng, size):
    """INT16 in and out through the vector engine's FP32 datapath: small integers add exactly."""
    rows, cols = rows_cols(size, (16, 64), (512, 1024))
    a = rng.integers(-1000, 1000, (rows, cols)).astype(np.int16)
    b = rng.integers(-1000, 1000, (rows, cols)).astype(np.int16)
    return tensor_add_kernel[rows // size, 2], (a, b), a.astype(np.float64) + b, 0.0, 0.0


def case_row_stats(rng, size):
    """Two [rows, 1] FP32 outputs: the maximum exactly, the mean of cols FP32 terms within 1e-6."""
    rows, cols = rows_cols(size, (16, 64), (256, 512))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x64 = x.astype(np.float64)
    return row_stats_kernel, (x,), (x64.max(axis=1, keepdims=True), x64.mean(axis=1, keepdims=True)), 0.0, (0.0, 1e-6)


def case_transposed_access(rng, size):
    """Loads and stores through swapped index expressions (tensor-engine transposes keep the bits;
    doubling is exact): exact."""
    x = rng.standard_normal(rows_cols(size, (16, 4), (512, 64))).astype(np.float32)
    return transposed_access_kernel, (x,), 2 * x.T.astype(np.float64), 0.0, 0.0


def _sd_attention_case(rng, size, causal):
    """Both matmuls take BF16 operands (q scaled, k, v and the probabilities each rounded, 2^-9
    relative): a row's scores are within eps = 2^-8 x 0.125 x max_j sum |q k_j| of the exact
    ones, so its probabilities within a factor e^(2 eps), and each output within
    (e^(2 eps) - 1 + 2^-8) x (p @ |v|) of the float64 reference."""
    seq, d = rows_cols(size, (32, 8), (512, 64))
    q, k, v = (rng.random((seq, d)).astype(np.float32) for _ in range(3))
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = 0.125 * q64 @ k64.T
    if causal:
        s[np.triu_indices(seq, 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    eps = 2.0 ** -8 * 0.125 * (np.abs(q64) @ np.abs(k64).T).max(axis=1, keepdims=True)
    return sd_attention_kernel, (q, k, v, causal), p @ v64, 0.0, (np.exp(2 * eps) - 1 + 2.0 ** -8) * (p @ v64)


def case_sd_attention(rng, size):
    return _sd_attention_case(rng, size, False)


def case_sd_attention_causal(rng, size):
    return _sd_attention_case(rng, size, True)


def case_mamba(rng, size):
    """FP32 throughout: each of the seq steps of the recurrence rounds a few times in FP32 and
    the scalar engine's exp is within 2^-20 relative (rtl/scalar/README.md), so each output is
    within (seq + 2) x 2^-20 x the same recurrence run on absolute values."""
    batch, channels, seq, states = (1, 16, 64, 2) if size == 8 else (1, 256, 2048, 4)
    delta = rng.uniform(0.0, 0.2, (batch, channels, seq)).astype(np.float32)
    u = rng.standard_normal((batch, channels, seq)).astype(np.float32)
    A = -rng.uniform(0.5, 1.0, (channels, states)).astype(np.float32)
    B = rng.standard_normal((batch, states, seq)).astype(np.float32)
    C = rng.standard_normal((batch, states, seq)).astype(np.float32)
    d, u64, B64, C64 = (x.astype(np.float64) for x in (delta, u, B, C))
    ref, mag = np.zeros(delta.shape), np.zeros(delta.shape)
    for s in range(states):
        decay = np.exp(d * A[None, :, s, None])
        drive = d * u64 * B64[:, s:s + 1, :]
        h, h_abs = np.zeros((batch, channels)), np.zeros((batch, channels))
        for t in range(seq):
            h = decay[:, :, t] * h + drive[:, :, t]
            h_abs = decay[:, :, t] * h_abs + np.abs(drive[:, :, t])
            ref[:, :, t] += h * C64[:, s, t][:, None]
            mag[:, :, t] += h_abs * np.abs(C64[:, s, t])[:, None]
    return mamba_kernel, (delta, u, A, B, C), ref, 0.0, (seq + 2) * 2.0 ** -20 * mag


def case_rotary(rng, size):
    """FP32: q cos and rotate_half(q) sin each rounded once and their sum once: within
    2^-22 x (|q cos| + |rotate_half(q) sin|). The sequence leaves the last tile partly empty
    (masked loads and stores)."""
    bs, nh, sl, hd = (2, 2, 12, 16) if size == 8 else (2, 4, 200, 128)
    q, k = (rng.standard_normal((bs, nh, sl, hd)).astype(np.float32) for _ in range(2))
    angle = rng.uniform(0.0, 6.3, (bs, sl, hd // 2))
    angle = np.concatenate([angle, angle], axis=-1)
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    c64, s64 = cos.astype(np.float64)[:, None], sin.astype(np.float64)[:, None]

    def half_turn(x):
        return np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], axis=-1)

    ref = np.stack([x * c64 + half_turn(x) * s64 for x in (q.astype(np.float64), k.astype(np.float64))])
    mag = np.stack([np.abs(x * c64) + np.abs(half_turn(x) * s64) for x in (q.astype(np.float64),
                                                                          k.astype(np.float64))])
    return rotary_kernel[bs, nh], (q, k, cos, sin), ref, 0.0, 2.0 ** -22 * mag


def _dma_transpose_case(rng, size, kernel):
    """BF16 moved, not computed: exact. The DMA transposes 16-row blocks of whole 32-byte rows, so
    the columns (the tile's partitions) are a multiple of 16: none on the size-8 core."""
    if size == 8:
        return None
    x = nki.typed(rng.standard_normal((256, 128)), nki.language.bfloat16)
    return kernel, (x,), values(x).T.copy(), 0.0, 0.0


def case_dma_transpose(rng, size):
    return _dma_transpose_case(rng, size, dma_transpose.dma_transpose_kernel)


def case_current_dma_transpose(rng, size):
    return _dma_transpose_case(rng, size, current_dma_transpose.dma_transpose_kernel)


# The same cases written in the current dialect: the same inputs, references and tolerances.
def case_current_tensor_add(rng, size):
    return (current_tensor_add.tensor_add_kernel[2],) + case_tensor_add(rng, size)[1:]


def case_current_softmax(rng, size):
    return (current_softmax.softmax_kernel,) + case_softmax(rng, size)[1:]


def case_current_avgpool(rng, size):
    """Small integers in FP32: the sums of 4 are exact, and so is the scale by 1/4: exact."""
    shape = (8, 8, 16) if size == 8 else (128, 64, 64)
    x = rng.integers(-100, 100, shape).astype(np.float32)
    c, h, w = shape
    return current_avgpool.avgpool_kernel, (x, 2), x.astype(np.float64).reshape(c, h // 2, 2, w // 2, 2).mean(
        axis=(2, 4)), 0.0, 0.0


def case_current_access_patterns(rng, size):
    """Moved, not computed: exact."""
    x = rng.standard_normal((2 * size, 64)).astype(np.float32)
    x64 = x.astype(np.float64)
    return (current_access_patterns.access_patterns_kernel, (x,), (x64[1::2], x64[:size].reshape(size, 2, 32)), 0.0,
            0.0)


def case_current_scan(rng, size):
    """As scan; the element numbers from iota exactly."""
    _, inputs, ref, rtol, atol = case_scan(rng, size)
    numbers = np.arange(ref.size, dtype=np.float64).reshape(ref.shape)
    return current_scan.recurrence_kernel, inputs, (ref, numbers), rtol, (atol, 0.0)


def case_current_layernorm(rng, size):
    return (current_layernorm.layernorm_kernel,) + case_layernorm_bn(rng, size)[1:]


def case_current_rmsnorm(rng, size):
    return (current_rmsnorm.rmsnorm_kernel,) + case_rmsnorm(rng, size)[1:]


def case_current_rmsnorm_bf16(rng, size):
    return (current_rmsnorm.rmsnorm_kernel,) + case_rmsnorm_bf16(rng, size)[1:]


def case_current_attention_causal(rng, size):
    return (current_attention_causal.attention_causal_kernel,) + case_attention_causal(rng, size)[1:]


def case_current_matmul_tiled(rng, size):
    """nc_matmul's default accumulation (first write overwrites, then accumulate)."""
    return _matmul_case(rng, size, current_matmul.matmul_tiled, rows_cols(size, (32, 16, 64), (512, 256, 1024)),
                        np.float32)


def case_current_matmul_fully_blocked(rng, size):
    """Both operands in blocks (the kernel of the production shape), BF16: the matmul bound."""
    shape = (64, 32, 128) if size == 8 else (1024, 1024, 1024)
    kernel, (lhsT, rhs), ref, rtol, atol = _matmul_case(rng, size, current_matmul.matmul_fully_blocked, shape,
                                                        nki.language.bfloat16)
    blocks = (16, 64) if size == 8 else (256, 512)
    return kernel, (lhsT, rhs) + blocks, ref, rtol, atol


def case_current_matmul_into(rng, size):
    """The result written in place into an argument, accumulate= given, one PSUM tile reused."""
    kernel, (lhsT, rhs), ref, rtol, atol = _matmul_case(rng, size, current_matmul.matmul_into,
                                                        rows_cols(size, (32, 16, 64), (512, 256, 1024)), np.float32)
    result = np.full(ref.shape, np.nan, np.float32)  # every element must be written
    return kernel, (lhsT, rhs, result), ref, rtol, atol, (2,)


CASES = {name[len("case_"):]: f for name, f in sorted(globals().items()) if name.startswith("case_")}


def check(name, engine, size, seed, cores=1, band=None):
    rng = np.random.default_rng(seed)
    case = CASES[name](rng, size)
    if case is None:
        print(f"--   {name}: not at size {size} (the case says why)")
        return True
    kernel, inputs, refs, rtol, atols, *written = case
    r = nki.benchmark_kernel(kernel, *inputs, engine=engine, size=size, cores=cores)
    if written:  # the kernel writes output arguments in place (NKI's older style, or the current one's)
        outs = tuple(inputs[i] for i in written[0])
    else:
        outs = r["outputs"] if isinstance(r["outputs"], tuple) else (r["outputs"],)
    refs = refs if isinstance(refs, tuple) else (refs,)
    atols = atols if isinstance(atols, tuple) else (atols,) * len(refs)
    ok = len(outs) == len(refs)
    for k, (out, ref, atol) in enumerate(zip(outs, refs, atols)):
        out = np.asarray(out, dtype=np.float64)
        if out.shape != ref.shape:
            print(f"FAIL {name}: output {k} has shape {out.shape}, expected {ref.shape}")
            ok = False
            continue
        # A NaN or an infinity must be the reference's own; everything else within the bound.
        same = (out == ref) | (np.isnan(out) & np.isnan(ref))
        with np.errstate(invalid="ignore"):
            err = np.where(same, 0.0, np.abs(out - ref))
        err = np.where(np.isnan(err), np.inf, err)
        bound = atol + rtol * np.where(np.isfinite(ref), np.abs(ref), 0.0)
        worst = np.unravel_index(np.argmax(err - bound), err.shape)
        good = bool(np.all(err <= bound))
        ok = ok and good
        label = f"{name}[{k}]" if len(refs) > 1 else name
        where = f"{engine} size {size}" + (f" on {cores} cores" if cores > 1 else "")
        print(f"{'ok  ' if good else 'FAIL'} {label:14} {where} seed {seed}: {r['cycles']} cycles "
              f"(golden {r['golden_cycles']}), max |err| {err.max():.3g}, worst at {tuple(int(i) for i in worst)}: "
              f"{out[worst]!r} against {ref[worst]!r} (bound {np.broadcast_to(bound, err.shape)[worst]:.3g})")
    if band is not None:  # the golden core's cycles against the RTL's (cosim: both ran)
        ratio = r["golden_cycles"] / r["cycles"]
        inside = abs(ratio - 1.0) <= band
        print(f"{'ok  ' if inside else 'FAIL'} {name:14} golden / RTL {ratio:.3f} "
              f"({r['golden_cycles']} / {r['cycles']} cycles), band {band:.0%}")
        ok = ok and inside
    return ok


def main():
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=["all", *CASES])
    ap.add_argument("--engine", choices=["golden", "rtl", "cosim"], default="golden")
    ap.add_argument("--size", type=int, choices=[8, 128], default=128)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--band", type=float, default=None,
                    help="with --engine cosim: fail unless the golden core's cycles are within this fraction of the RTL's")
    a = ap.parse_args()
    if a.band is not None and (a.engine != "cosim" or not 0 < a.band < 1):
        ap.error(f"--band {a.band}: expected a fraction in (0, 1) with --engine cosim")
    names = list(CASES) if a.case == "all" else [a.case]
    failed = [n for n in names if not check(n, a.engine, a.size, a.seed, a.cores, a.band)]
    if failed:
        print(f"{len(failed)} of {len(names)} failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
