"""A transpose on the way in: nisa.dma_transpose of an HBM [R, C] BF16 tensor lands in SBUF as
[C, R] (the DMA engines' transposing descriptors, 16 rows a block), then goes back out as is."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def dma_transpose_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.dma_transpose(x))
    return out
