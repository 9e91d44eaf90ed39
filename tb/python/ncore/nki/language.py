"""nki.language (nl) on ncore: NKI's names and meanings, recorded as ncore instructions.

Each function records one or more instructions on the trace (tracer.py); compiler.py places the
tiles and orders the queues. Where ncore has no single instruction for an NKI operation, the
sequence it uses is written beside the function (divide, mean, zeros); tb/python/README.md lists
them with what is not supported yet.
"""
import builtins
import math
import sys

from . import dtypes
from .dtypes import (bfloat16, float8_e4m3, float8_e5m2, float16, float32, int8, int16, int32,  # noqa: F401
                     tfloat32)
from .tracer import (APRegion, BlockTile, HbmTensor, IndexExpr, Mask, Op, Region, Tile, View, as_view, fail,
                     Trace, register_language, squeeze_to, trace, untransposed, user_location)



class _Buffer:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = _Buffer("sbuf")
psum = _Buffer("psum")
shared_hbm = _Buffer("shared_hbm")
hbm = _Buffer("hbm")
private_hbm = _Buffer("private_hbm")


class _ParDim(int):
    """nl.par_dim(n): the partition dimension of a tile's shape. Dimensions in front of it are
    block dimensions (BlockTile)."""


def par_dim(n):
    return _ParDim(n)


class _TileSize:
    """nl.tile_size: the largest tiles the engines take, for the core being traced."""

    @property
    def pmax(self):
        return trace("nl.tile_size.pmax").size

    @property
    def psum_fmax(self):
        return 512

    @property
    def gemm_stationary_fmax(self):
        return trace("nl.tile_size.gemm_stationary_fmax").size

    @property
    def gemm_moving_fmax(self):
        return 512

    @property
    def bn_stats_fmax(self):
        return 512


tile_size = _TileSize()


# ---------------------------------------------------------------------------------------------
# Programs, loops, indices

def program_id(axis=0):
    return trace("nl.program_id").program_id[axis]


def num_programs(axis=0):
    return trace("nl.num_programs").num_programs[axis]


def program_ndim():
    return trace("nl.program_ndim").grid_ndim


def affine_range(*args, **kwargs):
    """Iterations without a carried dependency. The tracer unrolls every loop; the compiler finds
    what may overlap from the addresses."""
    return range(*args)


def sequential_range(*args, **kwargs):
    return range(*args)


def static_range(*args, **kwargs):
    return range(*args)


def arange(*args):
    r = range(*args)
    if r.step <= 0 or len(r) == 0:
        fail("nl.arange", f"expected a non-empty increasing range, found {r}")
    return IndexExpr(r.start, r.step, len(r))


class IndexGrid(tuple):
    """What `nl.mgrid[...]` gives for two or more axes: one index expression per axis, which
    unpacks (`i_p, i_f = nl.mgrid[0:128, 0:512]`) and names its axes as the legacy tutorials do
    (`i.p` the partition axis, then `i.x`, `i.y`, `i.z` the free axes)."""

    def _axis(self, k, name):
        if k >= len(self):
            fail(f"nl.mgrid(...).{name}", f"the grid has {len(self)} axes, so no .{name}")
        return self[k]

    p = property(lambda self: self._axis(0, "p"))
    x = property(lambda self: self._axis(1, "x"))
    y = property(lambda self: self._axis(2, "y"))
    z = property(lambda self: self._axis(3, "z"))


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        exprs = []
        for axis, k in enumerate(key):
            if not isinstance(k, slice) or k.stop is None:
                fail("nl.mgrid", "expected slices with a stop, e.g. nl.mgrid[0:128, 0:512]")
            r = range(k.start or 0, k.stop, k.step or 1)
            exprs.append(IndexExpr(r.start, r.step, len(r), axis=axis, ndim=len(key)))
        return IndexGrid(exprs) if len(exprs) > 1 else exprs[0]


mgrid = _MGrid()


# ---------------------------------------------------------------------------------------------
# Buffers

def _new_tile(shape, dtype, buffer, name="", call=None):
    """A new tile; `call` (for errors) is the user's call that makes it (default: the one under way)."""
    call = call or _caller_call()
    t = trace(call)
    shape = tuple(int(s) for s in shape)
    if not shape or shape[0] > t.size or builtins.min(shape) <= 0:
        fail(call, f"an {buffer.name.upper()} tile of shape {shape}: expected a partition dimension of 1..{t.size} "
                   "first (the core's lanes), and sizes above 0")
    tile = Tile(shape, dtype, buffer.name, name or f"t{len(t.tiles)}")
    tile.anonymous = call != "nl.ndarray"  # an operation's result, which copy_into may retarget
    t.tiles.append(tile)
    return tile


_calls = []  # the nl / nisa calls under way, outermost first (kept by _checked)


def _caller_call():
    """The user's call under way (the outermost nl or nisa function), for error messages."""
    return _calls[0] if _calls else "nl.ndarray"


