"""RMSNorm: each row scaled by the reciprocal root of its mean square, then by a gain."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_kernel(x, gain, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * gain for x [rows, d] and gain [1, d]."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, d = x.shape
    pmax = nl.tile_size.pmax
    g = nl.load(gain[0:1, 0:d]).broadcast_to((pmax, d))
    for t in nl.affine_range(rows // pmax):
        tile = nl.load(x[t * pmax:(t + 1) * pmax, 0:d])
        square_sum = nl.ndarray((pmax, 1), dtype=nl.float32)
        nisa.activation(op=nl.square, data=tile, reduce_op=nl.add, reduce_res=square_sum, dtype=nl.float32)
        rstd = nl.rsqrt(nl.add(nl.multiply(square_sum, 1.0 / d), eps))
        normed = nl.multiply(tile, rstd, dtype=nl.float32)
        nl.store(y[t * pmax:(t + 1) * pmax, 0:d], value=nl.multiply(normed, g, dtype=x.dtype))
    return y
