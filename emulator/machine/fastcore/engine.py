"""Glue between the CTA scheduler and the jitted loop: per-warp register arena, state, shared-memory log.

Each register that a translated instruction touches lives in one byte arena per warp; ``warp.regs[name]``
is a view of its 32 lanes with the register's own dtype, so the reference executors (which run the
instructions the loop hands back) read and write the very same memory: no copies between the engines.
"""
from __future__ import annotations

import weakref
from collections.abc import MutableMapping
from functools import partial

import numpy as np

from ...memory import SmemAccess
from . import table as T
from ..spin import SPIN_CHECK
from .translate import Translation
from .cpasync import CpAsyncRows, CpAsyncTable

_DTYPE = {T.PRED: np.bool_, T.R16: np.uint16, T.R32: np.uint32, T.R64: np.uint64}
LOG_CAP = 1024
MBAR_ROWS = 64           # the rows of a CTA's mbarrier table when the CTA loop initialises its barriers


_POINTERS: dict = {}
_MASKS: dict = {}


def _pointer(a):
    """The data address of a long-lived array (kept with the array, so that an id is never reused)."""
    got = _POINTERS.get(id(a))
    if got is None or got[0] is not a:
        if len(_POINTERS) > 16:          # (they hold the arrays: a few CTAs' worth)
            _POINTERS.clear()
        got = _POINTERS[id(a)] = (a, a.ctypes.data)
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


_DATA_POINTERS = weakref.WeakKeyDictionary()      # (kept beside the GlobalMemory: never pickled with it)


def global_table(gmem):
    """(base, size, data pointer) of every global allocation, sorted by base, for the loop's lookups."""
    known = _DATA_POINTERS.get(gmem) or {}        # id(buffer) -> (buffer, data pointer) of the previous table
    now = {}
    rows = []
    for b, buf in zip(gmem._bases, gmem._bufs):
        hit = known.get(id(buf))
        if hit is None or hit[0] is not buf:
            hit = (buf, buf.ctypes.data)
        now[id(buf)] = hit
        rows.append((b, buf.size, hit[1]))
    _DATA_POINTERS[gmem] = now
    rows.sort()
    return np.array(rows or [(-1, 0, 0)], np.int64).reshape(-1, 3)     # a row that matches no address


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
    """The arrays the loops take from a launch: state vector, shared-memory log, scratch."""
    __slots__ = ("arrays",)

    def __init__(self):
        from .ccall import NSCRATCH
        self.arrays = (np.zeros(T.NSTATE, np.int64), np.zeros(LOG_CAP, np.int64), np.zeros((LOG_CAP, 32), np.int64),
                       np.zeros(LOG_CAP, np.int64),
                       np.zeros((NSCRATCH, 32), np.uint64),     # temporaries, then the families' ctx (ccall.py)
                       np.zeros(LOG_CAP, np.int64),
                       np.zeros((LOG_CAP, 32), np.int64))       # cp.async: the source address of every lane


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


def warp_loop_address(args):
    """The address of the warp loop (``loop.run``) compiled for the types of ``args`` (one warp's arguments, as
    the CTA loop passes them: compiled or loaded from numba's cache now), which the CTA loop calls
    (``ccall.call_native``)."""
    from numba import typeof
    from .loop import run
    sig = tuple(typeof(a) for a in args)
    got = _RUN_ADDRESS.get(sig)
    if got is None:
        if sig not in run.overloads:
            run.compile(sig)
        cres = run.overloads[sig]
        got = _RUN_ADDRESS[sig] = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
        if not got:
            raise AssertionError("the fast engine's warp loop has no address")
    return got


