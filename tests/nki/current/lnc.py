"""LNC=2 in the current dialect: a kernel launched on the two cores of a logical NeuronCore
(`kernel[2]`, cores=2), the cores trading halves through shared HBM with nisa.core_barrier."""
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn2")
def trade_halves_kernel(x):
    """Program p takes rows [p * half, (p + 1) * half) of x, doubles them and publishes them in a
    shared HBM tensor; after the barrier it reads its partner's doubled half back and writes
    out[p's rows] = 2 x[p's rows] - 2 x[partner's rows]."""
    rows, cols = x.shape
    half = rows // 2
    p = nl.program_id(0)
    mine = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[p * half:(p + 1) * half, :])
    doubled = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=mine, op0=nl.multiply, operand0=2.0)
    published = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="published")
    nisa.dma_copy(dst=published[p * half:(p + 1) * half, :], src=doubled)
    nisa.core_barrier(published, (0, 1))
    theirs = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=theirs, src=published[(1 - p) * half:(2 - p) * half, :])
    difference = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=difference, data1=doubled, data2=theirs, op=nl.subtract)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[p * half:(p + 1) * half, :], src=difference)
    return out


@nki.jit(platform_target="trn2")
def unsynchronized_kernel(x):
    """As trade_halves_kernel without the barrier: the partner's half is read while it may still
    be written (a KernelError)."""
    rows, cols = x.shape
    half = rows // 2
    p = nl.program_id(0)
    mine = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[p * half:(p + 1) * half, :])
    published = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm, name="published")
    nisa.dma_copy(dst=published[p * half:(p + 1) * half, :], src=mine)
    theirs = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=theirs, src=published[(1 - p) * half:(2 - p) * half, :])
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[p * half:(p + 1) * half, :], src=theirs)
    return out


@nki.jit(platform_target="trn2")
def one_sided_barrier_kernel(x):
    """Only program 0 calls the barrier: its partner would never come (a KernelError)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if nl.program_id(0) == 0:
        nisa.core_barrier(out, (0, 1))
        nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit(platform_target="trn2")
def wrong_cores_kernel(x):
    """A barrier between cores 0 and 2: NeuronCore-v3 pairs cores (0, 1) only (a KernelError)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.core_barrier(out, (0, 2))
    if nl.program_id(0) == 0:
        nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit(platform_target="trn2")
def rank_all_reduce_kernel(x, replica_group):
    """A system run at LNC=2: each rank is a pair of cores. Program p copies its half of the rank's
    rows of x into the rank's src (shared HBM); both programs issue the all_reduce, which sums the
    ranks' srcs once each; then program p copies its half of the sum out."""
    rows, cols = x.shape
    half = rows // 2
    p = nl.program_id(0)
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dst")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[p * half:(p + 1) * half, :])
    nisa.dma_copy(dst=src[p * half:(p + 1) * half, :], src=t)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=replica_group, op=nl.add)
    r = nl.ndarray((half, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=r, src=dst[p * half:(p + 1) * half, :])
    nisa.dma_copy(dst=out[p * half:(p + 1) * half, :], src=r)
    return out


@nki.jit(platform_target="trn2")
def sbuf_all_reduce_kernel(x, replica_group):
    """An all_reduce of an SBUF tile at LNC=2: each core would send a scratch copy of its own, not
    the rank's one src (a KernelError)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    ncc.all_reduce(srcs=[t], dsts=[t], replica_group=replica_group, op=nl.add)
    if nl.program_id(0) == 0:
        nisa.dma_copy(dst=out, src=t)
    return out
