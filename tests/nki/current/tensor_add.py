"""Element-wise add in the current dialect (`import nki`): tiles made with nl.ndarray, moved with
nisa.dma_copy and written in place by nisa.tensor_tensor. A launch grid splits the rows."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn2")
def tensor_add_kernel(a, b):
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    per_program = rows // nl.num_programs(0)
    for t in nl.affine_range(per_program // p):
        r0 = nl.program_id(0) * per_program + t * p
        ta = nl.ndarray((p, cols), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((p, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a[r0:r0 + p, 0:cols])
        nisa.dma_copy(dst=tb, src=b[nl.ds(r0, p), :])
        total = nl.ndarray((p, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=total, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + p, :], src=total)
    return out
