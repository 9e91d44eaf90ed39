"""nisa.dma_transpose in the current dialect: an HBM [R, C] BF16 tensor into an SBUF [C, R] tile
by the DMA engines' transposing descriptors, then out with dma_copy."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dma_transpose_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
