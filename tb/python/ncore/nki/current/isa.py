"""nki.isa of the current dialect (`import nki.isa as nisa`, Neuron 2.27 and later): every call
writes the `dst` it is given, which is always the first argument.

Each call records the same instructions as its legacy counterpart (../isa.py, ../language.py),
which write a new tile; the instruction that wrote that tile then writes `dst` instead
(`_into`). Where that is not possible (the result is also read by the call's own instructions,
or its type differs from dst's and the engine cannot cast on the way), a `tensor_copy` moves it.

PSUM accumulation (`nc_matmul(accumulate=None)`): as NKI documents, the first write to a PSUM
location overwrites it and later writes accumulate. ncore tracks, per PSUM tile, the regions
written so far: a matmul whose region no earlier write touched overwrites, one inside an
earlier write accumulates, and one that overlaps an earlier write only in part is refused
(pass accumulate= to say which).
"""
import enum
import math

from .. import isa as _legacy_isa, language as _legacy
from ..tracer import (HbmTensor, Op, View, as_view, contiguous_offset, fail, squeeze_to, trace,
                      unsupported_calls)
from . import language as nl


class engine(enum.Enum):  # noqa: N801 (NKI's names)
    """Neuron Device engines. ncore has no GpSimd engine: what NKI runs there (iota,
    affine_select, a copy asked of gpsimd) runs on the vector engine at GpSimd's cost."""
    tensor = "pe"
    vector = "dve"
    scalar = "act"
    gpsimd = "gpsimd"
    dma = "sp"
    sync = "sync"
    unknown = "unknown"


class reduce_cmd(enum.Enum):  # noqa: N801
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):  # noqa: N801
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):  # noqa: N801
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):  # noqa: N801
    none = 0
    double_row = 1


class nc_version(enum.Enum):  # noqa: N801
    gen2 = 2
    gen3 = 3
    gen4 = 4


tensor_engine, vector_engine, scalar_engine, gpsimd_engine, unknown_engine = (
    engine.tensor, engine.vector, engine.scalar, engine.gpsimd, engine.unknown)


def get_nc_version():
    """ncore models a NeuronCore-v3 (Trainium2)."""
    return nc_version.gen3


# NKI calls that ncore does not run yet: each raises a KernelError naming the call and the line.
_UNSUPPORTED = ("dma_compute", "nc_matmul_mx", "quantize_mx", "tensor_partition_reduce",
                "tensor_scalar_cumulative", "activate2", "exponential", "tensor_copy_predicated",
                "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst", "dropout", "range_select", "select_reduce",
                "sequence_bounds", "local_gather", "nc_n_gather", "max8", "nc_find_index8", "nc_match_replace8",
                "nc_stream_shuffle", "register_alloc", "register_load", "register_move", "register_store",
                "sendrecv", "rng", "rand2", "rand_set_state", "rand_get_state", "set_rng_seed",
                "nonzero_with_count")


__getattr__ = unsupported_calls("nki.isa", "nisa", _UNSUPPORTED,
                                "not supported by ncore yet (tb/python/README.md lists what is)")


# ---------------------------------------------------------------------------------------------
# Destinations

def _dst(dst, call, buffers=("sbuf", "psum")):
    d = as_view(dst, call, "dst")
    where = "hbm" if isinstance(d.array, HbmTensor) else d.array.buffer
    if where not in buffers:
        fail(call, f"dst is {d.array!r}: expected a tile in {' or '.join(b.upper() for b in buffers)}")
    return d


def _touches(a, b):
    """How region b relates to region a of the same array: 'disjoint', 'inside' or 'partly'."""
    inside = True
    for (sa, na, ka), (sb, nb, kb) in zip(a, b):
        lo_a, hi_a, lo_b, hi_b = sa, sa + (na - 1) * ka, sb, sb + (nb - 1) * kb
        if hi_a < lo_b or hi_b < lo_a:
            return "disjoint"
        inside = inside and lo_a <= lo_b and hi_b <= hi_a
    return "inside" if inside else "partly"


def _record_write(view):
    """Remembers the region a PSUM tile had written (for nc_matmul's accumulate=None)."""
    if not isinstance(view.array, HbmTensor) and view.array.buffer == "psum":
        regions = view.array.__dict__.setdefault("written", [])
        dims = tuple(view.region.dims)
        if dims not in regions:
            regions.append(dims)


