"""LayerNorm without bn_stats (the next issue adds it): mean, centred square mean, rsqrt."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def layernorm_kernel(x, gamma, beta, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta along each row of x [rows, d]."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, d = x.shape
    pmax = nl.tile_size.pmax
    g = nl.load(gamma[0:1, 0:d]).broadcast_to((pmax, d))
    b = nl.load(beta[0:1, 0:d]).broadcast_to((pmax, d))
    for t in nl.affine_range(rows // pmax):
        i_p, i_f = nl.mgrid[0:pmax, 0:d]
        tile = nl.load(x[t * pmax + i_p, i_f])
        mean = nl.mean(tile, axis=1, keepdims=True, dtype=nl.float32)
        centred = nl.subtract(tile, mean, dtype=nl.float32)
        var = nl.mean(nl.square(centred), axis=1, keepdims=True, dtype=nl.float32)
        rstd = nl.rsqrt(nl.add(var, eps))
        scaled = nl.multiply(nl.multiply(centred, rstd), g)
        nl.store(y[t * pmax + i_p, i_f], value=nl.add(scaled, b, dtype=x.dtype))
    return y
