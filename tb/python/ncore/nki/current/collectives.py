"""nki.collectives on ncore: collectives between the ranks of a system run.

`simulate_kernel(kernel, ..., system="chip"|"trn2"|"trn2u")` runs the kernel once per NeuronCore
of the system, one rank per core (rank = chip * 8 + core). Each collective call records one
instruction per tensor for the core's cc queue; the chip's collective engine runs it over the
fabric as it runs the assembly programs' collectives (tb/tlm/README.md).

What ncore's collective engine takes, and so what this module accepts:
  - groups: every rank of the system (`all`), the ranks of each chip (`cores`), or the ranks
    with the same core on every chip (`chips`); each rank-list in rank order. Any other
    ReplicaGroup is a KernelError naming its rank-lists.
  - sums (op=nl.add) of FP32 or BF16 (BF16 summed in FP32, rounded once);
  - all_reduce, all_gather and reduce_scatter along dimension 0, all_to_all along dimension 0.
A tensor in SBUF goes through an HBM scratch tensor of its shape (a DMA before or after). A list
of several tensors (HBM only, as in NKI) is coalesced for all_reduce: the compiler places the
whole tensors one after the other and one collective sums them (_coalesce). all_gather,
reduce_scatter and all_to_all of a list, whose layouts a merged transfer would interleave, are one
collective per tensor, back to back on the cc queue.
"""
import enum
import math

from .. import language as _legacy
from ..tracer import HbmTensor, Op, as_view, contiguous_offset, fail, trace, unsupported_calls


class rg_partition_op(enum.Enum):  # noqa: N801 (NKI's name)
    """How ReplicaGroup.from_partition_op maps a rank to its rank-list."""
    div = "div"
    mod = "mod"
    bitwise_and = "bitwise_and"


class ReplicaGroup:
    """The ranks a collective runs on, as rank-lists: the collective runs within each list, all
    lists at once. `ReplicaGroup([[0, 1, 2, 3], [4, 5, 6, 7]])`."""

    def __init__(self, rank_lists):
        lists = [list(r) for r in rank_lists]
        flat = [r for lst in lists for r in lst]
        if not lists or not all(lists) or any(not isinstance(r, int) or r < 0 for r in flat):
            raise ValueError(f"ReplicaGroup({rank_lists!r}): expected non-empty lists of ranks (ints >= 0)")
        if len(set(flat)) != len(flat):
            twice = sorted({r for r in flat if flat.count(r) > 1})
            raise ValueError(f"ReplicaGroup({rank_lists!r}): ranks {twice} are in more than one rank-list")
        self.rank_lists = lists

    @staticmethod
    def from_partition_op(world_size, op, operand):
        """Ranks 0 .. world_size - 1, those with the same op(rank, operand) in one rank-list."""
        key = {rg_partition_op.div: lambda r: r // operand, rg_partition_op.mod: lambda r: r % operand,
               rg_partition_op.bitwise_and: lambda r: r & operand}[op]
        lists = {}
        for r in range(world_size):
            lists.setdefault(key(r), []).append(r)
        return ReplicaGroup([lists[k] for k in sorted(lists)])

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and self.rank_lists == other.rank_lists

    def __repr__(self):
        return f"ReplicaGroup({self.rank_lists})"


def rank_id():
    """This rank's id: chip * 8 + core of the system run (0 in a run of one core)."""
    return trace("ncc.rank_id").rank