def _into(dst, call, build, buffers=("sbuf", "psum")):
    """Records `build(d)` (legacy calls writing a new tile) and makes them write dst instead."""
    t = trace(call)
    d = _dst(dst, call, buffers)
    first = len(t.ops)
    result = as_view(build(d), call, "result")
    new = t.ops[first:]
    writer = next((op for op in reversed(new) if any(w.array is result.array for w in op.writes)), None)
    target = squeeze_to(d, result.shape, call, "dst")
    whole = result.region.dims == result.array.view().region.dims
    retarget = (writer is not None and getattr(result.array, "anonymous", False) and whole and
                result.dtype is target.dtype and
                not any(r.array is result.array for op in new for r in op.reads) and
                (writer.queue != "pe" or target.array.buffer == "psum") and
                (writer.queue != "sp" or (target.array.buffer == "sbuf" and _legacy._dma_aligned(target))))
    if retarget:
        writer.writes = [target if w.array is result.array else w for w in writer.writes]
        writer.fields = {k: (target if isinstance(v, View) and v.array is result.array else v)
                         for k, v in writer.fields.items()}
    else:
        if writer is not None and writer.queue == "pe" and target.array.buffer != "psum":
            fail(call, f"dst is {target.array!r}: the tensor engine writes PSUM")
        t.add(Op("dve", "tensor_copy", [result], [target], in0=result.dtype, out=target.dtype, src0=result,
                 dst=target))
    _record_write(target)
    return writer


# ---------------------------------------------------------------------------------------------
# Data movement

def dma_copy(dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown,
             name=None):
    """HBM -> SBUF, SBUF (or PSUM) -> HBM, or between tiles. The DMA moves bytes: a copy between
    types casts on the vector engine (through FP32, as NKI's DMA does)."""
    call = "nisa.dma_copy"
    s = as_view(src, call, "src")
    s_hbm = isinstance(s.array, HbmTensor)
    d = as_view(dst, call, "dst")
    if isinstance(d.array, HbmTensor):
        if s_hbm:
            return _hbm_to_hbm(d, s, call)
        _legacy.store(squeeze_to(d, s.shape, call, "dst") if len(d.shape) > len(s.shape) else d,
                      squeeze_to(s, d.shape, call, "src") if len(s.shape) > len(d.shape) else s)
        return
    if s_hbm:
        if d.array.buffer != "sbuf":
            fail(call, f"dst is {d.array!r}: the DMA engines write SBUF, not PSUM")
        _into(d, call, lambda t: _legacy.load(squeeze_to(s, t.shape, call, "src") if len(s.shape) > len(t.shape)
                                              else s, dtype=t.dtype), buffers=("sbuf",))
        return
    _into(d, call, lambda t: _legacy.copy(s, dtype=t.dtype))


def core_barrier(data, cores, engine=engine.unknown, name=None):
    """The two cores of a logical NeuronCore (LNC=2: `kernel[2]` launched with cores=2) wait for
    each other: a `core_barrier group=pair` on the cc queue (tb/tlm/README.md). It reads and
    writes `data` (HBM) as far as ordering goes: this core's writes to it come before the
    barrier, its accesses after wait for it, so a core reads what its partner wrote before."""
    call = "nisa.core_barrier"
    t = trace(call)
    if tuple(cores) != (0, 1):
        fail(call, f"cores={cores!r}: expected (0, 1), the two cores of the logical NeuronCore (as on NeuronCore-v3)")
    if t.cores != 2 or math.prod(t.num_programs) != 2:
        fail(call, f"a launch of {math.prod(t.num_programs)} program(s) on {t.cores} core(s): a core barrier needs the "
                   "kernel launched on the two cores of a logical NeuronCore (kernel[2] with cores=2, LNC=2)")
    v = as_view(data, call, "data")
    if not isinstance(v.array, HbmTensor):
        fail(call, f"data is {v.array!r}: expected the shared HBM tensor the cores synchronize on")
    t.add(Op("cc", "core_barrier", [v], [v], group="pair"))


