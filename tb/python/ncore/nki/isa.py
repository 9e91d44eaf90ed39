"""nki.isa (nisa) on ncore: the instruction-level calls, each one ncore instruction.

Operations are given as NKI does, by nl (or NumPy) functions: op=nl.add, op=nl.exp.
"""
import numpy as np

from . import dtypes, language as nl
from .tracer import HbmTensor, Op, as_view, fail, trace

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
    if negate:
        fail("nisa.tensor_reduce", "negate=True is not supported by ncore's vector engine")
    return nl._reduce(_name(_REDUCE, op, "nisa.tensor_reduce", "op"), data, axis, dtype, keepdims,
                      "nisa.tensor_reduce")


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


def _unsupported(name):
    def call(*args, **kwargs):
        fail(f"nisa.{name}", "not supported yet on ncore's Python front end")
    call.__name__ = name
    return call


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


memset = _unsupported("memset")
iota = _unsupported("iota")
affine_select = _unsupported("affine_select")
bn_stats = _unsupported("bn_stats")
bn_aggr = _unsupported("bn_aggr")


for _public in ("activation", "tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_copy", "dma_copy",
                "nc_matmul", "nc_transpose", "tensor_tensor_scan"):
    globals()[_public] = nl._checked(globals()[_public], f"nisa.{_public}")
