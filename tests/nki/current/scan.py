"""The recurrence h[i] = a[i] h[i - 1] + x[i] along each row in the current dialect: the inputs
arrive time-major ([F, P] in HBM) and are turned with nc_transpose into PSUM and then SBUF (the
tensor engine, bits kept); one tensor_tensor_scan from h0. A second output numbers the elements
with iota (p x F + i, int32)."""
import nki
import nki.isa as nisa
import nki.language as nl


def _turned(t_hbm):
    """[F, P] in HBM -> [P, F] in SBUF."""
    steps, rows = t_hbm.shape
    raw = nl.ndarray((steps, rows), dtype=t_hbm.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=raw, src=t_hbm)
    psum = nl.ndarray((rows, steps), dtype=t_hbm.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=psum, data=raw)
    out = nl.ndarray((rows, steps), dtype=t_hbm.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=psum)
    return out


@nki.jit
def recurrence_kernel(a_t, x_t, h0):
    """a_t, x_t [F, P], h0 [P, 1]: h [P, F] with h[:, i] = a[:, i] h[:, i-1] + x[:, i], and the
    element numbers [P, F] (int32)."""
    steps, rows = a_t.shape
    h = nl.ndarray((rows, steps), dtype=nl.float32, buffer=nl.shared_hbm)
    numbers = nl.ndarray((rows, steps), dtype=nl.int32, buffer=nl.shared_hbm)
    a, x = _turned(a_t), _turned(x_t)
    start = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=start, src=h0)
    run = nl.ndarray((rows, steps), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=run, data0=a, data1=x, initial=start, op0=nl.multiply, op1=nl.add)
    nisa.dma_copy(dst=h, src=run)
    ramp = nl.ndarray((rows, steps), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=ramp, pattern=[[1, steps]], offset=0, channel_multiplier=steps)
    nisa.dma_copy(dst=numbers, src=ramp)
    return h, numbers
