"""Row softmax: the row maximum subtracted, exp, the row sum's reciprocal, scale."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def softmax_kernel(x):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) along each row of x [rows, cols]."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    for t in nl.affine_range(rows // pmax):
        i_p = t * pmax + nl.arange(pmax)[:, None]
        i_f = nl.arange(cols)[None, :]
        tile = nl.load(x[i_p, i_f])
        row_max = nl.max(tile, axis=1)  # shape [pmax]: it broadcasts along the free axis
        shifted = nl.subtract(tile, row_max, dtype=nl.float32)
        e = nl.exp(shifted)
        row_sum = nl.sum(e, axis=1, keepdims=True, dtype=nl.float32)
        nl.store(y[i_p, i_f], value=nl.multiply(e, nl.reciprocal(row_sum), dtype=x.dtype))
    return y