def ndarray(shape, dtype, buffer=None, name=""):
    t = trace("nl.ndarray")
    dtype = dtypes.lookup(dtype, "nl.ndarray dtype")
    buffer = buffer or sbuf
    if buffer in (shared_hbm, hbm, private_hbm):
        k = t.shared_seen
        t.shared_seen += 1
        if k < len(t.shared):  # a later program of the launch: the same array
            out = t.shared[k]
            if out.shape != tuple(shape) or out.dtype is not dtype:
                fail("nl.ndarray", f"program {t.program_id} made HBM array {k} as {tuple(shape)} {dtype.name}, "
                                   f"the first program as {out.shape} {out.dtype.name}")
            return out
        out = HbmTensor(name or f"out{k}", shape, dtype, "output")
        t.hbm.append(out)
        t.shared.append(out)
        return out
    if buffer not in (sbuf, psum):
        fail("nl.ndarray", f"buffer {buffer!r}: expected nl.sbuf, nl.psum or nl.shared_hbm")
    at = next((i for i, n in enumerate(shape) if isinstance(n, _ParDim)), 0)
    if at > 0:  # block dimensions in front of the partitions: [P, blocks..., free...] inside
        if buffer is psum:
            fail("nl.ndarray", f"shape {tuple(shape)}: block dimensions on a PSUM tile are not supported by ncore "
                               "yet (a matmul writes one bank): make one PSUM tile per block")
        inner = (shape[at],) + tuple(shape[:at]) + tuple(shape[at + 1:])
        return BlockTile(_new_tile(inner, dtype, buffer, name, call="nl.ndarray"), shape[:at])
    return _new_tile(shape, dtype, buffer, name, call="nl.ndarray")


def zeros(shape, dtype, buffer=None, name=""):
    """ncore has no memset yet (the next issue adds it): the tile is cleared by ANDing its own
    bits with 0 as integers on the vector engine."""
    dtype = dtypes.lookup(dtype, "nl.zeros dtype")  # np.float32 as well as nl.float32
    tile = ndarray(shape, dtype, buffer, name)
    if isinstance(tile, HbmTensor):
        fail("nl.zeros", "ncore clears SBUF and PSUM tiles only")
    inner = tile.tile if isinstance(tile, BlockTile) else tile  # every block at once
    v = inner.view()
    word = {1: int8, 2: int16, 4: int32}[dtype.size]
    inner.clear_op = trace("nl.zeros").add(Op("dve", "tensor_scalar", [v], [v], op0="and", s0=0, in0=word,
                                               out=word, src0=v, dst=v))
    return tile


def full(shape, fill_value, dtype, buffer=None, name=""):
    dtype = dtypes.lookup(dtype, "nl.full dtype")
    tile = zeros(shape, dtype, buffer, name)
    if fill_value != 0:
        v = (tile.tile if isinstance(tile, BlockTile) else tile).view()
        trace("nl.full").add(Op("dve", "tensor_scalar", [v], [v], op0="add", s0=float(fill_value),
                                in0=dtype, out=dtype, src0=v, dst=v))
    return tile


# ---------------------------------------------------------------------------------------------
# Memory

def _restrict(view, ranges):
    """The view with each visible dimension d limited to indices [first, first + count)."""
    from .tracer import Region
    dims, kept = list(view.region.dims), list(view.region.kept)
    visible = [d for d, k in enumerate(kept) if k]
    for d, (first, count) in zip(visible, ranges):
        start, _, step = dims[d]
        dims[d] = (start + first * step, count, step)
    return View(view.array, Region(dims, kept))


def _mask_ranges(view, exprs, mask, call):
    """Per visible dimension of `view`, the (first, count) of indices where the mask holds."""
    ranges = [(0, n) for n in view.shape]
    if mask is None:
        return ranges
    if not isinstance(mask, Mask):
        fail(call, f"mask: expected a comparison of an index expression, found {type(mask).__name__}")
    for expr, op, bound in mask.terms:
        dim = next((d for d, e in enumerate(exprs) if e is expr), None)
        if dim is None:
            fail(call, "mask: its index expression is not one of the access's indices")
        first, count = ranges[dim]
        values = [expr.start + expr.step * i for i in range(expr.size)]
        keep = [i for i, v in enumerate(values) if (v < bound if op == "<" else v >= bound)]
        lo = builtins.max(first, keep[0] if keep else 0)
        hi = builtins.min(first + count, keep[-1] + 1 if keep else 0)
        ranges[dim] = (lo, builtins.max(0, hi - lo))
    return ranges


def _dma(direction, hbm_view, tile_view, call):
    """One transfer between HBM and SBUF. The DMA engines reach SBUF only: a PSUM value is copied
    to SBUF first (vector engine), and a load into PSUM is refused."""
    t = trace(call)
    if tile_view.array.buffer != "sbuf":
        if direction == "hbm_to_sbuf":
            fail(call, f"the DMA engines write SBUF only, not {tile_view.array.buffer.upper()}: load into an SBUF "
                       "tile and copy it")
        tile_view = _to_sbuf(tile_view, call)
    return t.add(Op("sp", "dma_copy", [hbm_view if direction == "hbm_to_sbuf" else tile_view],
                    [tile_view if direction == "hbm_to_sbuf" else hbm_view], dir=direction, hbm=hbm_view,
                    tile=tile_view))


def load(src, mask=None, dtype=None):
    """HBM -> a new SBUF tile of the view's shape (masked: only the indices the mask keeps). An
    access whose index expressions swap its dimensions loads in the array's order and is then
    transposed on the tensor engine."""
    src = as_view(src, "nl.load", "src", masked=mask is not None, transposed_ok=mask is None)
    if src.region.transposed:
        return _transposed(load(untransposed(src), dtype=dtype), "nl.load")
    if not isinstance(src.array, HbmTensor):
        fail("nl.load", f"src: expected an HBM tensor, found {src.array!r} (use nl.copy between tiles)")
    if mask is None and _narrow_rows(src):
        return _load_narrow(src)
    if mask is None and not _dma_fits(src):
        widened = _load_widened(src, dtype)
        if widened is not None:
            return widened
    tile = _new_tile(src.shape, src.dtype, sbuf)
    dst = tile.view()
    if mask is not None:
        ranges = _mask_ranges(src, src.exprs, mask, "nl.load")
        src, dst = _restrict(src, ranges), _restrict(dst, ranges)
        if 0 in src.shape:  # masked off entirely
            return tile.view()
        as_view(src, "nl.load", "src (masked)")
    else:
        tile.loaded_from = src  # for broadcast_to
    tile.load_op = _dma("hbm_to_sbuf", src, dst, "nl.load")
    if dtype is not None and dtypes.lookup(dtype) is not src.dtype:
        return copy(tile, dtype=dtype)
    return tile.view()