def _hbm_to_hbm(d, s, call):
    """HBM to HBM through SBUF (ncore's DMA engines move between HBM and SBUF): views of one
    shape with at most the core's partitions in their first dimension go through one tile of
    that shape; contiguous runs of one element count go through tiles of rows of w elements,
    w the largest that divides both runs' offsets and length with rows of whole 32-byte bursts
    up to 16 KiB."""
    if s.dtype is not d.dtype:
        fail(call, f"HBM to HBM from {s.dtype.name} to {d.dtype.name}: copy through an SBUF tile to cast")
    pmax = trace(call).size
    if s.shape == d.shape and len(s.shape) >= 2 and s.shape[0] <= pmax:
        _legacy.store(d, _legacy.load(s))
        return
    n = math.prod(s.shape)
    if n != math.prod(d.shape):
        fail(call, f"src {s.shape} and dst {d.shape}: expected the same number of elements")
    runs = [(v, contiguous_offset(v)) for v in (s, d)]
    if any(off is None for _, off in runs):
        fail(call, f"HBM to HBM between {s.shape} and {d.shape}: ncore copies views of one shape (first dimension "
                   f"at most {pmax}) or contiguous runs")
    size = s.dtype.size
    g = math.gcd(n, *[off for _, off in runs], *[math.prod((v.array.base or v.array).shape) for v, _ in runs])
    widths = [w for w in range(1, min(g, 16384 // size) + 1) if g % w == 0 and (w * size) % 32 == 0]
    if not widths:
        fail(call, f"HBM to HBM of {n} elements at offsets {[off for _, off in runs]}: no row width divides them "
                   "in whole 32-byte bursts")
    w = widths[-1]
    roots = [v.array.base or v.array for v, _ in runs]  # a reshape's elements are its base's, in order
    rows = [root.reshape((math.prod(root.shape) // w, w)) for root in roots]
    starts = [off // w for _, off in runs]
    for r0 in range(0, n // w, pmax):
        r1 = min(n // w, r0 + pmax)
        tile = _legacy.load(rows[0][starts[0] + r0:starts[0] + r1, :])
        _legacy.store(rows[1][starts[1] + r0:starts[1] + r1, :], tile)


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error, name=None):
    """dst [C, R] (SBUF) = src [R, C] (HBM), transposed on the way in by the DMA engines
    (../isa.py's dma_transpose_into has the limits)."""
    call = "nisa.dma_transpose"
    if axes not in (None, (1, 0), [1, 0]):
        fail(call, f"axes={axes!r}: ncore transposes a 2-D tile ([1, 0])")
    d = _dst(dst, call, ("sbuf",))
    _legacy_isa.dma_transpose_into(as_view(src, call, "src"), d, call)
    _record_write(d)


def tensor_copy(dst, src, engine=engine.unknown, name=None):
    """A copy between tiles (with a cast to dst's type): the vector engine's tensor_copy, or the
    scalar engine's identity activation with engine=nisa.engine.scalar."""
    call = "nisa.tensor_copy"
    if engine is _engine("scalar"):
        return _into(dst, call, lambda d: _legacy._activation("identity", src, d.dtype, call))
    _check_engine(engine, ("vector", "gpsimd", "unknown"), call)
    _into(dst, call, lambda d: _legacy.copy(src, dtype=d.dtype))


def memset(dst, value, engine=engine.unknown, name=None):
    call = "nisa.memset"
    _check_engine(engine, ("vector", "gpsimd", "unknown"), call)
    if not isinstance(value, (int, float)):
        fail(call, f"value: expected a number, found {type(value).__name__}")
    d = _dst(dst, call)
    trace(call).add(Op("dve", "memset", [], [d], value=value, out=d.dtype, dst=d))
    _record_write(d)


def _engine(name):
    """nisa.engine's member `name`, for the calls whose own parameter `engine` hides the enum."""
    return engine[name]


def _check_engine(value, allowed, call):
    if value not in [_engine(a) for a in allowed]:
        fail(call, f"engine={value!r}: expected one of {', '.join('nisa.engine.' + a for a in allowed)}")


# ---------------------------------------------------------------------------------------------
# Tensor engine

def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=matmul_perf_mode.none, name=None):
    """dst (PSUM, FP32) = stationary.T @ moving, or += with accumulate (see the module's doc)."""
    call = "nisa.nc_matmul"
    if is_transpose:
        fail(call, "is_transpose=True: use nisa.nc_transpose(dst, data), which ncore runs in the array's "
                   "transpose mode")
    if tile_position or tile_size:
        fail(call, "tile_position/tile_size: the tensor engine's tiling mode is not supported by ncore's "
                   "front end yet")
    if perf_mode is not matmul_perf_mode.none:
        fail(call, f"perf_mode={perf_mode!r}: FP8 double-row mode is not supported by ncore's front end yet")
    d = _dst(dst, call, ("psum",))
    if d.dtype is not nl.float32:
        fail(call, f"dst is {d.dtype.name}: a NeuronCore-v3 matmul writes FP32 PSUM")
    if accumulate is None:
        relations = {_touches(r, d.region.dims) for r in getattr(d.array, "written", [])}
        if "partly" in relations:
            fail(call, f"dst {d.shape} overlaps an earlier write to {d.array!r} only in part: pass accumulate=True "
                       "or accumulate=False")
        accumulate = "inside" in relations
    writer = _into(d, call, lambda _: _legacy._nc_matmul(stationary, moving, call), buffers=("psum",))
    writer.fields["accumulate"] = int(bool(accumulate))


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """dst = data.T on the tensor engine's transpose mode (bits kept); into an SBUF dst through
    PSUM and a copy (NKI would use the vector engine for a tile of at most 32x32)."""
    call = "nisa.nc_transpose"
    _check_engine(engine, ("tensor", "vector", "unknown"), call)
    d = _dst(dst, call)
    if d.dtype is not as_view(data, call, "data").dtype:
        fail(call, f"dst is {d.dtype.name}, data {as_view(data, call, 'data').dtype.name}: a transpose keeps "
                   "the type")
    if d.array.buffer == "psum":
        _into(d, call, lambda _: _legacy._nc_transpose(data, call))
    else:
        _into(d, call, lambda _: _legacy._to_sbuf(_legacy._nc_transpose(data, call), call))


# ---------------------------------------------------------------------------------------------
# Vector and scalar engines

def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    call = "nisa.tensor_tensor"
    _check_engine(engine, ("vector", "gpsimd", "unknown"), call)
    _into(dst, call, lambda d: _legacy._binary(_op_key(op, call), data1, data2, d.dtype, call))


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  engine=engine.unknown, name=None):
    call = "nisa.tensor_scalar"
    _check_engine(engine, ("vector", "scalar", "gpsimd", "unknown"), call)
    _into(dst, call, lambda d: _legacy_isa.tensor_scalar(data, _op(op0, call), operand0, reverse0, _op(op1, call),
                                                         operand1, reverse1, dtype=d.dtype))


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    call = "nisa.tensor_reduce"
    x = as_view(data, call, "data")
    d = _dst(dst, call)
    keep = keepdims or len(d.shape) == len(x.shape)
    _into(d, call, lambda t: _legacy_isa.tensor_reduce(_op(op, call), x, axis, dtype=t.dtype, negate=negate,
                                                       keepdims=keep))


def _activation_reduce(call, reduce_op, reduce_res, reduce_cmd_value):
    if reduce_res is None:
        if reduce_op is not None or reduce_cmd_value not in (reduce_cmd.idle, reduce_cmd.reset):
            fail(call, "reduce_op/reduce_cmd without reduce_res: ncore's scalar engine does not keep reduction "
                       "registers between instructions; pass reduce_res to get the sum")
        return False
    if reduce_cmd_value is not reduce_cmd.reset_reduce:
        fail(call, f"reduce_res with reduce_cmd={reduce_cmd_value!r}: ncore writes this instruction's own sum "
                   "(reduce_cmd=nisa.reduce_cmd.reset_reduce, or nisa.activation_reduce); registers kept across "
                   "instructions are not supported")
    return True


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
               name=None):
    call = "nisa.activation"
    _activation_reduce(call, reduce_op, reduce_res, reduce_cmd)
    _into(dst, call, lambda d: _legacy_isa.activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                                                      reduce_res=reduce_res, dtype=d.dtype))


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
               reduce_cmd=reduce_cmd.reset_reduce)


def reciprocal(dst, data, name=None):
    call = "nisa.reciprocal"
    _into(dst, call, lambda d: _legacy._activation("reciprocal", data, d.dtype, call))


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None):
    call = "nisa.tensor_tensor_scan"
    _into(dst, call, lambda d: _legacy_isa.tensor_tensor_scan(data0, data1, initial, _op(op0, call), _op(op1, call),
                                                              reverse0, reverse1, dtype=d.dtype))


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None):
    call = "nisa.scalar_tensor_tensor"
    _into(dst, call, lambda d: _legacy_isa.scalar_tensor_tensor(
        data=data, op0=_op(op0, call), operand0=operand0, op1=_op(op1, call), operand1=operand1, reverse0=reverse0,
        reverse1=reverse1, dtype=d.dtype))


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False, name=None):
    call = "nisa.tensor_scalar_reduce"
    _into(dst, call, lambda d: _legacy_isa.tensor_scalar_reduce(
        data=data, op0=_op(op0, call), operand0=operand0, reduce_op=_op(reduce_op, call), reduce_res=reduce_res,
        reverse0=reverse0, dtype=d.dtype))


