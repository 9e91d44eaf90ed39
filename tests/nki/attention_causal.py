"""Causal attention for one head with NKI's affine_select: the scores of keys after each query
masked off in one instruction, the row maximum found by tensor_scalar_reduce, exp with the row
sums, then the probabilities times v."""
import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def attention_causal_kernel(q, k, v):
    """q [d, S] and k [d, S] (d on partitions), v [S, d]: query i attends to keys 0..i; the
    output [S, d] in FP32. d and S at most the partitions."""
    d, s = q.shape
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    scores = nl.matmul(nl.load(q), nl.load(k), transpose_x=True)            # [S, S] in PSUM
    i_q, i_k = nl.mgrid[0:s, 0:s]
    masked = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=scores, on_false_value=-1e30,
                                dtype=nl.float32)
    # -scale * scores and its row minimum, minus the scaled row maximum
    neg_max = nl.ndarray((s, 1), dtype=nl.float32)
    neg_scaled = nisa.tensor_scalar_reduce(data=masked, op0=nl.multiply, operand0=-scale, reduce_op=nl.minimum,
                                           reduce_res=neg_max)
    row_sum = nl.ndarray((s, 1), dtype=nl.float32)
    probs = nisa.activation(op=nl.exp, data=neg_scaled, scale=-1.0, bias=neg_max, reduce_op=nl.add,
                            reduce_res=row_sum, dtype=nl.bfloat16)           # unnormalised, [S, S]
    acc = nl.matmul(nl.transpose(probs), nl.copy(nl.load(v), dtype=nl.bfloat16), transpose_x=True)
    nl.store(out, value=nl.multiply(acc, nl.reciprocal(row_sum)))
    return out
