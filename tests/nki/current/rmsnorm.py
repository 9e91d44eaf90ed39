"""RMSNorm in the current dialect. The gain row goes to every partition through the tensor
engine (ones [1, P] as the stationary, the row as the moving tile), as NKI's kernels do it; the
square sums come from the scalar engine's reduction, and rsqrt takes the mean and eps in its
scale and bias."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_kernel(x, gain, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * gain for x [rows, d] and gain [1, d], d at most 512."""
    rows, d = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    g_row = nl.ndarray((1, d), dtype=gain.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_row, src=gain)
    ones = nl.ones((1, p), dtype=gain.dtype, buffer=nl.sbuf)
    g_psum = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=g_psum, stationary=ones, moving=g_row)
    g = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=g, src=g_psum)
    for t in nl.affine_range(rows // p):
        tile = nl.ndarray((p, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * p:(t + 1) * p, :])
        squares = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.sbuf)
        square_sum = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares, op=nl.square, data=tile, reduce_op=nl.add, reduce_res=square_sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        rstd = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=square_sum, scale=1.0 / d, bias=eps)
        normed = nl.ndarray((p, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=tile, op0=nl.multiply, operand0=rstd)
        out = nl.ndarray((p, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=normed, data2=g, op=nl.multiply)
        nisa.dma_copy(dst=y[t * p:(t + 1) * p, :], src=out)
    return y
