"""A Llama decoder layer for one tensor-parallel rank, in the current NKI dialect (issue 51).

The layer, for the B tokens of a decode step (one row each, B <= 128):

    h = x + o_proj(attention(rope(q), rope(k), v))     q, k, v = rmsnorm(x, g_attn) @ w_qkv
    y = h + down(silu(gate) * up)                      gate, up = rmsnorm(h, g_mlp) @ w_gate, w_up

Tensor parallelism as NxD Inference shards it: each rank holds `q_heads` query heads and the one
KV head they share (grouped-query attention; a KV head is replicated on the ranks of its group
when there are more ranks than KV heads), a slice of the MLP's intermediate dimension, and the
matching rows of the output and down projections. Each rank's two projections give partial sums
of the whole hidden state; `ncc.all_reduce` over the replica group adds them.

Layouts (every rank is given its own shard, as a sharded checkpoint gives it):
    x        [B, H]              BF16 hidden state (the same on every rank of the group)
    g_attn   [1, H], g_mlp [1, H] BF16 RMSNorm gains
    w_qkv    [H, (q_heads + 2) d] BF16: the rank's query heads, then its K head, then its V head
    cos, sin [B, d]              FP32 rotary tables at each token's position (the halves repeat)
    k_cache  [B, d, T]           BF16 keys of the T earlier positions, transposed (d on the
                                 partitions, as NKI's decode kernels keep them)
    v_cache  [B, T, d]           BF16 values of the earlier positions
    w_o      [q_heads d, H]      BF16 rows of the output projection
    w_gate, w_up [H, I_r], w_down [I_r, H]  BF16 slices of the MLP
Outputs: y [B, H] FP32, and the token's new cache entries k_new [B, d] and v_new [B, d] (BF16,
rotated keys).

Where it rounds to BF16 (the tensor engine's inputs): the normalized states, the rotated q and k,
v, the probabilities, the attention output and the MLP's product. Everything else is FP32. The
scalar engine has no SiLU, so silu(g) is g * sigmoid(g).
"""
import math

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

P = 128          # partitions: a matmul's contraction tile and the transposes' blocks
N_TILE = 512     # a matmul's moving free size (nl.tile_size.gemm_moving_fmax)


def _broadcast_row(row_hbm, rows):
    """[1, n] in HBM -> [rows, n] FP32 in SBUF, every partition a copy (ones [1, rows] as the
    stationary, the row as the moving tile)."""
    n = row_hbm.shape[1]
    row = nl.ndarray((1, n), dtype=row_hbm.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=row_hbm)
    ones = nl.ones((1, rows), dtype=row_hbm.dtype, buffer=nl.sbuf)
    return matmul_columns(ones, row, nl.ndarray((rows, n), dtype=nl.float32, buffer=nl.sbuf))


def matmul_columns(stationary, moving, out):
    """out [M, N] (SBUF, FP32) = stationary^T @ moving for stationary [K, M] and moving [K, N]
    in SBUF (K at most 128), N in tiles of 512."""
    m, n = out.shape
    for j in nl.affine_range((n + N_TILE - 1) // N_TILE):
        cols = slice(j * N_TILE, min(n, (j + 1) * N_TILE))
        acc = nl.ndarray((m, cols.stop - cols.start), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=stationary, moving=moving[:, cols])
        nisa.tensor_copy(dst=out[:, cols], src=acc)
    return out


def rmsnorm_rows(x, gain, eps):
    """x [B, H] (SBUF, any float type) -> x / sqrt(mean(x^2) + eps) * gain, BF16 [B, H]."""
    rows, h = x.shape
    squares = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    square_sum = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=squares, op=nl.square, data=x, reduce_op=nl.add, reduce_res=square_sum,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    rstd = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=rstd, op=nl.rsqrt, data=square_sum, scale=1.0 / h, bias=eps)
    normed = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=normed, data=x, op0=nl.multiply, operand0=rstd)
    out = nl.ndarray((rows, h), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=normed, data2=gain, op=nl.multiply)
    return out


