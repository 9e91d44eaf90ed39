"""Constant tiles made on the core: nisa.iota (an affine expression of the indices, int32) and
nisa.memset."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def fill_kernel(shape_like):
    """Two outputs the shape of shape_like [P, F]: iota's F * p - f + 3 as INT32, and 2.5 as FP32."""
    p, f = shape_like.shape
    ramp = nl.ndarray((p, f), dtype=nl.int32, buffer=nl.shared_hbm)
    const = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:p, 0:f]
    nl.store(ramp, value=nisa.iota(i_p * f - i_f + 3, dtype=nl.int32))
    nl.store(const, value=nisa.memset((p, f), 2.5, dtype=nl.float32))
    return ramp, const
