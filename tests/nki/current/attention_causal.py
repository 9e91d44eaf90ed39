"""Causal attention for one head in the current dialect: affine_select with NKI's pattern and
cmp_op masks the keys after each query, tensor_scalar_reduce finds the row maximum, activation
gives exp and the row sums, nc_transpose turns the probabilities for the second matmul."""
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def attention_causal_kernel(q, k, v):
    """q [d, S] and k [d, S] (d on partitions), v [S, d]: query i attends to keys 0..i; the
    output [S, d] in FP32. d and S at most the partitions."""
    d, s = q.shape
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q_t = nl.ndarray((d, s), dtype=q.dtype, buffer=nl.sbuf)
    k_t = nl.ndarray((d, s), dtype=k.dtype, buffer=nl.sbuf)
    v_t = nl.ndarray((s, d), dtype=v.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_t, src=q)
    nisa.dma_copy(dst=k_t, src=k)
    nisa.dma_copy(dst=v_t, src=v)
    scores = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=scores, stationary=q_t, moving=k_t)
    scores_sb = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=scores_sb, src=scores)
    masked = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    # keep key j for query i where i - j >= 0
    nisa.affine_select(dst=masked, pattern=[[-1, s]], channel_multiplier=1, on_true_tile=scores_sb,
                       on_false_value=-1e30, cmp_op=nl.greater_equal)
    neg_scaled = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    neg_max = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=neg_scaled, data=masked, op0=nl.multiply, operand0=-scale, reduce_op=nl.minimum,
                              reduce_res=neg_max)
    probs = nl.ndarray((s, s), dtype=nl.bfloat16, buffer=nl.sbuf)
    row_sum = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=probs, op=nl.exp, data=neg_scaled, scale=-1.0, bias=neg_max, reduce_op=nl.add,
                    reduce_res=row_sum, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    probs_t_psum = nl.ndarray((s, s), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_transpose(dst=probs_t_psum, data=probs)
    probs_t = nl.ndarray((s, s), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=probs_t, src=probs_t_psum)
    v_bf16 = nl.ndarray((s, d), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=v_bf16, src=v_t)
    acc = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=probs_t, moving=v_bf16)
    inverse = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inverse, data=row_sum)
    result = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=result, data=acc, op0=nl.multiply, operand0=inverse)
    nisa.dma_copy(dst=out, src=result)
    return out
