"""Glue between the CTA scheduler and the jitted loop: per-warp register arena, state, shared-memory log.

Each register that a translated instruction touches lives in one byte arena per warp; ``warp.regs[name]``
is a view of its 32 lanes with the register's own dtype, so the reference executors (which run the
instructions the loop hands back) read and write the very same memory: no copies between the engines.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from functools import partial

import numpy as np

from ...memory import SmemAccess
from . import table as T
from ..spin import SPIN_CHECK
from .translate import Translation

_DTYPE = {T.PRED: np.bool_, T.R16: np.uint16, T.R32: np.uint32, T.R64: np.uint64}
LOG_CAP = 1024


def translation(prog) -> Translation:
    """The program's translation, made once and kept on the Program."""
    tr = getattr(prog, "_fast", None)
    if tr is None:
        tr = prog._fast = Translation(prog)
    return tr


def global_table(gmem):
    """(base, size, data pointer) of every global allocation, sorted by base, for the loop's lookups."""
    rows = sorted((b, buf.size, buf.ctypes.data) for b, buf in zip(gmem._bases, gmem._bufs))
    return np.array(rows or [(-1, 0, 0)], np.int64).reshape(-1, 3)     # a row that matches no address


class ArenaRegs(MutableMapping):
    """A warp's registers when the fast engine runs it: the registers of the translation live in the arena
    (a view of one is made the first time Python asks for it), any other register in a plain dict.
    Assigning a new array to an arena register (as executors that replace whole registers do) copies the
    values into the arena, where the loop reads them."""

    __slots__ = ("arena", "slots", "views", "other")

    def __init__(self, arena, slots, old):
        self.arena, self.slots, self.views, self.other = arena, slots, {}, {}
        for k, v in old.items():
            self[k] = v

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


class FastLaunch:
    """What every warp of one launch shares: the translation, the global-memory table, the loop's state
    vector and shared-memory log (emptied after every run of the loop)."""

    def __init__(self, prog, gmem):
        from .loop import run
        self._run = run
        self.tr = tr = translation(prog)
        self.gtab = global_table(gmem)
        self.state = np.zeros(T.NSTATE, np.int64)
        self.log_pc = np.zeros(LOG_CAP, np.int64)
        self.log_addr = np.zeros((LOG_CAP, 32), np.int64)
        self.log_mask = np.zeros(LOG_CAP, np.int64)
        self.lanes = np.arange(32, dtype=np.int64)
        # constant special registers: one fancy-indexed store per warp fills them all
        names = [n for n in tr.specials]
        self.special_names = names
        self.special_index = np.array([tr.specials[n][1] // 4 for n in names], np.int64)[:, None] + \
            np.arange(32, dtype=np.int64)
        assert all(tr.specials[n][0] == T.R32 for n in names)

    def attach(self, warp):
        return FastWarp(self, warp)


class FastWarp:
    """One warp's arena and counters."""
    IDLE, SLOW, LOG, EXITED = T.ST_IDLE, T.ST_SLOW, T.ST_LOG, T.ST_EXITED

    def __init__(self, launch, warp):
        tr = launch.tr
        self.launch = launch
        self.arena = arena = np.zeros(max(tr.arena_bytes, 8), np.uint8)
        warp.regs = ArenaRegs(arena, tr.slots, warp.regs)
        if launch.special_names:
            arena.view(np.uint32)[launch.special_index] = [warp.get_reg(n) for n in launch.special_names]
        self.executed = 0
        if not (warp.param.flags.c_contiguous and warp.smem.flags.c_contiguous):
            raise AssertionError("the fast engine addresses .param and shared memory as contiguous bytes")
        self.param = warp.param

    def run(self, w, budget):
        """Run until the loop stops; returns (status, pc, mask) with the reference's types."""
        fl = self.launch
        st = fl.state
        st[T.S_BUDGET] = budget[0]
        st[T.S_ISSUED] = w.issued
        st[T.S_BACK] = w.back_taken
        st[T.S_SPIN_CHECK] = SPIN_CHECK
        st[T.S_INFLIGHT] = w._inflight_n
        st[T.S_NLOG] = 0
        st[T.S_EXECUTED] = 0
        st[T.S_SMEM_PTR] = w.smem.ctypes.data
        st[T.S_SMEM_SIZE] = w.smem.size
        st[T.S_PARAM_PTR] = self.param.ctypes.data
        st[T.S_PARAM_SIZE] = self.param.shape[1]
        tr = fl.tr
        fl._run(tr.code, tr.imm, self.arena, w.pc, w.exited, w.waiting, w.smem_inflight, fl.gtab, st,
                fl.log_pc, fl.log_addr, fl.log_mask, tr.mma_regs, tr.mma_maps, tr.mma_prm, *tr.mma_luts, tr.mma_lutidx)
        budget[0] = int(st[T.S_BUDGET])
        w.clock = w.issued = int(st[T.S_ISSUED])
        w.back_taken = int(st[T.S_BACK])
        self.executed += int(st[T.S_EXECUTED])
        if st[T.S_NLOG]:
            self._flush(w, int(st[T.S_NLOG]))
        status = int(st[T.S_STATUS])
        if status in (T.ST_IDLE, T.ST_EXITED):
            return status, 0, None
        mask = ((int(st[T.S_MASK]) >> fl.lanes) & 1).astype(np.bool_)
        return status, int(st[T.S_PC]), mask

    def _flush(self, w, n):
        fl = self.launch
        keep = min(n, max(w.smem_log_cap - w._smem_n, 0))
        w.smem_log_dropped += n - keep
        w._smem_n += keep
        n = keep
        if not n:
            return
        w._smem_pending.append(partial(_records, w.program.code, fl.tr.code, fl.log_pc[:n].copy(),
                                       fl.log_mask[:n].copy(), fl.log_addr[:n].copy()))


def _records(code, tcode, pcs, masks, addrs):
    """SmemAccess records (as the reference logs them) of the shared-memory accesses the loop made."""
    lanes = np.arange(32, dtype=np.int64)
    out = []
    for p, m, a in zip(pcs.tolist(), masks.tolist(), addrs):
        row = tcode[p]
        mask = ((m >> lanes) & 1).astype(np.bool_)
        if row[T.OP] == T.LDMATRIX:
            out.append(SmemAccess(str(code[p].instr.text), "ldmatrix", a, 16, mask, int(row[T.Y]), None))
        else:
            out.append(SmemAccess(str(code[p].instr.text), "ld" if row[T.OP] == T.LD else "st", a,
                                  int(row[T.Y] * row[T.Z]), mask, 0, None))
    return out
