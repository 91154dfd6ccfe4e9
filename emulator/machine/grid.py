"""A grid's CTAs on several processes (``launch(..., workers=N)``), with results identical to the serial run.

How (the contract, also in docs/speed.md):

* The CTAs, in the serial order (x fastest, then y, then z), are cut into consecutive chunks. Worker
  processes (forked at the launch, so each starts from the same global memory) run a chunk each, CTA after
  CTA in that order, and send back the bytes of global memory their chunk changed, its printf output and
  its warps' final state.
* The parent applies the chunks' changes in CTA order, so where two chunks wrote the same byte the later
  CTA wins, as in the serial run; printf output is written in CTA order.
* This is the serial result for every kernel whose CTAs do not read global bytes that other CTAs write
  during the launch: the kernels whose GPU results do not depend on the order the GPU runs CTAs in.
* Kernels that use global atomics or reductions (``atom``, ``red``), acquire/volatile/relaxed loads of global
  memory (flags other CTAs set: their CTAs may wait on each other, ``machine.residency``), that write through
  the asynchronous proxy (bulk or tensor copies and reductions into global memory, ``st.async``,
  ``red.async``), a trace, a seeded schedule or a timeline run serially whatever ``workers`` says: their order
  is part of their result.
* A launch from a daemonic process (a ``multiprocessing.Pool`` worker, which may not have children) runs
  serially, with one warning. Forked workers end when the launching process dies.
* A chunk that raises, or a grid that runs past ``max_instructions`` in total, is run again serially, so
  the error (and the memory left behind) is exactly the serial run's.

``result.ctas`` holds, for CTAs run by a worker, a :class:`WorkerWarp` per warp: the warp's registers,
shared memory and counters as the worker left them (``read``/``get_reg`` as on a warp); their shared-memory
access records are not sent back (bank reports need ``workers=1``).
"""
from __future__ import annotations

import gc
import io
import mmap
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from typing import NamedTuple

import numpy as np

from ..errors import EmulatorError
from .fastcore import table as T


_DTYPES = {T.PRED: np.bool_, T.R16: np.uint16, T.R32: np.uint32, T.R64: np.uint64}
_BYTES = T.CLASS_BYTES


class WorkerWarp:
    """The final state of a warp that a worker process ran."""

    def __init__(self, w, shared=None, at=None):
        self.warp_id = w.warp_id
        regs = w.regs
        self._cache = None
        self._at = None
        if hasattr(regs, "arena") and hasattr(regs, "slots"):
            # the fast engine's registers: one copy of the warp's arena, the register map shared by every warp
            # (pickled once per message), the few registers outside the arena apart. With ``shared`` (memory the
            # launching process mapped before forking) the arena goes there, at ``at``, and nothing is pickled
            other = {k: np.array(v) for k, v in regs.other.items() if k not in regs.slots}
            if shared is not None and regs.arena.size == shared.shape[2]:
                shared[at] = regs.arena
                self._at = at
                self._arena = (None, regs.slots, other)
            else:
                self._arena = (regs.arena.copy(), regs.slots, other)
            self._packed = None
        else:
            # registers packed by dtype (one array each: pickling thousands of small arrays is slow)
            groups = {}
            for n in regs:
                v = w.get_reg(n)
                groups.setdefault(v.dtype.str, ([], []))
                groups[v.dtype.str][0].append(n)
                groups[v.dtype.str][1].append(v)
            self._packed = [(names, np.stack(vals)) for names, vals in groups.values()]
            self._arena = None
        self.smem = w.smem.copy()
        self.pc = w.pc.copy()
        self.exited = w.exited.copy()
        self.issued = w.issued
        self.clock = w.clock
        self._smem_log = []             # bank reports: run with workers=1
        self.smem_log_dropped = 0

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_cache"] = None
        return d

    @property
    def regs(self):
        if self._cache is None:
            if self._arena is not None:
                arena, slots, other = self._arena
                regs = {n: arena[off:off + 32 * _BYTES[cls]].view(_DTYPES[cls]) for n, (cls, off) in slots.items()}
                regs.update(other)
            else:
                regs = {n: v for names, arr in self._packed for n, v in zip(names, arr)}
            self._cache = regs
        return self._cache

    def get_reg(self, name, instr="read"):
        return self.regs[name]

    def read(self, name):
        return self.regs[name].copy()

    def bank_report(self):
        from ..memory.banks import analyze
        return [analyze(rec) for rec in self._smem_log]


_SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "const", "param")
_OWN = {"shared", "shared::cta", "local", "param", "const"}


def serial_only(prog):
    """Why this program must run its CTAs serially, or None: CTAs that may communicate through global memory
    (atomics and reductions, acquire/volatile/relaxed loads of flags) and every write through the asynchronous
    proxy (bulk and tensor copies or reductions into global memory, ``st.async``, ``red.async``), whose order
    between CTAs is part of the result."""
    for op in prog.code:
        instr = op.instr
        if instr is None:
            continue
        base, mods = instr.base, instr.mods
        if base in ("atom", "red") and "async" not in mods and "shared" not in mods and "shared::cta" not in mods:
            return f"{instr.opcode} (global atomics run in CTA order)"
        if base in ("ld", "ldu") and not _OWN.intersection(mods) and \
                {"acquire", "volatile", "relaxed", "mmio"}.intersection(mods):
            return f"{instr.opcode} (a flag another CTA may set: CTAs that wait on each other run in CTA order)"
        if base in ("st", "red") and "async" in mods:
            return f"{instr.opcode} (asynchronous-proxy writes run in CTA order)"
        if base == "cp" and "bulk" in mods:
            dst = next((m for m in mods if m in _SPACES), None)
            if dst == "global":
                return f"{instr.opcode} (bulk copies and reductions into global memory run in CTA order)"
        if base == "multimem":
            return f"{instr.opcode} (multimem reductions run in CTA order)"
    return None