def store(dst, value, mask=None):
    """An SBUF tile -> HBM. A value of another type is first cast on the vector engine (the DMA
    moves bytes). An access whose index expressions swap its dimensions stores the value
    transposed on the tensor engine."""
    dst = as_view(dst, "nl.store", "dst", masked=mask is not None, transposed_ok=mask is None)
    if dst.region.transposed:
        return store(untransposed(dst), _transposed(as_view(value, "nl.store", "value"), "nl.store"))
    if not isinstance(dst.array, HbmTensor):
        fail("nl.store", f"dst: expected an HBM tensor, found {dst.array!r}")
    value = as_view(value, "nl.store", "value")
    if value.dtype is not dst.dtype:
        value = copy(value, dtype=dst.dtype)
    if value.shape != dst.shape:
        fail("nl.store", f"value has shape {value.shape}, dst {dst.shape}")
    if mask is None and _narrow_rows(dst):
        return _store_narrow(dst, value)
    if mask is not None:
        ranges = _mask_ranges(dst, dst.exprs, mask, "nl.store")
        dst, value = _restrict(dst, ranges), _restrict(value, ranges)
        if 0 in dst.shape:
            return
        as_view(dst, "nl.store", "dst (masked)")
    _dma("sbuf_to_hbm", dst, value, "nl.store")


def _dma_fits(view):
    """Whether the DMA can move this HBM access as it is: whole 32-byte bursts from a 32-byte
    boundary (the compiler's rule, checked here where the tensor's 4 KiB-aligned base makes the
    addresses known modulo 32)."""
    arr, size = view.array, view.dtype.size
    strides = arr.elem_strides
    first = builtins.sum(start * st for (start, _, _), st in zip(view.region.dims, strides)) * size
    walks = [(n, step * st * size) for (_, n, step), st, k in zip(view.region.dims, strides, view.region.kept) if k]
    partition, free = walks[0], walks[1:]
    row = size
    while free and free[-1][1] == row:
        row *= free.pop()[0]
    return (first % 32 == 0 and row % 32 == 0 and (partition[0] == 1 or partition[1] % 32 == 0) and
            all(stride % 32 == 0 for _, stride in free))


def _load_widened(src, dtype):
    """A [P] or [P, w] access the DMA cannot move as it is (a column of a row-major matrix,
    A[c0:c0 + P, s]): its rows whole, [P, n] loaded, and the columns taken in SBUF. None when the
    rows are more than 64 KiB or the whole rows do not load either."""
    arr = src.array
    dims, kept = list(src.region.dims), list(src.region.kept)
    last = len(dims) - 1
    start, count, step = dims[last]
    if builtins.sum(kept[:last]) != 1 or arr.shape[last] * arr.dtype.size > 65536:
        return None
    dims[last], was_kept, kept[last] = (0, arr.shape[last], 1), kept[last], True
    whole = View(arr, Region(dims, kept))
    if not (_dma_fits(whole) or _narrow_rows(whole)):
        return None
    rows = load(whole, dtype=dtype)
    return rows[:, slice(start, start + (count - 1) * step + 1, step)] if was_kept else rows[:, start]


def _narrow_rows(view):
    """A [P, w] HBM access whose rows follow each other in HBM but are not whole 32-byte bursts
    (a [P, 1] vector of per-partition values, say): the DMA cannot write them one per partition."""
    if getattr(view.array, "_strides", None) is not None:
        return False  # an access pattern's elements are not the flat run _flat takes
    if len(view.shape) != 2 or not view.dtype.is_float:
        return False
    arr = view.array
    dims = [d for d, k in zip(view.region.dims, view.region.kept) if k]
    strides = [math.prod(arr.shape[d + 1:]) for d, k in enumerate(view.region.kept) if k]
    (_, p, pstep), (_, w, fstep) = dims
    contiguous = fstep * strides[1] == 1 and pstep * strides[0] == w
    return contiguous and (w * view.dtype.size) % 32 != 0 and p > 1


def _flat(view):
    """The contiguous HBM bytes of a narrow [P, w] view as a [1, P*w] view."""
    arr = view.array
    flat = arr.reshape((1, math.prod(arr.shape)))
    strides = [math.prod(arr.shape[d + 1:]) for d in range(len(arr.shape))]
    first = builtins.sum(start * st for (start, _, _), st in zip(view.region.dims, strides))
    return flat[0:1, first:first + math.prod(view.shape)]


def _load_narrow(src):
    """Narrow rows: the bytes go in one DMA row to partition 0, and the tensor engine transposes
    each column [1, P] into place (column j of the result from every w-th element)."""
    call = "nl.load"
    t = trace(call)
    p, w = src.shape
    flat = _new_tile((1, p * w), src.dtype, sbuf, call=call)
    _dma("hbm_to_sbuf", _flat(src), flat.view(), call)
    columns = _new_tile((p, w), src.dtype, psum, call=call)
    for j in range(w):
        if p > t.size:
            fail(call, f"a [{p}, {w}] access of {src.array!r} with rows of {w * src.dtype.size} bytes: ncore moves "
                       f"such narrow rows through the tensor engine, which takes at most {t.size} partitions")
        column = _nc_transpose(flat.view()[0:1, j::w], call)
        op = t.ops[-1]
        op.writes = [columns.view()[:, j:j + 1]]
        op.fields["dst"] = op.writes[0]
        del column
    return _to_sbuf(columns.view(), call)


