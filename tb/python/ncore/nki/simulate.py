"""simulate_kernel and benchmark_kernel: trace, compile, run with `ncore run`, numpy out."""
import collections
import contextlib
import gc
import inspect
import json
import math
import os
import re
import tempfile
import time

import numpy as np

from .. import tool
from . import dtypes
from .compiler import Compiler, _check_cores_apart, _CoreTrace, compile_trace
from .tracer import HbmTensor, KernelError, Trace

ENGINES = ("golden", "rtl", "cosim")


class Kernel:
    """A kernel function, with the launch grid of `kernel[gx, gy]` (NKI's SPMD launch)."""

    def __init__(self, func, grid=(1,)):
        self.func, self.grid = func, tuple(grid)
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        if not grid or len(grid) > 3 or any(not isinstance(g, int) or g < 1 for g in grid):
            raise KernelError(f"{self.__name__}[{grid}]: expected a launch grid of 1 to 3 positive ints")
        return Kernel(self.func, grid)

    def __call__(self, *args, **kwargs):
        if Trace.current is not None:  # a kernel calling a helper kernel: inline it
            return self.func(*args, **kwargs)
        return simulate_kernel(self, *args, **kwargs)


def jit(func=None, **options):
    """`@nki.jit`: the function becomes a Kernel (its options are NKI compiler flags, ignored)."""
    if func is None:
        return lambda f: Kernel(f)
    return func if isinstance(func, Kernel) else Kernel(func)


def _is_tensor_argument(a, name):
    """Whether a kernel argument becomes an HBM tensor: a NumPy array or a typed(...) one. Any
    other Python value reaches the kernel unchanged; a list or tuple holding arrays is refused
    (it would be neither)."""
    if isinstance(a, (np.ndarray, TypedArray)):
        return True
    if isinstance(a, PerRank):
        raise KernelError(f"{name}: per_rank(...) gives each rank of a system run its own array: pass system= "
                          "(\"chip\", \"trn2\" or \"trn2u\")")
    if isinstance(a, (list, tuple)) and any(isinstance(x, (np.ndarray, TypedArray)) for x in a):
        raise KernelError(f"{name}: a {type(a).__name__} holding arrays: give each array as its own argument")
    return False


def _typed_input(array):
    """(storage array, dtype) of an input: a NumPy array (its dtype) or ncore.nki.typed(...)."""
    if isinstance(array, TypedArray):
        return array.storage, array.dtype
    a = np.asarray(array)
    if a.dtype == np.float64:
        raise KernelError("an input of dtype float64: ncore's engines take float32 at most (convert with "
                          ".astype(np.float32))")
    return a, dtypes.lookup(a.dtype, "input dtype")


class TypedArray:
    """A NumPy array given an NKI type NumPy lacks: `typed(a, nl.bfloat16)` rounds a to BF16."""

    def __init__(self, array, dtype):
        self.dtype = dtypes.lookup(dtype)
        self.storage = dtypes.to_storage(array, self.dtype)
        self.shape = self.storage.shape