def bn_stats(dst, data, name=None):
    _into(dst, "nisa.bn_stats", lambda d: _legacy_isa.bn_stats(data, dtype=d.dtype))


def bn_aggr(dst, data, name=None):
    _into(dst, "nisa.bn_aggr", lambda d: _legacy_isa.bn_aggr(data, dtype=d.dtype))


_CMP = {nl.equal: "equal", nl.not_equal: "not_equal", nl.greater: "greater", nl.greater_equal: "greater_equal",
        nl.less: "less", nl.less_equal: "less_equal"}


def _affine(call, d, pattern, offset, channel_multiplier):
    """The fields of iota / affine_select: NKI's pattern [[step, num], ...] (outermost first) over
    dst's free elements. ncore's front end takes a pattern that is one run (after dropping
    entries of num 1)."""
    runs = [(int(s), int(n)) for s, n in pattern if int(n) != 1]
    free = 1
    for n in d.shape[1:]:
        free *= n
    if len(runs) > 1:
        fail(call, f"pattern {pattern}: ncore's front end takes a pattern of one [step, num] (with num the "
                   "tile's free elements)")
    step, num = runs[0] if runs else (0, 1)
    if num != free:
        fail(call, f"pattern {pattern} covers {num} elements per partition, dst {d.shape} has {free}")
    return dict(offset=int(offset), channel_multiplier=int(channel_multiplier), step=step)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst = offset + channel_multiplier * p + pattern's affine value, in int32, cast to dst."""
    call = "nisa.iota"
    d = _dst(dst, call, ("sbuf",))
    trace(call).add(Op("dve", "iota", [], [d], out=d.dtype, dst=d, **_affine(call, d, pattern, offset,
                                                                           channel_multiplier)))


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=nl.equal, offset=0,
                  name=None):
    """dst = on_true_tile where cmp_op(affine value, 0) holds, on_false_value (FP32) elsewhere."""
    call = "nisa.affine_select"
    d = _dst(dst, call, ("sbuf",))
    x = as_view(on_true_tile, call, "on_true_tile")
    if x.shape != d.shape:
        fail(call, f"on_true_tile {x.shape} and dst {d.shape}: expected one shape")
    if not isinstance(on_false_value, (int, float)):
        fail(call, f"on_false_value: expected a number, found {type(on_false_value).__name__}")
    cmp = _CMP.get(cmp_op)
    if cmp is None:
        fail(call, f"cmp_op={getattr(cmp_op, '__name__', cmp_op)!r}: expected one of nl.equal, nl.not_equal, "
                   "nl.greater, nl.greater_equal, nl.less, nl.less_equal")
    trace(call).add(Op("dve", "affine_select", [x], [d], cmp=cmp, value=float(on_false_value), in0=x.dtype,
                       out=d.dtype, src0=x, dst=d, **_affine(call, d, pattern, offset, channel_multiplier)))


# The operations the nisa calls take: the legacy tables plus the bitwise ones.
_BITWISE = {nl.bitwise_and: "and", nl.bitwise_or: "or", nl.bitwise_xor: "xor"}


def _op(op, call):
    """An op as the legacy calls take it (they map nl functions to engine operations)."""
    if op in _BITWISE:
        fail(call, f"op=nl.{op.__name__}: bitwise operations are not supported by ncore's front end yet")
    return op


def _op_key(op, call):
    return _legacy_isa._op_key(_op(op, call), call)


for _public in ("dma_copy", "dma_transpose", "tensor_copy", "memset", "nc_matmul", "nc_transpose", "tensor_tensor", "tensor_scalar",
                "tensor_reduce", "activation", "activation_reduce", "reciprocal", "tensor_tensor_scan",
                "scalar_tensor_tensor", "tensor_scalar_reduce", "bn_stats", "bn_aggr", "iota", "affine_select"):
    globals()[_public] = _legacy._checked(globals()[_public], f"nisa.{_public}")

