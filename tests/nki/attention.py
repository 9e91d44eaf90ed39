"""Scaled dot-product attention for one head: softmax(q^T k / sqrt(d)) v, the row maximum
subtracted before exp (so nothing overflows) and the row sums taken by the exp itself."""
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def attention_kernel(q, k, v):
    """q [d, Sq] and k [d, Sk] (d on partitions), v [Sk, d]: the output [Sq, d] in FP32.
    d and Sq at most the partitions, Sk at most 512 (one PSUM bank of scores)."""
    d, sq = q.shape
    sk = k.shape[1]
    pmax = nl.tile_size.pmax
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((sq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    scores = nl.matmul(nl.load(q), nl.load(k), transpose_x=True)           # [Sq, Sk] in PSUM
    neg_max = nl.multiply(nl.max(scores, axis=1, keepdims=True), -scale)   # [Sq, 1]
    row_sum = nl.ndarray((sq, 1), dtype=nl.float32)
    probs = nisa.activation(op=nl.exp, data=scores, scale=scale, bias=neg_max, reduce_op=nl.add,
                            reduce_res=row_sum, dtype=nl.bfloat16)         # unnormalised, [Sq, Sk]
    acc = nl.zeros((sq, d), nl.float32, buffer=nl.psum)
    for c in nl.affine_range(sk // pmax):
        probs_t = nl.transpose(probs[:, c * pmax:(c + 1) * pmax])           # [pmax, Sq]
        v_tile = nl.load(v[c * pmax:(c + 1) * pmax, 0:d])
        acc += nl.matmul(probs_t, nl.copy(v_tile, dtype=nl.bfloat16), transpose_x=True)
    nl.store(out, value=nl.multiply(acc, nl.reciprocal(row_sum)))
    return out
