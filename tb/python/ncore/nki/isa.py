"""nki.isa (nisa) on ncore: the instruction-level calls, each one ncore instruction.

Operations are given as NKI does, by nl (or NumPy) functions: op=nl.add, op=nl.exp.
"""
import math

import numpy as np

from . import dtypes, language as nl
from .tracer import AffineExpr, AffinePredicate, HbmTensor, Op, as_view, fail, trace, unsupported_calls

_ALU = {nl.add: "add", nl.subtract: "subtract", nl.multiply: "multiply", nl.maximum: "max", nl.minimum: "min",
        np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.maximum: "max", np.minimum: "min"}
_REDUCE = {nl.add: "add", nl.maximum: "max", nl.minimum: "min", nl.max: "max", nl.min: "min", nl.sum: "add",
           np.add: "add", np.maximum: "max", np.minimum: "min", np.max: "max", np.min: "min", np.sum: "add"}
_FUNC = {nl.exp: "exp", nl.tanh: "tanh", nl.sigmoid: "sigmoid", nl.gelu_apprx_tanh: "gelu",  # nl.gelu: no instruction
         nl.relu: "relu", nl.sqrt: "sqrt", nl.rsqrt: "rsqrt", nl.reciprocal: "reciprocal", nl.square: "square",
         nl.copy: "identity", np.exp: "exp", np.tanh: "tanh", np.sqrt: "sqrt", np.square: "square",
         np.reciprocal: "reciprocal"}


def _name(table, op, call, what):
    try:
        return table[op]
    except (KeyError, TypeError):
        fail(call, f"{what}={getattr(op, '__name__', op)!r} is not an operation ncore's engine has "
                   f"(expected one of {sorted({getattr(k, '__name__', str(k)) for k in table})})")


def activation(op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, dtype=None,
               mask=None):
    """op(data * scale + bias) on the scalar engine; with reduce_op=nl.add, the FP32 sum of each
    partition's results written to reduce_res."""
    func = _name(_FUNC, op, "nisa.activation", "op")
    if reduce_op is not None and _name(_REDUCE, reduce_op, "nisa.activation", "reduce_op") != "add":
        fail("nisa.activation", "reduce_op: ncore's scalar engine sums (nl.add) only")
    if (reduce_op is None) != (reduce_res is None):
        fail("nisa.activation", "reduce_op and reduce_res go together")
    return nl._activation(func, data, dtype, "nisa.activation", scale=scale, bias=bias, reduce_res=reduce_res)


