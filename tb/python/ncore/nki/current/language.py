"""nki.language of the current dialect (`import nki.language as nl`, Neuron 2.27 and later).

The same names as the legacy dialect's where the meaning is the same, and they are the same
objects: `nl.add` is the legacy `nl.add`, so an operation given as `op=nl.add` means one thing
in both. What the current dialect changed:
  - `nl.ndarray(shape, dtype, buffer=nl.sbuf)`: the partition dimension is the first one (block
    dimensions were removed), the buffer defaults to SBUF, and `address=` (manual placement)
    is refused, because ncore's compiler places every tile itself;
  - `nl.zeros`, `nl.ones` and `nl.full` fill the tile with one `memset` each;
  - `nl.ds(start, size)` is the slice `start:start + size`;
  - masks, `nl.arange` and `nl.mgrid` are gone (slice with ints, `min` and `nl.ds` instead);
  - the comparisons (`nl.equal` ... `nl.less_equal`) name `affine_select`'s `cmp_op`;
  - `nl.bitwise_and`, `nl.bitwise_or` and `nl.bitwise_xor` name the vector engine's bitwise
    operations.
The convenience calls (`nl.load`, `nl.store`, `nl.copy`, `nl.matmul`, `nl.transpose`, `nl.add`
...) are the legacy ones, which NKI 0.3.0 brought back with the same meanings.
"""
import builtins

from .. import language as _legacy
from ..dtypes import (bfloat16, float8_e4m3, float8_e5m2, float16, float32, int8, int16, int32,  # noqa: F401
                      tfloat32)
from ..language import (add, affine_range, broadcast_to, copy, divide, exp, gelu, gelu_apprx_tanh,  # noqa: F401
                        hbm, load, load_transpose2d, matmul, max, maximum, mean, min, minimum, multiply,
                        num_programs, private_hbm, program_id, program_ndim, psum, reciprocal, relu, rsqrt, sbuf,
                        sequential_range, shared_hbm, sigmoid, sqrt, square, static_range, store, subtract, sum,
                        tanh, tile_size, transpose)
from ..tracer import HbmTensor, Op, fail, trace

_REMOVED = {
    "arange": "nl.arange was removed in NKI 0.2.0: index with ints and slices (nl.ds(start, size))",
    "mgrid": "nl.mgrid was removed in NKI 0.2.0: index with ints and slices (nl.ds(start, size))",
    "par_dim": "block dimensions were removed in NKI 0.2.0: the partition dimension is a tile's first",
}


def __getattr__(name):
    if name in _REMOVED:
        fail(f"nl.{name}", _REMOVED[name])
    raise AttributeError(f"module 'nki.language' (ncore) has no attribute {name!r}")


def ndarray(shape, dtype, buffer=None, name="", address=None):
    """A tensor in HBM or a tile in SBUF (the default) or PSUM, its partition dimension first."""
    if address is not None:
        fail("nl.ndarray", f"address={address!r}: ncore's compiler places every tile itself (manual placement "
                           "is not supported); leave address out")
    if any(isinstance(n, _legacy._ParDim) for n in tuple(shape)[1:]):
        fail("nl.ndarray", f"shape {tuple(shape)}: {_REMOVED['par_dim']}")
    return _legacy.ndarray(shape, dtype, buffer or sbuf, name)


def _filled(call, shape, value, dtype, buffer, name):
    tile = ndarray(shape, dtype, buffer, name)
    if isinstance(tile, HbmTensor):
        fail(call, "ncore fills SBUF and PSUM tiles only (fill a tile and dma_copy it)")
    v = tile.view()
    trace(call).add(Op("dve", "memset", [], [v], value=value, out=v.dtype, dst=v))
    return tile


def zeros(shape, dtype, buffer=None, name=""):
    return _filled("nl.zeros", shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=None, name=""):
    return _filled("nl.ones", shape, 1, dtype, buffer, name)


def full(shape, fill_value, dtype, buffer=None, name=""):
    if not isinstance(fill_value, (int, float)):
        fail("nl.full", f"fill_value: expected a number, found {type(fill_value).__name__}")
    return _filled("nl.full", shape, fill_value, dtype, buffer, name)


def ds(start, size):
    """nl.ds(start, size): the indices start .. start + size - 1 of one dimension."""
    return builtins.slice(start, start + size)


def _named_operation(name, doc):
    """An operation that kernels pass to the nisa calls by name (cmp_op=nl.greater_equal,
    op=nl.bitwise_and); calling it on tiles is not supported."""
    def operation(*args, **kwargs):
        fail(f"nl.{name}", f"ncore takes nl.{name} as an operation of nisa calls ({doc}), not as a call on tiles")
    operation.__name__ = name
    return operation


equal = _named_operation("equal", "affine_select's cmp_op")
not_equal = _named_operation("not_equal", "affine_select's cmp_op")
greater = _named_operation("greater", "affine_select's cmp_op")
greater_equal = _named_operation("greater_equal", "affine_select's cmp_op")
less = _named_operation("less", "affine_select's cmp_op")
less_equal = _named_operation("less_equal", "affine_select's cmp_op")
bitwise_and = _named_operation("bitwise_and", "tensor_tensor's and tensor_scalar's op")
bitwise_or = _named_operation("bitwise_or", "tensor_tensor's and tensor_scalar's op")
bitwise_xor = _named_operation("bitwise_xor", "tensor_tensor's and tensor_scalar's op")
bypass = _named_operation("bypass", "no operation")

for _public in ("ndarray", "zeros", "ones", "full"):
    globals()[_public] = _legacy._checked(globals()[_public], f"nl.{_public}")