def _group_kind(group, call):
    """The collective engine's group ('all', 'cores', 'chips') that is this ReplicaGroup."""
    t = trace(call)
    chips, cores = t.system_shape
    ranks = chips * cores
    if not isinstance(group, ReplicaGroup):
        fail(call, f"replica_group: expected a nki.collectives.ReplicaGroup, found {type(group).__name__}")
    flat = sorted(r for lst in group.rank_lists for r in lst)
    if flat != list(range(ranks)):
        missing = sorted(set(range(ranks)) - set(flat))
        extra = sorted(set(flat) - set(range(ranks)))
        fail(call, f"{group!r}: the system has ranks 0..{ranks - 1} ({chips} chip(s) of {cores} cores), every one "
                   f"in one rank-list" + (f"; ranks {missing[:8]} are in none" if missing else "") +
                   (f"; ranks {extra[:8]} do not exist" if extra else ""))
    kinds = {"all": [list(range(ranks))],
             "cores": [list(range(c * cores, (c + 1) * cores)) for c in range(chips)],
             "chips": [list(range(k, ranks, cores)) for k in range(cores)]}
    for kind, lists in kinds.items():
        if group.rank_lists == lists:
            return kind
    fail(call, f"{group!r}: ncore's collective engine runs on every rank ({kinds['all'][0][:3]}...), the ranks of "
               f"each chip ({kinds['cores'][0]}, ...) or the ranks with one core on every chip "
               f"({kinds['chips'][0]}, ...), each rank-list in rank order")


def _check_run(view, call, what):
    if contiguous_offset(view) is None:
        fail(call, f"{what}: {view!r} is not one contiguous run of HBM, which a collective moves")


def _sizes_fit(opcode, ns, nd, members):
    return {"all_reduce": ns == nd, "all_gather": nd == members * ns, "reduce_scatter": ns == members * nd,
            "all_to_all": ns == nd and ns % members == 0}[opcode]


_EXPECTED = {"all_reduce": "src and dst of one size", "all_gather": "dst = members x src",
             "reduce_scatter": "src = members x dst", "all_to_all": "src and dst of one size, a multiple of members"}


def _in_hbm(view, call, what, t):
    """The view itself if it is in HBM; a tile goes through an HBM scratch tensor of its shape
    (returned with the tile, for the DMA before or after)."""
    if isinstance(view.array, HbmTensor):
        return view
    if view.array.buffer != "sbuf":
        fail(call, f"{what}: {view.array!r}: a collective's tensors are in HBM or SBUF")
    scratch = HbmTensor(f"cc_scratch{len(t.hbm)}", view.shape, view.dtype, "scratch")
    t.hbm.append(scratch)
    return scratch.view()


def _collective(opcode, srcs, dsts, replica_group, call, op=None, dim=0):
    """One collective per (src, dst) pair of the lists, in order, on the core's cc queue. An SBUF
    tensor goes through an HBM scratch tensor: a DMA to it before, or from it after."""
    t = trace(call)
    kind = _group_kind(replica_group, call)
    if op is not None and op is not _legacy.add:
        fail(call, f"op={getattr(op, '__name__', op)!r}: ncore's collective engine sums (nl.add) only")
    if dim != 0:
        fail(call, f"collective_dim={dim}: ncore's collective engine splits and joins along dimension 0 only")
    s_views, d_views = _operands(srcs, call, "srcs"), _operands(dsts, call, "dsts")
    if len(s_views) != len(d_views):
        fail(call, f"{len(s_views)} srcs and {len(d_views)} dsts: expected one dst per src")
    if len(s_views) > 1 and not all(isinstance(v.array, HbmTensor) for v in s_views + d_views):
        fail(call, "a list of several tensors must be in HBM (as NKI's coalesced collectives are)")
    members = len(replica_group.rank_lists[0])
    if t.cores == 2 and not all(isinstance(v.array, HbmTensor) for v in s_views + d_views):
        fail(call, "at LNC=2 a collective's srcs and dsts are HBM tensors both cores of the rank name (nl.shared_hbm): "
                   "the collective engine reads the rank's src and writes its dst once")
    if opcode == "all_reduce" and len(s_views) > 1 and _coalesce(t, s_views, d_views, kind, call):
        return
    for s, d in zip(s_views, d_views):
        if d.dtype is not s.dtype:
            fail(call, f"src is {s.dtype.name}, dst {d.dtype.name}: a collective does not cast")
        if not _sizes_fit(opcode, math.prod(s.shape), math.prod(d.shape), members):
            fail(call, f"src {s.shape} and dst {d.shape} in rank-lists of {members}: {opcode} takes "
                       f"{_EXPECTED[opcode]}")
        src, dst = _in_hbm(s, call, "srcs", t), _in_hbm(d, call, "dsts", t)
        if src is not s:
            _legacy._dma("sbuf_to_hbm", src, s, call)
        _check_run(src, call, "srcs")
        _check_run(dst, call, "dsts")
        nbytes = {"all_reduce": src, "all_gather": src, "reduce_scatter": dst, "all_to_all": src}[opcode]
        nbytes = math.prod(nbytes.shape) * s.dtype.size // (members if opcode == "all_to_all" else 1)
        t.collectives.append((opcode, kind, nbytes, s.dtype.name))
        t.add(Op("cc", opcode, [src], [dst], dtype=s.dtype, group=kind, src=src, dst=dst, bytes=nbytes))
        if dst is not d:
            _legacy._dma("hbm_to_sbuf", dst, d, call)