def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, dtype=None, mask=None):
    """activation with its reduction written to reduce_res."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res, dtype=dtype)


def reciprocal(data, dtype=None, mask=None):
    return nl._activation("reciprocal", data, dtype, "nisa.reciprocal")


def tensor_tensor(data1, data2, op, dtype=None, mask=None):
    return nl._binary(_op_key(op, "nisa.tensor_tensor"), data1, data2, dtype, "nisa.tensor_tensor")


def _op_key(op, call):
    alu = _name(_ALU, op, call, "op")
    return {"max": "maximum", "min": "minimum"}.get(alu, alu)


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, dtype=None,
                  mask=None):
    """op1(op0(data, operand0), operand1) with numbers or one value per partition."""
    call = "nisa.tensor_scalar"
    x = as_view(data, call, "data")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = nl._new_tile(x.shape, out_dtype, nl.sbuf).view()
    fields = dict(op0=_name(_ALU, op0, call, "op0"), s0=operand0, reverse0=int(bool(reverse0)), in0=x.dtype,
                  out=out_dtype, src0=x, dst=out)
    reads = [x]
    if op1 is not None:
        fields.update(op1=_name(_ALU, op1, call, "op1"), s1=operand1, reverse1=int(bool(reverse1)))
    for k in ("s0", "s1"):
        v = fields.get(k)
        if v is None or isinstance(v, (int, float)):
            continue
        v = nl._per_partition_scalar(as_view(v, call, k), x.shape[0], call, k)
        fields[k] = v
        reads.append(v)
    trace(call).add(Op("dve", "tensor_scalar", reads, [out], **fields))
    return out


def tensor_reduce(op, data, axis, dtype=None, negate=False, keepdims=False, mask=None):
    """The reduction; negate=True multiplies it by -1 (a second vector instruction: ncore's
    tensor_reduce has no negate, and negation is exact)."""
    r = nl._reduce(_name(_REDUCE, op, "nisa.tensor_reduce", "op"), data, axis, dtype, keepdims, "nisa.tensor_reduce")
    return nl._binary("multiply", r, -1.0, r.dtype, "nisa.tensor_reduce") if negate else r


def tensor_copy(src, dtype=None, mask=None):
    return nl.copy(src, dtype=dtype)


def dma_copy(dst, src, mask=None):
    """HBM -> SBUF or SBUF -> HBM."""
    d, s = as_view(dst, "nisa.dma_copy", "dst"), as_view(src, "nisa.dma_copy", "src")
    if isinstance(s.array, HbmTensor) and not isinstance(d.array, HbmTensor):
        if s.dtype is not d.dtype:
            fail("nisa.dma_copy", f"src is {s.dtype.name}, dst {d.dtype.name}: the DMA moves bytes, it does not cast")
        nl._dma("hbm_to_sbuf", s, d, "nisa.dma_copy")
    elif isinstance(d.array, HbmTensor) and not isinstance(s.array, HbmTensor):
        nl.store(d, s)
    else:
        fail("nisa.dma_copy", "ncore's DMA engines move between HBM and SBUF (one side each)")


# The legacy nki.isa calls ncore does not run yet: each a KernelError naming the call and line.
_UNSUPPORTED = ("dropout", "local_gather", "max8", "nc_find_index8", "nc_match_replace8",
                "nc_stream_shuffle", "range_select", "select_reduce", "sequence_bounds", "tensor_copy_dynamic_src",
                "tensor_copy_dynamic_dst", "tensor_copy_predicated", "tensor_partition_reduce")
__getattr__ = unsupported_calls("neuronxcc.nki.isa", "nisa", _UNSUPPORTED,
                                "not supported yet on ncore's Python front end (tb/python/README.md lists what is)")


def nc_matmul(stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, mask=None):
    return nl._nc_matmul(stationary, moving, "nisa.nc_matmul")


def nc_transpose(data, engine=None, mask=None):
    if engine not in (None, 0, "tensor", "pe"):
        fail("nisa.nc_transpose", f"engine={engine!r}: ncore transposes on the tensor engine only")
    return nl._nc_transpose(data, "nisa.nc_transpose")


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, mask=None):
    """Per partition, result[i] = op1(op0(data0[i], result[i-1]), data1[i]) from result[-1] =
    initial (a number, or one value per partition). ncore's vector engine computes
    op0(result[i-1], data0[i]): the same for commutative ops and for NKI's reverse0; a subtract
    without reverse0 (or op1 reversed) has no ncore instruction and is refused."""
    call = "nisa.tensor_tensor_scan"
    a, b = as_view(data0, call, "data0"), as_view(data1, call, "data1")
    if a.shape != b.shape or len(a.shape) != 2:
        fail(call, f"data0 {a.shape} and data1 {b.shape}: expected two [P, F] tiles of one shape")
    alu0, alu1 = _name(_ALU, op0, call, "op0"), _name(_ALU, op1, call, "op1")
    if alu0 == "subtract" and not reverse0:
        fail(call, "op0=subtract without reverse0: ncore's scan subtracts data0 from the running value "
                   "(reverse0=True), not the running value from data0")
    if reverse1 and alu1 == "subtract":
        fail(call, "op1=subtract with reverse1: ncore's scan takes op1(running value, data1) only")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else a.dtype
    out = nl._new_tile(a.shape, out_dtype, nl.sbuf).view()
    reads = [a, b]
    s0 = initial
    if not isinstance(initial, (int, float)):
        s0 = nl._per_partition_scalar(as_view(initial, call, "initial"), a.shape[0], call, "initial")
        reads.append(s0)
    trace(call).add(Op("dve", "tensor_tensor_scan", reads, [out], op0=alu0, op1=alu1, s0=s0, in0=a.dtype,
                       in1=b.dtype, out=out_dtype, src0=a, src1=b, dst=out))
    return out


def memset(shape, value, dtype, mask=None, engine=None):
    """A new SBUF tile of `shape` filled with `value` (the vector engine's memset)."""
    call = "nisa.memset"
    if not isinstance(value, (int, float)):
        fail(call, f"value: expected a number, found {type(value).__name__}")
    out = nl._new_tile(shape, dtypes.lookup(dtype), nl.sbuf).view()
    trace(call).add(Op("dve", "memset", [], [out], value=value, out=out.dtype, dst=out))
    return out


def _affine_fields(expr, shape, call, what):
    """offset, channel_multiplier and the free axis's step of an affine expression over a [P, F]
    tile (partition index axis 0, free index axis 1)."""
    if len(shape) != 2:
        fail(call, f"{what}: ncore's iota and affine_select take a [P, F] tile, found shape {shape}")
    for axis, (_, size) in expr.terms.items():
        if axis not in (0, 1) or size != shape[axis]:
            fail(call, f"{what}: the index on axis {axis} ranges over {size}, the tile's axis over "
                       f"{shape[axis] if axis in (0, 1) else 'nothing'}")
    return dict(offset=expr.const, channel_multiplier=expr.terms.get(0, (0, 0))[0], step=expr.terms.get(1, (0, 0))[0])


def iota(expr, dtype, mask=None):
    """offset + channel_multiplier * p + step * f over a [P, F] tile, from an affine expression of
    nl.arange indices (int32 arithmetic, cast to dtype). ncore runs it on the vector engine at
    GpSimd's cost (rtl/vector/README.md)."""
    call = "nisa.iota"
    e = AffineExpr.of(expr, call)
    shape = (e.terms.get(0, (0, 1))[1], e.terms.get(1, (0, 1))[1])
    out = nl._new_tile(shape, dtypes.lookup(dtype), nl.sbuf).view()
    trace(call).add(Op("dve", "iota", [], [out], out=out.dtype, dst=out, **_affine_fields(e, shape, call, "expr")))
    return out


def affine_select(pred, on_true_tile, on_false_value, dtype=None, mask=None):
    """on_true_tile where the affine predicate holds, on_false_value (FP32) elsewhere: a causal
    mask in one instruction."""
    call = "nisa.affine_select"
    pr = AffinePredicate.of(pred, call)
    x = as_view(on_true_tile, call, "on_true_tile")
    if not isinstance(on_false_value, (int, float)):
        fail(call, f"on_false_value: expected a number, found {type(on_false_value).__name__}")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = nl._new_tile(x.shape, out_dtype, nl.sbuf).view()
    trace(call).add(Op("dve", "affine_select", [x], [out], cmp=pr.op, value=float(on_false_value), in0=x.dtype,
                       out=out_dtype, src0=x, dst=out, **_affine_fields(pr.expr, x.shape, call, "pred")))
    return out


def _stats(opcode, data, dtype, outputs):
    call = f"nisa.{opcode}"
    x = as_view(data, call, "data")
    if len(x.shape) != 2:
        fail(call, f"data: expected a [P, F] tile, found shape {x.shape}")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    if not out_dtype.is_float:
        fail(call, f"dtype: the statistics are written as a float type, found {out_dtype.name}")
    out = nl._new_tile((x.shape[0], outputs), out_dtype, nl.sbuf).view()
    trace(call).add(Op("dve", opcode, [x], [out], in0=x.dtype, out=out_dtype, src0=x, dst=out))
    return out


def bn_stats(data, dtype=None, mask=None):
    """Per partition, (count, mean, count * variance) of the even elements and then of the odd ones,
    of at most 512 (rtl/vector/README.md, "Statistics")."""
    if as_view(data, "nisa.bn_stats", "data").shape[-1] > 512:
        fail("nisa.bn_stats", "data: at most 512 elements per partition (nl.tile_size.bn_stats_fmax)")
    return _stats("bn_stats", data, dtype, 6)


def bn_aggr(data, dtype=None, mask=None):
    """Per partition, the mean and variance that bn_stats triples describe."""
    if as_view(data, "nisa.bn_aggr", "data").shape[-1] % 3:
        fail("nisa.bn_aggr", "data: (count, mean, M2) triples, a multiple of 3 elements per partition")
    return _stats("bn_aggr", data, dtype, 2)


def _scalar_operand(v, x, call, what, reads):
    if isinstance(v, (int, float)):
        return v
    v = nl._per_partition_scalar(as_view(v, call, what), x.shape[0], call, what)
    reads.append(v)
    return v


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None,
                         mask=None):
    """(data op0 operand0) op1 operand1, operand0 a number or one value per partition."""
    call = "nisa.scalar_tensor_tensor"
    x, y = as_view(data, call, "data"), as_view(operand1, call, "operand1")
    if x.shape != y.shape:
        fail(call, f"data {x.shape} and operand1 {y.shape}: expected one shape")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = nl._new_tile(x.shape, out_dtype, nl.sbuf).view()
    reads = [x, y]
    s0 = _scalar_operand(operand0, x, call, "operand0", reads)
    trace(call).add(Op("dve", "scalar_tensor_tensor", reads, [out], op0=_name(_ALU, op0, call, "op0"), s0=s0,
                       reverse0=int(bool(reverse0)), op1=_name(_ALU, op1, call, "op1"), reverse1=int(bool(reverse1)),
                       in0=x.dtype, in1=y.dtype, out=out_dtype, src0=x, src1=y, dst=out))
    return out


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None):
    """data op0 operand0, and reduce_op over each partition's results written to reduce_res (an
    FP32 tile of one element per partition)."""
    call = "nisa.tensor_scalar_reduce"
    x = as_view(data, call, "data")
    r = as_view(reduce_res, call, "reduce_res")
    if r.dtype is not nl.float32 or math.prod(r.shape) != x.shape[0]:
        fail(call, f"reduce_res: expected an FP32 tile of one element per partition, found {r.shape} {r.dtype.name}")
    reduce = _name(_ALU, reduce_op, call, "reduce_op")
    out_dtype = dtypes.lookup(dtype) if dtype is not None else x.dtype
    out = nl._new_tile(x.shape, out_dtype, nl.sbuf).view()
    reads = [x]
    s0 = _scalar_operand(operand0, x, call, "operand0", reads)
    trace(call).add(Op("dve", "tensor_scalar_reduce", reads, [out, r], op0=_name(_ALU, op0, call, "op0"), s0=s0,
                       reverse0=int(bool(reverse0)), op1=reduce, in0=x.dtype, out=out_dtype, src0=x, dst=out, acc=r))
    return out