class FastLaunch:
    """What every warp of one launch shares: the translation, the global-memory table, the loop's state
    vector and shared-memory log (emptied after every run of the loop)."""

    def __init__(self, prog, gmem, wait=False):
        from .loop import run, run_cta
        self._run, self._run_cta = run, run_cta
        self.tr = tr = translation(prog)
        # the instruction families the kernel uses (families.py): compiled or loaded now when ``wait``
        # (engine="fast"); else, while another process compiles one, its rows go to the reference executors
        tr.bind_families(wait)
        self.gtab = global_table(gmem)
        # the loop's state vector, log and scratch: a finished launch of the same translation hands its arrays
        # on (``release``); they carry nothing from one run of the loop to the next (the loop sets the state
        # it reads and counts the log from 0)
        pool = tr.__dict__.setdefault("_buffers", [])
        self._buffers = bufs = pool.pop() if pool else _LaunchBuffers()
        (self.state, self.log_pc, self.log_addr, self.log_mask, self.scratch, self.log_warp,
         self.log_src) = bufs.arrays
        self.state[:] = 0
        self.lanes = _LANE_IDS
        # constant special registers: one fancy-indexed store per warp fills them all
        self.special_names, self.special_index = _special_slots(tr)

    def release(self):
        """The launch is over: its loop arrays go to the next launch of the translation (nothing of this launch
        reads them again: its logs were copied out when they were flushed)."""
        bufs, self._buffers = self.__dict__.pop("_buffers", None), None
        if bufs is not None:
            pool = self.tr.__dict__.setdefault("_buffers", [])
            if len(pool) < 2:
                pool.append(bufs)
        stage = self.__dict__.pop("_staging", None)
        if stage is not None and not stage.used():      # (empty: every copy was handed over or completed)
            pool = self.tr.__dict__.setdefault("_stagings", [])
            if len(pool) < 2:
                pool.append(stage)

    def staging(self):
        """The staging area of the TMA rows (``bulkx.Staging``), made on first use; a finished launch of the same
        translation hands its area on (``release``), grown as its copies needed."""
        got = self.__dict__.get("_staging")
        if got is None:
            from .bulkx import Staging
            pool = self.tr.__dict__.setdefault("_stagings", [])
            got = self._staging = pool.pop() if pool else Staging()
        return got

    def attach(self, warp, arena=None):
        return FastWarp(self, warp, arena)

    def cta_arrays(self, nwarps):
        """A CTA loop's arrays for ``nwarps`` warps (``FastCTA``; ``bind`` it once the warps exist) when the
        translation allows the CTA loop (``Translation.cta_ok``), else None."""
        from .families import APART_SLOT
        tr = self.tr
        # a kernel with wgmma needs wgcall.py's function in the CTA loop: until it is compiled (engine="auto" while
        # another process compiles), its CTAs run on the Python scheduler, which hands the wgmma rows back
        ok = tr.cta_ok and all(tr.mufu_ptr[APART_SLOT[name]] != 0 for name in ("wgmma", "hopper", "bulk")
                               if name in tr.apart)
        return FastCTA(self, nwarps) if ok else None


class FastWarp:
    """One warp's arena and counters."""
    IDLE, SLOW, LOG, EXITED, DEFER, BAR = T.ST_IDLE, T.ST_SLOW, T.ST_LOG, T.ST_EXITED, T.ST_DEFER, T.ST_BAR

    def __init__(self, launch, warp, arena=None):
        tr = launch.tr
        self.launch = launch
        in_cta = arena is not None      # a row of FastCTA.arenas: FastCTA.bind gives it its cp.async table row
        self.arena = arena = np.zeros(max(tr.arena_bytes, 8), np.uint8) if arena is None else arena
        warp.regs = ArenaRegs(arena, tr.slots, warp.regs)
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
            self.use_cp_table(CpAsyncTable(1, warp.options.cp_async == "eager"), 0, warp)

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
                    fl.log_pc, fl.log_addr, fl.log_mask, tr.mma_regs, tr.mma_maps, tr.mma_prm, *tr.mma_luts,
                    tr.mma_lutidx, fl.scratch, tr.mma_buf, tr.mma_u64, tr.mma_i64, tr.mma_flags, tr.mufu_ptr,
                    tr.mufu_size, fl.log_src, *self.cp.row(self.cpk))
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
        stage = fl.staging() if mbs is not None and fl.tr.bulkx and getattr(w, "_cta", None) is not None else None
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