def _store_narrow(dst, value):
    """Narrow rows to HBM: each column [P, 1] transposed to [1, P] on the tensor engine, gathered
    into one SBUF row, written in one DMA row."""
    call = "nl.store"
    p, w = dst.shape
    if value.array.buffer != "sbuf":
        value = _to_sbuf(value, call)
    flat = _new_tile((1, p * w), dst.dtype, sbuf, call=call)
    for j in range(w):
        row = _nc_transpose(value[:, j:j + 1], call)
        target = flat.view()[0:1, j::w]
        trace(call).add(Op("dve", "tensor_copy", [row], [target], in0=row.dtype, out=row.dtype, src0=row,
                           dst=target))
    _dma("sbuf_to_hbm", _flat(dst), flat.view(), call)


def load_transpose2d(src, dtype=None):
    """HBM [A, B] -> an SBUF tile [B, A]. Until ncore's DMA transposes (the next issue), the tile is
    loaded as it is and transposed on the tensor engine (through PSUM): A and B at most the
    core's size."""
    tile = load(src)
    out = _to_sbuf(_nc_transpose(tile, "nl.load_transpose2d"), "nl.load_transpose2d")
    return copy(out, dtype=dtype) if dtype is not None and dtypes.lookup(dtype) is not out.dtype else out


def copy(x, dtype=None):
    x = as_view(x, "nl.copy", "x")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = _new_tile(x.shape, out_dtype, sbuf).view()
    trace("nl.copy").add(Op("dve", "tensor_copy", [x], [out], in0=x.dtype, out=out_dtype, src0=x, dst=out))
    return out


def copy_into(target, value, call):
    """tile[...] = value: the instruction that made `value` writes `target` instead when it can,
    else a tensor_copy."""
    t = trace(call)
    if isinstance(value, (int, float)):
        fail(call, "assigning a number to a tile: use nl.full, or an operation")
    value = as_view(value, call, "value")
    if value.array is target.array and value.region.dims == target.region.dims:
        return  # tile[...] += ...: already written in place
    if value.shape != target.shape:  # equal up to dimensions of size 1 ([P] into [P, 1])
        if len(value.shape) < len(target.shape):
            target = squeeze_to(target, value.shape, call, "the target")
        else:
            value = squeeze_to(value, target.shape, call, "the value")
    last = t.ops[-1] if t.ops else None
    fresh = (last is not None and len(last.writes) == 1 and last.writes[0].array is value.array and
             getattr(value.array, "anonymous", False) and value.shape == value.array.shape and
             last.queue != "sp" and value.dtype is target.dtype and
             (last.queue != "pe" or target.array.buffer == "psum") and
             not value.array.read_by_ops)
    if fresh:
        last.writes = [target]
        last.fields["dst"] = target
        return
    if (last is not None and last.opcode == "dma_copy" and last.fields["dir"] == "hbm_to_sbuf" and
            last.fields["tile"].array is value.array and getattr(value.array, "anonymous", False) and
            value.shape == value.array.shape and value.dtype is target.dtype and
            target.array.buffer == "sbuf" and _dma_aligned(target) and
            not value.array.read_by_ops):
        last.writes = [target]  # tile[...] = nl.load(...): the load writes the tile itself
        last.fields["tile"] = target
        return
    t.add(Op("dve", "tensor_copy", [value], [target], in0=value.dtype, out=target.dtype, src0=value, dst=target))


def _dma_aligned(view):
    """Whether a tile view starts on a 32-byte boundary of its partition with whole 32-byte rows
    (tiles themselves are placed on 32-byte boundaries)."""
    arr = view.array
    strides = [math.prod(arr.shape[d + 1:]) for d in range(1, len(arr.shape))]
    offset = builtins.sum(start * st for (start, _, _), st in zip(view.region.dims[1:], strides))
    start, count, step = view.region.dims[-1] if len(arr.shape) > 1 else (0, 1, 1)
    return (offset * arr.dtype.size) % 32 == 0 and step == 1 and (count * arr.dtype.size) % 32 == 0


def broadcast_to(x, shape):
    """A one-partition tile repeated over `shape[0]` partitions, or a tile of one element per
    partition repeated along the free dimensions (a copy reading it with stride 0). Engines work lane by lane, so
    ncore does it on the tensor engine: ones [1, P] as the stationary and the row as the moving
    tile give every partition the row (x * 1.0 in FP32, exact), 512 elements per matmul, copied
    back to SBUF in the row's type. A row the tensor engine cannot take (an integer type, or not
    on partition 0) is loaded again from its HBM source with a partition stride of 0, as a DMA
    broadcast; free dimensions of size 1 broadcast inside the operations themselves."""
    call = "broadcast_to"
    x = as_view(x, call)
    t = trace(call)
    shape = tuple(int(n) for n in shape)
    if x.shape[0] == shape[0] and len(x.shape) <= len(shape) and all(n == 1 for n in x.shape[1:]):
        # along the free dimensions ([P] or [P, 1] to [P, F]): one copy reading x with stride 0
        out = _new_tile(shape, x.dtype, sbuf, call=call).view()
        t.add(Op("dve", "tensor_copy", [x], [out], in0=x.dtype, out=x.dtype, src0=x, dst=out))
        return out
    if shape[1:] != x.shape[1:] or x.shape[0] != 1:
        fail(call, f"{x.shape} to {shape}: ncore broadcasts one partition to many here; free dimensions of "
                   "size 1 broadcast in the operations themselves")
    if x.dtype.is_float and len(x.shape) == 2 and x.region.dims[0][0] == 0:
        if x.array.buffer != "sbuf":
            x = _to_sbuf(x, call)
        out = _new_tile(shape, x.dtype, sbuf, call=call)
        ones = _constant(t, "ones", 1, shape[0], x.dtype, call)
        for c0 in range(0, x.shape[1], 512):
            c1 = builtins.min(x.shape[1], c0 + 512)
            rows = _nc_matmul(ones, x[:, c0:c1], call)
            part = out.view()[:, c0:c1]
            t.add(Op("dve", "tensor_copy", [rows], [part], in0=float32, out=x.dtype, src0=rows, dst=part))
        return out.view()
    src = getattr(x.array, "loaded_from", None)  # HBM tensors have none
    rewritten = src is not None and any(w.array is x.array for op in t.ops[x.array.first_op:]
                                        if op is not x.array.load_op for w in op.writes)
    if src is None or rewritten or x.region.dims != x.array.view().region.dims:
        fail(call, f"a {x.dtype.name} row not on partition 0: ncore broadcasts it by DMA from HBM, so broadcast "
                   "a whole tile as nl.load returned it, before anything writes it")
    from .tracer import Region
    dims, kept = list(src.region.dims), list(src.region.kept)
    p = kept.index(True)
    dims[p] = (dims[p][0], shape[0], 0)
    wide = View(src.array, Region(dims, kept))
    tile = _new_tile(shape, x.dtype, sbuf)
    _dma("hbm_to_sbuf", wide, tile.view(), call)
    return tile.view()