def typed(array, dtype):
    return TypedArray(array, dtype)


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused while a kernel is traced and compiled. Both make
    hundreds of thousands of objects that live until the program is written, and the collector
    walked them all again and again: it took half the compile time of the production kernels
    (tb/python/README.md, "Production sizes"). Paused, memory still grows with the program only
    (reference counting frees what is dropped), and the collector runs again afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def trace_kernel(kernel, arrays, size=128, kwargs=None, cores=1, rank=0, system_shape=(1, 1)):
    """The kernel traced over its launch grid: (trace, output tensors, whether it returned one).
    rank and system_shape: which rank of a system run this trace is (nki.collectives)."""
    if not isinstance(kernel, Kernel):
        kernel = Kernel(kernel)
    params = list(inspect.signature(kernel.func).parameters)
    t = Trace(size)
    t.cores = cores
    t.rank, t.system_shape = rank, system_shape
    args = []
    for i, a in enumerate(arrays):
        if not _is_tensor_argument(a, params[i] if i < len(params) else f"argument {i}"):
            # a Python value goes to the kernel as it is: a number (eps=1e-6), a shape tuple, a
            # flag, a string
            args.append(a.item() if isinstance(a, np.generic) else a)
            continue
        storage, dtype = _typed_input(a)
        name = params[i] if i < len(params) else f"in{i}"
        tensor = HbmTensor(name, storage.shape, dtype, "input")
        tensor.data, tensor.caller_array = storage, a
        tensor.argument = i
        t.hbm.append(tensor)
        args.append(tensor)
    grid = kernel.grid + (1,) * (3 - len(kernel.grid))
    t.num_programs, t.grid_ndim = grid, len(kernel.grid)
    outputs = None
    with t:
        for gz in range(grid[2]):
            for gy in range(grid[1]):
                for gx in range(grid[0]):
                    t.program_id, t.shared_seen = (gx, gy, gz), 0
                    t.program = (gz * grid[1] + gy) * grid[0] + gx
                    result = kernel.func(*args, **(kwargs or {}))
                    if outputs is None:
                        outputs = result
    if outputs is None:
        # NKI's older style: the kernel stores into output arrays it was given and returns
        # nothing. Those arguments come back filled, in place.
        stored = {id(op.fields["hbm"].array.base or op.fields["hbm"].array) for op in t.ops
                  if op.opcode == "dma_copy" and op.fields["dir"] == "sbuf_to_hbm"}
        written = [x for x in args if isinstance(x, HbmTensor) and id(x) in stored]
        for x in written:
            x.output_arg = True
        _name_tensors(t)
        return t, written, None
    single = not isinstance(outputs, (tuple, list))
    outs = [outputs] if single else list(outputs)
    outs = [o.base if isinstance(o, HbmTensor) and o.base is not None else o for o in outs]
    for o in outs:
        if not isinstance(o, HbmTensor) or o.role != "output":
            raise KernelError(f"{kernel.__name__} returned {o!r}: expected the nl.shared_hbm arrays it wrote")
    _name_tensors(t)
    return t, outs, single


def _name_tensors(t):
    """Tensor names become assembly names and .npy files: unique, and none of the program's own."""
    taken = set(RESERVED_NAMES)
    for x in t.hbm:
        x.name = re.sub(r"\W", "_", x.name)
        if not x.name or x.name[0].isdigit():
            x.name = "t_" + x.name
        while x.name in taken:
            x.name += "_"
        taken.add(x.name)


# Names the generated program defines itself (compiler.py's semaphores) or the assembler does.
RESERVED_NAMES = {"pe_done", "act_done", "dve_done", "cc_done", "epoch", *(f"dma{e}" for e in range(16)), "CHIP",
                  "CORE", "CHIPS", "CORES", "SBUF_PARTITION", "PSUM_BANK"}


CHIP_CORES = 8  # NeuronCores of a Trainium2 chip (ncore tlm run --system chip)


