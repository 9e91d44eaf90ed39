"""Tracing an NKI kernel: the kernel runs in Python on symbolic tensors, and every operation it
calls is recorded, with the kernel's file:line, for the compiler (compiler.py).

Vocabulary:
  - HbmTensor: a kernel input or an `nl.shared_hbm` array, in the core's HBM.
  - Tile: an SBUF or PSUM array. Its first dimension is the partition dimension (at most the
    core's lanes), the others are free; the compiler gives it an address.
  - View: a tensor or tile indexed by integers, slices or `nl.arange` expressions: per
    dimension of the underlying array a start, a size and a step, and which dimensions stay.
  - Op: one engine instruction (or DMA transfer), with the views it reads and writes.
"""
import math
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class KernelError(Exception):
    """A kernel does something ncore cannot run: the message names the call and the kernel's
    file:line."""


_outside = {}  # file name -> whether it lies outside the ncore package


def user_location():
    """file:line of the innermost frame outside the ncore package (the kernel's line)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        outside = _outside.get(name)
        if outside is None:
            outside = _outside[name] = not os.path.abspath(name).startswith(_PACKAGE_DIR)
        if outside:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def fail(call, message):
    raise KernelError(f"{user_location()}: {call}: {message}")


def unsupported_calls(module, prefix, names, why):
    """A module's __getattr__ (PEP 562) for the NKI calls of `names` that ncore does not run:
    calling one is a KernelError naming the call (prefix.name), the kernel's line and `why`;
    any other missing name is an AttributeError, as Python's own."""
    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {module!r} (ncore) has no attribute {name!r}")

        def call(*args, **kwargs):
            fail(f"{prefix}.{name}", why)
        call.__name__ = call.__qualname__ = name
        return call
    return __getattr__


class Trace:
    """The kernel being traced: its HBM tensors, its tiles and its operations in program order."""

    current = None

    def __init__(self, size):
        self.size = size                 # the core's lanes: 128, or 8 for the small RTL core
        self.ops = []
        self.hbm = []                    # HbmTensor, in the order they were made
        self.tiles = []
        self.program_id = (0, 0, 0)
        self.num_programs = (1, 1, 1)
        self.grid_ndim = 1
        self.shared = []                 # nl.shared_hbm arrays of the launch, in creation order
        self.shared_seen = 0             # those the current program instance has made so far
        self.program = 0                 # the program of the launch grid being traced (row-major)
        self.cores = 1                   # the cores the launch is spread over
        self.constant_tensors = {}       # (kind, rows, cols, type) -> the HBM constant (identity, ones)
        self.constant_tiles = {}         # ... + (core,) -> its tile in that core's SBUF
        self.rank = 0                    # nki.collectives.rank_id(): chip * cores + core of a system run
        self.system_shape = (1, 1)       # (chips, cores per chip) of the system the ranks run on
        self.collectives = []            # (opcode, group, bytes, dtype) of each collective, in order
        self.hbm_packs = []              # lists of HBM tensors the compiler places one after the other
        self.location = None             # the kernel's file:line while a language call is under way

    def __enter__(self):
        if Trace.current is not None:
            raise KernelError("a kernel called another kernel while being traced")
        Trace.current = self
        return self

    def __exit__(self, *exc):
        Trace.current = None
        return False

    def add(self, op):
        op.where = self.location or user_location()
        op.program = self.program
        op.index = len(self.ops)
        for v in op.reads:
            v.array.read_by_ops = True
        self.ops.append(op)
        return op

    def live_ops(self):
        """The operations the compiler takes: those not removed (a clear a matmul made
        unnecessary), indexed again in order."""
        if any(op.removed for op in self.ops):
            self.ops = [op for op in self.ops if not op.removed]
        for i, op in enumerate(self.ops):
            op.index = i
        return self.ops


def trace(call):
    if Trace.current is None:
        raise KernelError(f"{user_location()}: {call}: called outside a kernel (ncore.nki.simulate_kernel "
                          "or a jit kernel's call traces the kernel)")
    return Trace.current


# ---------------------------------------------------------------------------------------------
# Index expressions

