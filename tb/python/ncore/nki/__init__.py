"""ncore.nki: NKI kernels on ncore's cores (tb/python/README.md).

    import ncore.nki as nki
    import ncore.nki.language as nl

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    c = nki.simulate_kernel(add, a, b, engine="cosim", size=8)
"""
import sys

from . import isa, language, typing  # noqa: F401
from .compiler import DmaPolicy  # noqa: F401
from .simulate import (Kernel, benchmark, benchmark_kernel, clear_trace_cache, jit, per_rank, profile,  # noqa: F401
                       simulate_kernel, trace_cache_info, typed)
from .tracer import KernelError  # noqa: F401
from ..tool import RunError  # noqa: F401


def alias_neuronxcc():
    """Registers neuronxcc.nki, .language, .isa and .typing as ncore's, so that a kernel file
    written for AWS's compiler imports ncore's implementation unchanged."""
    import types
    pkg = sys.modules[__name__]
    top = sys.modules.get("neuronxcc") or types.ModuleType("neuronxcc")
    top.nki = pkg
    sys.modules["neuronxcc"] = top
    sys.modules["neuronxcc.nki"] = pkg
    sys.modules["neuronxcc.nki.language"] = language
    sys.modules["neuronxcc.nki.isa"] = isa
    sys.modules["neuronxcc.nki.typing"] = typing


def alias_nki():
    """Registers nki, nki.language, nki.isa, nki.collectives and nki.typing (the current dialect, Neuron 2.27 and
    later) as ncore's, so that a kernel file written for it imports ncore's implementation."""
    from . import current
    sys.modules["nki"] = current
    sys.modules["nki.language"] = current.language
    sys.modules["nki.isa"] = current.isa
    sys.modules["nki.collectives"] = current.collectives
    sys.modules["nki.typing"] = typing
