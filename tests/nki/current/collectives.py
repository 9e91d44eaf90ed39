"""Collectives in the current dialect (nki.collectives), as AWS's kernel library writes them:
each rank copies its input into HBM scratch, the collective runs on the replica group, and the
result is copied out. One kernel per collective, and one mixing them with compute in SBUF."""
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


def _hbm_copy(dst, src):
    """HBM to HBM through SBUF: the rows of src [R, C], R at most the partitions."""
    t = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    nisa.dma_copy(dst=dst, src=t)


@nki.jit
def all_reduce_kernel(x, replica_group):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dst")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    _hbm_copy(src, x)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=replica_group, op=nl.add)
    _hbm_copy(out, dst)
    return out


@nki.jit
def all_gather_kernel(x, replica_group, members):
    rows, cols = x.shape
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray((members * rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    _hbm_copy(src, x)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=replica_group, collective_dim=0)
    return dst


@nki.jit
def reduce_scatter_kernel(x, replica_group, members):
    rows, cols = x.shape
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray((rows // members, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    _hbm_copy(src, x)
    ncc.reduce_scatter(srcs=[src], dsts=[dst], replica_group=replica_group, collective_dim=0, op=nl.add)
    return dst


@nki.jit
def all_to_all_kernel(x, replica_group):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    _hbm_copy(src, x)
    ncc.all_to_all(srcs=[src], dsts=[dst], replica_group=replica_group, collective_dim=0)
    return dst


@nki.jit
def scaled_sum_kernel(x, y, replica_group):
    """Tensor parallelism's last step: each rank scales its partial (by its rank + 1, so the ranks
    differ) in SBUF, all-reduces it straight from SBUF into SBUF, and also all-reduces two HBM
    tensors given as one coalesced list."""
    rows, cols = x.shape
    part = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=part, src=x)
    nisa.tensor_scalar(dst=part, data=part, op0=nl.multiply, operand0=float(ncc.rank_id() + 1))
    total = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[part], dsts=[total], replica_group=replica_group, op=nl.add)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=total)
    a, b = (nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm) for t in (x, y))
    sa, sb = (nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm) for t in (x, y))
    _hbm_copy(a, x)
    _hbm_copy(b, y)
    ncc.all_reduce(srcs=[a, b], dsts=[sa, sb], replica_group=replica_group, op=nl.add)
    return out, sa, sb
