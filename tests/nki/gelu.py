"""GELU both ways: NKI's exact nl.gelu and the tanh approximation nl.gelu_apprx_tanh."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def gelu_kernel(x):
    """Two outputs for x [P, F]: gelu(x) and gelu_apprx_tanh(x), FP32."""
    exact = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    approx = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.load(x)
    nl.store(exact, value=nl.gelu(tile))
    nl.store(approx, value=nl.gelu_apprx_tanh(tile))
    return exact, approx
