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

N_TILE = 512  # a matmul's moving free size (nl.tile_size.gemm_moving_fmax)
W_BLOCK = 2048  # weight columns a DMA brings (project)


def tiles(n, size):
    """(start, length) of each tile of at most `size` covering 0 .. n - 1."""
    return [(i, min(size, n - i)) for i in range(0, n, size)]


def _broadcast_row(row_hbm, rows):
    """[1, n] in HBM -> [rows, n] in SBUF (its type: the sums of one term are exact), every
    partition a copy (ones [1, rows] as the stationary, the row as the moving tile)."""
    n = row_hbm.shape[1]
    row = nl.ndarray((1, n), dtype=row_hbm.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=row_hbm)
    ones = nl.ones((1, rows), dtype=row_hbm.dtype, buffer=nl.sbuf)
    return matmul_columns([(ones, row)], nl.ndarray((rows, n), dtype=row_hbm.dtype, buffer=nl.sbuf))


def matmul_columns(pairs, out):
    """out [M, N] (SBUF) = sum over (stationary [K, M], moving [K, N]) in pairs of
    stationary^T @ moving (SBUF, K at most the partitions), N in tiles of 512."""
    m, n = out.shape
    for c0, cn in tiles(n, N_TILE):
        acc = nl.ndarray((m, cn), dtype=nl.float32, buffer=nl.psum)
        for i, (stationary, moving) in enumerate(pairs):
            nisa.nc_matmul(dst=acc, stationary=stationary, moving=moving[:, c0:c0 + cn], accumulate=i > 0)
        nisa.tensor_copy(dst=out[:, c0:c0 + cn], src=acc)
    return out


def rmsnorm_rows(x, gain, eps):
    """x [B, H] (SBUF, any float type) -> x / sqrt(mean(x^2) + eps) * gain, BF16 [B, H]."""
    rows, h = x.shape
    # The squares go where the normed values will (only their sum is kept): with one token, a
    # row of the hidden state is up to 64 KiB of a partition's SBUF.
    normed = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    square_sum = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=normed, op=nl.square, data=x, reduce_op=nl.add, reduce_res=square_sum,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    rstd = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=rstd, op=nl.rsqrt, data=square_sum, scale=1.0 / h, bias=eps)
    nisa.tensor_scalar(dst=normed, data=x, op0=nl.multiply, operand0=rstd)
    out = nl.ndarray((rows, h), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=normed, data2=gain, op=nl.multiply)
    return out


def transpose_rows(x):
    """x [B, K] (SBUF, BF16) -> x^T as [min(K, P), K / P tiles, B]: the contraction dimension on
    the partitions (P of them), a tile per P of it (the last may be partly filled), for the
    stationary side of a matmul."""
    rows, k = x.shape
    kp = min(k, nl.tile_size.pmax)
    parts = tiles(k, kp)
    out = nl.ndarray((kp, len(parts), rows), dtype=x.dtype, buffer=nl.sbuf)
    for t, (start, size) in enumerate(parts):
        turned = nl.ndarray((size, rows), dtype=x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=turned, data=x[:, start:start + size])
        nisa.tensor_copy(dst=out[0:size, t, :], src=turned)
    return out


def project(x_t, w_hbm, out):
    """out [B, N] (SBUF) = x @ w for x^T [kp, K tiles, B] (transpose_rows) and w [K, N] in HBM:
    K in tiles of kp accumulated in PSUM, N in tiles of 512. The weights come in blocks of
    W_BLOCK columns (4 KiB a partition), one DMA for four matmuls: the DMA is near its peak
    from 2 KiB a partition (AWS's DMA pages), and a decode layer is its weights' traffic."""
    kp, _, rows = x_t.shape
    k, n = w_hbm.shape
    for b0, bn in tiles(n, W_BLOCK):
        slices = tiles(bn, N_TILE)
        accs = [nl.ndarray((rows, cn), dtype=nl.float32, buffer=nl.psum) for _, cn in slices]
        for t, (start, size) in enumerate(tiles(k, kp)):
            w = nl.ndarray((size, bn), dtype=w_hbm.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=w, src=w_hbm[start:start + size, b0:b0 + bn])
            for acc, (c0, cn) in zip(accs, slices):
                nisa.nc_matmul(dst=acc, stationary=x_t[0:size, t, :], moving=w[:, c0:c0 + cn], accumulate=t > 0)
        for acc, (c0, cn) in zip(accs, slices):
            nisa.tensor_copy(dst=out[:, b0 + c0:b0 + c0 + cn], src=acc)
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