def transpose_rows(x):
    """x [B, K] (SBUF, BF16) -> x^T as [min(K, 128), K / 128 tiles, B]: the contraction dimension
    on the partitions, a tile per 128 of it, for the stationary side of a matmul."""
    rows, k = x.shape
    kp = min(k, P)
    out = nl.ndarray((kp, k // kp, rows), dtype=x.dtype, buffer=nl.sbuf)
    for t in nl.affine_range(k // kp):
        turned = nl.ndarray((kp, rows), dtype=x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=turned, data=x[:, t * kp:(t + 1) * kp])
        nisa.tensor_copy(dst=out[:, t, :], src=turned)
    return out


def project(x_t, w_hbm, out):
    """out [B, N] (SBUF) = x @ w for x^T [kp, K / kp, B] (transpose_rows) and w [K, N] in HBM:
    N in tiles of 512, K in tiles of kp accumulated in PSUM."""
    kp, kt, rows = x_t.shape
    n = w_hbm.shape[1]
    for j in nl.affine_range((n + N_TILE - 1) // N_TILE):
        cols = slice(j * N_TILE, min(n, (j + 1) * N_TILE))
        acc = nl.ndarray((rows, cols.stop - cols.start), dtype=nl.float32, buffer=nl.psum)
        for t in nl.affine_range(kt):
            w = nl.ndarray((kp, cols.stop - cols.start), dtype=w_hbm.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=w, src=w_hbm[t * kp:(t + 1) * kp, cols])
            nisa.nc_matmul(dst=acc, stationary=x_t[:, t, :], moving=w)
        nisa.tensor_copy(dst=out[:, cols], src=acc)
    return out


def rope(x, head, d, cos, sin, out):
    """Rotary embedding of head `head` of x [B, heads d] (FP32) into out [B, d] (BF16):
    [x1 cos - x2 sin, x2 cos + x1 sin] for the halves x1, x2 of the head."""
    rows = x.shape[0]
    half = d // 2
    x1, x2 = x[:, head * d:head * d + half], x[:, head * d + half:(head + 1) * d]
    a = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=a, data1=x1, data2=cos[:, 0:half], op=nl.multiply)
    nisa.tensor_tensor(dst=b, data1=x2, data2=sin[:, 0:half], op=nl.multiply)
    nisa.tensor_tensor(dst=out[:, 0:half], data1=a, data2=b, op=nl.subtract)
    c = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
    e = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=x2, data2=cos[:, half:d], op=nl.multiply)
    nisa.tensor_tensor(dst=e, data1=x1, data2=sin[:, half:d], op=nl.multiply)
    nisa.tensor_tensor(dst=out[:, half:d], data1=c, data2=e, op=nl.add)
    return out


def decode_attention(q_t, k_t, v_rows, q_heads, d, out_t, b):
    """One token's grouped-query attention: q^T [d, q_heads] (its heads as columns) against the
    keys k^T [d, S] and values v [S, d] (S positions, in row blocks of 128: v_rows(i) gives block
    i as [rows, d] in SBUF); softmax(q k^T / sqrt(d)) v, its heads' outputs transposed into
    out_t[:, h, b] ([d, q_heads, B], BF16)."""
    s = k_t.shape[1]
    scores = matmul_columns(q_t, k_t, nl.ndarray((q_heads, s), dtype=nl.float32, buffer=nl.sbuf))
    scale = 1.0 / math.sqrt(d)
    neg_scaled = nl.ndarray((q_heads, s), dtype=nl.float32, buffer=nl.sbuf)
    neg_max = nl.ndarray((q_heads, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=neg_scaled, data=scores, op0=nl.multiply, operand0=-scale, reduce_op=nl.minimum,
                              reduce_res=neg_max)
    probs = nl.ndarray((q_heads, s), dtype=nl.bfloat16, buffer=nl.sbuf)
    row_sum = nl.ndarray((q_heads, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=probs, op=nl.exp, data=neg_scaled, scale=-1.0, bias=neg_max, reduce_op=nl.add,
                    reduce_res=row_sum, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    acc = nl.ndarray((q_heads, d), dtype=nl.float32, buffer=nl.psum)
    blocks = (s + P - 1) // P
    for i in nl.affine_range(blocks):
        rows = min(P, s - i * P)
        p_t_psum = nl.ndarray((rows, q_heads), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_transpose(dst=p_t_psum, data=probs[:, i * P:i * P + rows])
        p_t = nl.ndarray((rows, q_heads), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_copy(dst=p_t, src=p_t_psum)
        nisa.nc_matmul(dst=acc, stationary=p_t, moving=v_rows(i), accumulate=i > 0)
    inverse = nl.ndarray((q_heads, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inverse, data=row_sum)
    o = nl.ndarray((q_heads, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inverse)
    o_t = nl.ndarray((d, q_heads), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_transpose(dst=o_t, data=o)
    nisa.tensor_copy(dst=out_t[:, :, b], src=o_t)


def all_reduce_rows(partial, replica_group):
    """The group's sum of each rank's partial [B, H] (SBUF, FP32)."""
    total = nl.ndarray(partial.shape, dtype=nl.float32, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[partial], dsts=[total], replica_group=replica_group, op=nl.add)
    return total


@nki.jit
def decoder_layer_decode(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                         replica_group, eps=1e-5):
    rows, h = x.shape
    d = cos.shape[1]
    q_heads = w_o.shape[0] // d
    past = k_cache.shape[2]
    inter = w_gate.shape[1]
    y = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    k_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    x_sb = nl.ndarray((rows, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    cos_sb = nl.ndarray((rows, d), dtype=nl.float32, buffer=nl.sbuf)
    sin_sb = nl.ndarray((rows, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=cos_sb, src=cos)
    nisa.dma_copy(dst=sin_sb, src=sin)

    # Attention: q, k, v of every token, rotated; the new k and v are this step's cache entries.
    xn_t = transpose_rows(rmsnorm_rows(x_sb, _broadcast_row(g_attn, rows), eps))
    qkv = project(xn_t, w_qkv, nl.ndarray((rows, (q_heads + 2) * d), dtype=nl.float32, buffer=nl.sbuf))
    q_t = nl.ndarray((d, rows, q_heads), dtype=nl.bfloat16, buffer=nl.sbuf)
    for head in nl.affine_range(q_heads):
        q_rot = rope(qkv, head, d, cos_sb, sin_sb, nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf))
        turned = nl.ndarray((d, rows), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_transpose(dst=turned, data=q_rot)
        nisa.tensor_copy(dst=q_t[:, :, head], src=turned)
    k_rot = rope(qkv, q_heads, d, cos_sb, sin_sb, nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf))
    v_sb = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=v_sb, src=qkv[:, (q_heads + 1) * d:(q_heads + 2) * d])
    nisa.dma_copy(dst=k_new, src=k_rot)
    nisa.dma_copy(dst=v_new, src=v_sb)
    k_new_t = nl.ndarray((d, rows), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_transpose(dst=k_new_t, data=k_rot)

    o_t = nl.ndarray((d, q_heads, rows), dtype=nl.bfloat16, buffer=nl.sbuf)
    s = past + 1
    for b in nl.affine_range(rows):
        keys = nl.ndarray((d, s), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=keys[:, 0:past], src=k_cache[b])
        nisa.tensor_copy(dst=keys[:, past:s], src=k_new_t[:, b:b + 1])

        def values(i, b=b):
            block = nl.ndarray((min(P, s - i * P), d), dtype=nl.bfloat16, buffer=nl.sbuf)
            first, last = i * P, min(s, (i + 1) * P)
            if last <= past:
                nisa.dma_copy(dst=block, src=v_cache[b, first:last, :])
            else:  # the block with the new position: its value row comes back from HBM
                if first < past:
                    nisa.dma_copy(dst=block[0:past - first, :], src=v_cache[b, first:past, :])
                nisa.dma_copy(dst=block[past - first:past - first + 1, :], src=v_new[b:b + 1, :])
            return block

        decode_attention(q_t[:, b, :], keys, values, q_heads, d, o_t, b)

    attn = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range((h + N_TILE - 1) // N_TILE):
        cols = slice(j * N_TILE, min(h, (j + 1) * N_TILE))
        acc = nl.ndarray((rows, cols.stop - cols.start), dtype=nl.float32, buffer=nl.psum)
        for head in nl.affine_range(q_heads):
            w = nl.ndarray((d, cols.stop - cols.start), dtype=w_o.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=w, src=w_o[head * d:(head + 1) * d, cols])
            nisa.nc_matmul(dst=acc, stationary=o_t[:, head, :], moving=w, accumulate=head > 0)
        nisa.tensor_copy(dst=attn[:, cols], src=acc)
    hidden = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=hidden, data1=x_sb, data2=all_reduce_rows(attn, replica_group), op=nl.add)

    # MLP: SwiGLU on the rank's slice of the intermediate dimension.
    hn_t = transpose_rows(rmsnorm_rows(hidden, _broadcast_row(g_mlp, rows), eps))
    gate = project(hn_t, w_gate, nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf))
    up = project(hn_t, w_up, nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf))
    sig = nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=sig, op=nl.sigmoid, data=gate)
    silu = nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=silu, data1=gate, data2=sig, op=nl.multiply)
    product = nl.ndarray((rows, inter), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=product, data1=silu, data2=up, op=nl.multiply)
    mlp = project(transpose_rows(product), w_down, nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf))
    out = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=hidden, data2=all_reduce_rows(mlp, replica_group), op=nl.add)
    nisa.dma_copy(dst=y, src=out)
    return y, k_new, v_new