def _compile_and_run(kernel, arrays, engine, size, program_out, kwargs, policy=None, cores=1, trace_json=None,
                     timing_only=False, timing=None):
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: expected one of {', '.join(ENGINES)}")
    if size not in (8, 128):
        raise ValueError(f"size={size!r}: expected 128, or 8 (the small RTL core)")
    if not isinstance(cores, int) or not 1 <= cores <= CHIP_CORES:
        raise ValueError(f"cores={cores!r}: expected 1 (one core) to {CHIP_CORES} (the cores of a chip)")
    if cores > 1 and (engine == "cosim" or size != 128):
        raise ValueError(f"cores={cores}: a chip runs golden or RTL cores of size 128 (engine='golden' or 'rtl', "
                         "size=128); co-simulation is per core (cores=1)")
    if timing_only and (engine != "golden" or cores != 1):
        raise ValueError("timing_only: the golden core of one core runs without data (ncore run --no-data)")
    kernel = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    t0 = time.perf_counter()
    key = _specialization(kernel, arrays, size, kwargs, cores, policy)
    if key is not None and key in _traced:
        _traced.move_to_end(key)
        trace, outs, single, program = _traced[key]
        _rebind(trace, arrays)
        CACHE_STATS["hits"] += 1
    else:
        with collector_paused():
            trace, outs, single = trace_kernel(kernel, arrays, size, kwargs, cores)
            source = inspect.getsourcefile(kernel.func) or "?"
            program = compile_trace(trace, kernel.__name__, os.path.basename(source), policy, cores)
        CACHE_STATS["misses"] += 1
        if key is not None:
            _traced[key] = (trace, outs, single, program)
            while len(_traced) > CACHE_ENTRIES:
                _traced.popitem(last=False)
    compile_seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="ncore_nki_") as tmp:
        path = _write_program(program_out or os.path.join(tmp, f"{kernel.__name__}.s"), program, [("", trace)])
        out_dir = os.path.join(tmp, "out")
        t1 = time.perf_counter()
        extra = (_trace_option(trace_json) + (["--no-data"] if timing_only else []) +
                 (["--timing", str(timing)] if timing is not None else []))
        if cores == 1:
            report = tool.run_program(path, engine=engine, size=size, outputs=None if timing_only else out_dir,
                                      extra=extra)
            prefix = ""
        else:
            report = _chip_report(tool.run_system(path, engine=engine, outputs=out_dir, extra=extra), cores)
            prefix = "chip0.core0."  # every core's outputs hold the chip's shared HBM after the run
        run_seconds = time.perf_counter() - t1
        results = [None if timing_only else
                   dtypes.from_storage(np.load(os.path.join(out_dir, f"{prefix}{o.name}.npy")), o.dtype)
                   for o in outs]
    report["compile_seconds"], report["run_seconds"] = compile_seconds, run_seconds
    if single is None and not timing_only:  # output arguments: filled in place, as NKI's simulator does
        for tensor, result in zip(outs, results):
            _fill(tensor.caller_array, result, tensor)
        return None, report
    return (results[0] if single else tuple(results)), report


# Traced and compiled kernels, one per distinct specialization (the kernel, its launch grid, the
# core's size, the cores, the DMA policy, each tensor argument's shape and type and every other
# argument's value): a call with new data for the same shapes reuses the program. The most
# recently used CACHE_ENTRIES are kept.
CACHE_ENTRIES = 32
CACHE_STATS = {"hits": 0, "misses": 0}
_traced = collections.OrderedDict()


def _specialization(kernel, arrays, size, kwargs, cores, policy):
    """The cache key of a call, or None when an argument is not hashable (traced every time)."""
    parts = []
    for a in list(arrays) + sorted((kwargs or {}).items()):
        if isinstance(a, (np.ndarray, TypedArray)):
            storage, dtype = _typed_input(a)
            parts.append(("tensor", storage.shape, dtype.name))
        else:
            parts.append(("value", type(a).__name__, a))
    key = (kernel.func, kernel.grid, size, cores, None if policy is None else tuple(vars(policy).items()),
           tuple(parts))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _rebind(trace, arrays):
    """A cached trace's input tensors take this call's arrays (their data and, for output
    arguments, where the results go)."""
    for tensor in trace.hbm:
        i = getattr(tensor, "argument", None)
        if i is not None:
            tensor.data, _ = _typed_input(arrays[i])
            tensor.caller_array = arrays[i]


def clear_trace_cache():
    """Forgets every traced kernel (after changing the compiler's settings, say)."""
    _traced.clear()


def trace_cache_info():
    """{'hits', 'misses', 'entries'}: how often a call reused a traced kernel."""
    return dict(CACHE_STATS, entries=len(_traced))


