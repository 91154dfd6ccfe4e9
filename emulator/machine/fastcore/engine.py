"""Glue between the CTA scheduler and the jitted loop: per-warp register arena, state, shared-memory log.

Each register that a translated instruction touches lives in one byte arena per warp; ``warp.regs[name]``
is a view of its 32 lanes with the register's own dtype, so the reference executors (which run the
instructions the loop hands back) read and write the very same memory: no copies between the engines.
"""
from __future__ import annotations

import numpy as np

from ...memory import SmemAccess
from . import table as T
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
    return np.array(rows, np.int64).reshape(-1, 3)


class PinnedRegs(dict):
    """A warp's register dict whose arena registers stay where the loop reads them: assigning a new array
    to one of them (as executors that replace whole registers do) copies the values into the arena view."""

    def __setitem__(self, name, value):
        cur = self.get(name)
        if cur is not None and name in self.pinned:
            cur[...] = value
        else:
            dict.__setitem__(self, name, value)


class FastLaunch:
    """What every warp of one launch shares: the translation and the global-memory table."""

    def __init__(self, prog, gmem):
        self.tr = translation(prog)
        self.gtab = global_table(gmem)

    def attach(self, warp):
        return FastWarp(self, warp)


class FastWarp:
    IDLE, SLOW, LOG = T.ST_IDLE, T.ST_SLOW, T.ST_LOG

    def __init__(self, launch, warp):
        from .loop import run
        self._run = run
        tr = launch.tr
        self.launch = launch
        self.arena = arena = np.zeros(max(tr.arena_bytes, 8), np.uint8)
        regs = PinnedRegs(warp.regs)
        regs.pinned = set(tr.slots)
        for name, (cls, off) in tr.slots.items():
            view = arena[off:off + 32 * T.CLASS_BYTES[cls]].view(_DTYPE[cls])
            old = warp.regs.get(name)
            if old is not None:
                view[:] = old
            dict.__setitem__(regs, name, view)
        warp.regs = regs
        for name, (cls, off) in tr.specials.items():
            arena[off:off + 32 * T.CLASS_BYTES[cls]].view(_DTYPE[cls])[:] = warp.get_reg(name)
        self.state = np.zeros(T.NSTATE, np.int64)
        self.log_pc = np.zeros(LOG_CAP, np.int64)
        self.log_addr = np.zeros((LOG_CAP, 32), np.int64)
        self.log_mask = np.zeros(LOG_CAP, np.int64)
        self.lanes = np.arange(32, dtype=np.int64)

    def run(self, w, budget):
        """Run until the loop stops; returns (status, pc, mask) with the reference's types."""
        st = self.state
        st[T.S_BUDGET] = budget[0]
        st[T.S_ISSUED] = w.issued
        st[T.S_INFLIGHT] = w._inflight_n
        st[T.S_NLOG] = 0
        self._run(self.launch.tr.code, self.launch.tr.imm, self.arena, w.pc, w.exited, w.waiting, w.smem,
                  w.smem_inflight, w.param, self.launch.gtab, st, self.log_pc, self.log_addr, self.log_mask)
        budget[0] = int(st[T.S_BUDGET])
        w.clock = w.issued = int(st[T.S_ISSUED])
        if st[T.S_NLOG]:
            self._flush(w, int(st[T.S_NLOG]))
        status = int(st[T.S_STATUS])
        if status == T.ST_IDLE:
            return status, 0, None
        mask = ((int(st[T.S_MASK]) >> self.lanes) & 1).astype(np.bool_)
        return status, int(st[T.S_PC]), mask

    def _flush(self, w, n):
        code = w.program.code
        tr = self.launch.tr
        for i in range(n):
            p = int(self.log_pc[i])
            row = tr.code[p]
            op = "ld" if row[T.OP] == T.LD else "st"
            mask = ((int(self.log_mask[i]) >> self.lanes) & 1).astype(np.bool_)
            w._smem_log.append(SmemAccess(str(code[p].instr.text), op, self.log_addr[i].copy(),
                                          int(row[T.Y] * row[T.Z]), mask, 0, None))
