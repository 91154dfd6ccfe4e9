"""Glue between the CTA scheduler and the jitted loop: per-warp register arena, state, shared-memory log.

Each register that a translated instruction touches lives in one byte arena per warp; ``warp.regs[name]``
is a view of its 32 lanes with the register's own dtype, so the reference executors (which run the
instructions the loop hands back) read and write the very same memory: no copies between the engines.
"""
from __future__ import annotations

import sys
import weakref
from ctypes import addressof as _addressof, c_char as _c_char
from collections.abc import MutableMapping
from functools import partial

import numpy as np

from ...memory import SmemAccess
from . import table as T
from ..spin import SPIN_CHECK
from .translate import Translation
from .cpasync import CpAsyncRows, CpAsyncTable, records_for
from .ccall import CTX_ROW, K_RUN

_DTYPE = {T.PRED: np.bool_, T.R16: np.uint16, T.R32: np.uint32, T.R64: np.uint64}
LOG_CAP = 1024
POOL_CTAS, POOL_BYTES = 64, 8 << 20     # the CTA-loop arrays a translation keeps for its next launch (at most)
MBAR_ROWS = 64           # the rows of a CTA's mbarrier table when the CTA loop initialises its barriers
WHOLE_BYTES = 64 << 10   # a CTA's block up to its parameter rows, at most this size: started from one copy


_POINTERS: dict = {}
_LOOPS: list = []        # loop.run and loop.run_cta, once imported
_MASKS: dict = {}


def data_pointer(a):
    """The address of an array's first byte (through ctypes' buffer view: about a third of ``a.ctypes.data``'s
    cost; that for the arrays it does not take: read-only, empty or not contiguous)."""
    try:
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _pointer(a):
    """The data address of a long-lived array (kept with the array, so that an id is never reused)."""
    got = _POINTERS.get(id(a))
    if got is None or got[0] is not a:
        if len(_POINTERS) > 16:          # (they hold the arrays: a few CTAs' worth)
            _POINTERS.clear()
        got = _POINTERS[id(a)] = (a, data_pointer(a))
    return got[1]


def _lanes(bits):
    """The bool[32] lane mask of a bit mask (a fresh array)."""
    m = _MASKS.get(bits)
    if m is None:
        if len(_MASKS) > 4096:
            _MASKS.clear()
        m = _MASKS[bits] = ((bits >> np.arange(32, dtype=np.int64)) & 1).astype(np.bool_)
    return m.copy()


def translation(prog) -> Translation:
    """The program's translation, made once and kept on the Program."""
    tr = getattr(prog, "_fast", None)
    if tr is None:
        tr = prog._fast = Translation(prog)
        tr.handed_back = np.zeros(len(tr.code), np.int64)   # per PC: times the loop handed it to the executors
    return tr


def handback_counts(prog):
    """{opcode spelling: times the fast engine handed it back to the reference executors} for a program the
    fast engine ran (``benchmarks/bench_handback.py``); empty when it never ran."""
    tr = getattr(prog, "_fast", None)
    out: dict[str, int] = {}
    if tr is None:
        return out
    for p in np.flatnonzero(tr.handed_back).tolist():
        op = prog.code[p]
        name = op.instr.opcode if op.kind == "op" else op.kind
        out[name] = out.get(name, 0) + int(tr.handed_back[p])
    return out


_TABLES = weakref.WeakKeyDictionary()     # GlobalMemory -> _Table (kept beside it: never pickled with it)


class _Table:
    """A GlobalMemory's table for the loops: rows (base, size, data pointer) sorted by base, in the first ``n`` rows
    of ``rows`` (room to grow), for the allocation list ``bufs`` (the memory's own list: a copy of the memory has
    another) as it was after ``reorders`` insertions below another allocation."""
    __slots__ = ("bufs", "n", "reorders", "rows", "ptr", "table", "__weakref__")


_LAST_TABLE = [lambda: None]     # a weak reference to the _Table global_table handed out last


def global_table(gmem):
    """(base, size, data pointer) of every global allocation, sorted by base, for the loop's lookups (read-only:
    the launches of one GlobalMemory share it while its allocations stay the same).

    A GlobalMemory only ever inserts allocations: while each new one lies above the others (the common case: the
    next free address), the rows of the new ones are appended to the table the memory had (each allocation's data
    pointer taken once), into room kept after its rows, so a table handed out earlier keeps its rows; an allocation
    placed below another (``map(at=)``) makes the table anew (the pointers of the allocations it had, by base: an
    allocation never moves)."""
    bufs = gmem._bufs
    t = _LAST_TABLE[0]()        # (the memory of the previous launch: its allocation list is this memory's own, and
    n = len(bufs)               # the table keeps that list alive, so no other memory has it)
    if t is not None and t.bufs is bufs and t.n == n:
        return t.table
    t = _TABLES.get(gmem)
    if t is not None and t.bufs is bufs and t.n == n:
        _LAST_TABLE[0] = weakref.ref(t)
        return t.table
    reorders = gmem.__dict__.get("_reorders", 0)
    known = None
    if t is None or t.bufs is not bufs or t.reorders != reorders or t.n > n:
        if t is not None and t.bufs is bufs:        # (a rebuild: the pointers it had, by base)
            known = {b: p for b, _, p in t.rows[:t.n].tolist()}
        t = _Table()
        t.bufs, t.n, t.reorders = bufs, 0, reorders
        t.rows = np.empty((max(4, n), 3), np.int64)
        t.ptr = data_pointer(t.rows)
        _TABLES[gmem] = t
    k = t.n
    rows = t.rows
    if n > rows.shape[0]:               # (a new block: the tables handed out keep the old one)
        grown = np.empty((max(2 * rows.shape[0], n), 3), np.int64)
        grown[:k] = rows[:k]
        rows = t.rows = grown
        t.ptr = data_pointer(grown)
    bases = gmem._bases
    vals = []
    for i in range(k, n):
        buf = bufs[i]
        p = known.get(bases[i]) if known else None
        vals += (bases[i], buf.size, data_pointer(buf) if p is None else p)
    rows.reshape(-1)[3 * k:3 * n] = vals
    t.n = n
    table = t.table = rows[:n] if n else _NO_ROWS
    if len(_POINTERS) > 16:
        _POINTERS.clear()
    _POINTERS[id(table)] = (table, t.ptr if n else _NO_ROWS_PTR)     # (its address: _pointer need not look)
    _LAST_TABLE[0] = weakref.ref(t)
    return table


_NO_ROWS = np.array([(-1, 0, 0)], np.int64)     # the table of a memory without allocations: a row no address matches
_NO_ROWS_PTR = _NO_ROWS.ctypes.data


class ArenaRegs(MutableMapping):
    """A warp's registers when the fast engine runs it: the registers of the translation live in the arena
    (a view of one is made the first time Python asks for it), any other register in a plain dict.
    Assigning a new array to an arena register (as executors that replace whole registers do) copies the
    values into the arena, where the loop reads them."""

    __slots__ = ("arena", "slots", "views", "other", "u32", "_rows")

    def __init__(self, arena, slots, old):
        self.arena, self.slots, self.views, self.other = arena, slots, {}, {}
        self.u32 = arena.view(np.uint32)
        self._rows = {}
        for k, v in old.items():
            self[k] = v

    def _row_index(self, names):
        """(n, 32) indices into the arena's 32-bit view of the registers ``names``, or None when one is not a
        32-bit arena register (``_`` rows: -1, for writes only)."""
        key = tuple(names)
        idx = self._rows.get(key, False)
        if idx is False:
            idx = np.empty((len(key), 32), np.int64)
            for i, n in enumerate(key):
                s = self.slots.get(n)
                if n == "_":
                    idx[i] = -1
                elif s is None or s[0] != T.R32 or n in self.other:
                    idx = None
                    break
                else:
                    idx[i] = s[1] // 4 + np.arange(32)
            if len(self._rows) > 256:
                self._rows.clear()
            self._rows[key] = idx
        return idx

    def rows(self, names):
        """The 32-bit registers ``names`` as one (n, 32) uint32 copy (wgmma's operands), or None."""
        idx = self._row_index(names)
        if idx is None or (idx < 0).any():
            return None
        return self.u32[idx]

    def set_rows(self, names, values):
        """Write row i of ``values`` to register ``names[i]`` (``_``: skipped) in every lane; False when one is not
        a 32-bit arena register (nothing written)."""
        idx = self._row_index(names)
        if idx is None:
            return False
        keep = idx[:, 0] >= 0
        if keep.all():
            self.u32[idx] = values
        else:
            self.u32[idx[keep]] = values[keep]
        return True

    def _view(self, name):
        cls, off = self.slots[name]
        v = self.views[name] = self.arena[off:off + 32 * T.CLASS_BYTES[cls]].view(_DTYPE[cls])
        return v

    def get(self, name, default=None):
        v = self.views.get(name)
        if v is not None:
            return v
        if name in self.slots:
            return self._view(name)
        return self.other.get(name, default)

    def __getitem__(self, name):
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __setitem__(self, name, value):
        if name in self.slots:
            self.get(name)[...] = value
        else:
            self.other[name] = value

    def __delitem__(self, name):
        if name in self.slots:
            raise KeyError(f"{name} lives in the fast engine's arena")
        del self.other[name]

    def __contains__(self, name):
        return name in self.slots or name in self.other

    def __iter__(self):
        yield from self.slots
        yield from (k for k in self.other if k not in self.slots)

    def __len__(self):
        return len(self.slots) + sum(1 for k in self.other if k not in self.slots)


_LANE_IDS = np.arange(32, dtype=np.int64)
_LANE_IDS.flags.writeable = False