def head_tiles(d):
    """A head's d values on the partitions: (partitions per tile, tiles). d is at most the
    partitions on NeuronCore-v3 (128); the size-8 test core needs two tiles of 8."""
    dp = min(d, nl.tile_size.pmax)
    if d % dp:
        raise ValueError(f"head size {d}: expected a multiple of the partitions ({dp}) or at most them")
    return dp, d // dp


def turn_into(x, out, index):
    """x [B, d] (SBUF, BF16) transposed into out[:, t, <index>] for each head tile t ([dp, B])."""
    rows, d = x.shape
    dp, dt = head_tiles(d)
    for t in nl.affine_range(dt):
        turned = nl.ndarray((dp, rows), dtype=x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=turned, data=x[:, t * dp:(t + 1) * dp])
        nisa.tensor_copy(dst=out[(slice(None), t) + index], src=turned)


def decode_attention(q_t, keys, v_rows, b, out_t):
    """Token b's grouped-query attention: its heads' q^T (q_t [dp, dt, B, q_heads]) against the
    keys k^T (keys [dp, dt, S]) and values v [S, d] (S positions, in row blocks of P partitions:
    v_rows(first, rows) gives positions first .. first + rows - 1 as [rows, d] in SBUF);
    softmax(q k^T / sqrt(d)) v, its heads' outputs transposed into out_t[:, :, :, b]
    ([dp, dt, q_heads, B], BF16)."""
    dp, dt, _, q_heads = q_t.shape
    d, s = dp * dt, keys.shape[2]
    scores = matmul_columns([(q_t[:, t, b, :], keys[:, t, :]) for t in range(dt)],
                            nl.ndarray((q_heads, s), dtype=nl.float32, buffer=nl.sbuf))
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
    for i, (first, rows) in enumerate(tiles(s, nl.tile_size.pmax)):
        p_t_psum = nl.ndarray((rows, q_heads), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_transpose(dst=p_t_psum, data=probs[:, first:first + rows])
        p_t = nl.ndarray((rows, q_heads), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_copy(dst=p_t, src=p_t_psum)
        nisa.nc_matmul(dst=acc, stationary=p_t, moving=v_rows(first, rows), accumulate=i > 0)
    inverse = nl.ndarray((q_heads, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inverse, data=row_sum)
    o = nl.ndarray((q_heads, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inverse)
    turn_into(o, out_t, (slice(None), b))


def all_reduce_rows(partial, replica_group):
    """The group's sum of each rank's partial [B, H] (SBUF, FP32)."""
    total = nl.ndarray(partial.shape, dtype=nl.float32, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[partial], dsts=[total], replica_group=replica_group, op=nl.add)
    return total


def load(src, dtype=None):
    """An HBM tensor into a new SBUF tile (cast on the way when dtype differs)."""
    tile = nl.ndarray(src.shape, dtype=dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=src)
    return tile


def qkv_rope(xn_t, w_qkv, cos, sin, q_heads, k_new, v_new):
    """The rank's q, k and v of every token from the normed rows (xn_t, transpose_rows), q and k
    rotated; k and v written to their HBM outputs k_new, v_new [B, d]. Returns q^T as
    [dp, dt, B, q_heads] (each token's heads as columns) and k^T [dp, dt, B], both BF16, a head's
    d values in dt tiles of dp partitions (head_tiles)."""
    rows, d = cos.shape
    dp, dt = head_tiles(d)
    qkv = project(xn_t, w_qkv, nl.ndarray((rows, (q_heads + 2) * d), dtype=nl.float32, buffer=nl.sbuf))
    q_t = nl.ndarray((dp, dt, rows, q_heads), dtype=nl.bfloat16, buffer=nl.sbuf)
    for head in nl.affine_range(q_heads):
        q_rot = rope(qkv, head, d, cos, sin, nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf))
        turn_into(q_rot, q_t, (slice(None), head))
    k_rot = rope(qkv, q_heads, d, cos, sin, nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf))
    v_sb = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=v_sb, src=qkv[:, (q_heads + 1) * d:(q_heads + 2) * d])
    nisa.dma_copy(dst=k_new, src=k_rot)
    nisa.dma_copy(dst=v_new, src=v_sb)
    k_new_t = nl.ndarray((dp, dt, rows), dtype=nl.bfloat16, buffer=nl.sbuf)
    turn_into(k_rot, k_new_t, (slice(None),))
    return q_t, k_new_t


def attend(q_t, k_new_t, k_cache, v_cache, v_new):
    """Every token's attention over its cache (k_cache [B, d, T], v_cache [B, T, d]) and its own
    new key (k_new_t [dp, dt, B]) and value (v_new [B, d], HBM). Returns the heads' outputs
    transposed, [dp, dt, q_heads, B] (BF16)."""
    dp, dt, rows, q_heads = q_t.shape
    d = dp * dt
    past = k_cache.shape[2]
    s = past + 1
    o_t = nl.ndarray((dp, dt, q_heads, rows), dtype=nl.bfloat16, buffer=nl.sbuf)
    for b in nl.affine_range(rows):
        keys = nl.ndarray((dp, dt, s), dtype=nl.bfloat16, buffer=nl.sbuf)
        for t in nl.affine_range(dt):
            nisa.dma_copy(dst=keys[:, t, 0:past], src=k_cache[b, t * dp:(t + 1) * dp, :])
            nisa.tensor_copy(dst=keys[:, t, past:s], src=k_new_t[:, t, b:b + 1])

        def values(first, count, b=b):
            block = nl.ndarray((count, d), dtype=nl.bfloat16, buffer=nl.sbuf)
            last = first + count
            if last <= past:
                nisa.dma_copy(dst=block, src=v_cache[b, first:last, :])
            else:  # the block with the new position: its value row comes back from HBM
                if first < past:
                    nisa.dma_copy(dst=block[0:past - first, :], src=v_cache[b, first:past, :])
                nisa.dma_copy(dst=block[past - first:past - first + 1, :], src=v_new[b:b + 1, :])
            return block

        decode_attention(q_t, keys, values, b, o_t)
    return o_t


def output_projection(o_t, w_o, h):
    """The rank's part of the output projection: [B, H] (FP32) = sum over its heads of o_h @ w_o
    rows of head h, for o^T [dp, dt, q_heads, B]."""
    dp, dt, q_heads, rows = o_t.shape
    attn = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf)
    for c0, cn in tiles(h, N_TILE):
        acc = nl.ndarray((rows, cn), dtype=nl.float32, buffer=nl.psum)
        for i, (head, t) in enumerate((head, t) for head in range(q_heads) for t in range(dt)):
            w = nl.ndarray((dp, cn), dtype=w_o.dtype, buffer=nl.sbuf)
            first = head * dp * dt + t * dp
            nisa.dma_copy(dst=w, src=w_o[first:first + dp, c0:c0 + cn])
            nisa.nc_matmul(dst=acc, stationary=o_t[:, t, head, :], moving=w, accumulate=i > 0)
        nisa.tensor_copy(dst=attn[:, c0:c0 + cn], src=acc)
    return attn


