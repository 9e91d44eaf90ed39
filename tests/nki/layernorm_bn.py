"""LayerNorm with NKI's statistics instructions: bn_stats over 512-element chunks of each row,
bn_aggr for the mean and variance, then two scalar_tensor_tensor: (x - mean) * gamma and
u * rstd + beta."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def layernorm_bn_kernel(x, gamma, beta, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta along each row of x [rows, d]."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, d = x.shape
    pmax, fmax = nl.tile_size.pmax, nl.tile_size.bn_stats_fmax
    chunks = (d + fmax - 1) // fmax
    g = nl.load(gamma[0:1, 0:d]).broadcast_to((pmax, d))
    b = nl.load(beta[0:1, 0:d]).broadcast_to((pmax, d))
    for t in nl.affine_range(rows // pmax):
        tile = nl.load(x[t * pmax:(t + 1) * pmax, 0:d])
        stats = nl.ndarray((pmax, 6 * chunks), dtype=nl.float32)
        for c in nl.affine_range(chunks):
            stats[:, 6 * c:6 * c + 6] = nisa.bn_stats(tile[:, c * fmax:min(d, (c + 1) * fmax)], dtype=nl.float32)
        mean_var = nisa.bn_aggr(stats, dtype=nl.float32)
        rstd = nl.rsqrt(nl.add(mean_var[:, 1:2], eps))
        u = nisa.scalar_tensor_tensor(data=tile, op0=nl.subtract, operand0=mean_var[:, 0:1], op1=nl.multiply,
                                      operand1=g, dtype=nl.float32)
        out = nisa.scalar_tensor_tensor(data=u, op0=nl.multiply, operand0=rstd, op1=nl.add, operand1=b,
                                        dtype=x.dtype)
        nl.store(y[t * pmax:(t + 1) * pmax, 0:d], value=out)
    return y
