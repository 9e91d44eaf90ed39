"""Tensor addition over rows that do not fill the last tile: NKI's masks on load and store."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_add_masked_kernel(a_input, b_input):
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    rows, cols = a_input.shape
    pmax = nl.tile_size.pmax
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        i_p = t * pmax + nl.arange(pmax)[:, None]
        i_f = nl.arange(cols)[None, :]
        a = nl.load(a_input[i_p, i_f], mask=(i_p < rows))
        b = nl.load(b_input[i_p, i_f], mask=(i_p < rows))
        nl.store(c_output[i_p, i_f], value=a + b, mask=(i_p < rows))
    return c_output
