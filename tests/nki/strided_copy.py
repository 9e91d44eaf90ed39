"""A strided gather: a load whose HBM side walks three free dimensions, and rows past what one
DMA descriptor moves. ncore's compiler makes each such transfer a descriptor list (issue 47)."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def strided_copy_kernel(x):
    """y = x[:, :, :, :half] * 2 for x [rows, a, b, cols]: each load takes half of every innermost
    row, so its HBM side walks the three free dimensions."""
    rows, a, b, cols = x.shape
    half = cols // 2
    y = nl.ndarray((rows, a, b, half), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[:, :, :, 0:half])
    nl.store(y, value=nl.multiply(t, 2.0))
    return y
