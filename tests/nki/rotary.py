"""Rotary position embedding (RoPE) for queries and keys, written the way the legacy rotary
tutorial is: a launch grid over (batch, head), arange index expressions with masks for a ragged
last sequence tile, a helper kernel called from the kernel (inlined), and a tile with a block
dimension in front of its partitions holding q's and k's results side by side."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def _rotate(q_tile, k_tile, cos_tile, sin_tile, out_tile):
    """out[0] = q cos + rotate_half(q) sin, out[1] the same for k; rotate_half(x) = [-x2, x1]."""
    half = q_tile.shape[-1] // 2
    for b, x in ((0, q_tile), (1, k_tile)):
        out_tile[b, :, :] = x * cos_tile
        out_tile[b, :, :half] = out_tile[b, :, :half] + (-1 * x[:, half:] * sin_tile[:, :half])
        out_tile[b, :, half:] = out_tile[b, :, half:] + (x[:, :half] * sin_tile[:, half:])


@nki.jit
def rotary_kernel(q, k, cos, sin):
    """q, k [batch, heads, seq, d], cos and sin [batch, seq, d]: out [2, batch, heads, seq, d]
    (queries, then keys), program (b, h) of the grid taking batch b, head h."""
    b, h = nl.program_id(axis=0), nl.program_id(axis=1)
    seq, d = q.shape[2], q.shape[3]
    p = nl.tile_size.pmax
    out = nl.ndarray([2] + list(q.shape), dtype=q.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(p)[:, None]
    i_f = nl.arange(d)[None, :]
    for t in nl.affine_range((seq + p - 1) // p):
        rows = t * p + i_p
        q_tile = nl.load(q[b, h][rows, i_f], mask=(rows < seq))
        k_tile = nl.load(k[b, h][rows, i_f], mask=(rows < seq))
        cos_tile = nl.load(cos[b][rows, i_f], mask=(rows < seq))
        sin_tile = nl.load(sin[b][rows, i_f], mask=(rows < seq))
        res = nl.ndarray([2, nl.par_dim(p), d], dtype=q.dtype, buffer=nl.sbuf)
        _rotate(q_tile, k_tile, cos_tile, sin_tile, res)
        nl.store(out[0, b, h][rows, i_f], res[0, :, :], mask=(rows < seq))
        nl.store(out[1, b, h][rows, i_f], res[1, :, :], mask=(rows < seq))
    return out
