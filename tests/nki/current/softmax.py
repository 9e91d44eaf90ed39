"""Row softmax in the current dialect: tensor_reduce for the row maximum, one activation_reduce
for exp(x - max) and its row sums, reciprocal, and a tensor_scalar by one value per partition."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    for t in nl.affine_range(rows // p):
        tile = nl.ndarray((p, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * p:(t + 1) * p, :])
        row_max = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=tile, axis=1)
        neg_max = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=neg_max, data=row_max, op0=nl.multiply, operand0=-1.0)
        exps = nl.ndarray((p, cols), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=exps, op=nl.exp, data=tile, reduce_op=nl.add, reduce_res=sums, bias=neg_max)
        inverse = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inverse, data=sums)
        y = nl.ndarray((p, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=exps, op0=nl.multiply, operand0=inverse)
        nisa.dma_copy(dst=out[t * p:(t + 1) * p, :], src=y)
    return out
