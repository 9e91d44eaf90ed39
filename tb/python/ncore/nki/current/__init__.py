"""The current NKI dialect on ncore: the `nki` package of Neuron 2.27 and later (NKI 0.2.0 on).

    import ncore.nki
    ncore.nki.alias_nki()         # `import nki` now resolves here
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out, src=ta)
        return out

    c = add(a, b)                 # runs on ncore's golden core, as nki.simulate(add)(a, b) does

It shares the tracer, the compiler and the runner with the legacy dialect (../): only the
calls differ (language.py, isa.py).
"""
from .. import typing  # noqa: F401
from ..simulate import Kernel, benchmark, benchmark_kernel, per_rank, profile, simulate_kernel  # noqa: F401
from ..tracer import KernelError  # noqa: F401
from . import collectives, isa, language  # noqa: F401

PLATFORMS = ("trn2",)  # ncore models a NeuronCore-v3, Trainium2's core


def jit(func=None, platform_target=None, **options):
    """`@nki.jit` or `@nki.jit(platform_target="trn2")`: the function becomes a Kernel, which runs
    on ncore when called (NKI's compiler options are ignored; a target other than Trainium2 is
    refused, since ncore models Trainium2's core)."""
    if platform_target is not None and platform_target not in PLATFORMS:
        raise KernelError(f"nki.jit(platform_target={platform_target!r}): ncore models Trainium2's NeuronCore-v3 "
                          f"(expected one of {', '.join(PLATFORMS)})")
    if func is None:
        return lambda f: Kernel(f)
    return func if isinstance(func, Kernel) else Kernel(func)


def simulate(kernel, **options):
    """nki.simulate(kernel)(*args): runs the kernel on ncore (options as simulate_kernel's:
    engine=, size=, cores=, program_out=)."""
    return lambda *args, **kwargs: simulate_kernel(kernel, *args, **options, **kwargs)