class _LaunchBuffers:
    """The arrays the loops take from a launch: state vector, shared-memory log, scratch (and the scratch's context
    row as int64)."""
    __slots__ = ("arrays", "ctx", "fields")

    def __init__(self):
        from .ccall import NSCRATCH
        self.arrays = (np.zeros(T.NSTATE, np.int64), np.zeros(LOG_CAP, np.int64), np.zeros((LOG_CAP, 32), np.int64),
                       np.zeros(LOG_CAP, np.int64),
                       np.zeros((NSCRATCH, 32), np.uint64),     # temporaries, then the families' ctx (ccall.py)
                       np.zeros(LOG_CAP, np.int64),
                       np.zeros((LOG_CAP, 32), np.int64))       # cp.async: the source address of every lane
        self.ctx = self.arrays[4][CTX_ROW:].reshape(-1).view(np.int64)  # (the loop's context row: ccall.py)
        # (the launch's attributes for these arrays: FastLaunch.planned sets them in one update)
        self.fields = dict(zip(("state", "log_pc", "log_addr", "log_mask", "scratch", "log_warp", "log_src"),
                               self.arrays), ctx=self.ctx, _buffers=self)


def _special_slots(tr):
    """(names, (n, 32) indices into a warp's 32-bit arena view) of the translation's special registers; made once."""
    got = tr.__dict__.get("_special_slots")
    if got is None:
        names = list(tr.specials)
        if not all(tr.specials[n][0] == T.R32 for n in names):
            raise AssertionError("a special register that is not 32 bits wide in the fast engine's arena")
        index = np.array([tr.specials[n][1] // 4 for n in names], np.int64)[:, None] + np.arange(32, dtype=np.int64)
        got = tr._special_slots = (names, index)
    return got


_RUN_ADDRESS = {}


def fill_tables(ctx, tr, log_src):
    """The ctx slots (``ccall.K_*``) of the translation's tables (the mma registers, maps, parameters and scratch,
    the MUFU table sizes) and of the cp.async source log, which the loops never read but the families do
    (``loop.fill_ctx`` writes the others at every run): written once, when the translation's loop buffers are
    made (they are the translation's; the translation keeps the tables), so that neither loop takes them as
    arguments (each array argument costs the loops' compile)."""
    from . import ccall as C
    for k, v in ((C.K_MREGS, tr.mma_regs.ctypes.data), (C.K_MREGS_N, tr.mma_regs.shape[0]),
                 (C.K_MMAPS, tr.mma_maps.ctypes.data), (C.K_MMAPS_W, tr.mma_maps.shape[1]),
                 (C.K_MPRM, tr.mma_prm.ctypes.data), (C.K_MPRM_W, tr.mma_prm.shape[1]),
                 (C.K_MU64, tr.mma_u64.ctypes.data), (C.K_MU64_N, tr.mma_u64.shape[0]),
                 (C.K_MSZ, tr.mufu_size.ctypes.data), (C.K_LOG_SRC, log_src.ctypes.data),
                 (C.K_LOG_SRC_W, log_src.shape[1])):
        ctx[k] = v


def warp_loop_address(args):
    """The address of the warp loop (``loop.run``) compiled for the types of ``args`` (one warp's arguments, as
    the CTA loop passes them: compiled or loaded from numba's cache now), which the CTA loop calls
    (``ccall.call_native``)."""
    from .ccall import compiled_address
    from .loop import run
    return compiled_address(run, args, _RUN_ADDRESS, "warp loop")


def bind_pick(tr, wait=False) -> bool:
    """Bind the lane-group pick (``pickcall.pick_c``, "pick" of ``families.APART``) for translation ``tr``, the first
    time one of its warps' lanes diverge (the loop stopped with ``ST_PICK``): loaded from numba's cache, or compiled
    here (under the compile lock) unless another process compiles while ``wait`` is off (``engine="auto"``: the
    caller then picks in Python). Returns whether it is bound."""
    from . import families, warmup
    k = families.APART_SLOT["pick"]
    if tr.mufu_ptr[k] == 0:
        tr.mufu_ptr[k] = warmup.family("pick", wait or not warmup.compiling())
    return tr.mufu_ptr[k] != 0


def python_pick(w):
    """The lane group the loop's pick would run next for the KernelWarp ``w`` (``machine.convergence.pick`` without
    force, over the loop's own arrays): (pc, lanes) or None."""
    from ..convergence import convergence, pick
    come = ~w.exited
    live = come & ~w.waiting
    if not live.any():
        return None
    return pick(convergence(w.program), w, live, come, False)


def _loops():
    """``_LOOPS``, filled on first use (loop.run and loop.run_cta)."""
    if not _LOOPS:
        from .loop import run, run_cta
        _LOOPS.extend((run, run_cta))
    return _LOOPS


def _take_buffers(tr):
    """A launch's state vector, log and scratch (``_LaunchBuffers``): those a finished launch of the translation
    handed on (``release``), or new ones, whose ctx gets the translation's tables once (nothing else writes those
    slots)."""
    pool = tr.__dict__.setdefault("_buffers", [])
    if pool:
        return pool.pop()
    bufs = _LaunchBuffers()
    fill_tables(bufs.ctx, tr, bufs.arrays[6])
    return bufs


class FastLaunch:
    """What every warp of one launch shares: the translation, the global-memory table, the loop's state
    vector and shared-memory log (emptied after every run of the loop)."""

    wait = False        # (engine="fast": what the launch needs is compiled or loaded at once, wgmmax's fix-ups too;
                        # planned launches: the pick binds as engine="auto" binds, engine.bind_pick)

    def __init__(self, prog, gmem, wait=False):
        self._run, self._run_cta = _loops()
        self.wait = wait
        self.tr = tr = translation(prog)
        # the instruction families the kernel uses (families.py): compiled or loaded now when ``wait``
        # (engine="fast"); else, while another process compiles one, its rows go to the reference executors
        if not tr.__dict__.get("_families_bound"):      # (once every slot is filled, it stays filled)
            tr._families_bound = tr.bind_families(wait)
        self.gtab = global_table(gmem)
        # the loop's state vector, log and scratch: a finished launch of the same translation hands its arrays
        # on (``release``); they carry nothing from one run of the loop to the next (the loop sets the state
        # it reads and counts the log from 0)
        self._buffers = bufs = _take_buffers(tr)
        (self.state, self.log_pc, self.log_addr, self.log_mask, self.scratch, self.log_warp,
         self.log_src) = bufs.arrays
        self.state[:] = 0
        self.ctx = bufs.ctx
        self.lanes = _LANE_IDS
        # constant special registers: one fancy-indexed store per warp fills them all
        self.special_names, self.special_index = _special_slots(tr)

    @classmethod
    def planned(cls, tr, gmem):
        """``FastLaunch(prog, gmem)`` for a translation whose families are bound (a launch of a planned shape,
        machine.module): the fields that depend only on the translation kept on it, the rest made as ``__init__``
        makes them."""
        self = cls.__new__(cls)
        d = self.__dict__
        fields = tr.__dict__.get("_launch_fields")
        if fields is None:
            names, index = _special_slots(tr)
            fields = tr._launch_fields = {"tr": tr, "lanes": _LANE_IDS, "special_names": names,
                                          "special_index": index}
        d.update(fields)
        self._run, self._run_cta = _loops()     # (the list's loops: benchmarks time them by swapping them there)
        self.gtab = global_table(gmem)
        d.update(_take_buffers(tr).fields)
        self.state.fill(0)
        return self

    def release(self):
        """The launch is over: its loop arrays go to the next launch of the translation (nothing of this launch
        reads them again: its logs were copied out when they were flushed)."""
        bufs, self._buffers = self.__dict__.pop("_buffers", None), None
        for fc in self.__dict__.pop("_free", ()):      # unused CTA arrays go to the translation's next launch
            fc.retire()
        if bufs is not None:
            pool = self.tr.__dict__.setdefault("_buffers", [])
            if len(pool) < 2:
                pool.append(bufs)
        stage = self.__dict__.pop("_staging", None)
        if stage is not None and not stage.used():      # (empty: every copy was handed over or completed)
            pool = self.tr.__dict__.setdefault("_stagings", [])
            if len(pool) < 2:
                pool.append(stage)

    def staging(self, smem=0):
        """The staging area of the TMA rows (``bulkx.Staging``), made on first use, room for what a CTA of ``smem``
        bytes of shared memory copies at once; a finished launch of the same translation hands its area on
        (``release``), grown as its copies needed."""
        got = self.__dict__.get("_staging")
        if got is None:
            from .bulkx import Staging
            pool = self.tr.__dict__.setdefault("_stagings", [])
            got = self._staging = pool.pop() if pool else Staging(smem)
        return got

    def attach(self, warp, arena=None):
        return FastWarp(self, warp, arena)

    def cta_arrays(self, nwarps):
        """A CTA loop's arrays for ``nwarps`` warps (``FastCTA``; ``start`` it once the CTA exists) when the
        translation allows the CTA loop (``Translation.cta_ok``), else None."""
        fc = self.__dict__.pop("_resume", None)
        if fc is not None:              # the arrays the grid loop stopped in (``resume``)
            return fc
        tr = self.tr
        # a kernel with wgmma needs wgcall.py's function in the CTA loop: until it is compiled (engine="auto" while
        # another process compiles), its CTAs run on the Python scheduler, which hands the wgmma rows back
        ok = tr.__dict__.get("_cta_loop_ok")
        if not ok:                      # (once true, it stays true: the families' functions are never unbound)
            from .families import APART_SLOT, CTA_NEEDS
            ok = tr._cta_loop_ok = tr.cta_ok and all(tr.mufu_ptr[APART_SLOT[name]] != 0
                                                     for name in CTA_NEEDS if name in tr.apart)
        if not ok:
            return None
        free = self.__dict__.get("_free")
        if free and free[-1].nw == nwarps:      # a finished CTA's arrays nobody reads any more (``recycle``)
            return free.pop()
        pool = tr.__dict__.get("_cta_pool")     # or those of an earlier launch's CTA (``FastCTA.retire``)
        if pool:
            try:
                fc = pool.pop()
            except IndexError:
                fc = None
            if fc is not None and fc.nw == nwarps:
                fc.launch, fc.log_warp = self, self.log_warp
                return fc
        return FastCTA(self, nwarps)

    def resume(self, fc):
        """The next CTA made takes the arrays ``fc`` as the grid loop left them (gridloop.py): ``start`` keeps
        their state, ``run`` goes on from it."""
        fc._resumed = True
        self._resume = fc

    def recycle(self, cta):
        """``cta`` ran to its end and the launch does not keep it: when its warps were never built, the next CTA of
        the launch takes its arrays (``FastCTA.start`` sets every byte of them again)."""
        fc = cta.__dict__.get("_fast_arrays")
        au = cta.__dict__.get("_au")
        if fc is None or cta._warps is not None or cta.fast_cta is not fc or fc.wg is not None or \
                (au is not None and au.pending):
            return
        cta.fast_cta = cta._fast_arrays = None
        cta.smem = cta.params = None            # (views of the block, which the next CTA overwrites)
        free = self.__dict__.setdefault("_free", [])
        if len(free) < 2:
            free.append(fc)


class FastWarp:
    """One warp's arena and counters."""
    IDLE, SLOW, LOG, EXITED, DEFER, BAR = T.ST_IDLE, T.ST_SLOW, T.ST_LOG, T.ST_EXITED, T.ST_DEFER, T.ST_BAR

    def __init__(self, launch, warp, arena=None):
        tr = launch.tr
        self.launch = launch
        in_cta = arena is not None      # a row of FastCTA.arenas: FastCTA.bind gives it its cp.async table row
        self.arena = arena = np.zeros(max(tr.arena_bytes, 8), np.uint8) if arena is None else arena
        warp.regs = ArenaRegs(arena, tr.slots, warp.regs)
        if tr.local_base is not None:   # each lane's .local depot (Translation.local_slot)
            arena[tr.local_base:tr.local_base + 256].view(np.uint64)[:] = warp.local_bases
        for name, (off, sym) in tr.var_slots.items():      # module variables' addresses (Translation.var_slot)
            base = warp.symbols.get(name, sym)[1]
            if callable(base):
                raise AssertionError(f"the fast engine found no fixed address for the variable {name}")
            arena[off:off + 256].view(np.uint64)[:] = np.uint64(base)
        if launch.special_names and not in_cta:     # (FastCTA.bind fills those of a CTA's warps at once)
            sv = warp.special_values
            arena.view(np.uint32)[launch.special_index] = [sv[n] if n in sv else warp.special(n)
                                                          for n in launch.special_names]
        self.executed = 0
        if not (warp.param.flags.c_contiguous and warp.smem.flags.c_contiguous):
            raise AssertionError("the fast engine addresses .param and shared memory as contiguous bytes")
        self.param = warp.param
        self.cp, self.cpk = None, 0
        self._args = None
        if not in_cta:
            sizes = records_for(tr, warp.program) if getattr(warp, "program", None) is not None else None
            self.use_cp_table(CpAsyncTable(1, warp.options.cp_async == "eager", sizes), 0, warp)

    def use_cp_table(self, table, k, warp):
        """Keep the warp's cp.async records in row ``k`` of ``table`` (the loop's arrays)."""
        if getattr(warp.cp_async, "records", None):
            raise AssertionError("the fast engine takes over a warp with cp.async copies in flight")
        self.cp, self.cpk = table, k
        warp.cp_async = CpAsyncRows(table, k)

    def _arguments(self, w):
        """The loop's arguments for warp ``w`` (kept while the arrays they name are the same objects) and the
        raw pointers of its shared memory and parameters."""
        key = (w.pc, w.exited, w.waiting, w.smem_inflight, w.smem, self.cp.meta)
        got = self._args
        if got is None or any(a is not b for a, b in zip(got[0], key)):
            fl, tr = self.launch, self.launch.tr
            args = (tr.code, tr.imm, self.arena, w.pc, w.exited, w.waiting, w.smem_inflight, fl.gtab, fl.state,
                    fl.log_pc, fl.log_addr, fl.log_mask, fl.scratch, tr.mufu_ptr, *self.cp.row(self.cpk))
            got = self._args = (key, args, w.smem.ctypes.data, w.smem.size, self.param.ctypes.data,
                                self.param.shape[1])
        return got

    def run(self, w, budget):
        """Run until the loop stops; returns (status, pc, mask) with the reference's types."""
        fl = self.launch
        st = fl.state
        _, args, smem_ptr, smem_size, param_ptr, param_size = self._arguments(w)
        st[T.S_BUDGET] = budget[0]
        st[T.S_ISSUED] = w.issued
        st[T.S_BACK] = w.back_taken
        st[T.S_SPIN_CHECK] = SPIN_CHECK
        st[T.S_INFLIGHT] = w._inflight_n
        st[T.S_NLOG] = 0
        st[T.S_EXECUTED] = 0
        st[T.S_SMEM_PTR] = smem_ptr
        st[T.S_SMEM_SIZE] = smem_size
        st[T.S_PARAM_PTR] = param_ptr
        st[T.S_PARAM_SIZE] = param_size
        st[T.S_CTA] = 0
        st[T.S_MBW] = 0                                     # (its try_wait that must wait goes back: the scheduler stalls)
        st[T.S_MBINIT] = 0                                  # (and mbarrier.init/inval: MBarriers keeps their objects)
        st[T.S_WG] = 0                                      # (a warp run alone hands its wgmma back)
        cst = getattr(getattr(w, "_cta", None), "wgmma", None)
        if cst is not None:
            ws = cst.warps.get(w.warp_id)
            st[T.S_WG_REGS] = int(ws is not None and bool(ws.reg_count))
            st[T.S_WG_SMEM] = int(cst.n_reading > 0)
            st[T.S_WG_READS] = _pointer(cst.smem_reads) if cst.n_reading > 0 else 0
        else:
            st[T.S_WG_REGS] = st[T.S_WG_SMEM] = st[T.S_WG_READS] = 0
        au = w._async if fl.tr.async_readers else None      # generic-proxy writes the fence check reads (memx.py)
        st[T.S_DIRTY] = _pointer(au.dirty) if au is not None else 0
        # S_DIRTY_N: nonzero while some byte may be marked (AsyncUnit.any_dirty); the loop's stores count up, a
        # fence.proxy.async in the loop (asyncx.py) clears the marks and sets it to 0
        st[T.S_DIRTY_N] = int(au is not None and au.any_dirty)
        # the CTA's mbarriers (asyncx.py), unless a sanitiser or a timeline follows them (the executors tell them)
        mbs = w._async.mbarriers if w._async is not None and w.san is None and not w._async.record else None
        st[T.S_MBAR] = _pointer(mbs.rows) if mbs is not None else 0
        st[T.S_MBAR_N] = mbs.used if mbs is not None else 0
        st[T.S_MBAR_CHANGED] = 0
        st[T.S_GTAB] = _pointer(fl.gtab)
        st[T.S_GTAB_N] = fl.gtab.shape[0]
        # the TMA rows' staging area (bulkx.py): a warp of a CTA, unless a sanitiser or a timeline follows its copies
        cta = getattr(w, "_cta", None)
        stage = fl.staging(cta.smem_size) if mbs is not None and fl.tr.bulkx and cta is not None else None
        st[T.S_BULK] = stage.address if stage is not None else 0
        fl._run(*args)
        if stage is not None and stage.used():
            stage.drain(w)                  # the staged copies join the async unit before anything else runs
        w._inflight_n = int(st[T.S_INFLIGHT])
        if au is not None:
            au.any_dirty = bool(st[T.S_DIRTY_N])
        if st[T.S_MBAR_CHANGED]:
            mbs.version += int(st[T.S_MBAR_CHANGED])
        budget[0] = int(st[T.S_BUDGET])
        w.clock = w.issued = int(st[T.S_ISSUED])
        w.back_taken = int(st[T.S_BACK])
        self.executed += int(st[T.S_EXECUTED])
        if st[T.S_NLOG]:
            self._flush(w, int(st[T.S_NLOG]))
        status = int(st[T.S_STATUS])
        if status == T.ST_PICK:         # the lanes diverged and the pick is not bound yet (pickcall.py)
            if bind_pick(fl.tr, fl.wait):
                return self.run(w, budget)
            got = python_pick(w)        # (another process compiles it: the reference runs the group's instruction)
            if got is None:
                return (T.ST_IDLE if st[T.S_EXECUTED] > 0 else T.ST_DEFER), 0, None
            fl.tr.handed_back[got[0]] += 1
            return T.ST_SLOW, int(got[0]), got[1]
        if status in (T.ST_IDLE, T.ST_EXITED, T.ST_DEFER):
            return status, 0, None
        if status == T.ST_SLOW:
            fl.tr.handed_back[st[T.S_PC]] += 1
        return status, int(st[T.S_PC]), _lanes(int(st[T.S_MASK]))

    def _flush(self, w, n):
        fl = self.launch
        keep = min(n, max(w.smem_log_cap - w._smem_n, 0))
        w.smem_log_dropped += n - keep
        w._smem_n += keep
        n = keep
        if not n:
            return
        w._smem_pending.append(partial(_records, w.program.code, fl.tr.code, fl.log_pc[:n].copy(),
                                       fl.log_mask[:n].copy(), fl.log_addr[:n].copy(), fl.log_src[:n].copy()))


_LAYOUTS: dict = {}
_I8, _B1, _U1 = np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.uint8)


def _cta_layout(tr, nw, smem_size, param_size):
    """([(name, shape, dtype, byte offset)], bytes) of a FastCTA's arrays in one block (each 64-byte aligned)."""
    ab = max(tr.arena_bytes, 8)
    key = (ab, nw, bool(tr.mb_waits or tr.wg is not None), smem_size, param_size)
    got = _LAYOUTS.get(key)
    if got is None:
        # (the arenas and the yield snapshots last: a CTA copies the part before them from its launch shape's first)
        parts = [("pcs", (nw, 32), _I8), ("issued", (nw,), _I8), ("executed", (nw,), _I8),
                 ("wbid", (nw, 32), _I8), ("bar_arrived", (16,), _I8), ("bar_seq", (16,), _I8),
                 ("cst", (T.NCSTATE,), _I8), ("backs", (nw,), _I8),       # backs: backward branches (spin checks)
                 ("grp", (nw, 32), _I8),        # the bulk async-groups each lane committed (bulkx)
                 ("mbw", (nw, T.MB_ROWS, 32), _I8), ("exited", (nw, 32), _B1), ("waiting", (nw, 32), _B1),
                 ("arenas", (nw, ab), _U1), ("ysnap", (nw, ab if key[2] else 1), _U1),
                 ("smem", (smem_size,), _U1), ("params", (nw, 32, param_size), _U1)]
        out, off = [], 0
        for name, shape, dt, in parts:
            out.append((name, shape, dt, off))
            off += -(-int(np.prod(shape)) * dt.itemsize // 64) * 64
        if len(_LAYOUTS) > 64:
            _LAYOUTS.clear()
            _OFFSETS.clear()
        got = _LAYOUTS[key] = (out, off)
        _OFFSETS[id(out)] = (out, {name: o for name, _, _, o in out})
    return got


_OFFSETS: dict = {}     # id(layout) -> (layout, {name: byte offset})


def _madvise():
    """libc's madvise (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        f = ctypes.CDLL(None, use_errno=True).madvise
        f.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        f.restype = ctypes.c_int
        return f
    except (OSError, AttributeError):
        return None


_MADVISE = [None, False]        # (the function, looked up)
_HUGE = 2 << 20


def _small_pages(block):
    """``block`` (fresh zeros, not touched yet) on ordinary pages (MADV_NOHUGEPAGE): a CTA touches a few bytes here
    and there in most of its block (special registers in every warp's arena, its shared memory), and with
    transparent huge pages on each touch has the kernel find and clear 2 MB at once; on small pages only the pages
    touched are cleared. Best effort: nothing changes where madvise is not available or refuses."""
    if block.nbytes < 2 * _HUGE:
        return block
    if not _MADVISE[1]:
        _MADVISE[:] = (_madvise(), True)
    f = _MADVISE[0]
    if f is not None:
        a = block.ctypes.data
        lo = -(-a // 4096) * 4096
        hi = (a + block.nbytes) // 4096 * 4096
        if hi > lo:
            f(lo, hi - lo, 15)      # MADV_NOHUGEPAGE
    return block


_STEPS: dict = {}


def _steps(n, step):
    """[0, step, 2 step, ...] (n values, int64), made once."""
    got = _STEPS.get((n, step))
    if got is None:
        if len(_STEPS) > 256:
            _STEPS.clear()
        got = _STEPS[(n, step)] = np.arange(n, dtype=np.int64) * step
        got.flags.writeable = False
    return got


_EXITED: dict = {}


def _EXITED_ROWS(nw, nthreads):
    """(nw, 32) bool: the lanes of a CTA of ``nthreads`` threads that are no thread (exited from the start)."""
    got = _EXITED.get((nw, nthreads))
    if got is None:
        if len(_EXITED) > 256:
            _EXITED.clear()
        got = _EXITED[(nw, nthreads)] = np.arange(nw * 32, dtype=np.int64).reshape(nw, 32) >= nthreads
        got.flags.writeable = False
    return got


def _special(cta, w, values, name):
    """A special register of warp ``w`` of ``cta`` that the launch did not set (``Warp.special``'s rule, for a warp
    that has not issued anything)."""
    from ..warp import Warp

    class _Fresh:
        special_values, warp_id, clock, smem = values, w, 0, cta.smem
    return Warp.special(_Fresh, name)


GO_ON = "go on"        # FastCTA.run_alone: the CTA goes on in FastCTA.run
BLOCKED = "blocked"     # FastCTA.run(cluster=True): no warp of the CTA can go on before another CTA of its cluster
                        # (machine.cluster.BLOCKED)


class FastCTA:
    """A CTA run by the jitted CTA loop (``loop.run_cta``): the warps' arenas, PCs, exit and wait masks live
    in (warps, ...) arrays whose rows are the warps' own arrays, so Python (which runs the instructions the
    loop hands back) and the loop see the same state."""

    def __init__(self, launch, nw):
        self.launch, self.nw = launch, nw
        self.log_warp = launch.log_warp
        self.unkept = False         # set when nothing will read the CTA's warps after its run (no bank records kept)
        self.cluster_hook = None    # a CTA of a cluster: fills the cluster's table (hopcall.CL_*) before each run

    def start(self, cta):
        """Set the loop's arrays up for ``cta`` before any warp object exists (``machine.cta.CTA``: the warps are
        built from these arrays when something reads them, ``adopt``): every lane at PC 0, lanes past the block's
        thread count exited, the parameter blocks, the special registers, the cp.async table.

        Every array of the CTA lives in one block, which starts as the first CTA of the same launch shape (of this
        translation) started: its arrays' initial values (copied), the special registers in its arenas (one store);
        a later CTA then writes the special registers that differ between CTAs (its ids)."""
        fl, nw = self.launch, self.nw
        tr = fl.tr
        if self.__dict__.pop("_resumed", False):        # the grid loop ran the CTA in these arrays so far
            self.unkept = False
            cta.smem, cta.params = self.smem, self.params
            self._bind(cta, False)
            log = self.__dict__.pop("_kept_log", None)
            if log is not None:
                self.pending.append((len(log[0]), log))
            return self
        param_init = cta._make[2]
        memo = cta.__dict__.get("_start_memo")      # a planned launch shape's (CTA.plan_fields): what the lookups
        if memo and memo[0] is tr and self.__dict__.get("layout") is memo[1] and memo[2][3] is not None:
            # below found for its first CTA: the layout of these arrays, and the block its CTAs start as (``whole``)
            self.unkept = False
            self.cluster_hook = None
            cta.smem, cta.params = self.smem, self.params
            got = memo[2]
            whole = got[3]
            if memo[3] is param_init and self.offsets["params"] == whole.size:
                self.block[...] = memo[4]   # (the block as the shape's first CTA started, with these parameter rows)
            else:
                self.params[...] = param_init
                self.block[:whole.size] = whole
                if not param_init.flags.writeable and self.offsets["params"] == whole.size:
                    # (kept parameter bytes: the next launch with the same arguments starts from one copy)
                    memo[3:] = (param_init, self.block.copy())
            if got[2]:
                a32 = self.arenas.view(np.uint32)
                for c, n in got[2]:
                    a32[:, c:c + 32] = cta.own_special(n)
            if tr.local_base is not None or tr.var_slots:
                self._fill_addresses(cta)
            return self._bind(cta, True)
        layout, size = _cta_layout(tr, nw, cta.smem_size, param_init.size)
        key = (nw, cta.shape)
        blocks = tr.__dict__.setdefault("_cta_blocks", {})
        got = blocks.get(key)
        self.unkept = False
        self.cluster_hook = None
        offsets = _OFFSETS[id(layout)][1]
        whole = got[3] if got is not None else None
        if self.__dict__.get("layout") is layout:       # a recycled FastCTA (FastLaunch.recycle): the same arrays,
            block = self.block                          # at the same addresses
            if whole is None:
                block.fill(0)
        else:
            block = self._on_block(_small_pages(np.zeros(size, np.uint8)), layout)
        head = offsets["arenas"]
        # the CTA's shared memory (zeros) and every warp's per-lane parameter bytes (warp w: rows w)
        cta.smem, cta.params = self.smem, self.params
        self.params[...] = param_init
        if whole is not None:
            # a small block: everything before the parameter rows as the launch shape's first CTA started (initial
            # values, special registers, zeroed arenas and shared memory) in one copy, then this CTA's ids
            block[:whole.size] = whole
            if got[2]:
                a32 = self.arenas.view(np.uint32)
                for c, n in got[2]:
                    a32[:, c:c + 32] = cta.own_special(n)
        elif got is None:
            self.wbid[:] = -1
            self.cst[T.C_BARCNT:] = -1
            self.cst[T.C_ASYNC] = int(tr.any_bulk)      # copies may be in flight at a round's end (ctaloop.py)
            self.mbw[:, T.MB_SEQ] = -1                  # mbarrier stall records, yields (ctaloop.py): none yet
            self.exited[:] = _EXITED_ROWS(nw, cta.nthreads)
            vals, cols = self._fill_specials(cta) if fl.special_names else (None, [])
            if len(blocks) > 16:
                blocks.clear()
            pstart = offsets["params"]
            blocks[key] = (block[:head].copy(), vals, cols,
                           block[:pstart].copy() if pstart <= WHOLE_BYTES else None)
        else:
            block[:head] = got[0]
            if got[1] is not None:
                a32 = self.arenas.view(np.uint32)
                a32[:, fl.special_index] = got[1]
                for c, n in got[2]:
                    a32[:, c:c + 32] = cta.own_special(n)
        if memo is not None and not memo:
            got = blocks.get(key)
            if got is not None:
                memo[:] = (tr, layout, got, None, None)
        if tr.local_base is not None or tr.var_slots:
            self._fill_addresses(cta)
        return self._bind(cta, True)

    def _on_block(self, block, layout):
        """Make these arrays the views of ``block`` (laid out as ``layout``)."""
        offsets = _OFFSETS[id(layout)][1]
        self.block = block
        self._head = self._grid_fields = self._largs = None     # (values kept for the previous block: run,
        # grid_state, _loop_list)
        for name, shape, dt, off in layout:
            setattr(self, name, np.ndarray(shape, dt, block, off))
        self.refs = sys.getrefcount(block)      # the block's own views (``retire``: no other view may remain)
        self.layout = layout
        self.offsets = offsets
        base = self.base = data_pointer(block)
        self.param_ptrs = (base + offsets["params"]) + _steps(self.nw, self.params[0].nbytes)
        self.smem_ptr = base + offsets["smem"]
        self.bar_ptrs = (base + offsets["bar_seq"], base + offsets["cst"] + 8 * T.C_BARCNT)
        return block

    @staticmethod
    def on_kept(launch, nw, layout, cp, eager, block, log, counts):
        """Arrays of ``layout`` on ``block`` (a copy of a block the grid loop ran a kept CTA in to its end,
        gridloop.py), with the CTA's shared-memory log (``log``: as ``_log_copy`` makes it, or None) and cp.async
        table (``cp``: the kernel's shared, empty one; or None: a table of its own with the committed-group
        ``counts``), for the CTA object made next (``FastLaunch.resume``)."""
        fc = FastCTA(launch, nw)
        fc._on_block(block, layout)
        if cp is None:
            cp = CpAsyncTable(nw, eager, launch.tr.__dict__.get("_cp_sizes"))
            cp.count[...] = counts
        fc.cp = cp
        fc._kept_log = log
        return fc

    def _bind(self, cta, fresh):
        """The Python side of ``start``: the cp.async table (``fresh``: a new one for a kernel with cp.async), the
        registers outside the arenas, the pending logs, the wgmma state."""
        fl, nw = self.launch, self.nw
        tr = fl.tr
        options = cta._make[1]
        eager = options is not None and options.cp_async == "eager"
        if not fresh and self.__dict__.get("cp") is not None:
            pass
        elif _uses_cp_async(cta.prog):
            self.cp = CpAsyncTable(nw, eager, records_for(tr, cta.prog))
        else:                   # a kernel without cp.async: its CTAs share one table, which stays empty
            shared = tr.__dict__.setdefault("_cp_tables", {})
            self.cp = shared.get((nw, eager))
            if self.cp is None:
                self.cp = shared[(nw, eager)] = CpAsyncTable(nw, eager)
        self.xstates = [{}]                         # the registers outside the arenas, by version (MW_XVER)
        self.xids = {}
        self.pending = []                           # shared-memory log copies for warps not built yet (_flush)
        self.wg = None                              # the wgmma state, while this loop owns it (wgmmax.py)
        if tr.wg is not None:
            from .wgmmax import K_SEQ, WgTable
            from .ctaloop import K_SEQ_OFFSET
            assert K_SEQ_OFFSET == 8 * K_SEQ        # (the stalls of both kinds share wgmmax's counter)
            self.wg = WgTable(tr.wg, cta, self.arenas, fl.__dict__.setdefault("wg_pool", {}))
        cta._fast_arrays = self
        return self

    def retire(self):
        """Nothing reads these arrays any more (a finished launch's unused arrays, or a CTA that is gone whose warps
        were never built): they go to the translation's next launch (``FastLaunch.cta_arrays``), which sets every
        byte of them again (``start``)."""
        fl = self.launch
        if fl is None:
            return
        pool = fl.tr.__dict__.setdefault("_cta_pool", [])
        self.launch = self.log_warp = None          # (no launch, global memory or log is kept alive by the pool)
        self.cp = self.wg = None
        self.xstates = self.xids = self.pending = None
        block = self.__dict__.get("block")
        # (a view of the block made outside these arrays, e.g. of the CTA's shared memory, keeps it out of the pool)
        if block is not None and sys.getrefcount(block) == self.refs and len(pool) < POOL_CTAS and \
                (len(pool) + 1) * block.nbytes <= POOL_BYTES:
            pool.append(self)

    def adopt(self, cta, ws):
        """The CTA's warps were just built (on the rows of these arrays): hand them what the loop kept apart so
        far (their cp.async rows, issue and backward-branch counts, executed instructions, bank records)."""
        issued, backs = self.issued.tolist(), self.backs.tolist()
        for i, w in enumerate(ws):
            w.fast.use_cp_table(self.cp, i, w)
            if issued[i]:
                w.clock = w.issued = issued[i]
            if backs[i]:
                w.back_taken = backs[i]
        self._finish(ws)
        pending, self.pending = self.pending, []
        for n, log in pending:
            self._hand_log(ws, n, log)

    def _fill_addresses(self, cta):
        """The hidden registers ``FastWarp.__init__`` fills for a warp run alone, for every warp of the CTA at once:
        each lane's ``.local`` depot (``Translation.local_slot``) and the module variables' addresses."""
        tr, arenas = self.launch.tr, self.arenas
        local_bases, var_addrs = cta._make[3], cta._make[5]
        if tr.local_base is not None:
            lb = tr.local_base
            arenas[:, lb:lb + 256].view(np.uint64)[:] = local_bases.reshape(self.nw, 32)
        for name, (off, sym) in tr.var_slots.items():
            base = var_addrs[name] if name in var_addrs else sym[1]
            if callable(base):
                raise AssertionError(f"the fast engine found no fixed address for the variable {name}")
            arenas[:, off:off + 256].view(np.uint64)[:] = np.uint64(base)

    def _fill_specials(self, cta):
        """Write the constant special registers into every warp's arena in one store; returns their values and
        [(first arena column, name)] of those that differ between the CTAs of a launch (``CTA.own_specials``)."""
        fl = self.launch
        names, index = fl.special_names, fl.special_index
        vals = np.array([[v[n] if n in v else _special(cta, w, v, n) for n in names]
                         for w, v in ((w, cta.specials_of(w)) for w in range(self.nw))], np.uint32)
        self.arenas.view(np.uint32)[:, index] = vals
        own = cta.own_specials
        return vals, [(int(index[j, 0]), n) for j, n in enumerate(names) if n in own]

    def _head_for(self, gtab, stage, mbs):
        """The state fields ``run`` keeps for this block, staging area and mbarrier table (``_head``), with the global
        table ``gtab``'s two fields written in when it is another table (another memory), or None."""
        got = self.__dict__.get("_head")
        if got is None or got[2] is not stage or got[3] is not mbs:
            return None
        if got[1] is not gtab:
            ptr, n = _pointer(gtab), gtab.shape[0]
            got[4][_GTAB_AT] = ptr
            got[4][_GTAB_AT + 1] = n
            if got[5] is not None:
                got[5][_GTAB_AT] = ptr
                got[5][_GTAB_AT + 1] = n
            got = self._head = (None, gtab) + got[2:]
        return got

    def run_alone(self, cta):
        """``run`` for a CTA of a planned launch (machine.module): when the CTA has no async unit, wgmma state,
        cluster table, sanitizer or warps yet and the loop did not run it, the CTA loop's first run is made here with
        the state vector's fields in one store; a CTA that then ran to its end without a shared-memory log to keep
        is done (None), any other outcome goes on in ``run`` from the loop's results (as the grid loop's CTAs do),
        which the caller calls (``GO_ON``: Python may run executors from there, under the caller's ``np.errstate``)."""
        fl = self.launch
        tr = fl.tr
        got = self._head_for(fl.gtab, None, _NO_MBARRIERS)
        if got is None or got[5] is None or cta.san is not None or \
                self.wg is not None or self.cluster_hook is not None or cta._warps is not None or \
                "_au" in cta.__dict__ or "_ran" in self.__dict__ or not tr.__dict__.get("_unit_free") or \
                tr.__dict__.get("_run_address") is None:
            return GO_ON
        st = fl.state
        both = got[5]
        both[_BOTH_BUDGET] = cta.budget[0]
        both[_BOTH_INFLIGHT] = cta.inflight_n
        st[_BOTH] = both
        self._enter(cta)
        fl.ctx[K_RUN] = tr._run_address
        fl._run_cta(*self._loop_list(cta))
        if self.cst[T.C_STATUS] == T.CTA_DONE and not (st[T.S_NLOG] or st[T.S_MBAR_CHANGED] or st[T.S_MBAR_REBUILT]):
            cta.inflight_n = int(st[T.S_INFLIGHT])
            cta.budget[0] = int(st[T.S_BUDGET])
            return None
        self._ran = True
        return GO_ON

    def run(self, cta, cluster=False):
        """Run the CTA to its end; the instructions the loop hands back run through ``cta._step``. Returns None,
        or (warp, parked, progressed) when a spin check held lanes back or parked a warp: the scheduler of
        ``machine.cta`` then goes on from that warp, with the barrier state handed over (``_handoff``).

        ``cluster``: a CTA of a cluster of several (``machine.cluster.Cluster.run``): lanes an executor stalls
        (``barrier.cluster.wait``, an mbarrier the loop leaves to Python) wait in ``cta.stalls`` while the loop runs
        the other warps, and a round in which no warp can go on returns BLOCKED (the other CTAs run; a later call
        goes on from the loop's arrays) instead of handing the CTA to the scheduler."""
        fl = self.launch
        run_cta = fl._run_cta
        tr = fl.tr
        st = fl.state
        ws = cta._warps                 # None until something reads the warps (CTA.warps builds them)
        cp = self.cp
        # the CTA's mbarriers, unless a sanitizer follows them (the executors tell it; a timeline keeps the Python
        # scheduler); a try_wait parks its lanes in the loop unless a yield's state includes .param bytes. A kernel
        # whose rows never touch the async unit (``_unit_free``) makes none: the loop gets an empty table's values
        au0 = cta.__dict__.get("_au")
        if au0 is None and cta.san is None and tr.__dict__.get("_unit_free"):
            mbs, stage = _NO_MBARRIERS, None        # (as below: a kernel without an async unit, unwatched)
        else:
            if au0 is None and (cta.san is not None or not _unit_free(tr, cta.prog)):
                au0 = cta.async_unit
            mbs = (au0.mbarriers if au0 is not None else _NO_MBARRIERS) if cta.san is None and \
                (au0 is None or not au0.record) else None
            if mbs is not None and tr.cta_waits:
                mbs.reserve(MBAR_ROWS)      # (a barrier that finds the table full goes back to Python, which grows it)
            # TMA rows (bulkx.py) stage their copies here, unless a sanitiser or a timeline follows them
            stage = fl.staging(cta.smem_size) if tr.bulkx and mbs is not None else None
        # the grid loop (gridloop.py) made this CTA's first call of the CTA loop, with the state set as below: its
        # results stand in the state vector and the arrays, and the CTA goes on from them
        ran = self.__dict__.pop("_ran", False)
        # the fields the loop reads before its first run, in one store ((set below for kernels the async proxy
        # reads: the wgmma and dirty-mark fields)
        preset = False          # the first run's per-run fields stored with these (a CTA without an async unit)
        if not ran:
            # (their values, kept while the block, global table, staging area and mbarrier table are the same)
            got = self._head_for(fl.gtab, stage, mbs)       # (dropped with the block: _on_block)
            if got is None:
                head = np.array(
                    (SPIN_CHECK, 0, 0, 0, 0, 0, 0, int(mbs is not None and not tr.param_writes), int(mbs is not None),
                     self.bar_ptrs[0], self.bar_ptrs[1], stage.address if stage is not None else 0,
                     _pointer(fl.gtab), fl.gtab.shape[0]), np.int64)
                # with the empty mbarrier table, the fields of the first run too (as the loop below stores them,
                # the budget and the copies in flight set at each run), and the cluster table's (none)
                both = np.concatenate([head, (0, 0, 0, self.smem_ptr, cta.smem.size, cta.params.shape[2],
                                              _pointer(mbs.rows), 0, 0, mbs.rows.shape[0], 0, 0)]) \
                    if mbs is _NO_MBARRIERS and mbs.used == 0 else None
                got = self._head = (None, fl.gtab, stage, mbs, head, both)
            both = got[5]
            if both is not None and self.cluster_hook is None and self.wg is None and au0 is None:
                both[_BOTH_BUDGET] = cta.budget[0]
                both[_BOTH_INFLIGHT] = cta.inflight_n
                st[_BOTH] = both
                preset = True
            else:
                st[_HEAD] = got[4]
        wg = self.wg
        au = au0 if tr.async_readers else None   # generic-proxy writes (memx.py)
        smem_ptr = self.smem_ptr
        if stage is not None:
            from . import bulkx as B
            from .loop import PUMP
            assert B.PUMP == PUMP
            unit, ctl = au0, stage.ctl
            ctl[B.C_GRP], ctl[B.C_GRPN] = self.grp.ctypes.data, self.grp.shape[0]
            ctl[B.C_INFL], ctl[B.C_DIRTYP] = cta.smem_inflight.ctypes.data, unit.dirty.ctypes.data
        while True:
            if cluster and cta.stalls:      # lanes an executor stalled whose wait is over (CTA._wake)
                cta._wake()
            if stage is not None:
                # the loop completes its staged copies itself (bulkx.pump, bulkx.groups) while the async unit holds
                # none of its own (theirs were issued before and complete first: then it hands them over)
                ctl[B.C_PYPEND] = self.cst[T.C_ASYNC] = int(bool(unit.pending))
            if wg is not None:
                st[T.S_WG] = wg.ctl.ctypes.data
                st[T.S_WG_READS] = wg.reads.ctypes.data
                st[T.S_WG_SMEM] = int(wg.ctl[wg.NREAD] > 0)
            if au is not None:             # (as FastWarp.run: the marks may stand from before, a fence clears them)
                st[T.S_DIRTY] = _pointer(au.dirty)
                st[T.S_DIRTY_N] = int(au.any_dirty)     # (marks Python's stores made: the loop's fence clears them)
            # (one store: the budget, copies in flight, the log's count, shared memory, parameters, mbarrier table)
            hook = self.cluster_hook
            if preset:                  # (stored above, with the one-time fields)
                preset = False
            else:
                if not ran:
                    st[_EACH] = (cta.budget[0], cta.inflight_n, 0, smem_ptr, cta.smem.size, cta.params.shape[2],
                                 _pointer(mbs.rows) if mbs is not None else 0, mbs.used if mbs is not None else 0, 0,
                                 mbs.rows.shape[0] if mbs is not None else 0, 0)
                st[T.S_CLUSTER] = hook(True) if hook is not None else 0     # (machine.cluster.Cluster._tables)
            self._enter(cta)
            # the warp loop run_cta calls through its address (ccall.K_RUN): looked up once per translation (the
            # arguments' types are the same at every launch of it; numba's typeof of them costs ~0.3 ms)
            run_address = tr.__dict__.get("_run_address")
            if run_address is None:
                run_address = tr._run_address = warp_loop_address(
                    (tr.code, tr.imm, self.arenas[0], self.pcs[0], self.exited[0], self.waiting[0], cta.smem_inflight,
                     fl.gtab, st, fl.log_pc, fl.log_addr, fl.log_mask, fl.scratch, tr.mufu_ptr, cp.dst[0], cp.data[0],
                     cp.group[0], cp.meta[0], cp.count[0]))
            fl.ctx[K_RUN] = run_address
            if ran:
                ran = False
            else:
                run_cta(*self._loop_list(cta))
            if hook is not None:         # (the table is this run's: a warp run alone later sees none)
                st[T.S_CLUSTER] = 0
                hook(False)
            if (st[T.S_MBAR_CHANGED] or st[T.S_MBAR_REBUILT]) and mbs is _NO_MBARRIERS:
                # (a cluster barrier's phase moving on counts as a change too, for the stalls' wakes: clusterx.py)
                if st[T.S_MBAR_REBUILT] or hook is None:
                    raise AssertionError("the CTA loop changed the mbarrier table of a kernel without mbarriers")
            elif st[T.S_MBAR_CHANGED] or st[T.S_MBAR_REBUILT]:
                if st[T.S_MBAR_CHANGED]:
                    mbs.version += int(st[T.S_MBAR_CHANGED])
                if st[T.S_MBAR_REBUILT]:
                    _mbar_objects(mbs, int(st[T.S_MBAR_N]))
            if stage is not None and not (self.cst[T.C_STATUS] == T.CTA_SLOW and st[T.S_STATUS] == T.ST_LOG):
                if stage.used():
                    ws = cta.warps
                    stage.drain(ws[0], ws)  # the staged copies join the async unit before Python runs anything
                if ctl[B.C_GRPCHG]:         # and the loop's bulk async-group counts its dict (warp w: row w)
                    ctl[B.C_GRPCHG] = 0
                    unit.committed.update({(int(i), int(lane)): g for i, lane, g in zip(
                        *np.nonzero(self.grp), self.grp[self.grp != 0].tolist())})
            cta.inflight_n = int(st[T.S_INFLIGHT])
            cta.budget[0] = int(st[T.S_BUDGET])
            if au is not None:
                au.any_dirty = bool(st[T.S_DIRTY_N])
            n = int(st[T.S_NLOG])
            if n:
                if ws is None:
                    self._keep_log(cta, n)
                else:
                    self._flush(ws, n)
            if ws is not None:
                for w, k in zip(ws, self.issued.tolist()):
                    w.clock = w.issued = k
            status = int(self.cst[T.C_STATUS])
            if status == T.CTA_DONE:
                if wg is not None:
                    wg.end_check(cta)
                    if not wg.exported:          # nothing in flight is left to check: free the arrays
                        cta.wgmma = self.wg = None
                break
            if status == T.CTA_DEADLOCK:
                # the end of a round in which nothing moved on (machine.cta.CTA._run): copies in flight complete,
                # or a warp that yielded with its state changed gives the warps another round
                au_ = cta.async_unit
                if au_.pending or self.cst[T.C_YIELDED]:
                    if au_.pending:
                        au_.pump()
                    self.cst[T.C_PROGRESSED] = self.cst[T.C_VERCHG] = self.cst[T.C_YIELDED] = 0
                    self.cst[T.C_WARP] = 0
                    continue
                if cluster:             # the CTA waits on its cluster (or on lanes the scheduler must lift)
                    n = len(cta.stalls)
                    if n:
                        cta._wake()
                    self.cst[T.C_PROGRESSED] = self.cst[T.C_VERCHG] = self.cst[T.C_YIELDED] = 0
                    self.cst[T.C_WARP] = 0
                    if len(cta.stalls) != n:
                        continue
                    return BLOCKED
                if (wg is not None and wg.used()) or self.cst[T.C_NSTALL] or (~self.exited & ~self.waiting).any():
                    # a deadlock the scheduler reports (wgmma or mbarrier waits), or lane groups that wait at joins
                    # for lanes parked elsewhere (the scheduler lifts the waits): from the round's end
                    return self._handoff(cta, cta.nwarps, False)
                self._report_deadlock(cta)
            if int(st[T.S_STATUS]) == T.ST_LOG:
                continue
            k = int(self.cst[T.C_WARP])
            if int(st[T.S_STATUS]) == T.ST_PICK:
                # warp k's lanes diverged and the pick is not bound yet (pickcall.py): bound now, the loop goes on
                # with the warp's turn; else (another process compiles it) the group is picked here and the
                # reference runs its instruction (or, when no group can run, the scheduler takes the CTA over)
                if bind_pick(tr, fl.wait):
                    continue
                got = python_pick(cta.warps[k])
                if got is None:             # (the warp's turn ends: the scheduler goes on from it)
                    if st[T.S_EXECUTED] > 0:
                        self.cst[T.C_PROGRESSED] = 1
                    self.cst[T.C_INWARP] = 0
                    return self._handoff(cta, k, False)
                st[T.S_PC] = got[0]         # the reference runs the group's instruction, as a row handed back
                st[T.S_MASK] = int(np.packbits(got[1][::-1]).view(">u4")[0])
            if tr.code[st[T.S_PC], T.OP] == T.BAR:
                # a barrier whose number, thread count or lanes break a rule: the scheduler arrives (and raises)
                # with the loop's barriers
                self.cst[T.C_INWARP] = 0
                return self._handoff(cta, k, False)
            if wg is not None and tr.code[st[T.S_PC], T.OP] == T.WGMMA and wg.bind_fix(fl.wait):
                continue        # its tile needed the inf/NaN fix-ups, bound now: the loop runs it again (unchanged)
            held = None
            if wg is not None and (tr.code[st[T.S_PC], T.OP] == T.WGMMA or wg.holds(k)):
                # a wgmma instruction the loop leaves to the executor: the reference takes the state and the CTA
                # over; so it does for an instruction beside registers of an in-flight wgmma (ptxas's injected
                # wait) that wgmmax.WgTable.injected_wait leaves to it
                from .loop import WSLOT
                held = None if tr.code[st[T.S_PC], T.OP] == T.WGMMA or cta.budget[0] <= 0 else wg.injected_wait(
                    cta, k, int(st[T.S_PC]), int(st[T.S_MASK]), st.ctypes.data, int(tr.mufu_ptr[WSLOT]))
                ws = cta.warps                  # (built now if they were not: kept in step with the arrays below)
                if held is None:
                    self.cst[T.C_INWARP] = 0
                    return self._handoff(cta, k, False)
                if held == "done":      # the wait is made: the loop runs the instruction
                    continue
                if held == "stall":     # (issued, as CTA._step counts a stall; the warp's turn ends)
                    self.issued[k] += 1
                    cta.budget[0] -= 1
                    self.waiting[k] = True
                    self.cst[T.C_INWARP] = 0
                    self.cst[T.C_WARP] = k + 1
                    self.cst[T.C_PROGRESSED] = 1
                    continue
            mask = ((int(st[T.S_MASK]) >> fl.lanes) & 1).astype(np.bool_)
            tr.handed_back[st[T.S_PC]] += 1
            ws = cta.warps                  # (built now if they were not: the executor runs on warp objects)
            w = ws[k]
            w.back_taken = int(self.backs[k])
            version = mbs.version if mbs is not None else 0
            last = w._last_yield
            commits = ws[0]._async.commits
            nstalls = len(cta.stalls)
            disarm = wg.arm(w, held, st.ctypes.data, int(tr.mufu_ptr[WSLOT])) if held else None
            try:
                r = cta._step(w, int(st[T.S_PC]), mask, False)
            finally:
                if disarm is not None:
                    disarm()
                self.issued[k] = w.issued
                self.backs[k] = w.back_taken
            if ws[0]._async.commits != commits:     # the executor committed bulk async-groups: the loop's counts
                at = {x.warp_id: i for i, x in enumerate(ws)}
                for (wid, lane), g in ws[0]._async.committed.items():
                    self.grp[at[wid], lane] = g
            if w.regs.other or self.mbw[k, T.MB_W, T.MW_XVER]:
                self.mbw[k, T.MB_W, T.MW_XVER] = self._xver(w)
            from ..cta import PARK
            if (r is PARK and not (cluster and len(cta.stalls) > nstalls)) or w.held.any():
                return self._handoff(cta, k, r is PARK, w._last_yield is not last)
            if mbs is not None and mbs.version != version:
                self.cst[T.C_VERCHG] = 1
            self.cst[T.C_PROGRESSED] = 1
        if ws is not None:
            self._finish(ws)
        return None

    def _loop_list(self, cta):
        """``loop_args`` as a list kept while the launch's arrays, global table and cp.async table are the same (this
        block's: dropped with it), with ``cta``'s in-flight marks."""
        got = self.__dict__.get("_largs")
        fl = self.launch
        if got is None or got[8] is not fl.state or got[23] is not self.cp.dst:
            got = self._largs = list(self.loop_args(cta))
        got[6] = cta.smem_inflight
        got[7] = fl.gtab
        return got

    def loop_args(self, cta):
        """``loop.run_cta``'s arguments for ``cta`` on these arrays."""
        fl, cp = self.launch, self.cp
        tr = fl.tr
        return (tr.code, tr.imm, self.arenas, self.pcs, self.exited, self.waiting, cta.smem_inflight, fl.gtab,
                fl.state, fl.log_pc, fl.log_addr, fl.log_mask, self.log_warp, fl.scratch, self.cst, self.issued,
                self.executed, self.param_ptrs, self.wbid, self.bar_arrived, self.bar_seq, self.backs, tr.mufu_ptr,
                cp.dst, cp.data, cp.group, cp.meta, cp.count, self.mbw, self.ysnap)

    def grid_state(self, cta):
        """For the grid loop (gridloop.py), which runs only CTAs whose rows never touch an mbarrier (the loop gets
        the empty table's values, as a CTA without an async unit does), without sanitizer or staging area: the state
        vector's fields ``run`` sets before its first call of the CTA loop, as rows (index, value),
        the first ``nhead`` its one-time store, the others its store before each call (the budget and copies in
        flight: the grid loop's own); returns (rows, nhead), with the warp loop's address in the ctx."""
        fl = self.launch
        tr = fl.tr
        mbs = _NO_MBARRIERS
        got = self.__dict__.get("_grid_fields")     # (the same block (_on_block drops them) and global table: the same
        # values; the grid loop only reads them)
        if got is not None and got[0] is fl.gtab and mbs.used == 0:
            fields = got[1]
        else:
            fields = np.empty((len(_HEAD) + len(_EACH), 2), np.int64)
            fields[:, 0] = _GRID_FIELDS
            fields[:, 1] = (SPIN_CHECK, 0, 0, 0, 0, 0, 0, int(not tr.param_writes), 1, self.bar_ptrs[0],
                            self.bar_ptrs[1], 0, _pointer(fl.gtab), fl.gtab.shape[0],
                            0, 0, 0, self.smem_ptr, cta.smem.size, cta.params.shape[2], _pointer(mbs.rows), mbs.used,
                            0, mbs.rows.shape[0], 0)
            self._grid_fields = (fl.gtab, fields)
        cp = self.cp
        run_address = tr.__dict__.get("_run_address")
        if run_address is None:
            run_address = tr._run_address = warp_loop_address(
                (tr.code, tr.imm, self.arenas[0], self.pcs[0], self.exited[0], self.waiting[0], cta.smem_inflight,
                 fl.gtab, fl.state, fl.log_pc, fl.log_addr, fl.log_mask, fl.scratch, tr.mufu_ptr, cp.dst[0],
                 cp.data[0], cp.group[0], cp.meta[0], cp.count[0]))
        fl.ctx[K_RUN] = run_address
        return fields, len(_HEAD)

    def own_columns(self, cta):
        """[(first 32-bit arena column, name)] of the special registers the kernel reads that differ between the
        CTAs of a launch (``CTA.own_specials``), as ``start`` writes them."""
        fl = self.launch
        own = cta.own_specials
        return [(int(fl.special_index[j, 0]), n) for j, n in enumerate(fl.special_names) if n in own]

    def _enter(self, cta):
        """Before each run of the CTA loop (a sanitised launch's hook: machine.sanitize_fast)."""

    def _finish(self, ws):
        for w, k, b in zip(ws, self.executed.tolist(), self.backs.tolist()):
            w.fast.executed += k
            w.back_taken = b
        self.executed[:] = 0

    def _xver(self, w):
        """The version of warp ``w``'s registers outside the arena (0: none): equal values, equal versions."""
        other = w.regs.other
        if not other:
            return 0
        key = tuple((n, np.ascontiguousarray(other[n]).tobytes()) for n in sorted(other))
        got = self.xids.get(key)
        if got is None:
            got = self.xids[key] = len(self.xstates)
            self.xstates.append({n: np.array(other[n], copy=True) for n in sorted(other)})
        return got

    def _handoff(self, cta, k, parked, python_yield=False):
        """Give the CTA to the Python scheduler, which goes on from warp ``k`` (``len(cta.warps)``: from the end
        of the round; ``parked``: the warp's turn ended in a stall or yield Python made, ``python_yield``: which set
        its ``_last_yield``). Barrier arrivals move to ``cta.barriers``, the loop's mbarrier stalls to
        ``cta.stalls`` (with the wgmma waits, in the order they happened, before the stall Python made), and each
        warp's last yield to the scheduler's digest (ctaloop.py)."""
        self._finish(cta.warps)
        made = cta.stalls                   # a stall the Python step just made (the newest)
        cta.stalls = []
        wg_seq = {}
        if self.wg is not None:
            from .wgmmax import N_STALL, N_STALLSEQ
            wg_seq = {w: int(self.wg.cnt[w, N_STALLSEQ]) for w in range(len(cta.warps)) if self.wg.cnt[w, N_STALL]}
            self.wg.export(cta)
        stalls = [(wg_seq[x[0].warp_id], x) for x in cta.stalls]
        stalls += self._mb_stalls(cta, k if python_yield else -1, wg_seq)
        cta.stalls = [x for _, x in sorted(stalls, key=lambda t: t[0])] + made
        order = sorted((int(self.bar_seq[b]), b) for b in range(16) if self.bar_seq[b] and self.bar_arrived[b])
        for _, b in order:
            waiters = [(w, (self.wbid[i] == b) & w.waiting) for i, w in enumerate(cta.warps)]
            cnt = int(self.cst[T.C_BARCNT + b])
            cta.barriers[b] = {"arrived": int(self.bar_arrived[b]), "waiters": [x for x in waiters if x[1].any()],
                               "count": None if cnt < 0 else cnt, "red": []}
        self._yield_digests(cta)
        # (mbarriers that changed in this round move the scheduler on as progress does: CTA._run's round end)
        return k, parked, bool(self.cst[T.C_PROGRESSED] or self.cst[T.C_VERCHG]), bool(self.cst[T.C_YIELDED])

    def _mb_stalls(self, cta, skip, wg_seq):
        """The loop's mbarrier stall records as the scheduler's [(number, [warp, lanes, MBarrierWait])]; each warp's
        last stall becomes its ``_last_yield`` unless a later wait (wgmma, or Python's at warp ``skip``) set it."""
        from ...ops.mbarrier import MBarrierWait
        from .clusterx import PAR_CLUSTER
        mbw, code = self.mbw, cta.prog.code
        au = cta.async_unit

        def reason(pc, lanes, addr, val, par, w):
            ins = code[pc].instr
            ls = np.flatnonzero(lanes).tolist()
            if par[ls[0]] == PAR_CLUSTER:        # a barrier.cluster.wait (clusterx.py)
                from ..cluster import ClusterWait
                return ClusterWait(cta.cluster, w, lanes, ins.text or ins.opcode)
            parity = bool(par[ls[0]] == 1)
            return MBarrierWait(au, ins.text or ins.opcode, [int(addr[i]) for i in ls],
                                parity=[int(val[i]) & 1 for i in ls] if parity else None,
                                states=None if parity else [int(val[i]) & 0xFFFFFFFFFFFFFFFF for i in ls])
        out = []
        for i, w in enumerate(cta.warps):
            seqs = mbw[i, T.MB_SEQ]
            for s in sorted(set(seqs[seqs >= 0].tolist())):
                lanes = seqs == s
                pc = int(w.pc[np.flatnonzero(lanes)[0]])
                out.append((s, [w, lanes, reason(pc, lanes, mbw[i, T.MB_ADDR], mbw[i, T.MB_VAL], mbw[i, T.MB_PAR],
                                                  w)]))
            last = int(mbw[i, T.MB_W, T.MW_LSEQ])
            if last > 0 and i != skip and last > wg_seq.get(i, -1):
                lanes = ((int(mbw[i, T.MB_W, T.MW_LMASK]) >> np.arange(32)) & 1).astype(np.bool_)
                rec = next((x for s, x in out if s == last), None)
                w._last_yield = rec[2] if rec is not None else reason(
                    int(mbw[i, T.MB_W, T.MW_LPC]), lanes, mbw[i, T.MB_LADDR], mbw[i, T.MB_LVAL], mbw[i, T.MB_LPAR], w)
            mbw[i, T.MB_SEQ] = -1
        self.cst[T.C_NSTALL] = 0
        return out

    def _yield_digests(self, cta):
        """The scheduler's digest of each warp's last yield in the loop (``CTA._yield_changed``)."""
        from ..kernel_warp import digest_of
        for i, w in enumerate(cta.warps):
            wv = self.mbw[i, T.MB_W]
            if wv[T.MW_YVALID]:
                w._yield_digest = digest_of(self.ysnap[i], self.xstates[int(wv[T.MW_YVER])],
                                            self.mbw[i, T.MB_YPC].astype(np.int64),
                                            self.mbw[i, T.MB_YEXIT].astype(np.bool_), w.param)

    def _flush(self, ws, n):
        """Hand the loop's shared-memory log to the warps' bank records: each warp's records are picked out of one
        copy of the log when its records are first read (``KernelWarp._smem_log``)."""
        self._hand_log(ws, n, None)

    def _keep_log(self, cta, n):
        """The loop's shared-memory log while no warp object exists: one copy, handed to the warps when they are
        built (``adopt``); a CTA whose warps nobody keeps (``CTA.unkept``) drops it."""
        if self.unkept:
            return
        self.pending.append((n, self._log_copy(n)))

    def _log_copy(self, n):
        fl = self.launch
        return (self.log_warp[:n].copy(), fl.log_pc[:n].copy(), fl.log_mask[:n].copy(), fl.log_addr[:n].copy(),
                fl.log_src[:n].copy() if _has_cp_async(fl.tr) else None)

    def _hand_log(self, ws, n, log):
        """The records of a log of ``n`` entries (``log``: its copy, or None: the launch's arrays, copied when a
        warp keeps records) to each warp, within the bank log's bound per warp."""
        fl = self.launch
        who = self.log_warp[:n] if log is None else log[0]
        counts = np.bincount(who, minlength=len(ws)).tolist()
        for k, w in enumerate(ws):
            c = counts[k]
            if not c:
                continue
            keep = min(c, max(w.smem_log_cap - w._smem_n, 0))      # the bank log's bound, per warp
            w.smem_log_dropped += c - keep
            w._smem_n += keep
            if keep:
                if log is None:
                    log = self._log_copy(n)
                w._smem_pending.append(partial(_warp_records, w.program.code, fl.tr.code, k, keep, *log))

    def _report_deadlock(self, cta):
        """Hand the loop's barrier state to the scheduler's report (machine.cta), which raises."""
        order = sorted((int(self.bar_seq[b]), b) for b in range(16) if self.bar_seq[b])
        cta.barriers = {}
        for _, b in order:
            waiters = [(w, (self.wbid[k] == b) & w.waiting) for k, w in enumerate(cta.warps)]
            cnt = int(self.cst[T.C_BARCNT + b])
            cta.barriers[b] = {"arrived": int(self.bar_arrived[b]), "waiters": [x for x in waiters if x[1].any()],
                               "count": None if cnt < 0 else cnt, "red": []}
        cta._deadlock()
        raise AssertionError("the CTA loop reported a deadlock the scheduler does not see")


def _mbar_objects(mbs, used):
    """After the loop ran mbarrier.init/inval (hopcall._init_inval) on the table: the MBarriers' objects as its
    init/inval leave them (invalidated barriers retired, a barrier for every row in use)."""
    from ...memory.mbarrier import ADDR, MBarrier
    mbs.used = used
    rows, live = mbs.rows, mbs.live
    for a, b in list(live.items()):
        if rows[b._row, ADDR] != a:
            b._detach()
            mbs.retired.append(live.pop(a))
    for i in range(used):
        a = int(rows[i, ADDR])
        if a >= 0 and a not in live:
            live[a] = MBarrier(mbs, i, a)


def _warp_records(code, tcode, k, keep, who, pcs, masks, addrs, srcs):
    """The first ``keep`` records of warp ``k`` in a CTA loop's log (``FastCTA._flush``)."""
    sel = np.flatnonzero(who == k)[:keep]
    return _records(code, tcode, pcs[sel], masks[sel], addrs[sel], srcs[sel] if srcs is not None else addrs[sel])


# the state vector's fields FastCTA.run sets before the loop's first run, and before each run, in one store each
_HEAD = np.array([T.S_SPIN_CHECK, T.S_WG_REGS, T.S_WG_SMEM, T.S_WG, T.S_WG_READS, T.S_DIRTY, T.S_DIRTY_N, T.S_MBW,
                  T.S_MBINIT, T.S_BARSEQ, T.S_BARCNT, T.S_BULK, T.S_GTAB, T.S_GTAB_N], np.intp)
_EACH = np.array([T.S_BUDGET, T.S_INFLIGHT, T.S_NLOG, T.S_SMEM_PTR, T.S_SMEM_SIZE, T.S_PARAM_SIZE, T.S_MBAR,
                  T.S_MBAR_N, T.S_MBAR_CHANGED, T.S_MBAR_CAP, T.S_MBAR_REBUILT], np.intp)


_GRID_FIELDS = np.concatenate([_HEAD, _EACH])
_GTAB_AT = 12           # the global table's fields in _HEAD (and in _BOTH): S_GTAB, S_GTAB_N
assert _HEAD[_GTAB_AT] == T.S_GTAB and _HEAD[_GTAB_AT + 1] == T.S_GTAB_N
# a CTA without an async unit: the one-time fields, the first run's and the cluster table's in one store
_BOTH = np.concatenate([_HEAD, _EACH, [T.S_CLUSTER]]).astype(np.intp)
_BOTH_BUDGET, _BOTH_INFLIGHT = len(_HEAD), len(_HEAD) + 1


def _empty_mbarriers():
    from ...memory.mbarrier import MBarriers
    return MBarriers()


# the mbarrier table the loop gets for a CTA whose kernel never touches one (``_unit_free``): empty, never written
_NO_MBARRIERS = _empty_mbarriers()


def _unit_free(tr, prog):
    """Whether no row of the kernel (in the loop or handed back) touches the CTA's async unit: no mbarrier, cp.async,
    bulk copy, wgmma or proxy fence. Such a CTA makes its ``AsyncUnit`` only when something asks for it."""
    got = tr.__dict__.get("_unit_free")
    if got is None:
        got = tr._unit_free = not (tr.cta_waits or tr.any_bulk or tr.bulkx or tr.async_readers or tr.wg is not None
                                   or any(op.kind == "op" and op.instr is not None and _touches_unit(op.instr.opcode)
                                          for op in prog.code))
    return got


def _touches_unit(opcode):
    """Whether an instruction may read or change a CTA's async unit (its mbarriers, copies, proxy marks)."""
    parts = opcode.split(".")
    return parts[0] in ("mbarrier", "cp", "wgmma", "fence", "tensormap", "multimem") or any(
        m == "async" or m.startswith(("mbarrier", "bulk", "shared::cluster")) for m in parts[1:])


def _uses_cp_async(prog):
    """Whether the program has a (non-bulk) cp.async instruction, the only writers of a cp.async table."""
    got = prog.__dict__.get("_uses_cp_async")
    if got is None:
        got = prog._uses_cp_async = any(op.kind == "op" and op.instr is not None and
                                        op.instr.opcode.startswith("cp.async") and
                                        not op.instr.opcode.startswith("cp.async.bulk") for op in prog.code)
    return got


def _has_cp_async(tr):
    """Whether the translation has cp.async rows (the only records that read the log's source addresses)."""
    got = tr.__dict__.get("_has_cp_async")
    if got is None:
        got = tr._has_cp_async = bool((tr.code[:, T.OP] == T.CPASYNC).any())
    return got


def _records(code, tcode, pcs, masks, addrs, srcs):
    """SmemAccess records (as the reference logs them) of the shared-memory accesses the loop made."""
    lanes = np.arange(32, dtype=np.int64)
    out = []
    for p, m, a, s in zip(pcs.tolist(), masks.tolist(), addrs, srcs):
        row = tcode[p]
        mask = ((m >> lanes) & 1).astype(np.bool_)
        if row[T.OP] == T.CPASYNC:
            out.append(SmemAccess(str(code[p].instr.text), "cp.async.cg" if row[T.Y] else "cp.async.ca", a,
                                  int(row[T.X]), mask, 0, s))
        elif row[T.OP] == T.ATOM:
            out.append(SmemAccess(str(code[p].instr.text), "atom", a, int(row[T.Z]), mask, 0, None))
        elif row[T.OP] == T.LDMATRIX or row[T.OP] == T.STMATRIX:
            out.append(SmemAccess(str(code[p].instr.text), "ldmatrix" if row[T.OP] == T.LDMATRIX else "stmatrix", a,
                                  16, mask, int(row[T.Y]), None))
        else:
            out.append(SmemAccess(str(code[p].instr.text), "ld" if row[T.OP] == T.LD else "st", a,
                                  int(row[T.Y] * row[T.Z]), mask, 0, None))
    return out
