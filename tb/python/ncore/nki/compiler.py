"""From a traced kernel (tracer.py) to an ncore program (tests/programs/README.md, "Assembly").
The passes, in order:

  1. Dead loads go: loads into tiles nothing reads (broadcast_to loads its source again).
  2. HBM: the kernel's inputs, then its outputs, each at a 4 KiB boundary.
  3. Loads are hoisted ahead of earlier work they have no hazard with, past at most two stores
     (DmaPolicy.hoist_depth): the next iterations' loads issue before this one's store waits.
  4. Tiles: each SBUF (PSUM) tile lives from the first instruction that touches it to the last,
     and takes bytes [addr, addr + its free size) of every partition (a PSUM tile inside one
     2 KiB bank). Space is handed out first-fit from a cursor that moves on, so a freed range is
     reused as late as possible (which leaves the engines the most overlap). A kernel whose live
     tiles do not fit gets an error naming the tile and the live ones.
  5. DMA: each load and store becomes descriptors (32-byte bursts: rows must be multiples of 32
     bytes at 32-byte addresses). One that a descriptor cannot walk (more than two free
     dimensions, rows over 64 KiB, more than 4095 planes) becomes a descriptor list in the
     program image and one dma_list. A transfer of at least 32 KiB is split by partitions in up to
     16 pieces of at least 16 KiB on consecutive DMA engines (consecutive engines sit on
     different DMA ports); each piece goes to the next engine, round-robin over the 16. The split
     was chosen by measurement (tb/python/README.md, "Benchmark").
  6. Synchronisation: each instruction may signal its queue's semaphore (pe, act, dve: they
     complete in order) or its DMA engine's (each engine completes in order). An instruction
     that reads or writes bytes an earlier instruction of another queue or engine writes (or
     writes bytes it reads) waits for that instruction's count. Vector clocks drop every wait a
     queue already knows to be met; a second wait goes on a `nop` before it. A signal on pe,
     act or dve is a fence (its queue holds until the engine drains), so their instructions
     signal only when something waits for them; DMAs and collectives always signal.
  7. Text: one line per instruction, commented with the kernel's line; on a chip, each core's
     queues under `.if CORE==k` (compile_trace).
"""
import math

from . import _backend  # the passes whose work grows fastest, in C++ (tb/python/backend)
from .tracer import APRegion, HbmTensor, KernelError

SBUF_PARTITION = 229376   # bytes per SBUF partition (the DMA's partition stride)
PSUM_PARTITION = 16384    # bytes per PSUM partition: 8 banks ...
PSUM_BANK = 2048          # ... of 2 KiB
DMA_ENGINES = 16
DMA_SPLIT = 16            # pieces a transfer's partitions are split in (up to one per engine) ...
DMA_PIECE_BYTES = 16384   # ... when it moves at least this much per piece
ENGINE_QUEUES = ("pe", "act", "dve")
SEMAPHORE_MAX = 65535     # a semaphore counts to this (16 bits); each instruction adds 1 to its own:
                          # past it the program starts a new epoch (Compiler.synchronise)
HOIST_WINDOW = 64         # a load moves past at most this many operations (ncore's choice: bounds the
                          # compile's work and the tiles a hoisted load keeps alive)
MAX_ROW_BYTES = 65536     # a DMA descriptor's row (bytes field) ...
MAX_PLANES = 4095         # ... and planes (count2): longer transfers become descriptor lists


class TilesDoNotFit(KernelError):
    """The live tiles need more SBUF or PSUM than a partition has."""


class Instr:
    """One line of the program: queue, text (fields), the semaphore and count it signals, and
    the byte boxes it reads and writes (_box: space, first partition, end partition, first byte,
    end byte, and for HBM the exact byte runs)."""

    def __init__(self, queue, text, reads, writes, where, engine=None):
        self.queue, self.text, self.reads, self.writes, self.where, self.engine = \
            queue, text, reads, writes, where, engine
        self.sem = None
        self.count = 0
        self.waits = []


def _box(view):
    """The bytes a view touches: (space, p0, p1, b0, b1[, runs]). HBM uses partition 0..1 and
    adds its exact byte runs, so that strided accesses that interleave do not conflict."""
    arr = view.array
    size = arr.dtype.size
    if isinstance(arr, HbmTensor):
        dims = view.region.dims
        strides = arr.elem_strides
        lo = sum(s * st for (s, _, _), st in zip(dims, strides))
        hi = sum((s + (n - 1) * step) * st for (s, n, step), st in zip(dims, strides))
        walks = [(n, step * st * size) for (_, n, step), st in zip(dims, strides) if n > 1]
        row = size
        while walks and walks[-1][1] == row:  # the contiguous innermost dimensions
            row *= walks.pop()[0]
        return _hbm_box(arr.addr + lo * size, walks, row, arr.addr + (hi + 1) * size)
    if isinstance(view.region, APRegion):
        r = view.region
        lo = r.offset + sum(min(0, (n - 1) * st) for st, n in r.ap)
        hi = r.offset + sum(max(0, (n - 1) * st) for st, n in r.ap)
        return (arr.buffer, r.partition, r.partition + r.partitions, arr.addr + lo * size, arr.addr + (hi + 1) * size)
    p0, pn, pstep = view.region.dims[0]
    lo, hi, _ = _tile_free(view)
    return (arr.buffer, p0, p0 + (pn - 1) * pstep + 1, arr.addr + lo * size, arr.addr + (hi + 1) * size)


