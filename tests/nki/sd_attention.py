"""Self-attention for a small head (d at most the partitions), written the way the legacy
Stable Diffusion tutorial writes it: tiles indexed with nl.mgrid expressions and a tile index
between them, block tiles filled by load_transpose2d, PSUM accumulation with +=, an optional
causal affine_select, the row maximum negated by tensor_reduce, one reciprocal broadcast along
the free axis, and the result stored through swapped index expressions."""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.language import par_dim


@nki.jit
def sd_attention_kernel(q, k, v, causal=False):
    """softmax(0.125 q k^T) v for q, k, v [S, d], S a multiple of the partitions; the
    products in BF16, sums in FP32; the output [S, d] in q's type."""
    seq, d = q.shape
    P = nl.tile_size.pmax
    n = seq // P
    scale = 0.125
    mm = nl.bfloat16
    out = nl.ndarray((seq, d), dtype=q.dtype, buffer=nl.shared_hbm)

    v_all = nl.ndarray((par_dim(P), n, d), dtype=mm)              # key tile j of v in [:, j, :]
    for j in nl.affine_range(n):
        ip, jf = nl.mgrid[0:P, 0:d]
        v_all[ip, j, jf] = nl.load(v[j * P + ip, jf], dtype=mm)

    q_t = nl.ndarray((n, par_dim(d), P), dtype=mm)               # q^T per query tile, scaled
    k_t = nl.ndarray((n, par_dim(d), P), dtype=mm)
    jd, jp = nl.mgrid[0:d, 0:P]
    for i in nl.affine_range(n):
        rs, cs = nl.mgrid[0:P, 0:d]
        q_t[i, jd, jp] = nl.load_transpose2d(q[i * P + rs, cs], dtype=mm) * scale
        k_t[i, jd, jp] = nl.load_transpose2d(k[i * P + rs, cs], dtype=mm)

    for i in nl.affine_range(n):
        scores = nl.ndarray((par_dim(P), seq), dtype=nl.float32)
        neg_max = nl.ndarray((par_dim(P), n), dtype=nl.float32)
        rp, rf = nl.mgrid[0:P, 0:P]
        mp, mf = nl.mgrid[0:P, 0:n]
        for j in nl.affine_range(n):
            s_psum = nl.zeros((par_dim(P), P), dtype=np.float32, buffer=nl.psum)
            s_psum[rp, rf] += nisa.nc_matmul(moving=k_t[j, jd, jp], stationary=q_t[i, jd, jp])
            if causal:
                scores[rp, j * P + rf] = nisa.affine_select(pred=(i * P + rp >= j * P + rf),
                                                            on_true_tile=s_psum[rp, rf], on_false_value=-9984.0,
                                                            dtype=nl.float32)
            else:
                scores[rp, j * P + rf] = nl.copy(s_psum[rp, rf], dtype=nl.float32)
            neg_max[mp, j] = nisa.tensor_reduce(np.max, data=scores[rp, j * P + rf], axis=(1,),
                                                dtype=nl.float32, negate=True)
        row_neg_max = nisa.tensor_reduce(np.min, data=neg_max[mp, mf], axis=(1,), dtype=nl.float32)

        ap, af = nl.mgrid[0:P, 0:seq]
        exps = nisa.activation(np.exp, data=scores[ap, af], bias=row_neg_max, scale=1.0)
        sums = nisa.tensor_reduce(np.add, data=exps, axis=(1,), dtype=nl.float32)
        probs = nl.ndarray((par_dim(P), seq), dtype=mm)
        probs[ap, af] = nl.copy(exps, dtype=mm)
        dp, df = nl.mgrid[0:P, 0:d]
        inv = nl.ndarray((par_dim(P), d), dtype=nl.float32)
        inv[dp, df] = nl.copy((1.0 / sums).broadcast_to((P, d)), dtype=nl.float32)

        probs_t = nl.ndarray((par_dim(P), n, P), dtype=mm)         # key tile j's probabilities, transposed
        tp, tf = nl.mgrid[0:P, 0:P]
        for j in nl.affine_range(n):
            probs_t[tp, j, tf] = nisa.nc_transpose(probs[tp, j * P + tf])
        acc = nl.zeros((par_dim(d), P), dtype=np.float32, buffer=nl.psum)
        op_, of_ = nl.mgrid[0:d, 0:P]
        for j in nl.affine_range(n):
            acc[op_, of_] += nisa.nc_matmul(moving=probs_t[tp, j, tf], stationary=v_all[rs, j, cs])
        res = nl.copy(acc[op_, of_], dtype=nl.float32) * nisa.nc_transpose(inv[dp, df])
        nl.store(out[i * P + of_, op_], value=res)
    return out