def dma_transpose_into(s, d, call):
    """d [C, R] (SBUF) = s [R, C] (HBM) transposed on the way in by the DMA engines, 2-byte
    elements (rtl/dma/README.md, "Transpose"): R and C multiples of 16 (16-row blocks of whole
    32-byte bursts), C at most the core's partitions."""
    if not isinstance(s.array, HbmTensor):
        fail(call, f"src is {s.array!r}: ncore's DMA engines transpose on the way in from HBM")
    if len(s.shape) != 2 or s.dtype is not d.dtype or s.dtype.size != 2:
        fail(call, f"src {s.shape} {s.dtype.name}, dst {d.dtype.name}: ncore's DMA transposes a 2-D tile of 2-byte "
                   "elements, one type")
    rows, cols = s.shape
    if d.shape != (cols, rows):
        fail(call, f"src {s.shape} and dst {d.shape}: expected dst [{cols}, {rows}]")
    if rows % 16 or cols % 16:
        fail(call, f"src {s.shape}: the DMA transposes blocks of 16 rows of whole 32-byte bursts (both dimensions a "
                   "multiple of 16)")
    trace(call).add(Op("sp", "dma_transpose", [s], [d], hbm=s, tile=d, dir="hbm_to_sbuf"))


def dma_transpose(src, axes=None, mask=None):
    """A new SBUF tile [C, R] holding src [R, C] (HBM) transposed by the DMA engines."""
    call = "nisa.dma_transpose"
    s = as_view(src, call, "src")
    if axes not in (None, (1, 0), [1, 0]):
        fail(call, f"axes={axes!r}: ncore transposes a 2-D tile ([1, 0])")
    out = nl._new_tile(s.shape[::-1], s.dtype, nl.sbuf).view()
    dma_transpose_into(s, out, call)
    return out


for _public in ("activation", "activation_reduce", "reciprocal", "tensor_tensor", "tensor_scalar", "tensor_reduce",
                "tensor_copy", "dma_copy", "nc_matmul", "nc_transpose", "tensor_tensor_scan", "memset", "iota",
                "affine_select", "bn_stats", "bn_aggr", "scalar_tensor_tensor", "tensor_scalar_reduce",
                "dma_transpose"):
    globals()[_public] = nl._checked(globals()[_public], f"nisa.{_public}")