class IndexExpr:
    """`nl.arange(n)` and affine functions of it: the values start + step * i for i < size, on
    axis `axis` of the index (None until the user places it with [:, None] or [None, :])."""

    def __init__(self, start, step, size, axis=None, ndim=1):
        self.start, self.step, self.size, self.axis, self.ndim = start, step, size, axis, ndim

    def _with(self, start=None, step=None, axis=None, ndim=None):
        return IndexExpr(self.start if start is None else start, self.step if step is None else step, self.size,
                         self.axis if axis is None else axis, self.ndim if ndim is None else ndim)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != 2 or sum(k is None for k in key) != 1:
            fail("nl.arange(...)[...]", "expected [:, None] or [None, :]")
        return self._with(axis=0 if key[1] is None else 1, ndim=2)

    def __add__(self, other):
        if isinstance(other, int):
            return self._with(start=self.start + other)
        if _is_affine(other):
            return AffineExpr.of(self, "index expression +") + other
        fail("index expression +", f"expected an int, found {type(other).__name__}")

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, int):
            return self._with(start=self.start - other)
        if _is_affine(other):
            return AffineExpr.of(self, "index expression -") - other
        fail("index expression -", f"expected an int, found {type(other).__name__}")

    def __mul__(self, other):
        if isinstance(other, int) and other > 0:
            return self._with(start=self.start * other, step=self.step * other)
        if isinstance(other, int):  # an affine expression (nisa.iota), not an index
            return AffineExpr.of(self, "index expression *") * other
        fail("index expression *", f"expected an int, found {other!r}")

    __rmul__ = __mul__

    # With another index expression, the arithmetic and comparisons make an affine expression
    # and a predicate over both axes (nisa.iota, nisa.affine_select); with an int, a comparison
    # is a mask.
    def affine(self):
        if self.axis is None:
            fail("index expression", "place nl.arange on an axis first: nl.arange(n)[:, None] or [None, :]")
        return AffineExpr(self.start, {self.axis: (self.step, self.size)})

    def __neg__(self):
        return -self.affine()

    def __rsub__(self, other):
        return other + (-self.affine())

    def __lt__(self, bound):
        return self.affine() < bound if _is_affine(bound) else Mask(self, "<", bound)

    def __le__(self, bound):
        return self.affine() <= bound if _is_affine(bound) else Mask(self, "<", bound + 1)

    def __ge__(self, bound):
        return self.affine() >= bound if _is_affine(bound) else Mask(self, ">=", bound)

    def __gt__(self, bound):
        return self.affine() > bound if _is_affine(bound) else Mask(self, ">=", bound + 1)


def _is_affine(x):
    return isinstance(x, (IndexExpr, AffineExpr))


class AffineExpr:
    """const + sum over axes of coef * i (i < size on that axis: 0 partitions, 1 the free axis):
    what nisa.iota writes and what nisa.affine_select compares with 0."""

    def __init__(self, const, terms):
        self.const, self.terms = const, dict(terms)

    @staticmethod
    def of(x, call):
        if isinstance(x, AffineExpr):
            return x
        if isinstance(x, IndexExpr):
            return x.affine()
        if isinstance(x, int):
            return AffineExpr(x, {})
        fail(call, f"expected an affine expression of nl.arange indices and ints, found {type(x).__name__}")

    def __add__(self, other):
        o = AffineExpr.of(other, "index expression +")
        terms = dict(self.terms)
        for axis, (coef, size) in o.terms.items():
            if axis in terms and terms[axis][1] != size:
                fail("index expression +", f"axis {axis}: ranges of {terms[axis][1]} and {size} elements")
            terms[axis] = (terms.get(axis, (0, size))[0] + coef, size)
        return AffineExpr(self.const + o.const, terms)

    __radd__ = __add__

    def __neg__(self):
        return AffineExpr(-self.const, {a: (-c, n) for a, (c, n) in self.terms.items()})

    def __sub__(self, other):
        return self + (-AffineExpr.of(other, "index expression -"))

    def __rsub__(self, other):
        return AffineExpr.of(other, "index expression -") + (-self)

    def __mul__(self, k):
        if not isinstance(k, int):
            fail("index expression *", f"expected an int, found {type(k).__name__}")
        return AffineExpr(self.const * k, {a: (c * k, n) for a, (c, n) in self.terms.items()})

    __rmul__ = __mul__

    def _compare(self, other, op):
        return AffinePredicate(self - other, op)

    def __lt__(self, other): return self._compare(other, "less")
    def __le__(self, other): return self._compare(other, "less_equal")
    def __gt__(self, other): return self._compare(other, "greater")
    def __ge__(self, other): return self._compare(other, "greater_equal")
    def __eq__(self, other): return self._compare(other, "equal")
    def __ne__(self, other): return self._compare(other, "not_equal")
    __hash__ = None