def _write_program(path, program, traces):
    """The program at path, and beside it each trace's inputs (the kernel's and the constants
    the compiler added) as NAME{suffix}.npy, for (suffix, trace) in traces."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        f.write(program)
    for suffix, trace in traces:
        for tensor in trace.hbm:
            if tensor.role == "input":
                np.save(os.path.join(folder, f"{tensor.name}{suffix}.npy"), np.ascontiguousarray(tensor.data))
    return path


def _fill(array, result, tensor):
    if isinstance(array, TypedArray):
        array.storage[...] = dtypes.to_storage(result, tensor.dtype)
    elif isinstance(array, np.ndarray) and array.flags.writeable:
        array[...] = result
    else:
        raise KernelError(f"the kernel stored into argument {tensor.name}, which is not a writable NumPy array: "
                          "return the output instead, or pass a NumPy array")


def _chip_report(system, cores):
    """A chip run's report in `ncore run`'s terms: the cycles of the last core to finish, each
    queue's busy cycles over all cores against cores x cycles, and the per-core figures."""
    used = [c for c in system["cores"] if c["core"] < cores]
    cycles = max(c["cycles"] for c in used)
    queues = {q: {"utilization": sum(c["busy_cycles"][q] for c in used) / (cycles * len(used)),
                  "engine_cycles": max(c["engine_cycles"][q] for c in used)}
              for q in used[0]["busy_cycles"]}
    pe_cycles = queues["pe"]["engine_cycles"]  # the tensor engine's clock, which its utilization counts
    macs = sum(c["te_utilization"] * c["engine_cycles"]["pe"] for c in used) * 128 * 128
    return {"cycles": cycles, "queues": queues, "instructions": sum(c["instructions"] for c in used),
            "te_macs": round(macs), "te_utilization": macs / (pe_cycles * len(used) * 128 * 128),
            "hbm_bytes": sum(c["hbm_bytes"] for c in used), "cores": system["cores"],
            "microseconds": system["sim_time_us"], "time_ns": max(c["time_ns"] for c in used),
            "launch_overhead_ns": system.get("launch_overhead_ns", 0.0),
            "collectives": system.get("collectives", [])}


# ---------------------------------------------------------------------------------------------
# A kernel on every core of a system, one rank per core (nki.collectives)

# `ncore tlm run --system`'s tori, X x Y x Z chips (tb/tlm/system_config.h), CHIP_CORES each
TORUS = {"chip": (1, 1, 1), "trn2": (4, 4, 1), "trn2u": (4, 4, 4)}
SYSTEMS = {name: math.prod(dims) for name, dims in TORUS.items()}  # their chips
# Each rank's HBM tensors lie in a window of its chip's HBM of its own, core k's from k x this:
# ncore's choice (8 x 512 MiB is the bottom 4 GiB of the chip's 96 GiB, far below the cores'
# program images at its top).
RANK_WINDOW = 1 << 29


class PerRank(list):
    """`per_rank([a0, a1, ...])`: an argument that differs per rank, rank r getting the r-th."""


def per_rank(arrays):
    return PerRank(arrays)


def _check_collectives_match(traces, chips):
    """The members of each group must issue the same collectives in the same order (the engine
    matches a core's n-th collective of a group kind with the others' n-th): else a KernelError
    naming the ranks, before anything runs."""
    ranks = len(traces)
    per_chip = ranks // chips  # the chip's cores, or its logical cores at LNC=2
    members = {"all": [list(range(ranks))],
               "cores": [list(range(c * per_chip, (c + 1) * per_chip)) for c in range(chips)],
               "chips": [list(range(k, ranks, per_chip)) for k in range(per_chip)]}
    for kind, lists in members.items():
        for group in lists:
            seqs = {r: [(op, n, d) for op, g, n, d in traces[r].collectives if g == kind] for r in group}
            first = group[0]
            for r in group[1:]:
                if seqs[r] != seqs[first]:
                    k = next((i for i, (a, b) in enumerate(zip(seqs[first], seqs[r])) if a != b),
                             min(len(seqs[first]), len(seqs[r])))
                    show = lambda q: (f"{seqs[q][k][0]} of {seqs[q][k][1]} bytes {seqs[q][k][2]}"  # noqa: E731
                                      if k < len(seqs[q]) else "nothing")
                    raise KernelError(f"collective {k} of group '{kind}' {group[:8]}{'...' if len(group) > 8 else ''}: "
                                      f"rank {first} issues {show(first)}, rank {r} {show(r)}; every member of a "
                                      "group must issue the same collectives")