class FastCTA:
    """A CTA run by the jitted CTA loop (``loop.run_cta``): the warps' arenas, PCs, exit and wait masks live
    in (warps, ...) arrays whose rows are the warps' own arrays, so Python (which runs the instructions the
    loop hands back) and the loop see the same state."""

    def __init__(self, launch, nw):
        self.launch = launch
        self.arenas = np.zeros((nw, max(launch.tr.arena_bytes, 8)), np.uint8)
        self.pcs = np.zeros((nw, 32), np.int64)
        self.exited = np.zeros((nw, 32), np.bool_)
        self.waiting = np.zeros((nw, 32), np.bool_)
        self.issued = np.zeros(nw, np.int64)
        self.executed = np.zeros(nw, np.int64)
        self.wbid = np.full((nw, 32), -1, np.int64)
        self.bar_arrived = np.zeros(16, np.int64)
        self.bar_seq = np.zeros(16, np.int64)
        self.cst = np.zeros(T.NCSTATE, np.int64)
        self.backs = np.zeros(nw, np.int64)         # backward branches each warp took (spin checkpoints)
        self.log_warp = launch.log_warp
        tr = launch.tr
        self.cst[T.C_BARCNT:] = -1
        self.cst[T.C_ASYNC] = int(tr.any_bulk)          # copies may be in flight at a round's end (ctaloop.py)
        self.mbw = ctaloop_arrays(nw)                   # mbarrier stall records, yields (ctaloop.py)
        self.ysnap = np.zeros((nw, max(tr.arena_bytes, 8) if tr.mb_waits or tr.wg is not None else 1), np.uint8)

    def bind(self, cta):
        """Make the warps' PCs, exit and wait masks rows of the loop's arrays (their arenas already are)."""
        for i, w in enumerate(cta.warps):
            if w.pc.base is not self.pcs or w.exited.base is not self.exited or w.waiting.base is not self.waiting:
                self.pcs[i], self.exited[i], self.waiting[i] = w.pc, w.exited, w.waiting
                w.pc, w.exited, w.waiting = self.pcs[i], self.exited[i], self.waiting[i]
            if w.issued or w.back_taken:
                self.issued[i] = w.issued
                self.backs[i] = w.back_taken
        params, rows = getattr(cta, "params", None), getattr(cta, "param_rows", None)
        if params is not None and rows is not None and len(rows) == len(cta.warps) and \
                all(w.param is r for w, r in zip(cta.warps, rows)):      # warp i's rows: block i of the CTA's
            self.param_ptrs = params.ctypes.data + np.arange(len(cta.warps), dtype=np.int64) * params[0].nbytes
        else:
            self.param_ptrs = np.array([w.param.__array_interface__["data"][0] for w in cta.warps], np.int64)
        if self.launch.special_names and cta.warps:
            self._fill_specials(cta)
        self.cp = CpAsyncTable(len(cta.warps), cta.warps[0].options.cp_async == "eager") if cta.warps else None
        for i, w in enumerate(cta.warps):
            w.fast.use_cp_table(self.cp, i, w)
        self.xstates = [{}]                         # the registers outside the arenas, by version (MW_XVER)
        self.xids = {}
        for i, w in enumerate(cta.warps):
            self.mbw[i, T.MB_W, T.MW_XVER] = self._xver(w)
        self.grp = np.zeros((len(cta.warps), 32), np.int64)   # the bulk async-groups each lane committed (bulkx)
        self.wg = None                              # the wgmma state, while this loop owns it (wgmmax.py)
        if self.launch.tr.wg is not None and cta.warps:
            from .wgmmax import K_SEQ, WgTable
            from .ctaloop import K_SEQ_OFFSET
            assert K_SEQ_OFFSET == 8 * K_SEQ        # (the stalls of both kinds share wgmmax's counter)
            self.wg = WgTable(self.launch.tr.wg, cta, self.arenas, self.launch.__dict__.setdefault("wg_pool", {}))
        return self

    def _fill_specials(self, cta):
        """Write the constant special registers into every warp's arena in one store: the values of the launch's
        first CTA of this size, with the ones that differ between CTAs (``CTA.own_specials``) set for this one."""
        fl = self.launch
        names, index = fl.special_names, fl.special_index
        ws = cta.warps
        own = getattr(cta, "own_specials", None) or {}
        tmpl = fl.__dict__.setdefault("special_rows", {}).get(len(ws))
        if tmpl is None:
            vals = np.array([[w.special_values[n] if n in w.special_values else w.special(n) for n in names]
                             for w in ws], np.uint32)
            fl.special_rows[len(ws)] = (vals, [(j, n) for j, n in enumerate(names) if n in own])
        else:
            vals, per_cta = tmpl
            vals = vals.copy()
            sv = ws[0].special_values
            for j, n in per_cta:
                vals[:, j] = sv[n]
        self.arenas.view(np.uint32)[:, index] = vals

    def run(self, cta):
        """Run the CTA to its end; the instructions the loop hands back run through ``cta._step``. Returns None,
        or (warp, parked, progressed) when a spin check held lanes back or parked a warp: the scheduler of
        ``machine.cta`` then goes on from that warp, with the barrier state handed over (``_handoff``)."""
        from .ccall import CTX_ROW, K_RUN
        from .loop import PUMP
        fl = self.launch
        run_cta = fl._run_cta
        tr = fl.tr
        st = fl.state
        ws = cta.warps
        cp = self.cp
        st[T.S_SPIN_CHECK] = SPIN_CHECK
        st[T.S_WG_REGS] = st[T.S_WG_SMEM] = st[T.S_WG] = 0
        st[T.S_WG_READS] = st[T.S_DIRTY] = st[T.S_DIRTY_N] = 0    # (set below for kernels the async proxy reads)
        # the CTA's mbarriers, unless a sanitizer follows them (the executors tell it; a timeline keeps the Python
        # scheduler); a try_wait parks its lanes in the loop unless a yield's state includes .param bytes
        mbs = ws[0]._async.mbarriers if ws and cta.san is None and not ws[0]._async.record else None
        st[T.S_MBW] = int(mbs is not None and not tr.param_writes)
        st[T.S_MBINIT] = int(mbs is not None)
        if mbs is not None and tr.cta_waits:
            mbs.reserve(MBAR_ROWS)          # (a barrier that finds the table full goes back to Python, which grows it)
        st[T.S_BARSEQ] = self.bar_seq.ctypes.data
        st[T.S_BARCNT] = self.cst.ctypes.data + 8 * T.C_BARCNT
        # TMA rows (bulkx.py) stage their copies here, unless a sanitiser or a timeline follows them
        stage = fl.staging() if tr.bulkx and mbs is not None else None
        st[T.S_BULK] = stage.address if stage is not None else 0
        st[T.S_GTAB] = _pointer(fl.gtab)
        st[T.S_GTAB_N] = fl.gtab.shape[0]
        wg = self.wg
        au = ws[0]._async if ws and tr.async_readers else None   # generic-proxy writes (memx.py)
        if stage is not None:
            from . import bulkx as B
            assert B.PUMP == PUMP
            unit, ctl = ws[0]._async, stage.ctl
            ctl[B.C_GRP], ctl[B.C_GRPN] = self.grp.ctypes.data, self.grp.shape[0]
            ctl[B.C_INFL], ctl[B.C_DIRTYP] = cta.smem_inflight.ctypes.data, unit.dirty.ctypes.data
        while True:
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
            st[T.S_BUDGET] = cta.budget[0]
            st[T.S_INFLIGHT] = cta.inflight_n
            st[T.S_NLOG] = 0
            st[T.S_SMEM_PTR] = cta.smem.ctypes.data
            st[T.S_SMEM_SIZE] = cta.smem.size
            st[T.S_PARAM_SIZE] = ws[0].param.shape[1]
            st[T.S_MBAR] = _pointer(mbs.rows) if mbs is not None else 0
            st[T.S_MBAR_N] = mbs.used if mbs is not None else 0
            st[T.S_MBAR_CHANGED] = 0
            st[T.S_MBAR_CAP] = mbs.rows.shape[0] if mbs is not None else 0
            st[T.S_MBAR_REBUILT] = 0
            self._enter(cta)
            # the warp loop run_cta calls through its address (ccall.K_RUN): looked up once per translation (the
            # arguments' types are the same at every launch of it; numba's typeof of them costs ~0.3 ms)
            run_address = tr.__dict__.get("_run_address")
            if run_address is None:
                run_address = tr._run_address = warp_loop_address(
                    (tr.code, tr.imm, self.arenas[0], self.pcs[0], self.exited[0], self.waiting[0], cta.smem_inflight,
                     fl.gtab, st, fl.log_pc, fl.log_addr, fl.log_mask, tr.mma_regs, tr.mma_maps, tr.mma_prm,
                     *tr.mma_luts, tr.mma_lutidx, fl.scratch, tr.mma_buf, tr.mma_u64, tr.mma_i64, tr.mma_flags,
                     tr.mufu_ptr, tr.mufu_size, fl.log_src, cp.dst[0], cp.data[0], cp.group[0], cp.meta[0],
                     cp.count[0]))
            fl.scratch[CTX_ROW:].reshape(-1).view(np.int64)[K_RUN] = run_address
            run_cta(tr.code, tr.imm, self.arenas, self.pcs, self.exited, self.waiting, cta.smem_inflight, fl.gtab,
                    st, fl.log_pc, fl.log_addr, fl.log_mask, self.log_warp, tr.mma_regs, tr.mma_maps, tr.mma_prm,
                    *tr.mma_luts, tr.mma_lutidx, fl.scratch, tr.mma_buf, tr.mma_u64, tr.mma_i64, tr.mma_flags,
                    self.cst, self.issued, self.executed, self.param_ptrs, self.wbid, self.bar_arrived, self.bar_seq,
                    self.backs, tr.mufu_ptr, tr.mufu_size, fl.log_src, cp.dst, cp.data, cp.group, cp.meta,
                    cp.count, self.mbw, self.ysnap)
            if st[T.S_MBAR_CHANGED]:
                mbs.version += int(st[T.S_MBAR_CHANGED])
            if st[T.S_MBAR_REBUILT]:
                _mbar_objects(mbs, int(st[T.S_MBAR_N]))
            if stage is not None and not (self.cst[T.C_STATUS] == T.CTA_SLOW and st[T.S_STATUS] == T.ST_LOG):
                if stage.used():
                    stage.drain(ws[0], ws)  # the staged copies join the async unit before Python runs anything
                if ctl[B.C_GRPCHG]:         # and the loop's bulk async-group counts its dict
                    ctl[B.C_GRPCHG] = 0
                    ids = [w.warp_id for w in ws]
                    unit.committed.update({(ids[i], lane): g for i, lane, g in zip(
                        *np.nonzero(self.grp), self.grp[self.grp != 0].tolist())})
            cta.inflight_n = int(st[T.S_INFLIGHT])
            cta.budget[0] = int(st[T.S_BUDGET])
            if au is not None:
                au.any_dirty = bool(st[T.S_DIRTY_N])
            n = int(st[T.S_NLOG])
            if n:
                self._flush(ws, n)
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
                au_ = ws[0]._async
                if au_.pending or self.cst[T.C_YIELDED]:
                    if au_.pending:
                        au_.pump()
                    self.cst[T.C_PROGRESSED] = self.cst[T.C_VERCHG] = self.cst[T.C_YIELDED] = 0
                    self.cst[T.C_WARP] = 0
                    continue
                if (wg is not None and wg.used()) or self.cst[T.C_NSTALL] or \
                        any((~w.exited & ~w.waiting).any() for w in ws):
                    # a deadlock the scheduler reports (wgmma or mbarrier waits), or lane groups that wait at joins
                    # for lanes parked elsewhere (the scheduler lifts the waits): from the round's end
                    return self._handoff(cta, len(ws), False)
                self._report_deadlock(cta)
            if int(st[T.S_STATUS]) == T.ST_LOG:
                continue
            k = int(self.cst[T.C_WARP])
            w = ws[k]
            if tr.code[st[T.S_PC], T.OP] == T.BAR:
                # a barrier whose number, thread count or lanes break a rule: the scheduler arrives (and raises)
                # with the loop's barriers
                self.cst[T.C_INWARP] = 0
                return self._handoff(cta, k, False)
            if wg is not None and (tr.code[st[T.S_PC], T.OP] == T.WGMMA or wg.holds(k)):
                # a wgmma instruction the loop leaves to the executor, or an instruction beside registers of an
                # in-flight wgmma (ptxas's injected wait): the reference takes the state and the CTA over
                self.cst[T.C_INWARP] = 0
                return self._handoff(cta, k, False)
            mask = ((int(st[T.S_MASK]) >> fl.lanes) & 1).astype(np.bool_)
            tr.handed_back[st[T.S_PC]] += 1
            w.back_taken = int(self.backs[k])
            version = mbs.version if mbs is not None else 0
            last = w._last_yield
            commits = ws[0]._async.commits
            try:
                r = cta._step(w, int(st[T.S_PC]), mask, False)
            finally:
                self.issued[k] = w.issued
                self.backs[k] = w.back_taken
            if ws[0]._async.commits != commits:     # the executor committed bulk async-groups: the loop's counts
                at = {x.warp_id: i for i, x in enumerate(ws)}
                for (wid, lane), g in ws[0]._async.committed.items():
                    self.grp[at[wid], lane] = g
            if w.regs.other or self.mbw[k, T.MB_W, T.MW_XVER]:
                self.mbw[k, T.MB_W, T.MW_XVER] = self._xver(w)
            from ..cta import PARK
            if r is PARK or w.held.any():
                return self._handoff(cta, k, r is PARK, w._last_yield is not last)
            if mbs is not None and mbs.version != version:
                self.cst[T.C_VERCHG] = 1
            self.cst[T.C_PROGRESSED] = 1
        self._finish(ws)
        return None

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
        mbw, code = self.mbw, cta.prog.code
        au = cta.async_unit

        def reason(pc, lanes, addr, val, par):
            ins = code[pc].instr
            ls = np.flatnonzero(lanes).tolist()
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
                out.append((s, [w, lanes, reason(pc, lanes, mbw[i, T.MB_ADDR], mbw[i, T.MB_VAL], mbw[i, T.MB_PAR])]))
            last = int(mbw[i, T.MB_W, T.MW_LSEQ])
            if last > 0 and i != skip and last > wg_seq.get(i, -1):
                lanes = ((int(mbw[i, T.MB_W, T.MW_LMASK]) >> np.arange(32)) & 1).astype(np.bool_)
                rec = next((x for s, x in out if s == last), None)
                w._last_yield = rec[2] if rec is not None else reason(
                    int(mbw[i, T.MB_W, T.MW_LPC]), lanes, mbw[i, T.MB_LADDR], mbw[i, T.MB_LVAL], mbw[i, T.MB_LPAR])
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
        fl = self.launch
        who = self.log_warp[:n]
        counts = np.bincount(who, minlength=len(ws)).tolist()
        log = None
        for k, w in enumerate(ws):
            c = counts[k]
            if not c:
                continue
            keep = min(c, max(w.smem_log_cap - w._smem_n, 0))      # the bank log's bound, per warp
            w.smem_log_dropped += c - keep
            w._smem_n += keep
            if keep:
                if log is None:
                    log = (who.copy(), fl.log_pc[:n].copy(), fl.log_mask[:n].copy(), fl.log_addr[:n].copy(),
                           fl.log_src[:n].copy() if _has_cp_async(fl.tr) else None)
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


def ctaloop_arrays(nw):
    """The CTA loop's wait records for ``nw`` warps (table.MB_*): no stall, no yield yet."""
    mbw = np.zeros((nw, T.MB_ROWS, 32), np.int64)
    mbw[:, T.MB_SEQ] = -1
    return mbw


def _warp_records(code, tcode, k, keep, who, pcs, masks, addrs, srcs):
    """The first ``keep`` records of warp ``k`` in a CTA loop's log (``FastCTA._flush``)."""
    sel = np.flatnonzero(who == k)[:keep]
    return _records(code, tcode, pcs[sel], masks[sel], addrs[sel], srcs[sel] if srcs is not None else addrs[sel])


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