# ---------------------------------------------------------------------------------------------
# Arithmetic

_ALU = {"add": "add", "subtract": "subtract", "multiply": "multiply", "maximum": "max", "minimum": "min"}
_COMMUTES = {"add", "multiply", "max", "min"}


def _result_shape(a, b, call):
    sa, sb = list(a.shape), list(b.shape)
    n = builtins.max(len(sa), len(sb))
    sa += [1] * (n - len(sa))
    sb += [1] * (n - len(sb))
    if sa[0] != sb[0]:
        fail(call, f"operands of {sa[0]} and {sb[0]} partitions: engines work lane by lane")
    out = []
    for x, y in zip(sa, sb):
        if x != y and 1 not in (x, y):
            fail(call, f"shapes {a.shape} and {b.shape} do not broadcast")
        out.append(builtins.max(x, y))
    return tuple(out)


def _binary(name, x, y, dtype, call):
    op = _ALU[name]
    t = trace(call)
    scalar_x, scalar_y = isinstance(x, (int, float)), isinstance(y, (int, float))
    if scalar_x and scalar_y:
        return {"add": x + y, "subtract": x - y, "multiply": x * y, "max": builtins.max(x, y),
                "min": builtins.min(x, y)}[op]
    if scalar_x or scalar_y:
        tile, scalar = (as_view(y, call), x) if scalar_x else (as_view(x, call), y)
        out_dtype = dtypes.lookup(dtype) if dtype is not None else tile.dtype
        out = _new_tile(tile.shape, out_dtype, sbuf).view()
        reverse = scalar_x and op not in _COMMUTES
        t.add(Op("dve", "tensor_scalar", [tile], [out], op0=op, s0=float(scalar), reverse0=int(reverse),
                 in0=tile.dtype, out=out_dtype, src0=tile, dst=out))
        return out
    a, b = as_view(x, call), as_view(y, call)
    shape = _result_shape(a, b, call)
    out_dtype = dtypes.lookup(dtype) if dtype is not None else dtypes.promote(a.dtype, b.dtype)
    out = _new_tile(shape, out_dtype, sbuf).view()
    t.add(Op("dve", "tensor_tensor", [a, b], [out], op0=op, in0=a.dtype, in1=b.dtype, out=out_dtype,
             src0=a, src1=b, dst=out))
    return out


def add(x, y, dtype=None): return _binary("add", x, y, dtype, "nl.add")
def subtract(x, y, dtype=None): return _binary("subtract", x, y, dtype, "nl.subtract")
def multiply(x, y, dtype=None): return _binary("multiply", x, y, dtype, "nl.multiply")
def maximum(x, y, dtype=None): return _binary("maximum", x, y, dtype, "nl.maximum")
def minimum(x, y, dtype=None): return _binary("minimum", x, y, dtype, "nl.minimum")


def divide(x, y, dtype=None):
    """x / y as x * (1 / y): the scalar engine's reciprocal of y (FP32), then a multiply; by a
    number, a multiply by its reciprocal rounded to FP32."""
    if isinstance(y, (int, float)):
        if y == 0:
            fail("nl.divide", "division by the number 0")
        return _binary("multiply", x, 1.0 / y, dtype, "nl.divide")
    r = _activation("reciprocal", as_view(y, "nl.divide"), float32, "nl.divide")
    return _binary("multiply", x, r, dtype, "nl.divide")


def _activation(func, x, dtype, call, scale=1.0, bias=None, reduce_res=None):
    t = trace(call)
    x = as_view(x, call)
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = _new_tile(x.shape, out_dtype, sbuf).view()
    reads = [x]
    fields = dict(func=func, in0=x.dtype, out=out_dtype, src0=x, dst=out, scale=scale, bias=bias)
    for k in ("scale", "bias"):
        v = fields[k]
        if v is None or isinstance(v, (int, float)):
            continue
        v = _per_partition_scalar(as_view(v, call, k), x.shape[0], call, k)
        fields[k] = v
        reads.append(v)
    writes = [out]
    if reduce_res is not None:
        r = as_view(reduce_res, call, "reduce_res")
        if r.dtype is not float32 or math.prod(r.shape) != x.shape[0]:
            fail(call, f"reduce_res: expected an FP32 tile of one element per partition, found {r.shape} "
                       f"{r.dtype.name}")
        fields["acc"] = r
        writes.append(r)
    t.add(Op("act", "activation", reads, writes, **fields))
    return out


