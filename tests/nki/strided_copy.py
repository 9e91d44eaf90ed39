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


@nki.jit
def long_rows_kernel(x):
    """y = x for x [rows, cols] whose rows are longer than one descriptor moves (64 KiB): each
    load and store becomes a list of pieces of at most 64 KiB a row."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.load(x))
    return y


@nki.jit
def many_planes_kernel(x):
    """y = x[:, :, :32] for x [rows, planes, 64] int8 with more planes than a descriptor's 4,095:
    the load becomes a list of runs of at most 4,095 planes."""
    rows, planes, _ = x.shape
    y = nl.ndarray((rows, planes, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.load(x[:, :, 0:32]))
    return y
