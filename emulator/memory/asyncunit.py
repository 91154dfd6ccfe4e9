"""The asynchronous side of a CTA: its mbarriers, the bulk copies in flight (issued by the TMA or
``cp.async.bulk``), per-thread bulk async-groups, the generic-proxy writes not yet fenced against the async
proxy, and the events a timeline draws.

Copies complete when the CTA's scheduler pumps the unit (when no warp can run, when a wait needs them, or
at random points under a seeded schedule); until then their shared-memory destinations are in flight.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ProxyError, fail
from .mbarrier import MBarriers


@dataclass
class AsyncCopy:
    kind: str                   # 'load' (global -> shared), 'store', 'reduce', 'bulk'
    text: str
    warp: int
    lane: int
    issued: int                 # step
    complete: object            # complete() -> None: moves the data, signals the mbarrier
    group: int = -1             # bulk async-group (stores), -1: uncommitted / completes on an mbarrier
    grouped: bool = False
    done: int = -1
    inflight: object = None     # shared byte indices marked in flight
    info: dict = field(default_factory=dict)


class AsyncUnit:
    def __init__(self, smem_size):
        self.mbarriers = MBarriers()
        self.pending: list[AsyncCopy] = []
        self.finished: list[AsyncCopy] = []
        self.committed: dict = {}             # (warp, lane) -> groups committed so far
        self.commits = 0                      # commit calls so far (the fast engine's CTA loop keeps its own counts)
        self.dirty = np.zeros(smem_size, np.bool_)
        self.any_dirty = False
        self.events = []                      # ('instr', step, warp, pc, text, nlanes) when recording
        self.record = False
        self.on_hazard = None                 # a sanitiser's report(instr, message, address) -> True: go on

    @property
    def step(self):
        return self.mbarriers.step

    # -- generic vs async proxy ------------------------------------------------------------------
    def generic_write(self, idx):
        self.dirty[idx] = True
        self.any_dirty = True

    def fence_proxy_async(self):
        if self.any_dirty:
            self.dirty[:] = False
            self.any_dirty = False

    def check_async_read(self, instr, idx, what, who=None):
        """The async proxy reads shared bytes ``idx``: a generic write to them must have been fenced."""
        if self.any_dirty:
            hit = self.dirty[idx]
            if hit.any():
                a = int(np.asarray(idx).reshape(-1)[int(np.flatnonzero(hit.reshape(-1))[0])])
                msg = (f"{what} reads shared byte {a:#x}, written by a generic-proxy store (st, stmatrix, ...) with no "
                       f"fence.proxy.async since; the async proxy may not see that write")
                if self.on_hazard is not None and self.on_hazard(instr, msg, a, who):
                    return
                fail(ProxyError, instr, msg)

    # -- copies -----------------------------------------------------------------------------------
    def issue(self, copy: AsyncCopy):
        copy.issued = self.step
        self.pending.append(copy)

    def commit(self, warp, lane):
        self.commits += 1
        key = (warp, lane)
        g = self.committed.get(key, 0)
        for c in self.pending:
            if c.grouped and c.group < 0 and (c.warp, c.lane) == key:
                c.group = g
        self.committed[key] = g + 1

    def pump(self, pred=None):
        """Complete pending copies (all, or those ``pred`` selects), in issue order."""
        keep = []
        todo = self.pending
        self.pending = []
        for c in todo:
            if pred is None or pred(c):
                c.complete()
                c.done = self.step
                if self.record:                # (the timeline draws them; otherwise they are garbage now)
                    self.finished.append(c)
                self.mbarriers.version += 1
            else:
                keep.append(c)
        self.pending = keep + self.pending

    def wait_group(self, warp, lane, keep):
        """cp.async.bulk.wait_group N: complete the thread's bulk groups older than its N newest."""
        limit = self.committed.get((warp, lane), 0) - keep
        if limit > 0:
            self.pump(lambda c: c.grouped and c.lane == lane and c.warp == warp and 0 <= c.group < limit)

    def commit_lanes(self, warp, lanes):
        """``commit`` for each of ``lanes`` (a warp's commit_group): one pass over the copies in flight."""
        self.commits += 1
        groups = {}
        for lane in lanes:
            key = (warp, lane)
            groups[lane] = g = self.committed.get(key, 0)
            self.committed[key] = g + 1
        for c in self.pending:
            if c.grouped and c.group < 0 and c.warp == warp and c.lane in groups:
                c.group = groups[c.lane]

    def wait_group_lanes(self, warp, lanes, keep):
        """``wait_group`` for each of ``lanes`` in turn (a warp's wait_group), in one pass over the copies in flight:
        lane after lane, each lane's copies in issue order, as its own pumps would complete them."""
        limits = {lane: self.committed.get((warp, lane), 0) - keep for lane in lanes}
        sel = {}
        stay = []
        for c in self.pending:
            if c.grouped and c.warp == warp and c.lane in limits and 0 <= c.group < limits[c.lane]:
                sel.setdefault(c.lane, []).append(c)
            else:
                stay.append(c)
        if not sel:
            return
        self.pending = []
        for lane in lanes:
            for c in sel.get(lane, ()):
                c.complete()
                c.done = self.step
                if self.record:                # (the timeline draws them)
                    self.finished.append(c)
                self.mbarriers.version += 1
        self.pending = stay + self.pending
