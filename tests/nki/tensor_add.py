"""Tensor addition over an SPMD launch grid: each program adds one tile of rows."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_add_kernel(a_input, b_input):
    """c = a + b for [rows, cols] inputs; program (x, y) takes rows x * pmax .. and a column block."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    rows, cols = a_input.shape
    tile_rows = nl.tile_size.pmax
    tile_cols = cols // nl.num_programs(1)
    i_p = nl.program_id(0) * tile_rows + nl.arange(tile_rows)[:, None]
    i_f = nl.program_id(1) * tile_cols + nl.arange(tile_cols)[None, :]
    a_tile = nl.load(a_input[i_p, i_f])
    b_tile = nl.load(b_input[i_p, i_f])
    nl.store(c_output[i_p, i_f], value=nl.add(a_tile, b_tile))
    return c_output