class CtaIds:
    """The CTA ids of a grid in the serial order (x fastest, then y, then z), computed when asked: a sequence
    (``len``, indexing, slices, iteration) whose memory does not grow with the grid (a CUDA grid may have
    2^63 CTAs)."""
    __slots__ = ("grid", "_r")

    def __init__(self, grid, r=None):
        self.grid = tuple(int(g) for g in grid)
        self._r = range(self.grid[0] * self.grid[1] * self.grid[2]) if r is None else r

    def __len__(self):
        return len(self._r)

    def _at(self, i):
        gx, gy = self.grid[0], self.grid[1]
        return (i % gx, (i // gx) % gy, i // (gx * gy))

    def __getitem__(self, k):
        if isinstance(k, slice):
            return CtaIds(self.grid, self._r[k])
        return self._at(self._r[k])

    def __iter__(self):
        at = self._at
        return (at(i) for i in self._r)

    def __getstate__(self):
        return (self.grid, self._r)

    def __setstate__(self, state):
        self.grid, self._r = state

    def __eq__(self, other):
        return len(self) == len(other) and all(a == tuple(b) for a, b in zip(self, other))

    def __repr__(self):
        return f"CtaIds(grid={self.grid}, {self._r.start}..{self._r.stop})"


def chunks(ctaids, workers, per_worker=4):
    """Consecutive chunks, about ``per_worker`` per worker (load balance), at least one CTA each."""
    total = len(ctaids)
    n = max(1, min(total, per_worker * workers))
    bounds = [total * k // n for k in range(n + 1)]
    return [ctaids[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


_JOB = None          # (run_cta, gmem, shared register memory or None) in the forked workers
_WARNED_DAEMON = False


def can_fork():
    """False (with one warning per process) where worker processes cannot be made: inside a daemonic process,
    such as a ``multiprocessing.Pool`` worker. The launch then runs serially, with the same results."""
    global _WARNED_DAEMON
    if not multiprocessing.current_process().daemon:
        return True
    if not _WARNED_DAEMON:
        _WARNED_DAEMON = True
        warnings.warn("launch(workers=N): this process is daemonic (a multiprocessing pool's worker?) and may not "
                      "have children; the grid runs serially", RuntimeWarning, stacklevel=3)
    return False


def _init_worker(parent):
    """A forked worker: no garbage collection (the inherited heap stays shared), and it ends with its parent."""
    gc.disable()
    try:                                             # Linux: the kernel kills this worker when its parent dies
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:      # PR_SET_PDEATHSIG
            raise OSError
    except (OSError, AttributeError):
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:                       # the parent died before the line above took effect
        os._exit(1)


def _watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _work(chunk, base=None):
    run_cta, gmem, shared = _JOB
    before = gmem.__dict__.get("_launch_copy")      # the launch's global memory, copied once per worker
    if before is None or len(before) != len(gmem._bufs):
        before = gmem.__dict__["_launch_copy"] = [buf.copy() for buf in gmem._bufs]
    out = io.StringIO()
    try:
        done = run_cta(chunk, out)
    except EmulatorError as e:
        return ("error", f"{type(e).__name__}: {e}")
    changes = []
    for i, (old, buf) in enumerate(zip(before, gmem._bufs)):
        idx = np.flatnonzero(old != buf)
        if idx.size:
            # the changed bytes as runs (start, end) and their values, in address order
            brk = np.flatnonzero(np.diff(idx) != 1)
            starts = idx[np.concatenate(([0], brk + 1))]
            ends = idx[np.concatenate((brk, [idx.size - 1]))] + 1
            changes.append((i, starts, ends, buf[idx]))
            buf[idx] = old[idx]     # the next chunk of this worker starts from the launch's memory
    if shared is None or base is None:
        ctas = [(ctaid, [WorkerWarp(w) for w in warps]) for ctaid, warps in done["ctas"]]
    else:
        ctas = [(ctaid, [WorkerWarp(w, shared, (base + i, k)) for k, w in enumerate(warps)])
                for i, (ctaid, warps) in enumerate(done["ctas"])]
    return ("ok", changes, out.getvalue(), done["stdout"], ctas, done["instructions"], done.get("notes", []))


class LaunchSpec(NamedTuple):
    """Everything a process needs to run some CTAs of a launch, picklable: the module's text, the launch's
    arguments, and the addresses the launching process gave the local depots and the module variables."""
    text: str
    arch: str
    kernel: str
    grid: tuple
    block: tuple
    args: list
    shared_bytes: int
    options: object
    max_instructions: int
    engine: str
    local_bases: np.ndarray
    var_addrs: dict
    loader: object          # load_ptx (pickled by name), so that this module needs no upward import
    keep: str = "all"       # which CTAs' warps come back: "all", "last" (the grid's last CTA) or "none"


_MODULES = {}        # module text -> Module, in a cluster worker (one parse per worker and module)


def run_chunk_job(spec, gmem, chunk):
    """One task of an executor: run ``chunk`` (CTA ids) of the launch ``spec`` on ``gmem`` (the launch's global
    memory as the task received it); returns what a forked worker returns (``_work``)."""
    from ..memory import GlobalMemory
    own = GlobalMemory()                  # a private copy: a task may share the caller's process (thread pools)
    own.__dict__.update(gmem.__dict__)
    own._bases, own._bufs = list(gmem._bases), [b.copy() for b in gmem._bufs]
    gmem = own
    key = (spec.text, spec.arch)
    module = _MODULES.get(key)
    if module is None:
        if len(_MODULES) > 8:
            _MODULES.clear()
        module = _MODULES[key] = spec.loader(spec.text, spec.arch)
    global _JOB
    _JOB = (lambda part, out: module._run_chunk(spec, gmem, part, out), gmem, None)
    try:
        return _work(chunk)
    finally:
        _JOB = None


def run_executor(executor, spec, ctaids, gmem, workers, result, out, max_instructions, progress=False):
    """``run_parallel`` through any ``concurrent.futures.Executor``-like object (``submit(fn, *args)`` returning
    futures with ``result()``): each task gets the launch spec, the launch's global memory and its chunk, and
    sends back the bytes its CTAs changed; the merge is ``run_parallel``'s, in CTA order."""
    parts = chunks(ctaids, workers, 1)          # every task carries the launch's global memory: one per worker
    futures = [executor.submit(run_chunk_job, spec, gmem, part) for part in parts]
    merged = _collect(parts, (f.result() for f in futures), len(ctaids), progress)
    return merged is not None and _merge(merged, gmem, result, out, max_instructions)


SHARED_REGS_MAX = 1 << 33      # bytes of warp registers the workers may hand back through shared memory


def _work_at(job):
    return _work(*job)


def run_parallel(run_cta, ctaids, gmem, workers, result, out, max_instructions, progress=False, regs=None):
    """Run ``run_cta(chunk, out) -> {'ctas', 'stdout', 'instructions'}`` on chunks of ``ctaids`` in worker
    processes and merge in CTA order. Returns False, with global memory untouched, when the serial run must
    decide (an error, the instruction budget). ``regs`` = (warps per CTA, arena bytes) of the fast engine: the
    workers then write every warp's final registers into memory mapped here before forking, instead of
    sending them back."""
    global _JOB
    if not can_fork():
        return False
    parts = chunks(ctaids, workers)
    bases = np.cumsum([0] + [len(p) for p in parts[:-1]]).tolist()
    shared = None
    if regs is not None and 0 < len(ctaids) * regs[0] * regs[1] <= SHARED_REGS_MAX:
        buf = mmap.mmap(-1, len(ctaids) * regs[0] * regs[1])
        shared = np.frombuffer(buf, np.uint8).reshape(len(ctaids), regs[0], regs[1])
    _JOB = (run_cta, gmem, shared)
    ctx = multiprocessing.get_context("fork")
    gc.freeze()                 # the forked workers' collections leave the inherited heap alone (no page copies)
    try:
        with ctx.Pool(workers, initializer=_init_worker, initargs=(os.getpid(),)) as pool:
            merged = _collect(parts, pool.imap(_work_at, list(zip(parts, bases))), len(ctaids), progress)
    finally:
        _JOB = None
        gc.unfreeze()
    if merged is not None and shared is not None:
        for res in merged:
            for _, warps in res[4]:
                for w in warps:
                    if w._at is not None:
                        w._arena = (shared[w._at],) + w._arena[1:]
    return merged is not None and _merge(merged, gmem, result, out, max_instructions)


def _collect(parts, results, total, progress):
    """The chunks' results in CTA order, with the progress bar; None as soon as one reports an error."""
    bar = _Progress(total) if progress else None
    merged = []
    try:
        for part, res in zip(parts, results):
            if res[0] == "error":
                return None
            merged.append(res)
            if bar:
                bar.update(len(part))
    finally:
        if bar:
            bar.close()
    return merged


def _merge(merged, gmem, result, out, max_instructions):
    """Apply the chunks' changes in CTA order (the later CTA wins a byte two chunks wrote)."""
    if sum(res[5] for res in merged) > max_instructions:
        return False
    for _, changes, text, stdout, ctas, n, notes in merged:
        for i, starts, ends, values in changes:
            buf = gmem._bufs[i]
            if 64 * starts.size <= values.size:        # long runs: one slice each
                off = 0
                for a, b in zip(starts.tolist(), ends.tolist()):
                    buf[a:b] = values[off:off + b - a]
                    off += b - a
            else:
                lengths = ends - starts
                buf[np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(values.size)] = values
        if text:
            out.write(text)
        result.stdout.extend(stdout)
        result.ctas.extend(ctas)
        result.instructions += n
        for m in notes:
            result.note(m)
    if hasattr(out, "flush"):
        out.flush()
    return True


class _Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.on = sys.stderr.isatty() and not os.environ.get("WARPEMU_NO_PROGRESS")

    def update(self, n):
        self.done += n
        if self.on:
            frac = self.done / self.total
            bar = "#" * int(30 * frac)
            el = time.perf_counter() - self.t0
            eta = el / frac - el if frac else 0
            sys.stderr.write(f"\rCTAs {self.done}/{self.total} [{bar:<30}] {el:.0f}s, ~{eta:.0f}s left ")
            sys.stderr.flush()

    def close(self):
        if self.on:
            sys.stderr.write("\n")
