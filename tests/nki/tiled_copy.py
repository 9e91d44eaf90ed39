"""A copy in tiles whose shape is a Python tuple argument, as the 2-D transpose tutorial passes
its shape: non-array arguments reach the kernel as they are."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_copy_kernel(x, tile_shape, negate):
    """y = -x if negate else x, moved tile_shape[0] x tile_shape[1] at a time."""
    rows, cols = x.shape
    tp, tf = tile_shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(rows // tp):
        for c in nl.affine_range(cols // tf):
            t = nl.load(x[r * tp:(r + 1) * tp, c * tf:(c + 1) * tf])
            nl.store(y[r * tp:(r + 1) * tp, c * tf:(c + 1) * tf], value=nl.multiply(t, -1.0) if negate else t)
    return y