def _per_partition_scalar(v, partitions, call, what):
    """An operand of one FP32 word per partition (what the engines read as a per-partition
    scalar); another type is cast first."""
    if math.prod(v.shape) != v.shape[0] or v.shape[0] != partitions:
        fail(call, f"{what}: expected one element per partition ({partitions}), found shape {v.shape}")
    if v.dtype is not float32:
        v = copy(v, dtype=float32)
    return v


def exp(x, dtype=None): return _activation("exp", x, dtype, "nl.exp")
def tanh(x, dtype=None): return _activation("tanh", x, dtype, "nl.tanh")
def sigmoid(x, dtype=None): return _activation("sigmoid", x, dtype, "nl.sigmoid")
def gelu_apprx_tanh(x, dtype=None): return _activation("gelu", x, dtype, "nl.gelu_apprx_tanh")
def relu(x, dtype=None): return _activation("relu", x, dtype, "nl.relu")
def sqrt(x, dtype=None): return _activation("sqrt", x, dtype, "nl.sqrt")
def rsqrt(x, dtype=None): return _activation("rsqrt", x, dtype, "nl.rsqrt")
def square(x, dtype=None): return _activation("square", x, dtype, "nl.square")
def reciprocal(x, dtype=None): return _activation("reciprocal", x, dtype, "nl.reciprocal")


# erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z), z >= 0:
# Abramowitz and Stegun 7.1.26, within 1.5e-7 of erf.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def gelu(x, dtype=None):
    """NKI's exact GELU, x * Phi(x) = 0.5 x + 0.5 |x| erf(|x| / sqrt(2)). The scalar engine has
    only the tanh form (nl.gelu_apprx_tanh), so erf comes from the rational approximation above,
    in FP32 on the vector and scalar engines: 19 instructions, within about 2e-7 * |x| of GELU."""
    call = "nl.gelu"
    x = as_view(x, call)
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    f32 = float32
    ax = _binary("maximum", x, _binary("multiply", x, -1.0, f32, call), f32, call)        # |x|
    t = _activation("reciprocal", _scalar_ops(ax, "multiply", _ERF_P / math.sqrt(2), "add", 1.0, call),
                    f32, call)
    poly = _scalar_ops(t, "multiply", _ERF_A[4], "add", _ERF_A[3], call)
    for a in (_ERF_A[2], _ERF_A[1], _ERF_A[0]):
        poly = _binary("add", _binary("multiply", poly, t, f32, call), a, f32, call)
    poly = _binary("multiply", poly, t, f32, call)
    decay = _activation("exp", _activation("square", x, f32, call), f32, call, scale=-0.5)  # exp(-x^2 / 2)
    tail = _binary("multiply", _binary("multiply", poly, decay, f32, call), ax, f32, call)  # |x| (1 - erf)
    both = _binary("subtract", _binary("add", x, ax, f32, call), tail, f32, call)          # x + |x| erf
    return _binary("multiply", both, 0.5, out_dtype, call)


def _scalar_ops(x, op0, s0, op1, s1, call):
    """op1(op0(x, s0), s1) in one tensor_scalar, FP32."""
    out = _new_tile(x.shape, float32, sbuf, call=call).view()
    trace(call).add(Op("dve", "tensor_scalar", [x], [out], op0=_ALU[op0], s0=float(s0), op1=_ALU[op1], s1=float(s1),
                       in0=x.dtype, out=float32, src0=x, dst=out))
    return out


def _reduce(op, x, axis, dtype, keepdims, call):
    t = trace(call)
    x = as_view(x, call)
    axes = sorted({a % len(x.shape) for a in (axis if isinstance(axis, (list, tuple)) else [axis])})
    if 0 in axes:
        fail(call, "axis 0 is the partition dimension: ncore reduces along free axes only")
    if axes != list(range(axes[0], len(x.shape))):
        fail(call, f"axis {axis}: ncore reduces the innermost free axes ({list(range(1, len(x.shape)))} of "
                   f"shape {x.shape}); transpose first")
    if isinstance(x.region, APRegion) and len(axes) > 1:
        # An access pattern whose reduced dimensions are not one run: ncore's tensor_reduce folds
        # one innermost run, so the innermost axis goes first, into an FP32 (or integer) tile.
        reduced = x.region.ap[-len(axes):]  # the reduced axes' [stride, count], outermost first
        if any(outer[0] != st * n for outer, (st, n) in zip(reduced, reduced[1:])):
            step = float32 if x.dtype.is_float else x.dtype
            partial = _reduce(op, x, [len(x.shape) - 1], step, False, call)
            return _reduce(op, partial, axes[:-1], dtype if dtype is not None else x.dtype, keepdims, call)
    kept = x.shape[:axes[0]]
    shape = kept + (1,) * len(axes) if keepdims else kept
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = _new_tile(shape, out_dtype, sbuf).view()
    t.add(Op("dve", "tensor_reduce", [x], [out], op0=op, in0=x.dtype, out=out_dtype, src0=x, dst=out,
             reduce_axes=len(axes)))
    return out


def max(x, axis, dtype=None, keepdims=False): return _reduce("max", x, axis, dtype, keepdims, "nl.max")  # noqa: A001
def min(x, axis, dtype=None, keepdims=False): return _reduce("min", x, axis, dtype, keepdims, "nl.min")  # noqa: A001
def sum(x, axis, dtype=None, keepdims=False): return _reduce("add", x, axis, dtype, keepdims, "nl.sum")  # noqa: A001


def mean(x, axis, dtype=None, keepdims=False):
    """The sum in FP32 on the vector engine, then a multiply by 1 / count."""
    x = as_view(x, "nl.mean")
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    count = math.prod(x.shape[a] for a in axes)
    s = _reduce("add", x, axis, float32, keepdims, "nl.mean")
    return _binary("multiply", s, 1.0 / count, dtype or x.dtype, "nl.mean")


