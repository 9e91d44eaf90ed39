"""Access patterns over HBM tensors (`tensor.ap(pattern, offset)`, as the current NKI library
writes its DMAs): every other row of x from row 1, and x's rows as two half-row blocks, loaded
and stored through patterns on both sides of the DMA."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def access_patterns_kernel(x):
    """x [2P, C]: odd [P, C] = x's odd rows 1, 3, ..., 2P - 1; halves [P, 2, C/2] = x's first P
    rows, each as its two halves."""
    rows, cols = x.shape
    p = nl.tile_size.pmax
    odd = nl.ndarray((p, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    halves = nl.ndarray((p, 2, cols // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap([[2 * cols, p], [1, cols]], offset=cols))
    nisa.dma_copy(dst=odd, src=t)
    u = nl.ndarray((p, 2, cols // 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=x.ap([[cols, p], [cols // 2, 2], [1, cols // 2]]))
    nisa.dma_copy(dst=halves.ap([[cols, p], [cols // 2, 2], [1, cols // 2]]), src=u)
    return odd, halves
