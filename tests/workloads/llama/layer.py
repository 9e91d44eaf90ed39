"""A Llama decoder layer for one tensor-parallel rank, in the current NKI dialect (issue 51):
decoder_layer_decode for the B tokens of a decode step (one row each, B <= 128) over a KV cache,
decoder_layer_prefill for a prompt of S tokens (causal, streamed in passes). The layer:

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
w_qkv, w_gate and w_up (and the LM head's w_lm) may also come K-tiled, [P, H / P, N] (tile_rows:
a partition's rows of several contraction tiles side by side, so a rank's narrow slice still
moves in DMA rows of several KiB).
Outputs: y [B, H] FP32, and the token's new cache entries k_new [B, d] and v_new [B, d] (BF16,
rotated keys).

On chip a token's state is a column (the features layout, load_features): hidden feature f at
partition f % P of tile f // P. The projections take it as the moving side against the weights as
the stationary one, so their outputs come out in the same layout, and every element-wise step
uses all P lanes, however few the tokens. Attention puts the positions on the partitions.

Where it rounds to BF16 (the tensor engine's inputs): the normalized states, the rotated q and k,
v, the probabilities, the attention output and the MLP's product. Everything else is FP32 (the
turns between layouts and the rotary's half swap keep the bits). The scalar engine has no SiLU,
so silu(g) is g * sigmoid(g).
"""
import math

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

W_BLOCK = 4096  # weight columns a DMA brings (project): 8 KiB a partition in BF16
PSUM_FP32 = 512  # FP32 words of a PSUM bank a partition (nl.tile_size.gemm_moving_fmax)
PSUM_BANKS = 8  # a partition's PSUM: 16 KiB (hardware.md: 2 MiB over 128 partitions), 8 banks of 2 KiB
ROW_BYTES = 8 * 1024  # a K-tiled weight DMA's bytes a partition (Weights)
# A score past the last position: its exp is 0 at any scale a head size gives (ncore's choice; it
# only has to be below every real score).
MASKED = -30000.0


def tiles(n, size):
    """(start, length) of each tile of at most `size` covering 0 .. n - 1."""
    return [(i, min(size, n - i)) for i in range(0, n, size)]


def sbuf(shape, dtype):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


def psum(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.psum)


def free_ap(tile, pattern, offset=0, partitions=None):
    """An access pattern over `tile`'s free elements ([stride, count] pairs, outermost first)
    on its first `partitions` partitions (all of them by default)."""
    free = math.prod(tile.shape[1:])
    return tile.ap([[free, partitions or tile.shape[0]]] + [list(p) for p in pattern], offset=offset)


# -- the features layout ---------------------------------------------------------------------------
#
# Between the projections a token's state is a column: feature f of token b at partition f % P of
# tile f // P, a tile [P, tiles, B] (the last tile partly filled when P does not divide the
# features). Element-wise steps then use every lane, and a projection takes the state as its
# moving side with the weights stationary, so its output comes out in the same layout.

def by_token(rows, nt, tile_row_bytes):
    """Whether load_features and store_rows go token by token (a transpose a token) rather than
    tile by tile (a transpose a tile): when there are fewer tokens than tiles, and a tile's row
    of a token is whole 32-byte bursts in HBM (ncore's DMA moves whole bursts)."""
    return rows < nt and tile_row_bytes % 32 == 0


def load_features(src, row0=0, rows=None, out=None, col0=0):
    """Rows row0 .. row0 + rows - 1 (at most P) of src [rows, N] in HBM (all of them by default)
    -> [min(N, P), tiles, rows] in SBUF (its type), or into columns col0 .. col0 + rows - 1 of out:
    token by token, each a [tiles, P] load turned by the tensor engine, or the rows turned a tile
    at a time (by_token)."""
    n = src.shape[1]
    rows = src.shape[0] - row0 if rows is None else rows
    kp = min(n, nl.tile_size.pmax)
    parts = tiles(n, kp)
    if out is None:
        out = sbuf((kp, len(parts), rows), src.dtype)
    if not by_token(rows, len(parts), kp * src.dtype.itemsize):
        whole = sbuf((rows, n), src.dtype)
        nisa.dma_copy(dst=whole, src=src[row0:row0 + rows, :])
        for t, (start, size) in enumerate(parts):
            turned = psum((size, rows), src.dtype)
            nisa.nc_transpose(dst=turned, data=whole[:, start:start + size])
            nisa.tensor_copy(dst=out[0:size, t, col0:col0 + rows], src=turned)
        return out
    full = n // kp
    for b in range(rows):
        for c0, cn in tiles(full, nl.tile_size.pmax):
            block = sbuf((cn, kp), src.dtype)
            nisa.dma_copy(dst=block, src=src.ap([[kp, cn], [1, kp]], offset=(row0 + b) * n + c0 * kp))
            turned = psum((kp, cn), src.dtype)
            nisa.nc_transpose(dst=turned, data=block)
            nisa.tensor_copy(dst=out[:, c0:c0 + cn, col0 + b], src=turned)
        if full < len(parts):
            rem = n - full * kp
            block = sbuf((1, rem), src.dtype)
            nisa.dma_copy(dst=block, src=src[row0 + b:row0 + b + 1, full * kp:n])
            turned = psum((rem, 1), src.dtype)
            nisa.nc_transpose(dst=turned, data=block)
            nisa.tensor_copy(dst=out[0:rem, full, col0 + b:col0 + b + 1], src=turned)
    return out


def load_features_blocks(src, row0, rows):
    """load_features of any number of rows, a block of P at a time into one tile."""
    n = src.shape[1]
    kp = min(n, nl.tile_size.pmax)
    out = sbuf((kp, len(tiles(n, kp)), rows), src.dtype)
    for b0, bn in tiles(rows, nl.tile_size.pmax):
        load_features(src, row0 + b0, bn, out, b0)
    return out


def store_rows(x_t, dst, row0=0, col0=0, rows=None):
    """Columns col0 .. col0 + rows - 1 (at most P; all of them by default) of x_t [kp, tiles, B]
    (the features layout, dst's type) -> rows row0 .. row0 + rows - 1 of dst [rows, N] in HBM, the
    inverse of load_features."""
    kp, nt, cols = x_t.shape
    rows = cols - col0 if rows is None else rows
    n = dst.shape[1]
    parts = tiles(n, kp)
    if not by_token(rows, nt, kp * x_t.dtype.itemsize):
        whole = sbuf((rows, n), x_t.dtype)
        for t, (start, size) in enumerate(parts):
            turned = psum((rows, size), x_t.dtype)
            nisa.nc_transpose(dst=turned, data=x_t[0:size, t, col0:col0 + rows])
            nisa.tensor_copy(dst=whole[:, start:start + size], src=turned)
        nisa.dma_copy(dst=dst[row0:row0 + rows, :], src=whole)
        return
    full = n // kp
    for b in range(rows):
        for c0, cn in tiles(full, nl.tile_size.pmax):
            turned = psum((cn, kp), x_t.dtype)
            nisa.nc_transpose(dst=turned, data=x_t[:, c0:c0 + cn, col0 + b])
            block = sbuf((cn, kp), x_t.dtype)
            nisa.tensor_copy(dst=block, src=turned)
            nisa.dma_copy(dst=dst.ap([[kp, cn], [1, kp]], offset=(row0 + b) * n + c0 * kp), src=block)
        if full < nt:
            rem = n - full * kp
            turned = psum((1, rem), x_t.dtype)
            nisa.nc_transpose(dst=turned, data=x_t[0:rem, full, col0 + b:col0 + b + 1])
            block = sbuf((1, rem), x_t.dtype)
            nisa.tensor_copy(dst=block, src=turned)
            nisa.dma_copy(dst=dst[row0 + b:row0 + b + 1, full * kp:n], src=block)