def _torus_config(system, torus):
    """The chips a run takes: the named system's whole torus, or with torus=(x, y, z) that many
    chips of it (each dimension at most the system's), as `ncore tlm run --config`'s x, y and z.
    Returns (chips, the configuration's JSON or None)."""
    if torus is None:
        return SYSTEMS[system], None
    whole = TORUS[system]
    if (not isinstance(torus, (tuple, list)) or len(torus) != 3
            or any(isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= m for n, m in zip(torus, whole))):
        raise ValueError(f"torus={torus!r} on {system}: expected (x, y, z), each from 1 to the {system}'s "
                         f"{' x '.join(map(str, whole))}")
    x, y, z = torus
    return x * y * z, json.dumps({"system": system, "x": x, "y": y, "z": z})


def _compile_and_run_system(kernel, arrays, engine, system, program_out, kwargs, trace_json, policy, size=128,
                            cores=1, timing_only=False, timing=None, lnc=1, torus=None):
    if system not in SYSTEMS:
        raise ValueError(f"system={system!r}: expected one of {', '.join(SYSTEMS)}")
    if engine not in ("golden", "rtl"):
        raise ValueError(f"engine={engine!r}: a system run has golden or RTL cores (co-simulation is per core)")
    if size != 128 or cores != 1:
        raise ValueError(f"system={system!r} with size={size!r}, cores={cores!r}: a system runs every core of its "
                         "chips, each of size 128; leave size and cores out")
    if timing_only and engine != "golden":
        raise ValueError(f"timing_only with engine={engine!r}: only golden cores run without data "
                         "(ncore tlm run --no-data)")
    if lnc not in (1, 2):
        raise ValueError(f"lnc={lnc!r}: expected 1 (a rank per core) or 2 (a rank per pair of cores)")
    chips, torus_json = _torus_config(system, torus)
    per_chip = CHIP_CORES // lnc  # ranks of a chip
    ranks = chips * per_chip
    for a in arrays:
        if isinstance(a, PerRank) and len(a) != ranks:
            raise KernelError(f"per_rank(...) of {len(a)} arrays: the {system} system"
                              f"{'' if torus is None else ' of torus ' + 'x'.join(map(str, torus))} runs {ranks} ranks"
                              + (" (LNC=2: a rank per pair of cores)" if lnc == 2 else ""))
    kernel = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    if lnc == 2:  # the rank's launch grid of 2, a program on each core of its pair
        if kernel.grid not in ((1,), (2,)):
            raise KernelError(f"{kernel.__name__}{list(kernel.grid)} at LNC=2: expected the launch grid of the logical "
                              "core, kernel[2] (or no grid)")
        kernel = kernel[2]
    source = os.path.basename(inspect.getsourcefile(kernel.func) or "?")
    t0 = time.perf_counter()
    where = (f"one per core of a {system}; rank = CHIP * CORES + CORE" if lnc == 1 else
             f"one per pair of cores of a {system} (LNC=2); rank = CHIP * CORES / 2 + CORE / 2, its program p on "
             "CORE 2 (rank % (CORES / 2)) + p")
    traces, lines, results = [], [f"# {kernel.__name__}, traced from {source} by ncore.nki for {ranks} ranks "
                                  f"({where})."], []
    for r in range(ranks):
        rank_args = [a[r] if isinstance(a, PerRank) else a for a in arrays]
        with collector_paused():
            t, outs, single = trace_kernel(kernel, rank_args, 128, kwargs, lnc, r, (chips, per_chip))
            t.live_ops()
            first = lnc * (r % per_chip)  # the rank's first core on its chip
            c = Compiler(t if lnc == 1 else _CoreTrace(t, []), kernel.__name__, policy)
            c.input_suffix = f".r{r}"
            c.inputs_zero = timing_only
            c.place_hbm(base=first * RANK_WINDOW, window=lnc * RANK_WINDOW)
            if lnc == 1:
                c.build()
                lines += [f".if CHIP*CORES+CORE=={r}"] + c.header(source)[3:] + c.queues() + [".endif"]
            else:
                groups = [[op for op in t.ops if op.program == p] for p in range(2)]
                _check_cores_apart(groups)
                core0 = (r // per_chip) * CHIP_CORES + first
                lines += [f".if (CHIP*CORES+CORE)/2=={core0 // 2}"] + c.header(source)[3:] + [".endif"]
                for p, ops in enumerate(groups):
                    cp = Compiler(_CoreTrace(t, ops), kernel.__name__, policy)
                    cp.build()
                    lines += [f".if CHIP*CORES+CORE=={core0 + p}"] + cp.queues() + [".endif"]
        traces.append(t)
        results.append((t, outs, single, rank_args))
    _check_collectives_match(traces, chips)
    compile_seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="ncore_nki_") as tmp:
        path = _write_program(program_out or os.path.join(tmp, f"{kernel.__name__}.s"), "\n".join(lines) + "\n",
                              [] if timing_only else [(f".r{r}", t) for r, t in enumerate(traces)])
        out_dir = os.path.join(tmp, "out")
        extra = (_trace_option(trace_json) + (["--timing", str(timing)] if timing is not None else []) +
                 (["--no-data"] if timing_only else []) + (["--lnc", "2"] if lnc == 2 else []))
        if torus_json:
            with open(os.path.join(tmp, "torus.json"), "w") as f:
                f.write(torus_json)
            extra += ["--config", os.path.join(tmp, "torus.json")]
        t1 = time.perf_counter()
        system_json = tool.run_system(path, engine=engine, outputs=None if timing_only else out_dir, system=system,
                                      extra=extra)
        report = _chip_report(system_json, CHIP_CORES)
        report["system"] = system_json  # stacks, links and collectives, for a time split
        run_seconds = time.perf_counter() - t1
        per_rank_out = []
        for r, (t, outs, single, rank_args) in enumerate(results):
            if timing_only:
                per_rank_out.append(None)
                continue
            prefix = f"chip{r // per_chip}.core{lnc * (r % per_chip)}."  # LNC=2: the pair's shared HBM
            got = [dtypes.from_storage(np.load(os.path.join(out_dir, f"{prefix}{o.name}.npy")), o.dtype)
                   for o in outs]
            if single is None:
                for tensor, result in zip(outs, got):
                    _fill(tensor.caller_array, result, tensor)
                per_rank_out.append(None)
            else:
                per_rank_out.append(got[0] if single else tuple(got))
    report["compile_seconds"], report["run_seconds"] = compile_seconds, run_seconds
    return per_rank_out, report


