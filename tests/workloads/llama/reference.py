"""The decoder layer of layer.py in float64 NumPy, for the whole model (every head, the whole MLP),
with the tolerance the kernel's result is held to.

The tolerance is derived from where the kernel rounds to BF16 (the tensor engine's inputs:
layer.py's docstring lists them), not fitted. A rounding to nearest adds an error spread evenly
over half a unit in the last place either side, variance ulp^2 / 12; each quantity carries the
variance of its error, pushed through every step to first order (matmuls, the norms, rotary,
softmax, the SwiGLU), errors of different elements taken as independent. An element passes within
SIGMAS standard deviations, plus 2^-20 relative for FP32 arithmetic and the scalar engine's
functions (at most 4.2e-7 relative: rtl/scalar/README.md, "Measured error").
"""
import numpy as np

SIGMAS = 6.0
FP32 = 2.0 ** -20


class Config:
    """A Llama shape: hidden size, query heads, KV heads, head size, intermediate size."""

    def __init__(self, hidden, heads, kv_heads, head_dim, intermediate):
        if min(hidden, heads, kv_heads, head_dim, intermediate) < 1 or heads % kv_heads or head_dim % 2:
            raise ValueError(f"hidden {hidden}, heads {heads}, kv_heads {kv_heads}, head_dim {head_dim}, intermediate "
                             f"{intermediate}: expected sizes of at least 1, heads a multiple of kv_heads, and an "
                             "even head_dim (rotary turns half against half)")
        self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate = (
            hidden, heads, kv_heads, head_dim, intermediate)

    def shard(self, tp):
        """Per rank: query heads, and the intermediate slice. Every rank's query heads share one
        KV head (NxD replicates a KV head over the ranks of its group when tp > kv_heads)."""
        group = self.heads // self.kv_heads
        q_heads = self.heads // tp
        if self.heads % tp or group % q_heads or self.intermediate % tp:
            raise ValueError(f"tp {tp} does not split {self.heads} heads ({self.kv_heads} KV heads) and "
                             f"intermediate {self.intermediate} into whole shards sharing a KV head")
        return q_heads, self.intermediate // tp


# -- values with error variances: (value, variance) pairs -----------------------------------------

def exact(v):
    return np.asarray(v, np.float64), np.zeros(np.shape(v))


def to_bf16(a):
    """Rounded to BF16 (8 significant bits): the variance of one rounding, ulp^2 / 12."""
    v, var = a
    _, ex = np.frexp(v)
    return v, var + np.ldexp(1.0, ex - 8) ** 2 / 12


def matmul(a, b):
    (av, avar), (bv, bvar) = a, b
    return av @ bv, avar @ (bv * bv) + (av * av) @ bvar


def mul(a, b):
    (av, avar), (bv, bvar) = a, b
    return av * bv, avar * bv * bv + av * av * bvar


def add(a, b, sign=1.0):
    return a[0] + sign * b[0], a[1] + b[1]


def rmsnorm(x, gain, eps):
    """x / sqrt(mean(x^2) + eps) * gain: dy_i = g_i r (dx_i - x_i sum_j x_j dx_j / (H (m + eps)))."""
    (xv, xvar), (gv, _) = x, gain
    h = xv.shape[-1]
    m = np.mean(xv * xv, axis=-1, keepdims=True) + eps
    r = 1.0 / np.sqrt(m)
    shared = np.sum(xv * xv * xvar, axis=-1, keepdims=True) / (h * m) ** 2
    return xv * r * gv, 2 * (gv * r) ** 2 * (xvar + xv * xv * shared)  # (a + b)^2 <= 2 a^2 + 2 b^2


def rope(x, cos, sin):
    """x [.., d] rotated: [x1 cos - x2 sin, x2 cos + x1 sin] (cos, sin [.., d], halves repeated)."""
    half = x[0].shape[-1] // 2
    x1 = (x[0][..., :half], x[1][..., :half])
    x2 = (x[0][..., half:], x[1][..., half:])
    c1, c2 = exact(cos[..., :half]), exact(cos[..., half:])
    s1, s2 = exact(sin[..., :half]), exact(sin[..., half:])
    lo = add(mul(x1, c1), mul(x2, s1), -1.0)
    hi = add(mul(x2, c2), mul(x1, s2))
    return np.concatenate([lo[0], hi[0]], -1), np.concatenate([lo[1], hi[1]], -1)


def attention(q, keys_t, values, d, online=False):
    """softmax(q keys / sqrt(d)) values for q [1, d], keys_t [d, S], values [S, d], as the kernel
    does it: exps of the shifted scores (FP32) rounded to BF16 for the matmul, their FP32 sum
    dividing after. do = scale sum_i p_i ds_i (v_i - o) + sum_i p_i dv_i + sum_i p_i v_i de_i / e_i.
    online: the exps are shifted by a running maximum (flash attention's online softmax), not the
    final one, so each one's rounding is bounded by BF16's largest relative step, 2^-7."""
    scale = 1.0 / np.sqrt(d)
    sv, svar = matmul(q, keys_t)
    e = np.exp(scale * (sv - sv.max(axis=-1, keepdims=True)))
    p = e / e.sum(-1, keepdims=True)
    vv, vvar = values
    o = p @ vv
    _, ex = np.frexp(e)
    rounding = np.ldexp(1.0, ex - 8) ** 2 / 12 / (e * e)  # the exps' BF16 rounding, relative
    if online:
        rounding = np.full_like(e, 2.0 ** -14 / 12)
    dev = vv[None, :, :] - o[:, None, :]  # [1, S, d]
    var = (scale ** 2 * np.einsum("qs,qs,qsd->qd", p * p, svar, dev * dev) + (p * p) @ vvar +
           np.einsum("qs,qs,sd->qd", p * p, rounding, vv * vv))
    return o, var