def matmul(x, y, transpose_x=False):
    """x @ y into a new PSUM tile (FP32): x [M, K] (transpose_x: [K, M]), y [K, N]. Without
    transpose_x, x is first transposed on the tensor engine, as NKI does."""
    call = "nl.matmul"
    x, y = as_view(x, call, "x"), as_view(y, call, "y")
    stationary = x if transpose_x else _to_sbuf(_nc_transpose(x, call), call)
    return _nc_matmul(stationary, y, call)


def _to_sbuf(x, call):
    out = _new_tile(x.shape, x.dtype, sbuf, call=call).view()
    trace(call).add(Op("dve", "tensor_copy", [x], [out], in0=x.dtype, out=x.dtype, src0=x, dst=out))
    return out


def _nc_matmul(stationary, moving, call="nisa.nc_matmul"):
    """stationary.T @ moving on the tensor engine: stationary [K, M], moving [K, N] in SBUF, the
    result [M, N] in a new FP32 PSUM tile. K and M at most the core's size, N at most 512 (a bank)."""
    t = trace(call)
    st, mv = as_view(stationary, call, "stationary"), as_view(moving, call, "moving")
    if len(st.shape) != 2 or len(mv.shape) != 2 or st.shape[0] != mv.shape[0]:
        fail(call, f"stationary {st.shape} and moving {mv.shape}: expected [K, M] and [K, N]")
    (k, m), n = st.shape, mv.shape[1]
    if m > t.size or n > 512:
        fail(call, f"[K, M] = {st.shape} and [K, N] = {mv.shape}: expected M at most {t.size} (the array's "
                   "columns) and N at most 512 (one PSUM bank of FP32); tile the matmul")
    for what, v in (("stationary", st), ("moving", mv)):
        if not v.dtype.is_float:
            fail(call, f"{what} is {v.dtype.name}: the tensor engine multiplies float types")
    out = _new_tile((m, n), float32, psum, call=call).view()
    return t.add(Op("pe", "nc_matmul", [st, mv], [out], stationary=st, moving=mv, dst=out, accumulate=0,
                    transpose=0)).fields["dst"]


def _nc_transpose(x, call="nisa.nc_transpose"):
    """x [P, F] -> [F, P] in a new PSUM tile, bits kept, on the tensor engine's transpose mode:
    x as the stationary, an identity as the moving tile (loaded once from HBM)."""
    t = trace(call)
    x = as_view(x, call, "x")
    if len(x.shape) != 2 or x.shape[1] > t.size:
        fail(call, f"x {x.shape}: expected [P, F] with F at most {t.size} (the array's columns)")
    if not x.dtype.is_float:
        fail(call, f"x is {x.dtype.name}: the tensor engine moves float types")
    if x.dtype.size == 1:
        # The tensor engine writes a transposed FP8 element as a 16-bit PSUM element, upper byte
        # zero (model/tensor/tensor_engine.h); a PSUM tile here holds 1-byte elements, which
        # would read every other element as 0. Refused until the tiles can hold that layout.
        fail(call, f"x is {x.dtype.name}: ncore's tensor engine writes transposed FP8 as 16-bit PSUM elements, "
                   "which ncore.nki does not read back yet; transpose it in BF16 (a rows' load of FP8 that is "
                   "not whole 32-byte bursts a row goes through this transpose too)")
    p, f = x.shape
    eye = _identity(t, p, x.dtype, call)
    out = _new_tile((f, p), x.dtype, psum, call=call).view()
    return t.add(Op("pe", "nc_matmul", [x, eye], [out], stationary=x, moving=eye, dst=out, accumulate=0,
                    transpose=1)).fields["dst"]


def _transposed(x, call):
    """x [P, F] transposed into a new SBUF tile [F, P] (the tensor engine's transpose, bits kept)."""
    if not x.dtype.is_float:
        fail(call, f"a {x.dtype.name} access whose index expressions swap its dimensions: ncore transposes on the "
                   "tensor engine, which moves float types")
    return _to_sbuf(_nc_transpose(x, call), call)


def transpose(x, dtype=None):
    """x [P, F] -> [F, P] in SBUF (through PSUM on the tensor engine)."""
    out = _to_sbuf(_nc_transpose(x, "nl.transpose"), "nl.transpose")
    return copy(out, dtype=dtype) if dtype is not None and dtypes.lookup(dtype) is not out.dtype else out


def _identity(t, n, dtype, call):
    """An n x n identity of `dtype` in SBUF (the moving tile of a transpose)."""
    return _constant(t, "identity", n, n, dtype, call)