def simulate_kernel(kernel, *arrays, engine="golden", size=128, program_out=None, cores=1, trace=None, system=None,
                    lnc=1, torus=None, **kwargs):
    """Runs the kernel on ncore and returns its outputs as NumPy arrays, as NKI's simulate_kernel
    does. engine: golden (the golden core), rtl (the Verilated core) or cosim (the RTL in lockstep
    with the golden core, bit for bit); size: 128, or 8 for the small RTL core. program_out: where
    to keep the generated assembly (its .npy inputs go beside it), which `ncore run` re-runs.
    cores: 2 to 8 spreads a launch grid over the cores of a chip sharing its HBM (program p on
    core p % cores; `ncore tlm run --system chip`). trace: a file for the run's Chrome/Perfetto
    trace-event timeline (a track per queue, DMA engine, semaphore waits and instruction fetch;
    each slice an instruction named with its kernel file:line). system: "chip", "trn2" or "trn2u"
    runs the kernel once per core of that system, one rank per core (nki.collectives; arguments
    given as per_rank([...]) differ per rank), and returns a list of each rank's outputs. lnc=2
    (with system): a rank per pair of cores, the kernel launched on both (kernel[2]; its programs
    meet at nisa.core_barrier, and a rank's collectives name tensors in their shared HBM).
    torus=(x, y, z) (with system): run on x * y * z chips of the system's torus instead of all of
    them (each dimension at most the system's; a dimension of 2 has its + and - links both to
    the other chip, as `ncore tlm run --config` builds any torus)."""
    if system is not None:
        return _compile_and_run_system(kernel, arrays, engine, system, program_out, kwargs, trace, None, size,
                                       cores, lnc=lnc, torus=torus)[0]
    if torus is not None:
        raise ValueError(f"torus={torus!r} without system=: a torus is a part of a system's chips")
    if lnc != 1:
        raise ValueError(f"lnc={lnc!r} without system=: a chip's pair of cores is cores=2 with kernel[2]")
    outputs, _ = _compile_and_run(kernel, arrays, engine, size, program_out, kwargs, cores=cores, trace_json=trace)
    return outputs