def _tile_free(view):
    """A tile view's free elements in a partition: (first, last, [[stride, count], ...] of the
    dimensions it keeps). Kept on the view: views do not change, and the compiler asks often."""
    free = view.__dict__.get("_free")
    if free is None:
        dims, kept, strides = view.region.dims, view.region.kept, view.array.elem_strides
        lo = hi = 0
        ap = []
        for d in range(1, len(dims)):
            start, count, step = dims[d]
            lo += start * strides[d]
            hi += (start + (count - 1) * step) * strides[d]
            if kept[d]:
                ap.append([step * strides[d], count])
        free = view._free = (lo, hi, ap or [[1, 1]])
    return free


def _hbm_box(base, walks, row, end=None):
    """An HBM access of rows of `row` bytes from `base`, walked by [(count, stride bytes), ...]:
    its first and end byte, and the walk itself (_backend.overlap lists the byte runs only when
    an overlap test needs them, so a box takes the same memory whatever its rows)."""
    walks = tuple((count, stride) for count, stride in walks)
    first = base + sum(min(0, (count - 1) * stride) for count, stride in walks)
    last = base + sum(max(0, (count - 1) * stride) for count, stride in walks) + row
    return ("hbm", 0, 1, first, end if end is not None else last, (base, walks, row))


_overlap = _backend.overlap  # whether two boxes share bytes (for HBM, whether their byte runs meet)


def _access_pattern(view, call_where):
    """(space, start partition, partitions, byte address, [[stride, count], ...] outermost first)."""
    arr = view.array
    if isinstance(arr, HbmTensor):
        raise KernelError(f"{call_where}: an engine operand in HBM: load it into SBUF first")
    if isinstance(view.region, APRegion):  # tile.ap(...): the pattern as the kernel gave it
        r = view.region
        return arr.buffer, r.partition, r.partitions, arr.addr + r.offset * arr.dtype.size, \
            [[st, n] for st, n in r.ap] or [[1, 1]]
    dims, kept = view.region.dims, view.region.kept
    p0, pn, pstep = dims[0]
    if not kept[0]:
        raise KernelError(f"{call_where}: the partition dimension is indexed by a number: engines take a "
                          "partition range (index with a slice)")
    if pstep != 1 and pn > 1:
        raise KernelError(f"{call_where}: partitions with step {pstep}: engines take consecutive partitions")
    offset, _, ap = _tile_free(view)
    return arr.buffer, p0, pn, arr.addr + offset * arr.dtype.size, ap


def _stretch(ap, shape, out_shape):
    """An operand's pattern over the result's free shape: dimensions of size 1 repeat (stride 0)."""
    ap = [list(a) for a in ap]
    free = list(shape[1:]) + [1] * (len(out_shape) - len(shape))
    out_free = list(out_shape[1:])
    while len(ap) < len(out_free):
        ap.append([0, 1])
    return [[0, m] if n == 1 and m != 1 else [a[0], m] for a, n, m in zip(ap, free, out_free)] or [[1, 1]]


def _merge(ap):
    """Adjacent dimensions that walk memory contiguously, merged (fewer than 4 dimensions)."""
    out = []
    for stride, count in ap:
        if count == 1 and out:
            continue
        if out and out[-1][0] == stride * count:
            out[-1] = [stride, out[-1][1] * count]
        else:
            out.append([stride, count])
    return out or [[1, 1]]


def _ap_text(ap):
    return "[" + ",".join(f"[{s},{c}]" for s, c in ap) + "]"


class DmaPolicy:
    """How the compiler hands out DMA work. The default is what the benchmark measured best
    (tb/python/README.md); `naive()` is what a first hand-written program does: every transfer
    whole, on DMA engine 0, in program order."""

    def __init__(self, engines=DMA_ENGINES, split=DMA_SPLIT, hoist_depth=2, store_engines=0):
        # store_engines > 0: stores go round-robin on the last store_engines engines and loads on
        # the others, so that no load waits in an engine's queue behind a store that waits for
        # results (each engine runs its descriptors in order).
        self.engines, self.split, self.hoist_depth, self.store_engines = engines, split, hoist_depth, store_engines

    def pool(self, store):
        """The engines a load (store) may use."""
        if not self.store_engines or self.store_engines >= self.engines:
            return list(range(self.engines))
        first_store = self.engines - self.store_engines
        return list(range(first_store, self.engines)) if store else list(range(first_store))

    @staticmethod
    def naive():
        return DmaPolicy(engines=1, split=1, hoist_depth=0)