def swiglu(hn_t, w_gate, w_up, w_down):
    """The rank's part of the MLP, [B, H] (FP32): (silu(hn @ w_gate) * (hn @ w_up)) @ w_down."""
    _, _, rows = hn_t.shape
    inter, h = w_down.shape
    gate = project(hn_t, w_gate, nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf))
    up = project(hn_t, w_up, nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf))
    sig = nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=sig, op=nl.sigmoid, data=gate)
    silu = nl.ndarray((rows, inter), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=silu, data1=gate, data2=sig, op=nl.multiply)
    product = nl.ndarray((rows, inter), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=product, data1=silu, data2=up, op=nl.multiply)
    return project(transpose_rows(product), w_down, nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.sbuf))


def residual(a, b):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)
    return out


@nki.jit
def decoder_layer_decode(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                         replica_group, eps=1e-5):
    rows, h = x.shape
    d = cos.shape[1]
    q_heads = w_o.shape[0] // d
    y = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    k_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    x_sb = load(x)
    xn_t = transpose_rows(rmsnorm_rows(x_sb, _broadcast_row(g_attn, rows), eps))
    q_t, k_new_t = qkv_rope(xn_t, w_qkv, load(cos), load(sin), q_heads, k_new, v_new)
    o_t = attend(q_t, k_new_t, k_cache, v_cache, v_new)
    hidden = residual(x_sb, all_reduce_rows(output_projection(o_t, w_o, h), replica_group))
    hn_t = transpose_rows(rmsnorm_rows(hidden, _broadcast_row(g_mlp, rows), eps))
    out = residual(hidden, all_reduce_rows(swiglu(hn_t, w_gate, w_up, w_down), replica_group))
    nisa.dma_copy(dst=y, src=out)
    return y, k_new, v_new


