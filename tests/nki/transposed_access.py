"""Accesses whose index expressions swap the dimensions, as the legacy tutorials write a
transposed load or store (`out[i_f + c, i_p]`): ncore moves the data in the array's order and
transposes it on the tensor engine."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def transposed_access_kernel(x):
    """out = 2 x^T for x [R, C], R a multiple of the partitions and C at most them: each [P, C]
    block of rows is loaded transposed ([C, P]), doubled, and stored transposed back into the
    columns of out [C, R] it came from."""
    rows, cols = x.shape
    p = nl.tile_size.pmax
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    i_c, i_r = nl.mgrid[0:cols, 0:p]        # i_c on axis 0 (partitions), i_r on axis 1
    j_r, j_c = nl.mgrid[0:p, 0:cols]        # the other way round
    for t in nl.affine_range(rows // p):
        block_t = nl.load(x[t * p + i_r, i_c])           # [C, P]: element (c, r) is x[t P + r, c]
        doubled = nl.multiply(nl.transpose(block_t), 2.0)  # [P, C]: 2 x's block
        nl.store(out[j_c, t * p + j_r], value=doubled)    # element (r, c) goes to out[c, t P + r]
    return out