class AffinePredicate:
    """`expr op 0` for an affine expression: nisa.affine_select's predicate."""

    def __init__(self, expr, op):
        self.expr, self.op = expr, op

    @staticmethod
    def of(pred, call):
        if isinstance(pred, AffinePredicate):
            return pred
        if isinstance(pred, Mask) and len(pred.terms) == 1:
            expr, op, bound = pred.terms[0]
            return AffinePredicate(AffineExpr.of(expr, call) - bound, {"<": "less", ">=": "greater_equal"}[op])
        fail(call, "pred: expected one comparison of an affine expression of nl.arange indices (not masks joined "
                   "with &: ncore's affine_select compares one expression with 0)")


class Mask:
    """A condition on one index expression (`i_p < n`), or several joined by `&`: NKI's masks.
    ncore applies a mask by shrinking the access to the indices where it holds."""

    def __init__(self, expr, op, bound, others=()):
        if not isinstance(bound, int):
            fail("mask", f"expected a comparison with an int, found {type(bound).__name__}")
        self.terms = [(expr, op, bound), *others]

    def __and__(self, other):
        if not isinstance(other, Mask):
            fail("mask &", "expected another mask")
        m = Mask(*self.terms[0])
        m.terms = self.terms + other.terms
        return m


# ---------------------------------------------------------------------------------------------
# Arrays and views