def rmsnorm_features(x_t, gain_t, eps):
    """x_t [kp, tiles, B] (any float type, every tile full) -> x / sqrt(mean(x^2) + eps) * gain,
    BF16, for gain_t [kp, tiles, 1]. A token's sum of squares: its tiles added on each lane, then
    the lanes added (and the sum put on every lane) by a matmul with a ones matrix."""
    kp, nt, rows = x_t.shape
    squares = sbuf((kp, nt, rows), nl.float32)
    nisa.activation(dst=squares, op=nl.square, data=x_t)
    lane_sums = sbuf((kp, rows), nl.float32)
    nisa.tensor_reduce(dst=lane_sums, op=nl.add, data=free_ap(squares, [[1, rows], [rows, nt]]), axis=2)
    total = psum((kp, rows))
    nisa.nc_matmul(dst=total, stationary=nl.ones((kp, kp), dtype=nl.float32, buffer=nl.sbuf), moving=lane_sums)
    rstd = sbuf((kp, rows), nl.float32)
    nisa.activation(dst=rstd, op=nl.rsqrt, data=total, scale=1.0 / (kp * nt), bias=eps)
    normed = sbuf((kp, nt, rows), nl.float32)
    nisa.tensor_tensor(dst=normed, data1=x_t, data2=free_ap(rstd, [[0, nt], [1, rows]]), op=nl.multiply)
    out = sbuf((kp, nt, rows), nl.bfloat16)
    nisa.tensor_tensor(dst=out, data1=normed, data2=free_ap(gain_t, [[1, nt], [0, rows]]), op=nl.multiply)
    return out