def causal_attention(q, keys_t, values, d):
    """Each query i of q [S, d] attending to keys_t[:, 0..i] [d, S] and values[0..i] [S, d] (the
    prompt's own positions, causal), as the kernel does it with an online softmax: [S, d]."""
    (qv, qvar), (kv, kvar), (vv, vvar) = q, keys_t, values
    rows = [attention((qv[i:i + 1], qvar[i:i + 1]), (kv[:, :i + 1], kvar[:, :i + 1]), (vv[:i + 1], vvar[:i + 1]), d,
                      online=True) for i in range(qv.shape[0])]
    return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])


def sigmoid(g):
    gv, gvar = g
    s = 1.0 / (1.0 + np.exp(-gv))
    return s, gvar * (s * (1 - s)) ** 2


def tolerance(a):
    """The bound an element of the kernel's result is held to."""
    v, var = a
    return SIGMAS * np.sqrt(var) + FP32 * np.abs(v)


def qkv_heads(cfg, x, g_attn, w_q, w_k, w_v, cos, sin, eps):
    """The normed state's q, k and v by head, q and k rotated, rounded to BF16 where the kernel
    rounds them: lists of (value, variance) pairs [B, d], heads of q, KV heads of k and v."""
    d = cfg.head_dim
    xn = to_bf16(rmsnorm(exact(x), exact(g_attn), eps))
    q, k, v = matmul(xn, exact(w_q)), matmul(xn, exact(w_k)), matmul(xn, exact(w_v))

    def head(a, i):
        return a[0][:, i * d:(i + 1) * d], a[1][:, i * d:(i + 1) * d]

    return ([to_bf16(rope(head(q, i), cos, sin)) for i in range(cfg.heads)],
            [to_bf16(rope(head(k, j), cos, sin)) for j in range(cfg.kv_heads)],
            [to_bf16(head(v, j)) for j in range(cfg.kv_heads)])


def decode_layer(cfg, x, g_attn, w_q, w_k, w_v, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                 eps=1e-5):
    """The whole layer for tokens x [B, H] at the positions of cos, sin [B, d]; caches k_cache
    [B, kv_heads, d, T] and v_cache [B, kv_heads, T, d]. Returns (y, k_new, v_new), each a
    (value, bound) pair: y [B, H], k_new and v_new [B, kv_heads, d]."""
    d, rows = cfg.head_dim, x.shape[0]
    group = cfg.heads // cfg.kv_heads
    q_rot, k_rot, v_new = qkv_heads(cfg, x, g_attn, w_q, w_k, w_v, cos, sin, eps)
    o_v, o_e = np.zeros((rows, cfg.heads * d)), np.zeros((rows, cfg.heads * d))
    for i in range(cfg.heads):
        j = i // group
        for b in range(rows):
            keys = (np.concatenate([k_cache[b, j], k_rot[j][0][b][:, None]], 1),
                    np.concatenate([np.zeros_like(k_cache[b, j]), k_rot[j][1][b][:, None]], 1))
            values = (np.concatenate([v_cache[b, j], v_new[j][0][b][None, :]], 0),
                      np.concatenate([np.zeros_like(v_cache[b, j]), v_new[j][1][b][None, :]], 0))
            ov, oe = to_bf16(attention((q_rot[i][0][b:b + 1], q_rot[i][1][b:b + 1]), keys, values, d))
            o_v[b, i * d:(i + 1) * d], o_e[b, i * d:(i + 1) * d] = ov[0], oe[0]
    y = after_attention(x, (o_v, o_e), w_o, g_mlp, w_gate, w_up, w_down, eps)
    return y, stack(k_rot), stack(v_new)


def stack(parts):
    """(value, variance) pairs of [B, d] stacked on axis 1: [B, heads, d]."""
    return np.stack([p[0] for p in parts], 1), np.stack([p[1] for p in parts], 1)


def after_attention(x, o, w_o, g_mlp, w_gate, w_up, w_down, eps):
    """The rest of the layer from the heads' outputs o [B, heads d]: the residual, the MLP's norm,
    SwiGLU and its residual. y [B, H]."""
    hidden = add(exact(x), matmul(o, exact(w_o)))
    hn = to_bf16(rmsnorm(hidden, exact(g_mlp), eps))
    gate, up = matmul(hn, exact(w_gate)), matmul(hn, exact(w_up))
    product = to_bf16(mul(mul(gate, sigmoid(gate)), up))
    return add(hidden, matmul(product, exact(w_down)))


def prefill_layer(cfg, x, g_attn, w_q, w_k, w_v, cos, sin, w_o, g_mlp, w_gate, w_up, w_down, eps=1e-5):
    """The whole layer over a prompt x [S, H] at the positions of cos, sin [S, d], causal. Returns
    (y, k, v), each a (value, variance) pair: y [S, H], and the cache it leaves, k and v [S,
    kv_heads, d] (keys rotated)."""
    d, s = cfg.head_dim, x.shape[0]
    group = cfg.heads // cfg.kv_heads
    q_rot, k_rot, v_all = qkv_heads(cfg, x, g_attn, w_q, w_k, w_v, cos, sin, eps)
    o_v, o_e = np.zeros((s, cfg.heads * d)), np.zeros((s, cfg.heads * d))
    for i in range(cfg.heads):
        j = i // group
        keys_t = (k_rot[j][0].T, k_rot[j][1].T)
        o_v[:, i * d:(i + 1) * d], o_e[:, i * d:(i + 1) * d] = to_bf16(causal_attention(q_rot[i], keys_t, v_all[j], d))
    y = after_attention(x, (o_v, o_e), w_o, g_mlp, w_gate, w_up, w_down, eps)
    return y, stack(k_rot), stack(v_all)