class Region:
    """Per dimension of an array: (start, size, step), and whether the dimension stays in the
    view's shape (an integer index drops it)."""

    __slots__ = ("dims", "kept", "exprs", "transposed", "shape", "inside")

    def __init__(self, dims, kept, exprs=None, transposed=False, sizes=None, inside=False):
        self.dims, self.kept = dims, kept
        self.inside = inside  # known to lie inside its array (check_bounds need not look)
        if sizes is None:  # the visible dimensions' sizes
            sizes = tuple([d[1] for d, k in zip(dims, kept) if k])
        self.exprs = exprs if exprs is not None else [None] * len(sizes)
        # Two index expressions in the other order (`out[i_f, i_p]`): the view's partitions walk
        # the array's second visible dimension. Only loads and stores take such a view (they
        # transpose on the tensor engine); its shape is the visible dimensions reversed.
        self.transposed = transposed
        self.shape = sizes[::-1] if transposed else sizes  # dims and kept do not change after

    @staticmethod
    def whole(shape):
        return Region([(0, n, 1) for n in shape], [True] * len(shape), inside=True)

    def index(self, key, array_shape, what):
        """The region of this view indexed by `key` (ints, slices, index expressions); `what` names
        the array in an error."""
        key = key if isinstance(key, tuple) else (key,)
        if self.transposed:
            fail(f"{what}[...]", "indexing a view whose index expressions reorder its dimensions: index the tensor "
                                 "once")
        ndim = len(self.shape)
        i = next((i for i, k in enumerate(key) if k is Ellipsis), None)
        if i is not None:
            key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1:]
        if len(key) > ndim:
            fail(f"{what}[...]", f"{len(key)} indices for a view of {ndim} dimensions {self.shape}")
        dims, kept = list(self.dims), list(self.kept)
        exprs = []  # per dimension of the result: the index expression that made it, if any
        sizes = []
        has_expr = False
        n = 0
        for d, k in enumerate(self.kept):
            if not k:
                continue
            if n >= len(key):  # the dimensions the key leaves out stay whole
                exprs.append(None)
                sizes.append(dims[d][1])
                continue
            k = key[n]
            n += 1
            start, size, step = dims[d]
            if k.__class__ is slice:
                if k.step not in (None, 1) and not (isinstance(k.step, int) and k.step > 0):
                    fail(f"{what}[...]", f"slice step {k.step!r}: expected a positive int")
                first, stop, stride = k.indices(size)
                count = max(0, (stop - first + stride - 1) // stride)
            elif isinstance(k, IndexExpr):
                first, count, stride = k.start, k.size, k.step
                has_expr = True
            elif isinstance(k, int):
                first, count, stride = k, 1, 1
                kept[d] = False
            else:
                fail(f"{what}[...]", f"index {k!r}: expected an int, a slice or an nl.arange expression")
            if first < 0 or count <= 0 or first + (count - 1) * stride >= size:
                if not (isinstance(k, IndexExpr) and count > 0):  # a mask may bring an expression inside
                    fail(f"{what}[...]", f"dimension {d} of {array_shape}: indices {first}.."
                                         f"{first + (count - 1) * stride} step {stride} leave 0..{size - 1}")
            dims[d] = (start + first * step, count, step * stride)
            if kept[d]:
                exprs.append(k if isinstance(k, IndexExpr) else None)
                sizes.append(count)
        if not has_expr:  # every index was checked above: inside, if this region was
            return Region(dims, kept, exprs, False, tuple(sizes), self.inside)
        axes = [e.axis for e in exprs if e is not None and e.axis is not None]
        swapped = len(exprs) == 2 and axes == [1, 0]
        if any(b <= a for a, b in zip(axes, axes[1:])) and not swapped:
            fail(f"{what}[...]", f"index expressions on axes {axes}: an access that reorders dimensions beyond "
                                 "swapping two is not supported by ncore; use nl.transpose")
        return Region(dims, kept, exprs[::-1] if swapped else exprs, swapped)


class APRegion:
    """An access pattern over a tile (NKI's `tile.ap(pattern, offset)`): consecutive partitions
    from `partition`, then free dimensions of [stride, count] in elements of a partition's free
    space, outermost first, from element `offset` of it. Engines take it as it is; loads, stores
    and further indexing do not."""

    def __init__(self, partition, partitions, ap, offset):
        self.partition, self.partitions, self.ap, self.offset = partition, partitions, tuple(ap), offset
        self.transposed = False
        self.exprs = [None] * (1 + len(self.ap))

    @property
    def shape(self):
        return (self.partitions,) + tuple(n for _, n in self.ap)

    @property
    def dims(self):
        fail("tile.ap(...)", "an access pattern view goes to engine operations only: load, store or index the tile "
                             "itself")

    kept = dims

    def index(self, key, array_shape, what):
        fail(f"{what}.ap(...)[...]", "indexing an access pattern view: give the pattern what you want")


class Array:
    """What HBM tensors and tiles share: a shape, a type, indexing into views."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(n) for n in shape), dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def elem_strides(self):
        """Elements between neighbours along each dimension (row-major unless an access pattern
        over an HBM tensor gave its own)."""
        strides = getattr(self, "_strides", None)
        if strides is None:
            strides = self.__dict__.get("_row_major")
            if strides is None:  # the shape does not change: computed once
                strides = self._row_major = [math.prod(self.shape[d + 1:]) for d in range(len(self.shape))]
        return strides

    def view(self):
        whole = self.__dict__.get("_whole")
        if whole is None:  # regions do not change once made: one serves every whole view
            whole = self._whole = Region.whole(self.shape)
        return View(self, whole)

    def __getitem__(self, key):
        return View(self, self.view().region.index(key, self.shape, self))

    def __setitem__(self, key, value):
        self.view()[key] = value

    # Arithmetic on a whole array is arithmetic on its view.
    def __add__(self, o): return self.view() + o
    def __radd__(self, o): return o + self.view()
    def __sub__(self, o): return self.view() - o
    def __rsub__(self, o): return o - self.view()
    def __mul__(self, o): return self.view() * o
    def __rmul__(self, o): return o * self.view()
    def __truediv__(self, o): return self.view() / o
    def __rtruediv__(self, o): return o / self.view()
    def __neg__(self): return -self.view()

    def __iadd__(self, o):
        self.view().__iadd__(o)
        return self

    def __bool__(self):
        return bool(self.view())

    def broadcast_to(self, shape):
        return self.view().broadcast_to(shape)

    def ap(self, pattern, offset=0, **dynamic):
        """NKI's access pattern over a tile: [[partition step, partitions], [stride, count], ...]
        in elements, from element `offset` of the tile (flattened)."""
        call = "tensor.ap"
        if dynamic:
            fail(call, "dynamic offsets (scalar_offset, vector_offset) are not supported by ncore's front end yet")
        if isinstance(self, HbmTensor):
            return self._strided(pattern, offset, call).view()
        free = math.prod(self.shape[1:])
        pattern = [(int(st), int(n)) for st, n in pattern]
        if not pattern or pattern[0][0] != free and pattern[0][1] > 1:
            fail(call, f"pattern {pattern}: its first [step, count] walks the partitions, step {free} (the elements "
                       f"of a partition of {self!r})")
        part, first = divmod(int(offset), free)
        lo = first + sum(min(0, (n - 1) * st) for st, n in pattern[1:])
        hi = first + sum(max(0, (n - 1) * st) for st, n in pattern[1:])
        if part + pattern[0][1] > self.shape[0] or lo < 0 or hi >= free or min(n for _, n in pattern) <= 0:
            fail(call, f"pattern {pattern} from element {offset} leaves {self!r}")
        return View(self, APRegion(part, pattern[0][1], pattern[1:], first))



class HbmTensor(Array):
    def __init__(self, name, shape, dtype, role, base=None):
        super().__init__(shape, dtype)
        self.name, self.role = name, role  # role: input, output
        self.base = base  # reshape(): the tensor whose bytes these are
        self._addr = None
        self.data = None  # an input's .npy storage
        self.caller_array = None  # the argument it came from
        self.output_arg = False   # an input the kernel stores into (NKI's older output arguments)
        self.read_by_ops = False  # some operation reads it (Trace.add keeps this)

    @property
    def addr(self):
        if self.base is not None:  # a reshape starts where its base does; an access pattern at its offset
            return self.base.addr + getattr(self, "element_offset", 0) * self.dtype.size
        return self._addr

    @addr.setter
    def addr(self, value):
        self._addr = value

    def _strided(self, pattern, offset, call):
        """An access pattern over the tensor's elements (flattened, from element `offset`):
        another HbmTensor over the same bytes, its dimensions the pattern's [stride, count]."""
        if getattr(self, "_strides", None) is not None:
            fail(call, "an access pattern over an access pattern: give one pattern over the tensor")
        root = self.base if self.base is not None else self
        pattern = [(int(st), int(n)) for st, n in pattern]
        total = math.prod(root.shape)
        lo = int(offset) + sum(min(0, (n - 1) * st) for st, n in pattern)
        hi = int(offset) + sum(max(0, (n - 1) * st) for st, n in pattern)
        if not pattern or min(n for _, n in pattern) <= 0 or lo < 0 or hi >= total:
            fail(call, f"pattern {pattern} from element {offset} leaves {self!r} ({total} elements)")
        alias = HbmTensor(self.name, tuple(n for _, n in pattern), self.dtype, self.role, base=root)
        alias._strides, alias.element_offset = [st for st, _ in pattern], int(offset)
        return alias

    def reshape(self, shape):
        """The same bytes (C order) with another shape, as NKI's tensor.reshape."""
        shape = tuple(int(n) for n in shape)
        if getattr(self, "_strides", None) is not None:
            fail("reshape", "reshaping an access pattern view: reshape the tensor, then take the pattern")
        if math.prod(shape) != math.prod(self.shape):
            fail("reshape", f"{self.shape} has {math.prod(self.shape)} elements, {shape} {math.prod(shape)}")
        root = self.base if self.base is not None else self
        return HbmTensor(self.name, shape, self.dtype, self.role, base=root)

    def __repr__(self):
        return f"hbm tensor {self.name} {self.shape} {self.dtype.name}"


class Tile(Array):
    def __init__(self, shape, dtype, buffer, name):
        super().__init__(shape, dtype)
        self.buffer, self.name = buffer, name
        self.addr = None  # byte offset in each partition, set by the compiler
        self.created = (Trace.current and Trace.current.location) or user_location()
        self.loaded_from = None  # the HBM view nl.load filled it from (whole, unmasked), and that load
        self.load_op = None
        self.clear_op = None     # the instruction nl.zeros cleared it with
        self.anonymous = False   # an operation's result (not made by nl.ndarray)
        self.read_by_ops = False  # some operation reads it (Trace.add keeps this)
        # the operations before this one cannot touch the tile (a search for them starts here)
        self.first_op = len(Trace.current.ops) if Trace.current is not None else 0

    @property
    def free_bytes(self):
        n = 1
        for s in self.shape[1:]:
            n *= s
        return n * self.dtype.size

    def __repr__(self):
        return f"{self.buffer} tile {self.name} {self.shape} {self.dtype.name}"


class BlockTile:
    """A tile with block dimensions in front of its partition dimension, as NKI writes
    `nl.ndarray((B, nl.par_dim(P), F), ...)`: B tiles of [P, F]. ncore keeps them side by side
    in each partition, as one tile of [P, B, F] (`tile`); indexing the block dimensions with
    integers gives one of them, a view of [P, F]."""

    def __init__(self, tile, blocks):
        self.tile, self.blocks = tile, tuple(blocks)

    @property
    def shape(self):
        return self.blocks + self.tile.shape[:1] + self.tile.shape[1 + len(self.blocks):]

    @property
    def dtype(self):
        return self.tile.dtype

    def _key(self, key):
        """The user's key (blocks, partition, free...) as the tile's (partition, blocks, free...)."""
        key = key if isinstance(key, tuple) else (key,)
        n = len(self.blocks)
        if len(key) < n or not all(isinstance(k, int) and not isinstance(k, bool) for k in key[:n]):
            fail(f"{self.tile.name}[...]", f"a tile of {n} block dimension(s) in front of its partitions, shape "
                                           f"{self.shape}: index the block dimensions with integers first (found "
                                           f"{key[:n]!r})")
        for k, size in zip(key[:n], self.blocks):
            if not 0 <= k < size:
                fail(f"{self.tile.name}[...]", f"block {k} of {size}")
        rest = key[n:]
        if not rest or rest[0] is Ellipsis:
            return (slice(None),) + tuple(key[:n]) + tuple(rest)
        return (rest[0],) + tuple(key[:n]) + tuple(rest[1:])

    def __getitem__(self, key):
        return self.tile[self._key(key)]

    def __setitem__(self, key, value):
        self.tile[self._key(key)] = value

    def __repr__(self):
        return f"{self.tile.buffer} tile {self.tile.name} of blocks {self.shape} {self.dtype.name}"


# The tile operators (+ - * /, +=, tile[...] = ..., broadcast_to) are nki.language's functions.
# language registers itself here when it is imported, so that the dependency runs one way
# (language imports the tracer, never the reverse).
_language = None


def register_language(module):
    global _language
    _language = module


def _nl():
    if _language is None:
        raise RuntimeError("ncore.nki.language is not imported: import ncore.nki (or neuronxcc.nki after "
                           "alias_neuronxcc()) before tracing")
    return _language


class View:
    """An indexed HBM tensor or tile: what loads, stores and engine instructions take."""

    def __init__(self, array, region):
        self.array, self.region = array, region

    @property
    def shape(self):
        return self.region.shape

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def exprs(self):
        return self.region.exprs

    def __getitem__(self, key):
        return View(self.array, self.region.index(key, self.array.shape, self.array))  # named on failure only

    # Arithmetic on tiles is NKI's nl functions.
    def _nl(self, name, *args):
        return getattr(_nl(), name)(*args)

    def __add__(self, o): return self._nl("add", self, o)
    def __radd__(self, o): return self._nl("add", o, self)
    def __sub__(self, o): return self._nl("subtract", self, o)
    def __rsub__(self, o): return self._nl("subtract", o, self)
    def __mul__(self, o): return self._nl("multiply", self, o)
    def __rmul__(self, o): return self._nl("multiply", o, self)
    def __truediv__(self, o): return self._nl("divide", self, o)
    def __rtruediv__(self, o): return self._nl("divide", o, self)
    def __neg__(self): return self._nl("multiply", self, -1.0)

    def __iadd__(self, o):
        return _nl().accumulate_into(self, o)

    # A tile's values are not known while the kernel is traced: Python decisions on them would
    # silently take one branch, so they are refused.
    def _no_value(self, *args):
        fail("tile in a Python condition or comparison", "a tile's values are not known while ncore traces the "
                                                         "kernel; compute with nl operations instead")

    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _no_value
    __hash__ = object.__hash__

    def __setitem__(self, key, value):
        target = self[key]
        if isinstance(target.array, HbmTensor):
            fail("hbm[...] = ...", "store to HBM with nl.store(dst, value)")
        _nl().copy_into(target, value, "tile[...] = ...")

    def broadcast_to(self, shape):
        return _nl().broadcast_to(self, shape)

    def __repr__(self):
        return f"view {self.shape} of {self.array!r}"


def contiguous_offset(view):
    """The element offset (into its base tensor, for a reshape or an access pattern) of a view
    that is one contiguous run of its tensor's elements, else None."""
    arr = view.array
    strides = arr.elem_strides
    first = sum(st * a for (a, _, _), st in zip(view.region.dims, strides))
    last = sum(st * (a + (n - 1) * k) for (a, n, k), st in zip(view.region.dims, strides))
    if last - first + 1 != math.prod(view.shape):
        return None
    return first + getattr(arr, "element_offset", 0)


def as_view(x, call, what="operand", masked=False, transposed_ok=False):
    """x as a View; unless a mask will still narrow it (masked), every index must be inside. A
    view whose index expressions swap its dimensions only where transposed_ok (loads, stores)."""
    if isinstance(x, Array):
        return x.view()
    if isinstance(x, BlockTile):
        fail(call, f"{what}: {x!r}: index its block dimensions to take one of its tiles")
    if not isinstance(x, View):
        fail(call, f"{what}: expected a tile or tensor, found {type(x).__name__}")
    if x.region.transposed and not transposed_ok:
        fail(call, f"{what}: its index expressions swap its dimensions (a transpose through indexing), which ncore "
                   "takes in nl.load and nl.store only; use nl.transpose")
    if not masked:
        check_bounds(x, call, what)
    return x


def squeeze_to(view, shape, call, what):
    """The view with extra dimensions of size 1 dropped so that its shape is `shape` (a [P, 1]
    dst for a [P] result); a tile keeps its partition dimension."""
    if view.shape == tuple(shape):
        return view
    kept = list(view.region.kept)
    want = list(shape)
    for n, d in enumerate([d for d, k in enumerate(kept) if k]):
        size = view.region.dims[d][1]
        if want and size == want[0]:
            want.pop(0)
        elif size == 1 and (n > 0 or isinstance(view.array, HbmTensor)):
            kept[d] = False
        else:
            break
    result = View(view.array, Region(list(view.region.dims), kept))
    if result.shape != tuple(shape):
        fail(call, f"{what} has shape {view.shape}, the result {tuple(shape)}: expected the same shape (up to "
                   "dimensions of size 1)")
    return result


def untransposed(view):
    """A view whose index expressions swap its dimensions, in the array's order."""
    return View(view.array, Region(list(view.region.dims), list(view.region.kept)))


def check_bounds(view, call, what="operand"):
    if isinstance(view.region, APRegion) or view.region.inside:
        return  # checked when tile.ap (or an index inside the array) made it
    for d, ((start, count, step), size) in enumerate(zip(view.region.dims, view.array.shape)):
        if start < 0 or start + (count - 1) * step >= size:
            fail(call, f"{what}: dimension {d} of {view.array!r}: indices {start}..{start + (count - 1) * step} "
                       f"leave 0..{size - 1} (index inside the array, or give a mask)")


class Op:
    """One instruction for a queue (pe, act, dve, sp). reads and writes are Views; `fields` are
    the assembly fields the compiler completes with addresses."""

    def __init__(self, queue, opcode, reads, writes, **fields):
        self.queue, self.opcode, self.reads, self.writes, self.fields = queue, opcode, reads, writes, fields
        self.where = "?"
        self.index = -1
        self.program = 0
        self.removed = False  # dropped by a later call (Trace.live_ops)

    def __repr__(self):
        return f"{self.opcode} ({self.where})"