class Compiler:
    def __init__(self, trace, kernel_name, policy=None):
        self.trace, self.kernel_name = trace, kernel_name
        self.policy = policy or DmaPolicy()
        self.instrs = []
        self.lists = 0  # descriptor lists made so far (their names)
        self.next_engine = {False: 0, True: 0}  # per direction (to HBM or not): the next in its pool
        self.input_suffix = ""  # the inputs' .npy files: NAME{suffix}.npy (a rank's: ".rR")
        self.inputs_zero = False  # a timing-only run: inputs declared init=zero, no .npy files
        self.drop_dead_loads()

    def hoist_loads(self, depth=2, spec=None):
        """Each load moves ahead of the operations before it that it has no hazard with, past at
        most `depth` stores and never past another load: the loads of the next iterations of a
        loop then issue before this one's store waits for its results (multiple buffering). Runs
        before tiles are placed, so its hazards are on tiles (by identity) and HBM bytes. `spec`:
        hoist_spec(self.trace.ops), when the caller has it already."""
        ops = self.trace.ops
        order = _backend.hoist_loads(spec if spec is not None else self.hoist_spec(ops), depth, HOIST_WINDOW)
        self.trace.ops = [ops[i] for i in order]
        for i, op in enumerate(self.trace.ops):
            op.index = i

    @staticmethod
    def hoist_spec(ops):
        """What _backend.hoist_loads needs of each operation: its kind (0 compute, 1 a load, 2
        another DMA copy) and per view touched, the array's identity (for HBM, the tensor whose
        bytes it names), whether it is written and for HBM the box of its bytes."""
        def touched(v, written):
            arr = v.array
            if arr.__class__ is not HbmTensor:
                return id(arr), written, None
            # a reshape or an access pattern is another name for its tensor's bytes
            return id(arr.base if arr.base is not None else arr), written, _box(v)

        spec = []
        for op in ops:
            kind = 0 if op.opcode != "dma_copy" else 1 if op.fields["dir"] == "hbm_to_sbuf" else 2
            spec.append((kind, [touched(v, False) for v in op.reads] + [touched(v, True) for v in op.writes]))
        return spec

    def drop_dead_loads(self):
        """Loads into tiles nothing reads (the one-partition tile broadcast_to loaded again)."""
        read = {id(v.array) for op in self.trace.ops for v in op.reads}
        self.trace.ops = [op for op in self.trace.ops
                          if not (op.opcode == "dma_copy" and op.fields["dir"] == "hbm_to_sbuf" and
                                  id(op.fields["tile"].array) not in read)]
        for i, op in enumerate(self.trace.ops):
            op.index = i

    # -- 1. HBM ---------------------------------------------------------------------------------
    def place_hbm(self, base=0, window=1 << 32):
        """Every HBM tensor at a 4 KiB boundary from `base`, inside `window` bytes (a rank of a
        system run has its own window of its chip's HBM)."""
        addr = base
        packs = {id(x): pack for pack in getattr(self.trace, "hbm_packs", []) for x in pack}
        placed = set()
        for t in self.trace.hbm:
            if id(t) in placed:
                continue
            # a pack (a coalesced collective's tensors): one after the other at 32-byte boundaries
            group = packs.get(id(t), [t])
            at = addr
            for x in group:
                x.addr = at
                placed.add(id(x))
                at += -(-math.prod(x.shape) * x.dtype.size // 32) * 32
            addr += -(-(at - addr) // 4096) * 4096
        if addr - base > window:
            raise KernelError(f"the kernel's HBM tensors need {addr - base} bytes, the window of HBM it has is "
                              f"{window} bytes")

    # -- 2. tiles -------------------------------------------------------------------------------
    def place_tiles(self, touched=None):
        """Each tile that an operation touches gets bytes [addr, addr + its free bytes rounded up
        to 32) of every partition, from the first operation that touches it to the last (the
        work is _backend.place_tiles's). `touched`: tiles_touched(), when the caller has it."""
        tiles = self.trace.tiles
        touched = touched if touched is not None else self.tiles_touched()
        sizes = [(t.buffer == "psum", -(-t.free_bytes // 32) * 32) for t in tiles]
        addrs, failed = _backend.place_tiles(sizes, [touched[id(op)] for op in self.trace.ops], SBUF_PARTITION,
                                             PSUM_PARTITION, PSUM_BANK)
        if failed is not None:
            tile, capacity = tiles[failed[0]], PSUM_PARTITION if tiles[failed[0]].buffer == "psum" else SBUF_PARTITION
            live = sorted(failed[1], key=lambda i: addrs[i])
            used = ", ".join(f"{x.name} {x.shape} {x.dtype.name} ({x.created})" for x in (tiles[i] for i in live[:8]))
            raise TilesDoNotFit(f"{tile.created}: {tile.buffer} tile {tile.name} {tile.shape} {tile.dtype.name} "
                                f"needs {sizes[failed[0]][1]} bytes per partition; {capacity} bytes per partition "
                                f"hold {len(live)} live tiles: {used}{' ...' if len(live) > 8 else ''}")
        for tile, addr in zip(tiles, addrs):
            if addr >= 0:
                tile.addr = addr

    def tiles_touched(self):
        """Per operation (by identity): the indices in trace.tiles of the tiles it touches."""
        index = {id(t): i for i, t in enumerate(self.trace.tiles)}
        return {id(op): [i for i in (index.get(id(v.array)) for v in op.reads + op.writes) if i is not None]
                for op in self.trace.ops}

    # -- 3. instructions ------------------------------------------------------------------------
    def lower(self):
        for op in self.trace.ops:
            if op.queue == "sp" and op.opcode == "dma_transpose":
                self._lower_dma_transpose(op)
            elif op.queue == "sp":
                self._lower_dma(op)
            elif op.queue == "cc" and op.opcode == "core_barrier":
                self.instrs.append(Instr("cc", "core_barrier group=pair", [_box(v) for v in op.reads],
                                         [_box(v) for v in op.writes], op.where))
            elif op.queue == "cc":
                f = op.fields
                addr = {k: _box(f[k])[3] for k in ("src", "dst")}  # the runs' first bytes
                nbytes = f["bytes"]
                if f.get("packs"):  # a coalesced all_reduce: the packed run, to the 4 KiB it occupies
                    first, last = f["packs"][0][0], f["packs"][0][-1]
                    nbytes = -(-(last.addr + math.prod(last.shape) * last.dtype.size - first.addr) // 4096) * 4096
                text = (f"{op.opcode} dtype={f['dtype'].isa} src={addr['src']:#x} dst={addr['dst']:#x} "
                        f"bytes={nbytes} group={f['group']}")
                self.instrs.append(Instr("cc", text, [_box(v) for v in op.reads], [_box(v) for v in op.writes],
                                         op.where))
            else:
                text = getattr(self, "_text_" + op.opcode)(op)
                self.instrs.append(Instr(op.queue, text, [_box(v) for v in op.reads], [_box(v) for v in op.writes],
                                         op.where))

    def _lower_dma(self, op):
        hbm, tile, to_hbm = op.fields["hbm"], op.fields["tile"], op.fields["dir"] == "sbuf_to_hbm"
        arr = hbm.array
        size = arr.dtype.size
        hdims = [d for d, k in zip(hbm.region.dims, hbm.region.kept) if k]
        tdims = tile.region.dims
        if hbm.shape != tile.shape:
            raise KernelError(f"{op.where}: the HBM access has shape {hbm.shape}, the tile {tile.shape}")
        hstrides = arr.elem_strides
        hkept = [st for st, k in zip(hstrides, hbm.region.kept) if k]
        base = arr.addr + size * sum(s * st for (s, _, _), st in zip(hbm.region.dims, hstrides))
        # Per partition of the tile: the free elements. Rows (innermost, contiguous on both sides)
        # and planes (the next free dimension) make one descriptor per partition range.
        tstrides = [math.prod(tile.array.shape[d + 1:]) for d in range(len(tile.array.shape))]
        # The tile's free dimensions the view keeps (a block tile's block index is one it drops).
        tfree = [(d, st) for d, st, k in zip(tdims[1:], tstrides[1:], tile.region.kept[1:]) if k]
        free = list(zip(hdims[1:], hkept[1:], [d for d, _ in tfree], [st for _, st in tfree]))
        inner = 1
        outer = []
        for (hs, n, hstep), hst, (ts, tn, tstep), tst in reversed(free):
            if not outer and hstep * hst == inner and tstep * tst == inner:
                inner *= n
            else:
                outer.insert(0, (n, hstep * hst, tstep * tst))
        row_bytes = inner * size
        (p_start, pn, p_step), p_hst = tdims[0], hdims[0][2] * hkept[0]
        tile_offset = tile.array.addr + size * sum(s * st for (s, _, _), st in zip(tdims[1:], tstrides[1:]))
        for what, value in (("a row", row_bytes), ("its first byte", base), ("the partition stride", p_hst * size)):
            if value % 32 and not (what == "the partition stride" and pn == 1):
                raise KernelError(f"{op.where}: ncore's DMA moves whole 32-byte bursts: {what} of the HBM access "
                                  f"is {value} bytes, expected a multiple of 32 ({arr!r}, shape {hbm.shape})")
        if tile_offset % 32:
            raise KernelError(f"{op.where}: the SBUF side starts at byte {tile_offset} of its partition, expected a "
                              "multiple of 32 (index the tile at a 32-byte boundary)")
        for n, hstep, tstep in outer:
            if (hstep * size) % 32 or (tstep * size) % 32:
                raise KernelError(f"{op.where}: ncore's DMA moves whole 32-byte bursts: a free dimension steps "
                                  f"{hstep * size} bytes in HBM and {tstep * size} in SBUF, expected multiples of 32")
        # A descriptor walks rows (partitions) and planes (the innermost outer dimension), rows
        # of up to 64 KiB and up to 4095 planes. Anything longer (more free dimensions, longer
        # rows, more planes) becomes a descriptor list in the image: one entry per index of the
        # other dimensions, per 64 KiB piece of a row and per 4095 planes.
        planes, plane_h, plane_t = outer[-1] if outer else (1, 0, 0)
        enumerated = [(n, h * size, t * size) for n, h, t in outer[:-1]]
        cuts = [(k, min(MAX_ROW_BYTES, row_bytes - k)) for k in range(0, row_bytes, MAX_ROW_BYTES)]
        plane_runs = [(k, min(MAX_PLANES, planes - k)) for k in range(0, planes, MAX_PLANES)]
        offsets = [(0, 0)]
        for n, h, t in enumerated:
            offsets = [(ho + i * h, to + i * t) for ho, to in offsets for i in range(n)]
        total = pn * planes * row_bytes * math.prod(n for n, _, _ in enumerated)
        pool = self.policy.pool(to_hbm)
        pieces = max(1, min(self.policy.split, len(pool), pn, total // DMA_PIECE_BYTES))
        for k in range(pieces):
            lo, hi = pn * k // pieces, pn * (k + 1) // pieces
            engine = pool[self.next_engine[to_hbm] % len(pool)]
            self.next_engine[to_hbm] += 1
            hbm_addr = base + lo * p_hst * size
            sbuf_addr = (p_start + lo * p_step) * SBUF_PARTITION + tile_offset
            entries = []
            for ho, to in offsets:
                for p0, pcount in plane_runs:
                    for c0, cbytes in cuts:
                        fields = (f"dir={op.fields['dir']} hbm_addr={hbm_addr + ho + p0 * plane_h * size + c0:#x} "
                                  f"sbuf_addr={sbuf_addr + to + p0 * plane_t * size + c0:#x} bytes={cbytes} "
                                  f"count1={hi - lo} hbm_stride1={p_hst * size} sbuf_stride1={p_step * SBUF_PARTITION}")
                        if pcount > 1:
                            fields += f" count2={pcount} hbm_stride2={plane_h * size} sbuf_stride2={plane_t * size}"
                        entries.append(fields)
            p0 = p_start + lo * p_step
            span = max(to for _, to in offsets) + ((planes - 1) * plane_t) * size + row_bytes
            tbox = (tile.array.buffer, p0, p_start + (hi - 1) * p_step + 1, tile_offset, tile_offset + span)
            walks = [(n, h) for n, h, _ in enumerated] + [(planes, plane_h * size), (hi - lo, p_hst * size)]
            hbox = _hbm_box(hbm_addr, [(n, h) for n, h in walks if n > 1], row_bytes)
            reads, writes = ([tbox], [hbox]) if to_hbm else ([hbox], [tbox])
            if len(entries) == 1:
                text = f"dma_copy engine={engine} " + entries[0]
            else:
                self.lists += 1
                name = f"list{self.lists}"
                text = "\n".join([f".list {name}  # {op.where}"] + ["  descriptor " + e for e in entries] +
                                  [".endlist", f"dma_list engine={engine} list={name}"])
            self.instrs.append(Instr("sp", text, reads, writes, op.where, engine))

    def _lower_dma_transpose(self, op):
        """HBM [R, C] -> SBUF [C, R], 2-byte elements (rtl/dma/README.md, "Transpose"): element c of
        row r lands in partition p0 + c at byte 2r. One descriptor per 16-row block, on the load
        engines round-robin (each a block of its own)."""
        src, dst = op.fields["hbm"], op.fields["tile"]
        arr, size = src.array, src.dtype.size
        strides = arr.elem_strides
        (r0, rows, rstep), (c0, cols, cstep) = [(s0, n, k * st) for (s0, n, k), st, kept
                                                 in zip(src.region.dims, strides, src.region.kept) if kept]
        base = arr.addr + size * sum(s0 * st for (s0, _, _), st in zip(src.region.dims, strides))
        space, p0, pn, tile_addr, ap = _access_pattern(dst, op.where)
        if cstep != 1 or (cols * size) % 32 or base % 32 or (rstep * size) % 32:
            raise KernelError(f"{op.where}: dma_transpose: the HBM rows must be contiguous whole 32-byte bursts at "
                              f"32-byte steps (row of {cols * size} bytes at a step of {rstep * size})")
        if _merge(ap) != [[1, rows]] or (tile_addr % SBUF_PARTITION) % 32:
            raise KernelError(f"{op.where}: dma_transpose: the SBUF tile must hold the {rows} rows contiguously in "
                              "each partition, from a 32-byte boundary")
        pool = self.policy.pool(False)
        for b in range(0, rows, 16):
            engine = pool[self.next_engine[False] % len(pool)]
            self.next_engine[False] += 1
            hbm_addr, sbuf_addr = base + b * rstep * size, p0 * SBUF_PARTITION + tile_addr + 2 * b
            text = (f"dma_transpose engine={engine} hbm_addr={hbm_addr:#x} sbuf_addr={sbuf_addr:#x} "
                    f"bytes={cols * size} count1={min(16, rows - b)} hbm_stride1={rstep * size}")
            hbox = _hbm_box(hbm_addr, [(min(16, rows - b), rstep * size)] if rows - b > 1 else [], cols * size)
            tbox = (dst.array.buffer, p0, p0 + pn, tile_addr + 2 * b, tile_addr + 2 * (b + min(16, rows - b)))
            self.instrs.append(Instr("sp", text, [hbox], [tbox], op.where, engine))

    def _operand(self, name, view, op, out_shape=None):
        space, p0, pn, addr, ap = _access_pattern(view, op.where)
        if out_shape is not None:
            ap = _stretch(ap, view.shape, out_shape)
        return space, p0, pn, f"{name}={space}:{addr:#x} {name}_ap={_ap_text(_merge(ap))}"

    def _partitions(self, op, *operands):
        starts = {(o[1], o[2]) for o in operands}
        if len(starts) != 1:
            raise KernelError(f"{op.where}: {op.opcode}: operands on partitions "
                              f"{sorted(f'{p}..{p + n - 1}' for p, n in starts)}: engines work lane by lane, so "
                              "every operand takes the same partitions")
        p0, pn = starts.pop()
        return f"start_partition={p0} partitions={pn}" if p0 else f"partitions={pn}"

    def _types(self, op, *names):
        return " ".join(f"{n}={op.fields[n].isa}" for n in names)

    def _text_tensor_tensor(self, op):
        out = op.fields["dst"].shape
        a = self._operand("src0", op.fields["src0"], op, out)
        b = self._operand("src1", op.fields["src1"], op, out)
        d = self._operand("dst", op.fields["dst"], op)
        return (f"tensor_tensor op0={op.fields['op0']} {self._types(op, 'in0', 'in1', 'out')} "
                f"{self._partitions(op, a, b, d)} {a[3]} {b[3]} {d[3]}")

    @staticmethod
    def _scalar(value):
        return repr(float(value)) if not isinstance(value, int) else str(value)

    def _scalar_field(self, op, k):
        """s0=/s1=: a number, or the SBUF address of one FP32 word per partition."""
        v = op.fields[k]
        if isinstance(v, (int, float)):
            return f"{k}={self._scalar(v)}"
        _, _, _, addr, _ = _access_pattern(v, op.where)
        return f"{k}=sbuf:{addr:#x}"

    def _text_tensor_scalar(self, op):
        a, d = self._operand("src0", op.fields["src0"], op), self._operand("dst", op.fields["dst"], op)
        parts = [f"tensor_scalar op0={op.fields['op0']} {self._scalar_field(op, 's0')}"]
        if op.fields.get("reverse0"):
            parts.append("reverse0=1")
        if op.fields.get("op1"):
            parts.append(f"op1={op.fields['op1']} {self._scalar_field(op, 's1')}")
            if op.fields.get("reverse1"):
                parts.append("reverse1=1")
        parts.append(f"{self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} {a[3]} {d[3]}")
        return " ".join(parts)

    def _text_tensor_tensor_scan(self, op):
        a = self._operand("src0", op.fields["src0"], op)
        b = self._operand("src1", op.fields["src1"], op)
        d = self._operand("dst", op.fields["dst"], op)
        return (f"tensor_tensor_scan op0={op.fields['op0']} op1={op.fields['op1']} {self._scalar_field(op, 's0')} "
                f"{self._types(op, 'in0', 'in1', 'out')} {self._partitions(op, a, b, d)} {a[3]} {b[3]} {d[3]}")

    def _text_tensor_copy(self, op):
        a = self._operand("src0", op.fields["src0"], op, op.fields["dst"].shape)  # size-1 dimensions repeat
        d = self._operand("dst", op.fields["dst"], op)
        return f"tensor_copy {self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} {a[3]} {d[3]}"

    def _text_tensor_reduce(self, op):
        src = op.fields["src0"]
        space, p0, pn, addr, ap = _access_pattern(src, op.where)
        n = op.fields["reduce_axes"]
        kept, reduced = _merge(ap[:len(ap) - n]) if len(ap) > n else [], _merge(ap[len(ap) - n:])
        if len(reduced) != 1:
            raise KernelError(f"{op.where}: the reduced axes are not contiguous in the tile: ncore's tensor_reduce "
                              "folds one innermost dimension")
        a = (space, p0, pn, f"src0={space}:{addr:#x} src0_ap={_ap_text(kept + reduced)}")
        d = self._operand("dst", op.fields["dst"], op)
        return (f"tensor_reduce op0={op.fields['op0']} {self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} "
                f"{a[3]} {d[3]}")

    def _text_memset(self, op):
        d = self._operand("dst", op.fields["dst"], op)
        return f"memset value={self._scalar(op.fields['value'])} {self._types(op, 'out')} {self._partitions(op, d)} {d[3]}"

    def _affine_text(self, op, d_view):
        """offset=, channel_multiplier= and NKI's pattern= for a [P, F] destination."""
        _, _, _, _, ap = _access_pattern(d_view, op.where)
        ap = _merge(ap)
        if len(ap) != 1:
            raise KernelError(f"{op.where}: {op.opcode}: the tile's free axis must be one run of elements")
        f = op.fields
        return (f"offset={f['offset']} channel_multiplier={f['channel_multiplier']} "
                f"pattern=[[{f['step']},{ap[0][1]}]]")

    def _text_iota(self, op):
        d = self._operand("dst", op.fields["dst"], op)
        return (f"iota {self._affine_text(op, op.fields['dst'])} {self._types(op, 'out')} {self._partitions(op, d)} "
                f"{d[3]}")

    def _text_affine_select(self, op):
        a, d = self._operand("src0", op.fields["src0"], op), self._operand("dst", op.fields["dst"], op)
        return (f"affine_select cmp={op.fields['cmp']} {self._affine_text(op, op.fields['dst'])} "
                f"value={self._scalar(op.fields['value'])} {self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} "
                f"{a[3]} {d[3]}")

    def _text_bn_stats(self, op):
        a, d = self._operand("src0", op.fields["src0"], op), self._operand("dst", op.fields["dst"], op)
        return f"{op.opcode} {self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} {a[3]} {d[3]}"

    _text_bn_aggr = _text_bn_stats

    def _text_scalar_tensor_tensor(self, op):
        a = self._operand("src0", op.fields["src0"], op)
        b = self._operand("src1", op.fields["src1"], op)
        d = self._operand("dst", op.fields["dst"], op)
        rev = "".join(f" reverse{k}=1" for k in (0, 1) if op.fields[f"reverse{k}"])
        return (f"scalar_tensor_tensor op0={op.fields['op0']} {self._scalar_field(op, 's0')} op1={op.fields['op1']}{rev} "
                f"{self._types(op, 'in0', 'in1', 'out')} {self._partitions(op, a, b, d)} {a[3]} {b[3]} {d[3]}")

    def _text_tensor_scalar_reduce(self, op):
        a, d = self._operand("src0", op.fields["src0"], op), self._operand("dst", op.fields["dst"], op)
        _, _, _, acc, _ = _access_pattern(op.fields["acc"], op.where)
        rev = " reverse0=1" if op.fields["reverse0"] else ""
        return (f"tensor_scalar_reduce op0={op.fields['op0']} {self._scalar_field(op, 's0')}{rev} op1={op.fields['op1']} "
                f"acc_enable=1 acc_addr={acc:#x} {self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} "
                f"{a[3]} {d[3]}")

    def _text_activation(self, op):
        a, d = self._operand("src0", op.fields["src0"], op), self._operand("dst", op.fields["dst"], op)
        parts = [f"activation func={op.fields['func']}"]
        for k in ("scale", "bias"):
            v = op.fields[k]
            if v is None:
                continue
            if isinstance(v, (int, float)):
                parts.append(f"{k}={self._scalar(v)}")
            else:
                space, p0, pn, addr, _ = _access_pattern(v, op.where)
                parts.append(f"{k}=sbuf:{addr:#x}")
        parts.append(f"{self._types(op, 'in0', 'out')} {self._partitions(op, a, d)} {a[3]} {d[3]}")
        if "acc" in op.fields:
            _, _, _, addr, _ = _access_pattern(op.fields["acc"], op.where)
            parts.append(f"acc_enable=1 acc_addr={addr:#x}")
        return " ".join(parts)

    def _text_nc_matmul(self, op):
        st, mv, dst = op.fields["stationary"], op.fields["moving"], op.fields["dst"]
        parts = []
        for name, v in (("stationary", st), ("moving", mv)):
            space, p0, pn, addr, ap = _access_pattern(v, op.where)
            ap = _merge(ap)
            if space != "sbuf" or p0 != 0 or len(ap) != 1:
                raise KernelError(f"{op.where}: nc_matmul: the {name} must be an SBUF tile from partition 0 with one "
                                  f"free dimension at a fixed stride (found {space}, partition {p0}, pattern {ap})")
            parts.append((addr, ap[0][0] * v.dtype.size, pn, ap[0][1]))
        (st_addr, st_stride, k, m), (mv_addr, mv_stride, k2, n) = parts
        space, p0, pn, addr, ap = _access_pattern(dst, op.where)
        if space != "psum" or p0 != 0 or _merge(ap) != [[1, n]] or pn != m:
            raise KernelError(f"{op.where}: nc_matmul writes [M, N] = [{m}, {n}] to PSUM from partition 0, contiguous "
                              f"(found {space}, partitions {p0}..{p0 + pn - 1}, pattern {ap})")
        elem = dst.dtype.size
        if addr // PSUM_BANK != (addr + n * elem - 1) // PSUM_BANK:
            raise KernelError(f"{op.where}: nc_matmul's result [{m}, {n}] crosses a PSUM bank (2 KiB per partition)")
        text = (f"nc_matmul dtype={st.dtype.isa} moving_dtype={mv.dtype.isa} k={k} m={m} n={n} "
                f"stationary={st_addr:#x} moving={mv_addr:#x} stationary_stride={st_stride} moving_stride={mv_stride} "
                f"psum_bank={addr // PSUM_BANK} psum_offset={(addr % PSUM_BANK) // elem} "
                f"accumulate={op.fields['accumulate']}")
        return text + (" transpose=1" if op.fields["transpose"] else "")

    # -- 4. synchronisation ---------------------------------------------------------------------
    def synchronise(self):
        """Each instruction waits for the newest earlier instruction of every other semaphore it
        has a read/write hazard with, unless its queue already knows that one completed (vector
        clocks). Earlier instructions are found through an index of the bytes they touched (per
        64 KiB of HBM; per 16 partitions and 2 KiB of SBUF and PSUM), per semaphore, so the work
        grows with the program, not its square. Epochs begin where a semaphore would pass
        SEMAPHORE_MAX. The work is _backend.synchronise's (C++)."""
        for seq, ins in enumerate(self.instrs):
            ins.seq = seq
        done, self.epochs = _backend.synchronise([(i.queue, i.engine, i.reads, i.writes) for i in self.instrs],
                                                 SEMAPHORE_MAX)
        # self.epochs: (position in self.instrs, each semaphore's final count) of each epoch's end
        for ins, (sem, count, waits) in zip(self.instrs, done):
            ins.sem, ins.count, ins.waits = sem, count, waits

    # -- 5. the program -------------------------------------------------------------------------
    def header(self, source, cores=1):
        where = f" on the {cores} cores of a chip (program p on core p % {cores})" if cores > 1 else ""
        lines = [f"# {self.kernel_name}, traced from {source} by ncore.nki (tb/python/README.md){where}.",
                 "# An instruction signals its queue's (or DMA engine's) semaphore when another queue waits for",
                 "# it; waits come from the read/write hazards between queues. The comment on each line is the",
                 "# kernel's line."]
        for t in self.trace.hbm:
            shape = "x".join(str(n) for n in t.shape)
            data = " init=zero" if self.inputs_zero else f" init=file:{t.name}{self.input_suffix}.npy"
            init = {"input": data, "scratch": ""}.get(t.role, " output")
            if t.output_arg:
                init += " output"
            lines.append(f".tensor {t.name} hbm addr={t.addr:#x} dtype={t.dtype.isa} shape={shape}{init}")
        sems = [f"{q}_done" for q in ENGINE_QUEUES + ("cc",)] + [f"dma{e}" for e in range(DMA_ENGINES)] + ["epoch"]
        return lines + [f".sem {s}" for s in sems]

    def queues(self):
        lines = []
        used = [q for q in ("sp", "pe", "act", "dve", "cc") if any(i.queue == q for i in self.instrs)]
        if len(self.epochs) * 2 * len(used) > SEMAPHORE_MAX:
            raise KernelError(f"{len(self.epochs)} epochs of {SEMAPHORE_MAX} signals: the epoch semaphore counts to "
                              f"{SEMAPHORE_MAX} too (use fewer, larger tiles)")
        for queue in used:
            lines.append(f".queue {queue}")
            epoch = 0
            for ins in self.instrs:
                while epoch < len(self.epochs) and ins.seq >= self.epochs[epoch][0]:
                    epoch += 1
                    lines += self._barrier(queue, epoch, self.epochs[epoch - 1][1], len(used))
                if ins.queue != queue:
                    continue
                for sem, value in ins.waits[:-1]:  # the waits an instruction has no room for
                    lines.append(f"nop wait={sem}>={value}  # {ins.where}")
                wait = f" wait={ins.waits[-1][0]}>={ins.waits[-1][1]}" if ins.waits else ""
                signal = f" signal={ins.sem}+=1" if ins.sem else ""
                lines.append(f"{ins.text}{wait}{signal}  # {ins.where}")
        return lines

    @staticmethod
    def _barrier(queue, epoch, final, queues):
        """The end of epoch `epoch` on one queue: it waits for every semaphore's final count (all
        earlier work done), meets the other queues on the `epoch` semaphore, sets its own
        semaphores (its engine's, or sp's DMA engines') back to 0, and meets them again, so that
        no queue sees a semaphore of the new epoch before it was reset."""
        note = f"  # end of epoch {epoch}: a semaphore reached {SEMAPHORE_MAX}"
        lines = [f"nop wait={sem}>={count}{note}" for sem, count in sorted(final.items())]
        lines.append(f"nop wait=epoch>={queues * (2 * epoch - 2)} signal=epoch+=1{note}")
        lines.append(f"nop wait=epoch>={queues * (2 * epoch - 1)}{note}")
        own = sorted(sem for sem in final if (sem.startswith("dma") if queue == "sp" else sem == f"{queue}_done"))
        lines += [f"nop signal={sem}=0{note}" for sem in own]
        lines.append(f"nop signal=epoch+=1{note}")
        lines.append(f"nop wait=epoch>={queues * 2 * epoch}{note}")
        return lines

    def build(self):
        """Hoists loads (multiple buffering), places the tiles, lowers and synchronises. When the
        tiles the hoisting keeps alive do not fit, it hoists less (depth 2, 1, then none) before
        giving up: SBUF space comes before overlap."""
        original = list(self.trace.ops)
        spec, touched = None, self.tiles_touched()
        for depth in range(self.policy.hoist_depth, -1, -1):
            self.trace.ops = list(original)
            for i, op in enumerate(self.trace.ops):
                op.index = i
            if depth:
                spec = spec or self.hoist_spec(original)
                self.hoist_loads(depth, spec)
            try:
                self.place_tiles(touched)
                break
            except TilesDoNotFit:
                if depth == 0:
                    raise
        self.lower()
        self.synchronise()


class _CoreTrace:
    """The part of a launch's trace one core runs: its programs' operations, every HBM tensor."""

    def __init__(self, trace, ops):
        self.size, self.hbm, self.tiles, self.ops = trace.size, trace.hbm, trace.tiles, ops
        self.hbm_packs = trace.hbm_packs


def compile_trace(trace, kernel_name, source, policy=None, cores=1):
    """The program text. With cores > 1, program p of the launch grid runs on core p % cores of a
    chip (`ncore tlm run --system chip`): each core's queues sit under `.if CORE==k`."""
    trace.live_ops()
    if cores == 1:
        c = Compiler(trace, kernel_name, policy)
        c.place_hbm()
        c.build()
        return "\n".join(c.header(source) + c.queues()) + "\n"
    groups = [[op for op in trace.ops if op.program % cores == k] for k in range(cores)]
    first = Compiler(_CoreTrace(trace, []), kernel_name, policy)
    first.place_hbm()
    _check_cores_apart(groups)
    lines = first.header(source, cores)
    for k, ops in enumerate(groups):
        if not ops:
            continue
        c = Compiler(_CoreTrace(trace, ops), kernel_name, policy)
        c.build()
        lines += [f".if CORE=={k}"] + c.queues() + [".endif"]
    return "\n".join(lines) + "\n"


def _check_cores_apart(groups):
    """Programs on different cores are ordered only by core barriers (nisa.core_barrier) and, at
    LNC=2, by the rank's collectives: none may write HBM bytes another core's programs read or
    write between the same two of those (in the same epoch: an access before a core's n-th comes
    before every access after its partner's n-th). Every core must pass the same number, or one
    would wait forever.
    The accesses are swept in the order of their first byte, and each is compared only with the
    earlier ones whose extent it reaches (a read only with writes), so the work grows with the
    accesses, not their square."""
    barriers = [sum(op.queue == "cc" for op in ops) for ops in groups]
    if len(set(barriers)) > 1:
        raise KernelError(f"the cores pass {' and '.join(map(str, barriers))} core barriers and collectives: each "
                          "needs both cores, so a core with fewer leaves the other waiting")
    touched = []
    for k, ops in enumerate(groups):
        epoch = 0
        for op in ops:
            # A core barrier, or a collective of an LNC=2 rank (it starts once both cores issued it,
            # and both wait for its end), orders the cores; its own accesses fall between epochs.
            if op.queue == "cc":
                epoch += 1
                continue
            for v, write in [(v, False) for v in op.reads] + [(v, True) for v in op.writes]:
                if isinstance(v.array, HbmTensor):
                    touched.append((_box(v), (k, epoch), write, op))
    touched.sort(key=lambda t: t[0][3])
    reaching, writes = [], []  # earlier accesses whose extent reaches the current first byte
    for box, k, write, op in touched:
        reaching = [t for t in reaching if t[0][4] > box[3]]
        writes = [t for t in writes if t[0][4] > box[3]]
        for other, ko, _, oo in (reaching if write else writes):
            if ko[0] != k[0] and ko[1] == k[1] and _overlap(other, box):
                raise KernelError(f"{op.where}: program {op.program} (core {k[0]}) and program {oo.program} (core "
                                  f"{ko[0]}, {oo.where}) touch the same HBM bytes, one of them writing, with no core "
                                  "barrier between them; programs on different cores are not ordered otherwise (put a "
                                  "nisa.core_barrier between, or run the grid on one core: cores=1)")
        reaching.append((box, k, write, op))
        if write:
            writes.append((box, k, write, op))