def _constant(t, kind, rows, cols, dtype, call):
    """A constant [rows, cols] tile of `dtype` in SBUF: an identity, or ones. The compiler adds it
    to the inputs (one HBM copy, rows padded to whole 32-byte bursts), and each core loads it
    once."""
    import numpy as np
    tensors, tiles = t.constant_tensors, t.constant_tiles
    width = -(-cols * dtype.size // 32) * 32 // dtype.size
    name = (kind, rows, cols, dtype.name)
    if name not in tensors:
        tensor = HbmTensor(f"{kind}_{dtype.isa}_{rows}x{cols}", (rows, width), dtype, "input")
        values = np.eye(rows, width, dtype=np.float32) if kind == "identity" else np.ones((rows, width), np.float32)
        tensor.data = dtypes.to_storage(values, dtype)
        t.hbm.append(tensor)
        tensors[name] = tensor
    key = name + (t.program % t.cores,)
    if key not in tiles:
        tile = _new_tile((rows, width), dtype, sbuf, call=call)
        _dma("hbm_to_sbuf", tensors[name].view(), tile.view(), call)
        tiles[key] = tile.view()[:, 0:cols]
    return tiles[key]


def accumulate_into(target, value, call="+="):
    """psum_tile += nl.matmul(...): the matmul accumulates into the tile (the first one into a
    tile nl.zeros cleared overwrites it instead, and the clear goes); otherwise an add."""
    t = trace(call)
    value = as_view(value, call, "value")
    last = t.ops[-1] if t.ops else None
    if (last is not None and last.opcode == "nc_matmul" and not last.fields["transpose"] and
            last.writes[0].array is value.array and target.array.buffer == "psum" and
            target.dtype is float32 and target.shape == value.shape):
        clear = getattr(target.array, "clear_op", None)
        # Nothing since the clear wrote the tile (nothing before it could: nl.zeros made it).
        if (clear is not None and not clear.removed and target.region.dims == target.array.view().region.dims and
                not any(w.array is target.array for op in t.ops[clear.index + 1:-1] for w in op.writes)):
            clear.removed = True  # the compiler drops it (the ops keep their indices while tracing)
            target.array.clear_op = None
        else:
            last.fields["accumulate"] = 1
        last.writes = [target]
        last.fields["dst"] = target
        return target
    copy_into(target, add(target, value, dtype=target.dtype), call)
    return target


# Engine operations that take mask= (the element-wise ones, activations and reductions): the
# mask narrows every operand and the result to the indices where it holds (_apply_mask).
_MASKABLE = {"nl.copy", "nl.add", "nl.subtract", "nl.multiply", "nl.maximum", "nl.minimum", "nl.divide", "nl.exp",
             "nl.tanh", "nl.sigmoid", "nl.gelu", "nl.gelu_apprx_tanh", "nl.relu", "nl.sqrt", "nl.rsqrt",
             "nl.square", "nl.reciprocal", "nl.max", "nl.min", "nl.sum", "nl.mean"}


def _mask_axis_ranges(mask, call):
    """{axis: (first, count, size)}: per axis of the operation that the mask constrains, the
    indices [first, first + count) of the `size` where it holds (each term's index expression
    says its axis: 0 the partitions, 1.. the free axes)."""
    if not isinstance(mask, Mask):
        fail(call, f"mask: expected a comparison of an index expression, found {type(mask).__name__}")
    ranges = {}
    for expr, op, bound in mask.terms:
        if not isinstance(expr, IndexExpr) or expr.axis is None:
            fail(call, "mask: expected an index expression placed on an axis (nl.mgrid, or nl.arange(n)[:, None] "
                       "or [None, :])")
        values = [expr.start + expr.step * i for i in range(expr.size)]
        keep = [i for i, v in enumerate(values) if (v < bound if op == "<" else v >= bound)]
        first, count, _ = ranges.get(expr.axis, (0, expr.size, expr.size))
        lo = builtins.max(first, keep[0] if keep else 0)
        hi = builtins.min(first + count, keep[-1] + 1 if keep else 0)
        ranges[expr.axis] = (lo, builtins.max(0, hi - lo), expr.size)
    return ranges


def _apply_mask(ops, mask, call):
    """Narrows the operations one masked call traced: each view's dimension `axis` (of the
    mask's size) to the indices where the mask holds. A dimension of 1 (a broadcast operand) or
    one the view lacks (a reduction's result) is left whole; an operation masked off entirely
    is dropped. Returns the operations that remain."""
    ranges = _mask_axis_ranges(mask, call)
    narrowed = {}

    def narrow(v):
        if not isinstance(v, View):
            return v
        if id(v) not in narrowed:
            dims = [(0, n) for n in v.shape]
            for axis, (first, count, size) in ranges.items():
                if axis >= len(v.shape) or v.shape[axis] == 1:
                    continue
                if v.shape[axis] != size:
                    fail(call, f"mask: its index expression on axis {axis} has {size} values, the operand "
                               f"{v.shape} {v.shape[axis]}")
                dims[axis] = (first, count)
            narrowed[id(v)] = _restrict(v, dims)
        return narrowed[id(v)]

    kept = []
    for op in ops:
        op.reads = [narrow(v) for v in op.reads]
        op.writes = [narrow(v) for v in op.writes]
        op.fields = {k: narrow(v) for k, v in op.fields.items()}
        if not any(0 in v.shape for v in op.writes):
            kept.append(op)
    return kept


def _checked(f, call):
    """f, refusing what ncore does not implement with a KernelError naming the call and the
    kernel's line: an unknown keyword, or a mask on an operation that takes none."""
    import functools
    import inspect
    params = inspect.signature(f).parameters

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        for k in kwargs:
            if k not in params and not (k == "mask" and call in _MASKABLE):
                fail(call, f"keyword {k}= is not supported by ncore yet")
        mask = kwargs.pop("mask", None) if "mask" not in params else None
        t = Trace.current
        outermost = not _calls and t is not None
        if outermost:  # every operation and tile the call makes is at this kernel line
            t.location = user_location()
        _calls.append(call)
        try:
            if mask is None:
                return f(*args, **kwargs)
            t = trace(call)
            first = len(t.ops)
            result = f(*args, **kwargs)
            t.ops[first:] = _apply_mask(t.ops[first:], mask, call)
            for i in range(first, len(t.ops)):
                t.ops[i].index = i
            return result
        finally:
            _calls.pop()
            if outermost:
                t.location = None
    return wrapper


for _public in ("ndarray", "zeros", "full", "load", "store", "load_transpose2d", "copy", "add", "subtract",
              "multiply", "maximum", "minimum", "divide", "exp", "tanh", "sigmoid", "gelu", "gelu_apprx_tanh",
              "relu", "sqrt", "rsqrt", "square", "reciprocal", "max", "min", "sum", "mean", "matmul", "transpose",
              "broadcast_to"):
    globals()[_public] = _checked(globals()[_public], f"nl.{_public}")


register_language(sys.modules[__name__])  # the tracer's tile operators are these functions