def benchmark_kernel(kernel, *arrays, engine="golden", size=128, program_out=None, dma_policy=None, cores=1,
                     trace=None, system=None, timing_only=False, timing=None, lnc=1, torus=None, **kwargs):
    """Runs the kernel and returns what it cost: cycles (and golden_cycles under cosim), the
    run's time in ns, each queue's utilization and its engine's clock and cycles, tensor-engine
    MACs and utilization, HBM bytes, and the wall time of the compile and of the run; `outputs`
    holds the kernel's outputs. dma_policy (compiler.DmaPolicy) changes how DMA work is spread,
    for comparisons. timing: the core's timing, a preset ("uniform", "trn2", "trn1") or a JSON
    file (ncore run --timing, which says what the RTL core takes; model/README.md, "Timing
    presets"). system, lnc, torus: as simulate_kernel's."""
    if system is not None:
        outputs, r = _compile_and_run_system(kernel, arrays, engine, system, program_out, kwargs, trace, dma_policy,
                                             size, cores, timing_only, timing, lnc, torus)
    else:
        if torus is not None:
            raise ValueError(f"torus={torus!r} without system=: a torus is a part of a system's chips")
        if lnc != 1:
            raise ValueError(f"lnc={lnc!r} without system=: a chip's pair of cores is cores=2 with kernel[2]")
        outputs, r = _compile_and_run(kernel, arrays, engine, size, program_out, kwargs, dma_policy, cores, trace,
                                      timing_only, timing)
    return {
        "cycles": r["cycles"],
        "golden_cycles": r.get("golden_cycles", r["cycles"] if engine == "golden" else None),
        "microseconds": r.get("microseconds"),
        "time_ns": r.get("time_ns"),
        "launch_overhead_ns": r.get("launch_overhead_ns", 0.0),  # outside time_ns (timing launch.overhead_ns)
        "clocks": r.get("clocks"),
        "utilization": {q: v["utilization"] for q, v in r["queues"].items()},
        "engine_cycles": {q: v["engine_cycles"] for q, v in r["queues"].items() if "engine_cycles" in v},
        "wait_cycles": {q: v.get("wait_cycles", 0) for q, v in r["queues"].items()},
        "instructions": r.get("instructions"),
        "te_macs": r.get("te_macs", 0),
        "te_utilization": r.get("te_utilization", 0.0),
        "hbm_bytes": r.get("hbm_bytes", 0),
        "compile_seconds": r["compile_seconds"],
        "run_seconds": r["run_seconds"],
        "cores": r.get("cores"),
        "system": r.get("system"),  # a system run's `ncore tlm run --json`: stacks, links, collectives
        "outputs": outputs,
    }


# ---------------------------------------------------------------------------------------------
# nki.benchmark and nki.profile, as NKI offers them (decorators that run the kernel and report)

class Latency:
    """benchmark_result.nc_latency: the latency in microseconds as neuron-bench measures it, the
    kernel's time plus the launch overhead (the timing's launch.overhead_ns, reported apart: 0 in
    every preset, as no figure is published). ncore's run is deterministic, so every iteration
    takes the same time and every percentile is that time."""

    def __init__(self, microseconds, iterations):
        self.microseconds, self.iterations = microseconds, iterations

    def get_latency_percentile(self, percentile):
        if not 0 <= percentile <= 100:
            raise ValueError(f"percentile {percentile!r}: expected 0 to 100")
        return self.microseconds


class BenchmarkResult:
    def __init__(self, report, iterations):
        self.nc_latency = Latency(report["microseconds"] + report.get("launch_overhead_ns", 0.0) / 1e3, iterations)
        self.report = report  # benchmark_kernel's figures: cycles, utilization, ...


