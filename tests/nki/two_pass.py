"""Loads that must not move ahead: pass 2 reads back from HBM what pass 1 stored there, and one
SBUF buffer is reloaded while the previous contents are still being read."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def two_pass_kernel(x):
    """out = exp(x) + 1 for x [rows, cols], through an HBM scratch array and a reused buffer."""
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    scratch = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
    for t in nl.affine_range(rows // pmax):  # pass 1: the same buffer every row tile
        buf[...] = nl.load(x[t * pmax:(t + 1) * pmax, 0:cols])
        nl.store(scratch[t * pmax:(t + 1) * pmax, 0:cols], value=nl.exp(buf))
    for t in nl.affine_range(rows // pmax):  # pass 2: what pass 1 stored
        again = nl.load(scratch[t * pmax:(t + 1) * pmax, 0:cols])
        nl.store(out[t * pmax:(t + 1) * pmax, 0:cols], value=nl.add(again, 1.0))
    return out
