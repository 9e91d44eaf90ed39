"""A first-order linear recurrence along each row, h[i] = a[i] * h[i-1] + x[i], as one
tensor_tensor_scan; the inputs arrive transposed (load_transpose2d)."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def recurrence_kernel(a_t, x_t, h0):
    """a_t, x_t [F, P] (time on rows in HBM), h0 [P, 1]: h [P, F] with h[:, i] = a[:, i] h[:, i-1] + x[:, i]."""
    steps, rows = a_t.shape
    h = nl.ndarray((rows, steps), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load_transpose2d(a_t)
    x = nl.load_transpose2d(x_t)
    start = nl.load(h0)
    nl.store(h, value=nisa.tensor_tensor_scan(a, x, start, op0=nl.multiply, op1=nl.add, dtype=nl.float32))
    return h