def _trace_option(trace_json):
    """ncore run's --trace-json for a trace path, its folder made first (as neuron-profile makes
    its working directory)."""
    if not trace_json:
        return []
    path = os.path.abspath(trace_json)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return ["--trace-json", path]


def _whole_number(call, name, value, least):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{call}: {name}={value!r}: expected a whole number, at least {least}")


class _Measured:
    """A kernel wrapped by nki.benchmark or nki.profile: calling it runs the kernel on ncore."""

    def __init__(self, kernel, what, warmup=0, iters=1, trace=None, options=None):
        self.kernel = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
        self.what, self.warmup, self.iters, self.trace, self.options = what, warmup, iters, trace, options or {}
        self.benchmark_result = None

    def __getitem__(self, grid):
        return _Measured(self.kernel[grid], self.what, self.warmup, self.iters, self.trace, self.options)

    def __call__(self, *args, **kwargs):
        r = benchmark_kernel(self.kernel, *args, trace=self.trace, **self.options, **kwargs)
        self.benchmark_result = BenchmarkResult(r, self.iters)
        us = r["microseconds"]
        latency = self.benchmark_result.nc_latency.get_latency_percentile(50)
        timing = self.options.get("timing") or "trn2"
        print(f"{self.what} {self.kernel.__name__} on ncore ({self.options.get('engine', 'golden')} core, timing "
              f"{timing}): {r['cycles']} cycles, {us:.3f} us, launch overhead {r['launch_overhead_ns'] / 1e3:.3f} us "
              f"(every iteration of a deterministic run: p50 = p99 = {latency:.3f} us)"
              + (f"; trace {self.trace}" if self.trace else ""))
        return r["outputs"]


def _decorator(kernel, make):
    """Both spellings: `nki.benchmark(kernel, ...)` and `nki.benchmark(...)(kernel)`."""
    return make if kernel is None else make(kernel)


def benchmark(kernel=None, warmup=5, iters=10, save_neff_name=None, save_trace_name=None, additional_compile_opt=None,
              engine="golden", size=128, cores=1, timing=None):
    """`nki.benchmark(warmup=, iters=)(kernel)`: calling the result runs the kernel and sets
    `.benchmark_result.nc_latency.get_latency_percentile(p)` (microseconds): the kernel's time
    plus the per-launch and host-transfer overhead that neuron-bench's figures include, which
    ncore reports apart (`report["launch_overhead_ns"]`, the timing's launch.overhead_ns: 0 in
    every preset, since no figure is published; a timing file sets a measured one). save_trace_name writes the Chrome/Perfetto trace (ncore
    writes no NEFF; save_neff_name is ignored). timing (ncore's own): the golden core's timing
    preset, as benchmark_kernel's."""
    _whole_number("nki.benchmark", "warmup", warmup, 0)
    _whole_number("nki.benchmark", "iters", iters, 1)
    options = dict(engine=engine, size=size, cores=cores, timing=timing)
    return _decorator(kernel, lambda k: _Measured(k, "nki.benchmark", warmup, iters, save_trace_name, options))


def profile(kernel=None, working_directory=".", save_neff_name=None, save_trace_name=None, overwrite=False,
            profile_nth=1, additional_compile_opt=None, engine="golden", size=128, cores=1, timing=None):
    """`nki.profile(working_directory=, save_trace_name=)(kernel)`: calling the result runs the
    kernel and writes its Chrome/Perfetto trace (default `profile.json`) in working_directory,
    where neuron-profile would write its NTFF."""
    _whole_number("nki.profile", "profile_nth", profile_nth, 1)
    path = os.path.join(working_directory, "profile.json" if save_trace_name is None else save_trace_name)
    if os.path.isdir(path):
        raise ValueError(f"nki.profile: save_trace_name={save_trace_name!r}: {path} is a folder; expected a file")
    if os.path.exists(path) and not overwrite:
        raise KernelError(f"nki.profile: {path} exists: pass overwrite=True to replace it")
    options = dict(engine=engine, size=size, cores=cores, timing=timing)
    return _decorator(kernel, lambda k: _Measured(k, "nki.profile", trace=path, options=options))
