"""Row scaling in the legacy tutorials' style: an index grid from nl.mgrid named by its axes
(`i.p`, `i.x`) and unpacked, loop offsets added to it, and masks on the last, partial tile's
load, multiply and store."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def mgrid_scale_kernel(x, scale):
    """y[r, :] = x[r, :] * scale[0, :] for x [rows, cols]: tiles of pmax rows, the last one masked."""
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    i = nl.mgrid[0:pmax, 0:cols]
    i_s, j_s = nl.mgrid[0:1, 0:cols]
    s = nl.load(scale[i_s, j_s])
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        r = t * pmax + i.p
        tile = nl.load(x[r, i.x], mask=(r < rows))
        out = nl.multiply(tile, s.broadcast_to((pmax, cols)), mask=(r < rows))
        nl.store(y[r, i.x], value=out, mask=(r < rows))
    return y