def _whole(view):
    """The tensor a view covers whole (not a reshape of another), else None."""
    arr = view.array
    if arr.base is not None or view.shape != arr.shape or view.region.dims != [(0, n, 1) for n in arr.shape]:
        return None
    return arr


def _coalesce(t, s_views, d_views, kind, call):
    """An all_reduce of several whole HBM tensors of one type: the compiler places the srcs one
    after the other in HBM, and the dsts likewise (Trace.hbm_packs), and one collective sums the
    run (the bytes between them, padding, are summed too: they belong to no tensor). False (one
    collective per tensor) when a tensor is not whole, is in another pack, or the types differ."""
    srcs, dsts = [_whole(v) for v in s_views], [_whole(v) for v in d_views]
    packed = {id(x) for pack in t.hbm_packs for x in pack}
    tensors = srcs + dsts
    if (any(x is None for x in tensors) or len({id(x) for x in tensors}) != len(tensors) or
            any(id(x) in packed for x in tensors) or len({x.dtype.name for x in tensors}) != 1 or
            any(math.prod(s.shape) != math.prod(d.shape) for s, d in zip(srcs, dsts))):
        return False
    t.hbm_packs += [srcs, dsts]
    nbytes = sum(math.prod(x.shape) for x in srcs) * srcs[0].dtype.size
    t.collectives.append(("all_reduce", kind, nbytes, srcs[0].dtype.name))
    t.add(Op("cc", "all_reduce", list(s_views), list(d_views), dtype=srcs[0].dtype, group=kind, src=s_views[0],
             dst=d_views[0], bytes=None, packs=(srcs, dsts)))
    return True


def _operands(tensors, call, what):
    views = [as_view(x, call, what) for x in (tensors if isinstance(tensors, (list, tuple)) else [tensors])]
    if not views:
        fail(call, f"{what}: expected a list of at least one tensor")
    for v in views:
        if v.dtype.isa not in ("fp32", "bf16"):
            fail(call, f"{what}: {v!r}: ncore's collective engine moves FP32 or BF16")
    return views


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    _collective("all_reduce", srcs, dsts, replica_group, "ncc.all_reduce", op=op)


def all_gather(srcs, dsts, replica_group, collective_dim=0, priority=None, name=None):
    _collective("all_gather", srcs, dsts, replica_group, "ncc.all_gather", dim=collective_dim)


def reduce_scatter(srcs, dsts, replica_group, collective_dim=0, op=None, priority=None, name=None):
    _collective("reduce_scatter", srcs, dsts, replica_group, "ncc.reduce_scatter", op=op, dim=collective_dim)


def all_to_all(srcs, dsts, replica_group, collective_dim=0, priority=None, name=None):
    _collective("all_to_all", srcs, dsts, replica_group, "ncc.all_to_all", dim=collective_dim)


_UNSUPPORTED = ("collective_permute", "collective_permute_implicit", "collective_permute_implicit_reduce",
                "collective_permute_implicit_current_processing_rank_id", "all_to_all_v")


__getattr__ = unsupported_calls("nki.collectives", "ncc", _UNSUPPORTED,
                                "not supported by ncore's collective engine yet (it runs all_reduce, all_gather, "
                                "reduce_scatter and all_to_all)")


for _public in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
    globals()[_public] = _legacy._checked(globals()[_public], f"ncc.{_public}")
