"""2-D transpose of a matrix in HBM, one partition-by-partition tile at a time on the tensor
engine's transpose mode."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def transpose2d_kernel(x):
    """out[c, r] = x[r, c] for x [rows, cols], both multiples of the partition count."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    for r in nl.affine_range(rows // p):
        strip = nl.load(x[r * p:(r + 1) * p, 0:cols])
        for c in nl.affine_range(cols // p):
            nl.store(out[c * p:(c + 1) * p, r * p:(r + 1) * p], value=nl.transpose(strip[:, c * p:(c + 1) * p]))
    return out