# -- each piece alone, for the size-8 RTL core in co-simulation ----------------------------------

@nki.jit
def rmsnorm_kernel(x, gain, eps=1e-5):
    """rmsnorm_rows of x [B, H] with gain [1, H]: BF16 [B, H]."""
    rows, h = x.shape
    y = nl.ndarray((rows, h), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=y, src=rmsnorm_rows(load(x), _broadcast_row(gain, rows), eps))
    return y


@nki.jit
def qkv_rope_kernel(xn, w_qkv, cos, sin):
    """qkv_rope of normed rows xn [B, H] (BF16): q^T [dp, dt, B, q_heads], k_new and v_new [B, d]."""
    rows, d = cos.shape
    dp, dt = head_tiles(d)
    q_heads = w_qkv.shape[1] // d - 2
    q_out = nl.ndarray((dp, dt, rows, q_heads), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    k_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    q_t, _ = qkv_rope(transpose_rows(load(xn)), w_qkv, load(cos), load(sin), q_heads, k_new, v_new)
    nisa.dma_copy(dst=q_out, src=q_t)
    return q_out, k_new, v_new


@nki.jit
def attention_kernel(q_t, k_new, v_new, k_cache, v_cache, w_o):
    """attend then output_projection: q^T [dp, dt, B, q_heads], the new k and v [B, d], the
    caches and w_o [q_heads d, H]: the rank's partial [B, H] (FP32)."""
    dp, dt, rows, _ = q_t.shape
    h = w_o.shape[1]
    out = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    k_new_t = nl.ndarray((dp, dt, rows), dtype=nl.bfloat16, buffer=nl.sbuf)
    turn_into(load(k_new), k_new_t, (slice(None),))
    nisa.dma_copy(dst=out, src=output_projection(attend(load(q_t), k_new_t, k_cache, v_cache, v_new), w_o, h))
    return out


@nki.jit
def swiglu_kernel(hn, w_gate, w_up, w_down):
    """swiglu of normed rows hn [B, H] (BF16): the rank's partial [B, H] (FP32)."""
    rows, h = hn.shape
    out = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=swiglu(transpose_rows(load(hn)), w_gate, w_up, w_down))
    return out


@nki.jit
def lm_head_kernel(x, g_final, w_lm, eps=1e-5):
    """The model's end, for the rank's slice of the vocabulary: the final RMSNorm of x [B, H]
    (BF16) with g_final [1, H], then the logits [B, V_r] (FP32) = normed @ w_lm [H, V_r]. Tensor
    parallelism splits the vocabulary; the host gathers the slices (or each rank reduces its own
    to a best token)."""
    rows, h = x.shape
    logits = nl.ndarray((rows, w_lm.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    normed_t = transpose_rows(rmsnorm_rows(load(x), _broadcast_row(g_final, rows), eps))
    nisa.dma_copy(dst=logits, src=project(normed_t, w_lm, nl.ndarray(logits.shape, dtype=nl.float32,
                                                                       buffer=nl.sbuf)))
    return logits
