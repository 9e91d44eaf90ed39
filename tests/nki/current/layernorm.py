"""LayerNorm in the current dialect with the vector engine's statistics: bn_stats over
512-element chunks into one statistics tile, bn_aggr, rsqrt(var + eps) on the scalar engine,
and two scalar_tensor_tensor. gamma and beta reach every partition through the tensor engine
(ones [1, P] as the stationary), 512 columns per matmul."""
import nki
import nki.isa as nisa
import nki.language as nl


def _rows_everywhere(row, p, d):
    """A [1, d] SBUF row repeated on p partitions, [p, d] FP32."""
    ones = nl.ones((1, p), dtype=row.dtype, buffer=nl.sbuf)
    full = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.sbuf)
    for c0 in nl.static_range(0, d, 512):
        c1 = min(d, c0 + 512)
        part = nl.ndarray((p, c1 - c0), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=ones, moving=row[:, c0:c1])
        nisa.tensor_copy(dst=full[:, c0:c1], src=part)
    return full


@nki.jit
def layernorm_kernel(x, gamma, beta, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta along each row of x [rows, d]."""
    rows, d = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p, fmax = nl.tile_size.pmax, nl.tile_size.bn_stats_fmax
    chunks = (d + fmax - 1) // fmax
    rows_gb = []
    for vec in (gamma, beta):
        r = nl.ndarray((1, d), dtype=vec.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=r, src=vec)
        rows_gb.append(_rows_everywhere(r, p, d))
    g, b = rows_gb
    for t in nl.affine_range(rows // p):
        tile = nl.ndarray((p, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * p:(t + 1) * p, :])
        stats = nl.ndarray((p, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            nisa.bn_stats(dst=stats[:, 6 * c:6 * c + 6], data=tile[:, c * fmax:min(d, (c + 1) * fmax)])
        mean_var = nl.ndarray((p, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mean_var, data=stats)
        rstd = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=mean_var[:, 1:2], bias=eps)
        u = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=u, data=tile, op0=nl.subtract, operand0=mean_var[:, 0:1], op1=nl.multiply,
                                  operand1=g)
        out = nl.ndarray((p, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=out, data=u, op0=nl.multiply, operand0=rstd, op1=nl.add, operand1=b)
        nisa.dma_copy(dst=y[t * p:(t + 1) * p, :], src=out)
    return y
