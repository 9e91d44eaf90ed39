"""2-D average pooling in the current dialect, as AWS's current tutorial writes it: one tile of
[C, H, W], a 5-D access pattern over it ([C, H/k, W/k, k, k], the window dimensions last) summed
over the windows, and a scale by 1 / k^2."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def avgpool_kernel(x, k):
    """out[c, i, j] = the mean of x[c, k i .. k i + k - 1, k j .. k j + k - 1] for x [C, H, W]."""
    c, h, w = x.shape
    out = nl.ndarray((c, h // k, w // k), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    windows = tile.ap([[h * w, c], [k * w, h // k], [k, w // k], [w, k], [1, k]])
    sums = nl.sum(windows, axis=[3, 4])
    mean = nl.ndarray(sums.shape, dtype=sums.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=mean, data=sums, op0=nl.multiply, operand0=1.0 / (k * k))
    nisa.dma_copy(dst=out, src=mean)
    return out