class Weights:
    """A weight matrix as project() reads it, in blocks of column tiles (W_BLOCK columns, a multiple
    of the output tile `size`) by contraction tiles, column blocks outermost, one DMA each.

    In HBM it is either w [K, N] (rows as a checkpoint has them) or K-tiled, [P, K / P, N] with
    w_t[p, t, n] = w[t P + p, n] (tile_rows gives it): then a partition's rows of several
    contraction tiles lie side by side, and one DMA brings g of them, about ROW_BYTES a
    partition. That matters when a rank's slice is narrow: at tp 128 Llama-3.1-405B's MLP slice is
    416 columns, 832 bytes a row, where a DMA row's fixed cost (that of 256 bytes in ncore's
    trn2 timing, from AWS's DMA pages) takes a quarter of the time; tiled, a DMA moves about 8 KiB
    a partition (near the peak from 2 KiB, the same pages)."""

    def __init__(self, w_hbm, kp, tile=None, moving=1):
        self.hbm, self.kp = w_hbm, kp
        self.tiled = len(w_hbm.shape) == 3
        if self.tiled:
            if w_hbm.shape[0] != kp:
                raise ValueError(f"K-tiled weights {w_hbm.shape}: expected {kp} partitions first (tile_rows)")
            k, n = w_hbm.shape[1] * kp, w_hbm.shape[2]
        else:
            k, n = w_hbm.shape
        self.k, self.n = k, n
        self.size = min(tile or nl.tile_size.pmax, n)
        # A block's output tiles accumulate in PSUM together, a bank holding PSUM_FP32 // moving of
        # them: with `moving` tokens the block is at most what the PSUM banks hold.
        held = PSUM_BANKS * max(1, PSUM_FP32 // moving) * self.size
        self.column_blocks = tiles(n, max(self.size, min(W_BLOCK // self.size * self.size, held)))
        kt = len(tiles(k, kp))
        self.order = []  # (first column, columns, first contraction tile, tiles)
        for b0, bn in self.column_blocks:
            g = max(1, ROW_BYTES // (bn * w_hbm.dtype.itemsize)) if self.tiled else 1
            self.order += [(b0, bn, t0, tn) for t0, tn in tiles(kt, g)]


    def _load(self, b0, bn, t0, tn):
        """Block [rows, tn, bn]: contraction tiles t0 .. t0 + tn - 1 of columns b0 .. b0 + bn - 1."""
        if self.tiled:
            w = sbuf((self.kp, tn, bn), self.hbm.dtype)
            nisa.dma_copy(dst=w, src=self.hbm[:, t0:t0 + tn, b0:b0 + bn])
            return w
        start = t0 * self.kp
        ks = min(self.kp, self.k - start)
        w = sbuf((ks, 1, bn), self.hbm.dtype)
        nisa.dma_copy(dst=w[:, 0, :], src=self.hbm[start:start + ks, b0:b0 + bn])
        return w

    def block(self, index):
        """Block `index` of the order, loaded now (one DMA)."""
        return self._load(*self.order[index])


def tile_rows(w, partitions):
    """w [K, N] (NumPy, K a multiple of partitions) in the K-tiled layout [P, K / P, N] that
    Weights reads: w_t[p, t, n] = w[t P + p, n]. What a checkpoint prepared for this kernel holds."""
    k, n = w.shape
    if k % partitions:
        raise ValueError(f"weights of {k} rows: expected a multiple of {partitions} partitions to tile them")
    return w.reshape(k // partitions, partitions, n).transpose(1, 0, 2).copy()


def project(x_t, w, tile=None):
    """x @ w in the features layout: x_t [kp, K tiles, B] (BF16) and w in HBM ([K, N], or K-tiled
    [P, K / P, N]; or a Weights over either) -> [size, N tiles, B] FP32, size = min(tile or P, N).
    The weights are the stationary side, a [kp, size] block each, the tokens the moving one, K
    accumulated in PSUM. A partly filled last tile is zero beyond N."""
    kp, _, rows = x_t.shape
    weights = w if isinstance(w, Weights) else Weights(w, kp, tile, rows)
    k, n = weights.k, weights.n
    size = weights.size
    parts = tiles(n, size)
    out = sbuf((size, len(parts), rows), nl.float32)
    if n % size:
        nisa.memset(dst=out[:, len(parts) - 1, :], value=0.0)
    per_bank = max(1, PSUM_FP32 // rows)
    contraction = tiles(k, kp)
    for b0, bn in weights.column_blocks:
        cols = tiles(bn, size)
        groups = tiles(len(cols), per_bank)
        accs = [psum((size, gn, rows)) for _, gn in groups]
        for index in [i for i, (first, *_) in enumerate(weights.order) if first == b0]:
            block = weights.block(index)
            _, _, t0, tn = weights.order[index]
            for t in range(t0, t0 + tn):
                ks = contraction[t][1]
                for j, (c0, cn) in enumerate(cols):
                    nisa.nc_matmul(dst=accs[j // per_bank][0:cn, j % per_bank, :],
                                   stationary=block[0:ks, t - t0, c0:c0 + cn], moving=x_t[0:ks, t, :],
                                   accumulate=t > 0)
        for (g0, gn), acc in zip(groups, accs):
            first = b0 // size + g0
            whole = gn if cols[g0 + gn - 1][1] == size else gn - 1
            if whole:
                nisa.tensor_copy(dst=out[:, first:first + whole, :], src=acc[:, 0:whole, :])
            if whole < gn:
                cn = cols[g0 + gn - 1][1]
                nisa.tensor_copy(dst=out[0:cn, first + whole, :], src=acc[0:cn, whole, :])
    return out


def head_tiles(d):
    """A head's d values on the partitions: (partitions per tile, tiles). d is at most the
    partitions on NeuronCore-v3 (128); the size-8 test core needs two tiles of 8."""
    dp = min(d, nl.tile_size.pmax)
    if d % dp:
        raise ValueError(f"head size {d}: expected a multiple of the partitions ({dp}) or at most them")
    return dp, d // dp


def rotate_half(x_t, first, heads, dt):
    """[-x2, x1] of each of `heads` heads from tile `first` of x_t [dp, tiles, B] (FP32, a head dt
    tiles): [dp, heads * dt * B] FP32 (PSUM or SBUF). Within a tile (dt = 1) the halves trade
    partitions, which the tensor engine does with a signed permutation (exact in FP32); across
    tiles (dt even) they trade tiles."""
    dp, _, rows = x_t.shape
    cols = heads * dt * rows
    if dt == 1:
        half = dp // 2
        swap = sbuf((dp, dp), nl.float32)
        minus_ones = nl.full((dp, half), -1.0, dtype=nl.float32, buffer=nl.sbuf)
        ones = nl.ones((dp, half), dtype=nl.float32, buffer=nl.sbuf)
        # swap[k, m] = -1 where k = m + half (m < half), +1 where k = m - half (m >= half)
        nisa.affine_select(dst=swap[:, 0:half], pattern=[[-1, half]], channel_multiplier=1, offset=-half,
                           on_true_tile=minus_ones, on_false_value=0.0)
        nisa.affine_select(dst=swap[:, half:dp], pattern=[[-1, half]], channel_multiplier=1, offset=0,
                           on_true_tile=ones, on_false_value=0.0)
        out = psum((dp, cols)) if cols <= PSUM_FP32 else sbuf((dp, cols), nl.float32)
        for c0, cn in tiles(cols, PSUM_FP32):
            turned = out if cols <= PSUM_FP32 else psum((dp, cn))
            nisa.nc_matmul(dst=turned, stationary=swap, moving=free_ap(x_t, [[1, cn]], offset=first * rows + c0))
            if cols > PSUM_FP32:
                nisa.tensor_copy(dst=out[:, c0:c0 + cn], src=turned)
        return out
    if dt % 2:
        raise ValueError(f"a head of {dt} tiles: rotary needs its halves on whole tiles (an even count)")
    out = sbuf((dp, heads * dt, rows), nl.float32)  # the same elements as [dp, heads * dt * B]
    h = dt // 2
    for head in range(heads):
        lo, mine = first + head * dt, head * dt
        nisa.tensor_scalar(dst=out[:, mine:mine + h, :], data=x_t[:, lo + h:lo + dt, :], op0=nl.multiply,
                           operand0=-1.0)
        nisa.tensor_copy(dst=out[:, mine + h:mine + dt, :], src=x_t[:, lo:lo + h, :])
    return out


def rope(x_t, first, heads, cos_t, sin_t, out):
    """Rotary embedding of `heads` heads from tile `first` of x_t [dp, tiles, B] (FP32) into out
    [dp, heads * dt, B] (BF16): x cos + [-x2, x1] sin, for the tables cos_t, sin_t [dp, dt, B]
    (the features layout of [B, d], the halves repeated)."""
    dp, dt, rows = cos_t.shape
    span = dt * rows
    rotated = rotate_half(x_t, first, heads, dt)
    by_head = [[span, heads], [1, span]]
    tables = [[0, heads], [1, span]]  # the same table for every head
    a = sbuf((dp, heads * dt, rows), nl.float32)
    b = sbuf((dp, heads * dt, rows), nl.float32)
    nisa.tensor_tensor(dst=free_ap(a, by_head), data1=free_ap(x_t, by_head, offset=first * rows),
                       data2=free_ap(cos_t, tables), op=nl.multiply)
    nisa.tensor_tensor(dst=free_ap(b, by_head), data1=free_ap(rotated, by_head), data2=free_ap(sin_t, tables),
                       op=nl.multiply)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)
    return out


def qkv_rope(xn_t, w_qkv, cos_t, sin_t, q_heads, k_new, v_new):
    """The rank's q, k and v of every token from the normed state (xn_t, features layout), q and
    k rotated; k and v also written to their HBM outputs k_new, v_new [B, d]. Returns q^T
    [dp, q_heads * dt, B] (head h's tile t at h * dt + t) and k^T [dp, dt, B], BF16."""
    dp, dt, rows = cos_t.shape
    qkv = project(xn_t, w_qkv, tile=dp)
    q_t = rope(qkv, 0, q_heads, cos_t, sin_t, sbuf((dp, q_heads * dt, rows), nl.bfloat16))
    k_t = rope(qkv, q_heads * dt, 1, cos_t, sin_t, sbuf((dp, dt, rows), nl.bfloat16))
    v_t = sbuf((dp, dt, rows), nl.bfloat16)
    nisa.tensor_copy(dst=v_t, src=qkv[:, (q_heads + 1) * dt:(q_heads + 2) * dt, :])
    store_rows(k_t, k_new)
    store_rows(v_t, v_new)
    return q_t, k_t


def qkv_rope_heads(xn_t, w_qkv, cos_t, sin_t, q_heads, h0, hn, k_out, v_out):
    """qkv_rope for query heads h0 .. h0 + hn - 1 of the rank's q_heads (LNC=2: a program's
    share): their q, and the rank's k and v, each projected on its own. k goes to k_out unless it
    is None, v to v_out (HBM [B, d]), which the attention reads back. Returns (q^T, k^T)."""
    dp, dt, rows = cos_t.shape
    d = dp * dt
    q = project(xn_t, columns(w_qkv, h0 * d, hn * d), tile=dp)
    kv = project(xn_t, columns(w_qkv, q_heads * d, 2 * d), tile=dp)
    q_t = rope(q, 0, hn, cos_t, sin_t, sbuf((dp, hn * dt, rows), nl.bfloat16))
    k_t = rope(kv, 0, 1, cos_t, sin_t, sbuf((dp, dt, rows), nl.bfloat16))
    v_t = sbuf((dp, dt, rows), nl.bfloat16)
    nisa.tensor_copy(dst=v_t, src=kv[:, dt:2 * dt, :])
    if k_out is not None:
        store_rows(k_t, k_out)
    store_rows(v_t, v_out)
    return q_t, k_t


def decode_attention(q_t, keys, v_rows, b, o_t):
    """Token b's grouped-query attention: its heads' q^T (q_t [dp, q_heads * dt, B]) against the
    keys k^T (keys [dp, dt, S]) and values v [S, d] (S positions, in blocks of P: v_rows(first,
    rows) gives positions first .. first + rows - 1 as [rows, d] in SBUF); softmax(q k^T /
    sqrt(d)) v, its heads' outputs into o_t[:, :, b] ([dp, q_heads * dt, B], BF16).

    The positions are on the partitions, a block of P at a time (the keys stationary, the heads
    moving), so the softmax uses every lane: a head's maximum is each lane's, then the lanes'
    through a transpose; its sum each lane's, then the lanes' through a ones matmul. The
    probabilities are then the moving side against the values stationary, which gives o^T.
    With o_t None it returns the softmax's parts instead, for attend_pair to merge: -scale x
    each head's maximum and its sum ([P, q_heads], every lane), and o^T unnormalized
    ([dp, dt, q_heads], PSUM)."""
    dp, dt, s = keys.shape
    rows = q_t.shape[2]
    q_heads = q_t.shape[1] // dt
    pmax = nl.tile_size.pmax
    blocks = tiles(s, pmax)
    nb = len(blocks)
    last = blocks[-1][1]
    scale = 1.0 / math.sqrt(dp * dt)
    scores = sbuf((pmax, nb, q_heads), nl.float32)
    if last < pmax:
        nisa.memset(dst=scores[:, nb - 1, :], value=MASKED)
    for g0, gn in tiles(nb, max(1, PSUM_FP32 // q_heads)):
        acc = psum((pmax, gn, q_heads))
        for j in range(g0, g0 + gn):
            first, n = blocks[j]
            for t in range(dt):
                heads = free_ap(q_t, [[dt * rows, q_heads]], offset=t * rows + b)  # [dp, q_heads]
                nisa.nc_matmul(dst=acc[0:n, j - g0, :], stationary=keys[:, t, first:first + n], moving=heads,
                               accumulate=t > 0)
        whole = gn if blocks[g0 + gn - 1][1] == pmax else gn - 1
        if whole:
            nisa.tensor_copy(dst=scores[:, g0:g0 + whole, :], src=acc[:, 0:whole, :])
        if whole < gn:
            nisa.tensor_copy(dst=scores[0:last, nb - 1, :], src=acc[0:last, whole, :])
    by_head = [[1, q_heads], [q_heads, nb]]  # [P, q_heads, nb]
    lane_max = sbuf((pmax, q_heads), nl.float32)
    nisa.tensor_reduce(dst=lane_max, op=nl.max, data=free_ap(scores, by_head), axis=2)
    lanes = psum((q_heads, pmax))
    nisa.nc_transpose(dst=lanes, data=lane_max)
    head_max = sbuf((q_heads, 1), nl.float32)
    nisa.tensor_reduce(dst=head_max, op=nl.max, data=lanes, axis=1)
    bias_rows = sbuf((q_heads, pmax), nl.float32)  # -scale max, along every head's row
    nisa.tensor_scalar(dst=bias_rows, data=free_ap(head_max, [[0, pmax]]), op0=nl.multiply, operand0=-scale)
    bias_t = psum((pmax, q_heads))
    nisa.nc_transpose(dst=bias_t, data=bias_rows)
    bias = sbuf((pmax, q_heads), nl.float32)
    nisa.tensor_copy(dst=bias, src=bias_t)
    probs = sbuf((pmax, nb, q_heads), nl.bfloat16)
    lane_sums = sbuf((pmax, q_heads), nl.float32)
    for head in range(q_heads):
        nisa.activation(dst=free_ap(probs, [[q_heads, nb]], offset=head), op=nl.exp,
                        data=free_ap(scores, [[q_heads, nb]], offset=head), scale=scale, bias=bias[:, head:head + 1],
                        reduce_op=nl.add, reduce_res=lane_sums[:, head:head + 1],
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
    total = psum((pmax, q_heads))
    nisa.nc_matmul(dst=total, stationary=nl.ones((pmax, pmax), dtype=nl.float32, buffer=nl.sbuf), moving=lane_sums)
    acc = psum((dp, dt, q_heads))
    for j, (first, n) in enumerate(blocks):
        block = v_rows(first, n)
        for t in range(dt):
            nisa.nc_matmul(dst=acc[:, t, :], stationary=block[:, t * dp:(t + 1) * dp], moving=probs[0:n, j, :],
                           accumulate=j > 0)
    if o_t is None:  # a share of the positions (attend_pair): its -scale max, sum and unnormalized o^T
        return bias, total, acc
    inverse = sbuf((pmax, q_heads), nl.float32)
    nisa.reciprocal(dst=inverse, data=total)
    # o^T [dp, (t, head)] / sum, into o_t's tile head * dt + t of token b
    nisa.tensor_tensor(dst=free_ap(o_t, [[rows, dt], [dt * rows, q_heads]], offset=b), data1=acc,
                       data2=free_ap(inverse, [[0, dt], [1, q_heads]], partitions=dp), op=nl.multiply)


def causal_attention(q_t, k_t, values, q0, qn, q_col=None):
    """Prefill's grouped-query attention, flash style, for the queries at positions q0 .. q0 + qn
    - 1 (qn at most P): their heads' q^T (columns q_col .. q_col + qn - 1 of q_t [dp, q_heads *
    dt, columns], q_col = q0 by default) against the keys k^T (k_t [dp, dt, S]) and values
    (values [P, blocks, d]: position j at partition j % P of block j // P) of positions 0 .. q0 +
    qn - 1, causal. Returns the heads' outputs o^T, [dp, q_heads * dt, qn] (BF16, the features
    layout of the block's tokens).

    The queries are on the partitions, the keys a block of P at a time along the free axis, so
    that the softmax runs along each lane: every query keeps a running maximum, sum and FP32
    output, rescaled by exp(scale (old - new maximum)) when a block raises the maximum (online
    softmax), and only one block of scores is ever held. In the block on the diagonal a key after
    its query is masked (affine_select). The probabilities (BF16) turn through the tensor engine to
    be the stationary side against the values: o = p v, a block at a time."""
    dp, dt, _ = k_t.shape
    d = dp * dt
    q_heads = q_t.shape[1] // dt
    scale = 1.0 / math.sqrt(d)
    q_col = q0 if q_col is None else q_col
    o_t = sbuf((dp, q_heads * dt, qn), nl.bfloat16)
    for head in range(q_heads):
        run_max = sbuf((qn, 1), nl.float32)
        run_sum = sbuf((qn, 1), nl.float32)
        acc = sbuf((qn, d), nl.float32)
        nisa.memset(dst=run_max, value=MASKED)
        nisa.memset(dst=run_sum, value=0.0)
        nisa.memset(dst=acc, value=0.0)
        for j, (k0, kn) in enumerate(tiles(q0 + qn, nl.tile_size.pmax)):
            raw = psum((qn, kn))
            for t in range(dt):
                nisa.nc_matmul(dst=raw, stationary=q_t[:, head * dt + t, q_col:q_col + qn],
                               moving=k_t[:, t, k0:k0 + kn],
                               accumulate=t > 0)
            scores = sbuf((qn, kn), nl.float32)
            if k0 + kn > q0 + 1:  # key k0 + i after query q0 + p where p - i + q0 - k0 < 0
                nisa.affine_select(dst=scores, pattern=[[-1, kn]], channel_multiplier=1, offset=q0 - k0,
                                   on_true_tile=raw, on_false_value=MASKED, cmp_op=nl.greater_equal)
            else:
                nisa.tensor_copy(dst=scores, src=raw)
            block_max = sbuf((qn, 1), nl.float32)
            nisa.tensor_reduce(dst=block_max, op=nl.max, data=scores, axis=1)
            new_max = sbuf((qn, 1), nl.float32)
            nisa.tensor_tensor(dst=new_max, data1=run_max, data2=block_max, op=nl.maximum)
            drop = sbuf((qn, 1), nl.float32)  # old - new maximum
            nisa.tensor_tensor(dst=drop, data1=run_max, data2=new_max, op=nl.subtract)
            rescale = sbuf((qn, 1), nl.float32)
            nisa.activation(dst=rescale, op=nl.exp, data=drop, scale=scale)
            bias = sbuf((qn, 1), nl.float32)
            nisa.tensor_scalar(dst=bias, data=new_max, op0=nl.multiply, operand0=-scale)
            probs = sbuf((qn, kn), nl.bfloat16)
            block_sum = sbuf((qn, 1), nl.float32)
            nisa.activation(dst=probs, op=nl.exp, data=scores, scale=scale, bias=bias, reduce_op=nl.add,
                            reduce_res=block_sum, reduce_cmd=nisa.reduce_cmd.reset_reduce)
            nisa.scalar_tensor_tensor(dst=run_sum, data=run_sum, op0=nl.multiply, operand0=rescale, op1=nl.add,
                                      operand1=block_sum)
            turned = psum((kn, qn), nl.bfloat16)
            nisa.nc_transpose(dst=turned, data=probs)
            probs_t = sbuf((kn, qn), nl.bfloat16)
            nisa.tensor_copy(dst=probs_t, src=turned)
            pv = psum((qn, d))
            nisa.nc_matmul(dst=pv, stationary=probs_t, moving=values[0:kn, j, :])
            nisa.scalar_tensor_tensor(dst=acc, data=acc, op0=nl.multiply, operand0=rescale, op1=nl.add, operand1=pv)
            nisa.tensor_copy(dst=run_max, src=new_max)
        inverse = sbuf((qn, 1), nl.float32)
        nisa.reciprocal(dst=inverse, data=run_sum)
        out = sbuf((qn, d), nl.bfloat16)
        nisa.tensor_scalar(dst=out, data=acc, op0=nl.multiply, operand0=inverse)
        for t in range(dt):
            turned = psum((dp, qn), nl.bfloat16)
            nisa.nc_transpose(dst=turned, data=out[:, t * dp:(t + 1) * dp])
            nisa.tensor_copy(dst=o_t[:, head * dt + t, :], src=turned)
    return o_t


def value_blocks(v):
    """v [S, d] in HBM -> [P, blocks, d] in SBUF, position j at partition j % P of block j // P
    (causal_attention's values), a DMA a block."""
    s, d = v.shape
    pmax = nl.tile_size.pmax
    blocks = tiles(s, pmax)
    out = sbuf((pmax, len(blocks), d), v.dtype)
    for j, (first, n) in enumerate(blocks):
        nisa.dma_copy(dst=out[0:n, j, :], src=v[first:first + n, :])
    return out


def all_reduce(partial, replica_group):
    """The group's sum of each rank's partial [kp, tiles, B] (SBUF, FP32). An SBUF collective goes
    through HBM a partition's row at a time, and ncore's DMA moves whole 32-byte bursts, so rows
    of another size (small test shapes) are padded with zeros on the way."""
    kp, nt, rows = partial.shape
    n = nt * rows
    width = -(-n // 8) * 8  # FP32 words of whole bursts
    total = sbuf(partial.shape, nl.float32)
    if width == n:
        ncc.all_reduce(srcs=[partial], dsts=[total], replica_group=replica_group, op=nl.add)
        return total
    padded, summed = sbuf((kp, width), nl.float32), sbuf((kp, width), nl.float32)
    nisa.memset(dst=padded[:, n:width], value=0.0)
    nisa.tensor_copy(dst=padded[:, 0:n], src=free_ap(partial, [[1, n]]))
    ncc.all_reduce(srcs=[padded], dsts=[summed], replica_group=replica_group, op=nl.add)
    nisa.tensor_copy(dst=total, src=free_ap(summed, [[rows, nt], [1, rows]]))
    return total


def chunk_all_reduce(partial, replica_group, col0, cols, h):
    """The group's sum of a prefill chunk's partials [kp, tiles, tokens] (FP32, the features
    layout of hidden size h). At LNC=1 all_reduce. At LNC=2 each program holds columns col0 ..
    col0 + tokens - 1 of the rank's chunk of `cols` tokens (or none: partial None): it writes them
    into the rank's src in shared HBM ([kp, tiles, cols]), the rank's all_reduce (issued by both,
    run once) sums the group's, and each loads its columns back (None for none)."""
    if nl.num_programs(0) == 1:
        return all_reduce(partial, replica_group)
    kp = min(h, nl.tile_size.pmax)
    nt = -(-h // kp)
    src = nl.ndarray((kp, nt * cols), dtype=nl.float32, buffer=nl.shared_hbm)
    dst = nl.ndarray((kp, nt * cols), dtype=nl.float32, buffer=nl.shared_hbm)
    if partial is not None:
        mine = [[nt * cols, kp], [cols, nt], [1, partial.shape[2]]]  # its columns of each tile
        nisa.dma_copy(dst=src.ap(mine, offset=col0), src=partial)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=replica_group, op=nl.add)
    if partial is None:
        return None
    total = sbuf(partial.shape, nl.float32)
    nisa.dma_copy(dst=total, src=dst.ap(mine, offset=col0))
    return total


def pair_share(n):
    """This program's share (first, count) of n items: all of them at LNC=1; at LNC=2 (a launch
    grid of 2, a program on each core of the rank's pair) program 0 takes the larger half."""
    if nl.num_programs(0) == 1:
        return 0, n
    first = -(-n // 2)
    return (0, first) if nl.program_id(0) == 0 else (first, n - first)


def columns(w, first, count):
    """Columns first .. first + count - 1 of weights w ([K, N], or K-tiled [P, K / P, N])."""
    return w[:, :, first:first + count] if len(w.shape) == 3 else w[:, first:first + count]


def rank_all_reduce(partial, replica_group):
    """all_reduce at LNC=1. At LNC=2 each program holds a partial of the rank's [kp, tiles, B]
    (FP32, SBUF): the pair adds them through shared HBM across a core barrier (program 0's plus
    program 1's, so both get the same bits), each program writes its share of the partitions to
    the rank's src, and the rank's all_reduce (issued by both, run once for the rank) sums the
    group's; both load the whole result."""
    if nl.num_programs(0) == 1:
        return all_reduce(partial, replica_group)
    kp, nt, rows = partial.shape
    n = nt * rows
    width = -(-n // 8) * 8  # FP32 words of whole 32-byte bursts a partition
    p = nl.program_id(0)
    mine = sbuf((kp, width), nl.float32)
    if width != n:
        nisa.memset(dst=mine[:, n:width], value=0.0)
    nisa.tensor_copy(dst=mine[:, 0:n], src=free_ap(partial, [[1, n]]))
    halves = nl.ndarray((2 * kp, width), dtype=nl.float32, buffer=nl.shared_hbm)  # program q's at rows q kp
    nisa.dma_copy(dst=halves[p * kp:(p + 1) * kp, :], src=mine)
    nisa.core_barrier(halves, (0, 1))
    theirs = sbuf((kp, width), nl.float32)
    nisa.dma_copy(dst=theirs, src=halves[(1 - p) * kp:(2 - p) * kp, :])
    pair = sbuf((kp, width), nl.float32)
    nisa.tensor_tensor(dst=pair, data1=mine if p == 0 else theirs, data2=theirs if p == 0 else mine, op=nl.add)
    src = nl.ndarray((kp, width), dtype=nl.float32, buffer=nl.shared_hbm)
    dst = nl.ndarray((kp, width), dtype=nl.float32, buffer=nl.shared_hbm)
    f0, fn = pair_share(kp)
    nisa.dma_copy(dst=src[f0:f0 + fn, :], src=pair[f0:f0 + fn, :])
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=replica_group, op=nl.add)
    summed = sbuf((kp, width), nl.float32)
    nisa.dma_copy(dst=summed, src=dst)
    total = sbuf(partial.shape, nl.float32)
    nisa.tensor_copy(dst=total, src=free_ap(summed, [[rows, nt], [1, rows]]))
    return total


def load(src, dtype=None):
    """An HBM tensor into a new SBUF tile (cast on the way when dtype differs)."""
    tile = sbuf(src.shape, dtype or src.dtype)
    nisa.dma_copy(dst=tile, src=src)
    return tile


def cached_positions(k_t, k_cache, v_cache, v_new, b, p0, p1):
    """Token b's keys and values at positions p0 .. p1 - 1 of its cache (k_cache [B, d, T],
    v_cache [B, T, d]) and its new position T (its key in k_t [dp, dt, B], its value row in
    v_new [B, d], HBM): the keys k^T [dp, dt, p1 - p0] in SBUF, and values(first, count), which
    loads positions p0 + first .. p0 + first + count - 1 as [count, d] rows."""
    dp, dt, _ = k_t.shape
    past = k_cache.shape[2]
    cached = min(p1, past) - p0
    keys = sbuf((dp, dt, p1 - p0), nl.bfloat16)
    for t in nl.affine_range(dt):
        nisa.dma_copy(dst=keys[:, t, 0:cached], src=k_cache[b, t * dp:(t + 1) * dp, p0:p0 + cached])
        if p1 > past:
            nisa.tensor_copy(dst=keys[:, t, cached:cached + 1], src=k_t[:, t, b:b + 1])

    def values(first, count):
        block = sbuf((count, dp * dt), nl.bfloat16)
        first += p0
        last = first + count
        if last <= past:
            nisa.dma_copy(dst=block, src=v_cache[b, first:last, :])
        else:  # the block with the new position: its value row comes back from HBM
            if first < past:
                nisa.dma_copy(dst=block[0:past - first, :], src=v_cache[b, first:past, :])
            nisa.dma_copy(dst=block[past - first:past - first + 1, :], src=v_new[b:b + 1, :])
        return block
    return keys, values


def attend(q_t, k_t, k_cache, v_cache, v_new):
    """Every token's attention over its cache (k_cache [B, d, T], v_cache [B, T, d]) and its own
    new key (k_t [dp, dt, B]) and value (v_new [B, d], HBM). Returns the heads' outputs o^T,
    [dp, q_heads * dt, B] (BF16)."""
    o_t = sbuf(q_t.shape, nl.bfloat16)
    for b in nl.affine_range(k_t.shape[2]):
        keys, values = cached_positions(k_t, k_cache, v_cache, v_new, b, 0, k_cache.shape[2] + 1)
        decode_attention(q_t, keys, values, b, o_t)
    return o_t


def attend_pair(q_t, k_t, k_cache, v_cache, v_new):
    """attend at LNC=2 with every query head of the rank on both programs (a rank of one head):
    program p attends over its share of the positions (pair_share of the blocks of P; program 1
    the last, with the new position), then the pair trades each head's -scale x maximum, sum and
    unnormalized o^T through shared HBM across a core barrier, and both merge them in the same
    order (so both get the same bits; flash-decoding's merge): with the larger maximum's bias
    low = min(b0, b1), each part is weighed by w_p = exp(low - b_p), and o = (o0 w0 + o1 w1) /
    (s0 w0 + s1 w1). A program with no block (a context within one block) gives a sum of 0 and a
    bias of -MASKED, whose weight is 0. Returns o^T as attend does."""
    dp, dt, rows = k_t.shape
    q_heads = q_t.shape[1] // dt
    past = k_cache.shape[2]
    blocks = tiles(past + 1, nl.tile_size.pmax)
    j0, jn = pair_share(len(blocks))
    per = (2 + dt) * q_heads  # a token's bias, sum and o^T on each of dp partitions
    width = -(-rows * per // 8) * 8  # FP32 words of whole 32-byte bursts
    mine = sbuf((dp, width), nl.float32)
    if jn == 0 or width != rows * per:
        nisa.memset(dst=mine, value=0.0)
    if jn == 0:
        nisa.memset(dst=free_ap(mine, [[per, rows], [1, q_heads]]), value=-MASKED)
    else:
        p0 = blocks[j0][0]
        p1 = blocks[j0 + jn - 1][0] + blocks[j0 + jn - 1][1]  # its positions p0 .. p1 - 1
        for b in range(rows):
            keys, values = cached_positions(k_t, k_cache, v_cache, v_new, b, p0, p1)
            bias, total, acc = decode_attention(q_t, keys, values, b, None)
            base = b * per
            nisa.tensor_copy(dst=mine[:, base:base + q_heads], src=bias[0:dp, :])
            nisa.tensor_copy(dst=mine[:, base + q_heads:base + 2 * q_heads], src=total[0:dp, :])
            nisa.tensor_copy(dst=mine[:, base + 2 * q_heads:base + per], src=free_ap(acc, [[1, dt * q_heads]]))
    p = nl.program_id(0)
    halves = nl.ndarray((2 * dp, width), dtype=nl.float32, buffer=nl.shared_hbm)  # program q's at rows q dp
    nisa.dma_copy(dst=halves[p * dp:(p + 1) * dp, :], src=mine)
    nisa.core_barrier(halves, (0, 1))
    theirs = sbuf((dp, width), nl.float32)
    nisa.dma_copy(dst=theirs, src=halves[(1 - p) * dp:(2 - p) * dp, :])
    parts = (mine, theirs) if p == 0 else (theirs, mine)
    each = [[per, rows], [1, q_heads]]  # [dp, rows, q_heads] of a part's biases (offset 0) or sums (q_heads)
    low = sbuf((dp, rows, q_heads), nl.float32)
    nisa.tensor_tensor(dst=low, data1=free_ap(parts[0], each), data2=free_ap(parts[1], each), op=nl.minimum)
    weights = []
    for part in parts:
        w = sbuf((dp, rows, q_heads), nl.float32)
        nisa.tensor_tensor(dst=w, data1=low, data2=free_ap(part, each), op=nl.subtract)
        nisa.activation(dst=w, op=nl.exp, data=w)
        weights.append(w)
    sums = [sbuf((dp, rows, q_heads), nl.float32) for _ in parts]
    outs = [sbuf((dp, rows, dt, q_heads), nl.float32) for _ in parts]
    for part, w, total, o in zip(parts, weights, sums, outs):
        nisa.tensor_tensor(dst=total, data1=free_ap(part, each, offset=q_heads), data2=w, op=nl.multiply)
        nisa.tensor_tensor(dst=o, data1=free_ap(part, [[per, rows], [1, dt * q_heads]], offset=2 * q_heads),
                           data2=free_ap(w, [[q_heads, rows], [0, dt], [1, q_heads]]), op=nl.multiply)
    nisa.tensor_tensor(dst=sums[0], data1=sums[0], data2=sums[1], op=nl.add)
    nisa.tensor_tensor(dst=outs[0], data1=outs[0], data2=outs[1], op=nl.add)
    inverse = sbuf((dp, rows, q_heads), nl.float32)
    nisa.reciprocal(dst=inverse, data=sums[0])
    o_t = sbuf(q_t.shape, nl.bfloat16)  # token b's head h, tile t at [:, h dt + t, b]
    nisa.tensor_tensor(dst=free_ap(o_t, [[1, rows], [rows, dt], [dt * rows, q_heads]]), data1=outs[0],
                       data2=free_ap(inverse, [[q_heads, rows], [0, dt], [1, q_heads]]), op=nl.multiply)
    return o_t


def swiglu(hn_t, w_gate, w_up, w_down):
    """The rank's part of the MLP in the features layout, FP32: (silu(hn @ w_gate) * (hn @ w_up))
    @ w_down. A partly filled last tile of the intermediate slice is zero beyond it (project), so
    every lane computes on numbers."""
    gate = project(hn_t, w_gate)
    up = project(hn_t, w_up)
    sig = sbuf(gate.shape, nl.float32)
    nisa.activation(dst=sig, op=nl.sigmoid, data=gate)
    silu = sbuf(gate.shape, nl.float32)
    nisa.tensor_tensor(dst=silu, data1=gate, data2=sig, op=nl.multiply)
    product = sbuf(gate.shape, nl.bfloat16)
    nisa.tensor_tensor(dst=product, data1=silu, data2=up, op=nl.multiply)
    return project(product, w_down)


def residual(a, b):
    out = sbuf(a.shape, nl.float32)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)
    return out


def check_hidden(h):
    if h % min(h, nl.tile_size.pmax):
        raise ValueError(f"hidden size {h}: expected a multiple of the partitions ({nl.tile_size.pmax}) or at most "
                         "them (the features layout's tiles are whole)")


@nki.jit
def decoder_layer_decode(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                         replica_group, eps=1e-5):
    return decode_layer(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                        replica_group, eps)


@nki.jit
def decoder_layers_decode(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down,
                          replica_group, eps=1e-5, layers=2):
    """`layers` decode layers in a row, each taking the one before's y as its x, all with the same
    weights and KV cache (what a model's layers move is the same however many there are): a
    layer's time in steady state, where its head (the norm and its first weights) overlaps the
    layer before's tail (the MLP's all-reduce, the residual and the store), which a layer alone
    cannot show (llm_layer's --steady). Returns the last layer's (y, k_new, v_new)."""
    for layer in range(layers):
        if layer and nl.num_programs(0) == 2:  # LNC=2: program 1 reads the y program 0 wrote
            nisa.core_barrier(x, (0, 1))
        x, k_new, v_new = decode_layer(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up,
                                       w_down, replica_group, eps)
    return x, k_new, v_new


def decode_layer(x, g_attn, w_qkv, cos, sin, k_cache, v_cache, w_o, g_mlp, w_gate, w_up, w_down, replica_group,
                 eps):
    """decoder_layer_decode's body, for a kernel that runs several layers."""
    rows, h = x.shape
    d = cos.shape[1]
    q_heads = w_o.shape[0] // d
    check_hidden(h)
    y = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    k_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    x_t = load_features(x)
    xn_t = rmsnorm_features(x_t, load_features(g_attn), eps)
    if nl.num_programs(0) == 1:
        q_t, k_t = qkv_rope(xn_t, w_qkv, load_features(cos), load_features(sin), q_heads, k_new, v_new)
        o_t = attend(q_t, k_t, k_cache, v_cache, v_new)
        hidden = residual(x_t, all_reduce(project(o_t, w_o), replica_group))
        hn_t = rmsnorm_features(hidden, load_features(g_mlp), eps)
        store_rows(residual(hidden, all_reduce(swiglu(hn_t, w_gate, w_up, w_down), replica_group)), y)
        return y, k_new, v_new
    # LNC=2: each program takes a share of the query heads and of the MLP's intermediate slice;
    # program 0 writes the outputs. A rank of one query head (Llama-3.3-70B at tp 64) splits the
    # context instead (attend_pair), and each program projects half of the hidden size's tiles.
    first = nl.program_id(0) == 0
    v_own = nl.ndarray((2 * rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)  # program 1's v, read back
    v_rows = v_new if first else v_own[rows:2 * rows, :]
    h0, hn = pair_share(q_heads) if q_heads > 1 else (0, 1)
    q_t, k_t = qkv_rope_heads(xn_t, w_qkv, load_features(cos), load_features(sin), q_heads, h0, hn,
                              k_new if first else None, v_rows)
    if q_heads > 1:
        attention = project(attend(q_t, k_t, k_cache, v_cache, v_rows), w_o[h0 * d:(h0 + hn) * d, :])
    else:
        o_t = attend_pair(q_t, k_t, k_cache, v_cache, v_rows)
        kp = min(h, nl.tile_size.pmax)
        attention = sbuf((kp, -(-h // kp), rows), nl.float32)
        c0, cn = pair_share(attention.shape[1])
        nisa.memset(dst=attention, value=0.0)
        if cn:
            nisa.tensor_copy(dst=attention[:, c0:c0 + cn, :], src=project(o_t, w_o[:, c0 * kp:(c0 + cn) * kp]))
    hidden = residual(x_t, rank_all_reduce(attention, replica_group))
    hn_t = rmsnorm_features(hidden, load_features(g_mlp), eps)
    inter = w_down.shape[0]
    m0, mn = pair_share(inter)
    mlp = swiglu(hn_t, columns(w_gate, m0, mn), columns(w_up, m0, mn), w_down[m0:m0 + mn, :])
    y_t = residual(hidden, rank_all_reduce(mlp, replica_group))
    if first:
        store_rows(y_t, y)
    return y, k_new, v_new


@nki.jit
def decoder_layer_prefill(x, g_attn, w_qkv, cos, sin, w_o, g_mlp, w_gate, w_up, w_down, replica_group, eps=1e-5,
                          chunk=None, passes=None):
    """The layer over a prompt of S tokens x [S, H] at positions 0 .. S - 1 (cos, sin [S, d]), the
    same weights as decoder_layer_decode. Returns y [S, H] (FP32) and the KV cache the decode steps
    read: k_cache [d, S] (rotated keys, transposed) and v_cache [S, d] (BF16).

    It streams the prompt a chunk of tokens at a time (chunk: a multiple of P up to PSUM_FP32,
    P by default), in order: the chunk's norm, q, k and v (its keys and values joining those of
    the earlier chunks in SBUF), the causal attention of each of its blocks of P queries over every
    position so far (causal_attention), then its output projection, MLP and all-reduces. Only the
    keys and values of the whole prompt stay on chip (2 d S bytes a partition's worth, spread over
    the partitions); the weights stream again for every chunk, so a longer chunk streams them
    less often, if its states fit SBUF.

    At LNC=2 (a launch grid of 2) the pair splits each chunk's query blocks (pair_share: program 0
    the first half) and each program runs every step for its tokens. The attention needs the
    partner's keys and values too: each writes its own to the caches, and after a core barrier
    loads the partner's from them. The all-reduces go through the rank's src in shared HBM, each
    program's tokens its columns (chunk_all_reduce). A chunk of one block leaves program 1 only
    the barrier and the rank's collectives, so a chunk of two blocks or more splits the work.

    passes=(first, count) runs passes first .. first + count - 1 only, a timing instrument
    (llm_layer's sampled prefill): the earlier passes' keys and values are not computed, so the
    attention reads SBUF that nothing wrote (the same instructions, meaningless values), and only
    those passes' rows of the outputs are written."""
    s, h = x.shape
    d = cos.shape[1]
    dp, dt = head_tiles(d)
    q_heads = w_o.shape[0] // d
    check_hidden(h)
    pmax = nl.tile_size.pmax
    chunk = chunk or pmax
    if chunk % pmax or chunk > PSUM_FP32:
        raise ValueError(f"chunk {chunk}: expected a multiple of {pmax} tokens, at most {PSUM_FP32} (a PSUM bank's "
                         "FP32 columns, the projections' moving side)")
    y = nl.ndarray((s, h), dtype=nl.float32, buffer=nl.shared_hbm)
    k_cache = nl.ndarray((d, s), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_cache = nl.ndarray((s, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    keys = sbuf((dp, dt, s), nl.bfloat16)
    values = sbuf((pmax, len(tiles(s, pmax)), d), nl.bfloat16)
    gain_attn, gain_mlp = load_features(g_attn), load_features(g_mlp)
    pair = nl.num_programs(0) == 2
    all_passes = tiles(s, chunk)
    first_pass, count = passes or (0, len(all_passes))
    if not (0 <= first_pass and 1 <= count and first_pass + count <= len(all_passes)):
        raise ValueError(f"passes {passes}: expected (first, count) within the prompt's {len(all_passes)} passes")
    for c0, cn in all_passes[first_pass:first_pass + count]:
        blocks = [(c0 + b0, bn) for b0, bn in tiles(cn, pmax)]  # the chunk's query blocks
        j0, jn = pair_share(len(blocks))  # this program's (all of them at LNC=1)
        own = blocks[j0:j0 + jn]
        t0, tn = (own[0][0], sum(n for _, n in own)) if own else (c0, 0)  # its tokens t0 .. t0 + tn - 1
        o_t = None
        if tn:
            x_t = load_features_blocks(x, t0, tn)
            cos_t, sin_t = load_features_blocks(cos, t0, tn), load_features_blocks(sin, t0, tn)
            qkv = project(rmsnorm_features(x_t, gain_attn, eps), w_qkv, tile=dp)
            q_t = rope(qkv, 0, q_heads, cos_t, sin_t, sbuf((dp, q_heads * dt, tn), nl.bfloat16))
            k_t = rope(qkv, q_heads * dt, 1, cos_t, sin_t, sbuf((dp, dt, tn), nl.bfloat16))
            v_t = sbuf((dp, dt, tn), nl.bfloat16)
            nisa.tensor_copy(dst=v_t, src=qkv[:, (q_heads + 1) * dt:(q_heads + 2) * dt, :])
            nisa.tensor_copy(dst=keys[:, :, t0:t0 + tn], src=k_t)
            for t in range(dt):
                nisa.dma_copy(dst=k_cache[t * dp:(t + 1) * dp, t0:t0 + tn], src=k_t[:, t, :])
            o_t = sbuf((dp, q_heads * dt, tn), nl.bfloat16)

            def attend_block(q0, qn):
                nisa.tensor_copy(dst=o_t[:, :, q0 - t0:q0 - t0 + qn],
                                 src=causal_attention(q_t, keys, values, q0, qn, q_col=q0 - t0))
            for q0, qn in own:
                j = q0 // pmax
                for t in range(dt):  # the block's values as rows: positions on the partitions
                    turned = psum((qn, dp), nl.bfloat16)
                    nisa.nc_transpose(dst=turned, data=v_t[:, t, q0 - t0:q0 - t0 + qn])
                    nisa.tensor_copy(dst=values[0:qn, j, t * dp:(t + 1) * dp], src=turned)
                nisa.dma_copy(dst=v_cache[q0:q0 + qn, :], src=values[0:qn, j, :])
                if not pair:
                    attend_block(q0, qn)
        if pair:  # the partner's keys and values of the chunk, from the caches once both wrote theirs
            nisa.core_barrier(k_cache, (0, 1))
            for q0, qn in blocks[:j0] + blocks[j0 + jn:]:
                for t in range(dt):
                    nisa.dma_copy(dst=keys[:, t, q0:q0 + qn], src=k_cache[t * dp:(t + 1) * dp, q0:q0 + qn])
                nisa.dma_copy(dst=values[0:qn, q0 // pmax, :], src=v_cache[q0:q0 + qn, :])
            for q0, qn in own:
                attend_block(q0, qn)
        hidden = chunk_all_reduce(project(o_t, w_o) if tn else None, replica_group, t0 - c0, cn, h)
        if tn:
            hidden = residual(x_t, hidden)
            mlp = swiglu(rmsnorm_features(hidden, gain_mlp, eps), w_gate, w_up, w_down)
        y_t = chunk_all_reduce(mlp if tn else None, replica_group, t0 - c0, cn, h)
        if tn:
            y_t = residual(hidden, y_t)
            for q0, qn in own:
                store_rows(y_t, y, q0, q0 - t0, qn)
    return y, k_cache, v_cache


# -- each piece alone, for the size-8 RTL core in co-simulation ----------------------------------

@nki.jit
def rmsnorm_kernel(x, gain, eps=1e-5):
    """rmsnorm_features of x [B, H] with gain [1, H]: BF16 [B, H]."""
    rows, h = x.shape
    check_hidden(h)
    y = nl.ndarray((rows, h), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    store_rows(rmsnorm_features(load_features(x), load_features(gain), eps), y)
    return y


@nki.jit
def qkv_rope_kernel(xn, w_qkv, cos, sin):
    """qkv_rope of normed rows xn [B, H] (BF16): q^T [dp, q_heads * dt, B], k_new and v_new
    [B, d]."""
    rows, d = cos.shape
    dp, dt = head_tiles(d)
    q_heads = w_qkv.shape[-1] // d - 2
    q_out = nl.ndarray((dp, q_heads * dt, rows), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    k_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    v_new = nl.ndarray((rows, d), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    q_t, _ = qkv_rope(load_features(xn), w_qkv, load_features(cos), load_features(sin), q_heads, k_new, v_new)
    nisa.dma_copy(dst=q_out, src=q_t)
    return q_out, k_new, v_new


@nki.jit
def attention_kernel(q_t, k_new, v_new, k_cache, v_cache, w_o):
    """attend then the output projection: q^T [dp, q_heads * dt, B], the new k and v [B, d], the
    caches and w_o [q_heads d, H]: the rank's partial [B, H] (FP32)."""
    rows = q_t.shape[2]
    h = w_o.shape[1]
    check_hidden(h)
    out = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    o_t = attend(load(q_t), load_features(k_new), k_cache, v_cache, v_new)
    store_rows(project(o_t, w_o), out)
    return out


@nki.jit
def prefill_attention_kernel(q_t, k_t, v, w_o):
    """causal_attention over a prompt of S positions, a query block of P at a time, each block's
    output projected as it is done: q^T [dp, q_heads * dt, S] and k^T [dp, dt, S] (the features
    layout, BF16), v [S, d] and w_o [q_heads d, H]: the rank's partial [S, H] (FP32)."""
    s = q_t.shape[2]
    h = w_o.shape[1]
    check_hidden(h)
    out = nl.ndarray((s, h), dtype=nl.float32, buffer=nl.shared_hbm)
    queries, keys, values = load(q_t), load(k_t), value_blocks(v)
    for q0, qn in tiles(s, nl.tile_size.pmax):
        store_rows(project(causal_attention(queries, keys, values, q0, qn), w_o), out, q0)
    return out


@nki.jit
def swiglu_kernel(hn, w_gate, w_up, w_down):
    """swiglu of normed rows hn [B, H] (BF16): the rank's partial [B, H] (FP32)."""
    rows, h = hn.shape
    check_hidden(h)
    out = nl.ndarray((rows, h), dtype=nl.float32, buffer=nl.shared_hbm)
    store_rows(swiglu(load_features(hn), w_gate, w_up, w_down), out)
    return out


@nki.jit
def embedding_kernel(table, rows, replica_group=None):
    """The model's start: each token's row of the embedding table, vocabulary-parallel (as
    Megatron's VocabParallelEmbedding): the rank holds table [V_r, H] (BF16), rows V_r of the
    vocabulary, and rows[b] is token b's row in it, or -1 when another rank holds it (a zero row
    then). The group's all_reduce adds the ranks' rows (one of them nonzero: exact), giving x
    [B, H] on every rank; without a replica_group the rank's own rows come back. A prompt of more
    tokens than partitions goes a block of P tokens at a time.

    ncore.nki has no DMA whose offset comes from data, so the kernel is traced for the step's
    tokens (rows is a Python tuple): each token is the same one-row DMA a gather by id issues.

    At LNC=2 (a launch grid of 2) program p reads its share of each block's rows (pair_share)
    into its share of the rank's src in shared HBM; both issue the all_reduce, which the
    collective engine runs once for the rank, and program 0 writes x."""
    v_r, h = table.shape
    x = nl.ndarray((len(rows), h), dtype=table.dtype, buffer=nl.shared_hbm)
    for b, row in enumerate(rows):
        if not -1 <= row < v_r:
            raise ValueError(f"token {b}: row {row} of a table of {v_r} rows (expected -1 .. {v_r - 1})")
    pair = nl.num_programs(0) == 2
    for first, count in tiles(len(rows), nl.tile_size.pmax):
        f0, fn = pair_share(count)
        block = rows[first + f0:first + f0 + fn]
        found = sbuf((count, h), table.dtype)
        if -1 in block:  # the whole tile: the vector engine's partitions start at a quadrant
            nisa.memset(dst=found, value=0.0)
        for b, row in enumerate(block):
            if row >= 0:
                nisa.dma_copy(dst=found[f0 + b:f0 + b + 1, :], src=table[row:row + 1, :])
        if replica_group is None:
            if fn:
                nisa.dma_copy(dst=x[first + f0:first + f0 + fn, :], src=found[f0:f0 + fn, :])
            continue
        if not pair:
            summed = sbuf(found.shape, table.dtype)
            ncc.all_reduce(srcs=[found], dsts=[summed], replica_group=replica_group, op=nl.add)
            nisa.dma_copy(dst=x[first:first + count, :], src=summed)
            continue
        src = nl.ndarray((count, h), dtype=table.dtype, buffer=nl.shared_hbm)
        dst = nl.ndarray((count, h), dtype=table.dtype, buffer=nl.shared_hbm)
        if fn:
            nisa.dma_copy(dst=src[f0:f0 + fn, :], src=found[f0:f0 + fn, :])
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=replica_group, op=nl.add)
        if nl.program_id(0) == 0:
            nisa.dma_copy(dst=x[first:first + count, :], src=dst)
    return x


@nki.jit
def lm_head_kernel(x, g_final, w_lm, eps=1e-5):
    """The model's end, for the rank's slice of the vocabulary: the final RMSNorm of x [B, H]
    (BF16) with g_final [1, H], then the logits [B, V_r] (FP32) = normed @ w_lm [H, V_r]. Tensor
    parallelism splits the vocabulary; the host gathers the slices (or each rank reduces its own
    to a best token). At LNC=2 (a launch grid of 2) both programs take the norm and program p the
    logits of its share of the slice, in whole 32-byte rows of weights (pair_share of its
    16-column groups), through an HBM tile of its own into its columns of the logits."""
    rows, h = x.shape
    check_hidden(h)
    v_r = w_lm.shape[-1]
    logits = nl.ndarray((rows, v_r), dtype=nl.float32, buffer=nl.shared_hbm)
    xn_t = rmsnorm_features(load_features(x), load_features(g_final), eps)
    if nl.num_programs(0) == 1:
        store_rows(project(xn_t, w_lm), logits)
        return logits
    if v_r % 16:
        raise ValueError(f"w_lm of {v_r} columns at LNC=2: expected a multiple of 16 (each program's share whole "
                         "32-byte rows of BF16 weights)")
    groups = v_r // 16
    g0, gn = pair_share(groups)
    # both programs make the same HBM arrays: a part for each program's share (pair_share's
    # halves of the groups), program p writing its own
    parts = [nl.ndarray((rows, 16 * n), dtype=nl.float32, buffer=nl.shared_hbm) if n else None
             for n in (-(-groups // 2), groups // 2)]
    if gn:
        part = parts[nl.program_id(0)]
        store_rows(project(xn_t, columns(w_lm, 16 * g0, 16 * gn)), part)
        nisa.dma_copy(dst=logits[:, 16 * g0:16 * (g0 + gn)], src=part)
    return logits
