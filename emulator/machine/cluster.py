"""Thread-block clusters: the CTAs of a cluster run together, interleaved by one scheduler, because they wait on
each other (``barrier.cluster``, mbarriers in another CTA's shared memory, multicast copies).

* A launch with cluster dimensions (``launch(..., cluster=(x, y, z))`` or ``.reqnctapercluster`` in the PTX)
  runs cluster after cluster (cluster id x fastest). Inside a cluster the CTAs are ranked x fastest
  (``%cluster_ctarank = x + y * nx + z * nx * ny``, measured on the H100).
* The scheduler visits the CTAs in rank order and, inside each, its warps in order; each warp runs until it
  waits (round-robin, the default), or, with ``schedule=("random", seed)``, the (CTA, warp) pairs are visited
  in a seeded random order and preempted after random instruction counts. The same seed gives the same run.
* Bulk copies complete when nobody in the cluster can move (or at random points under a seeded schedule).
* ``barrier.cluster.arrive`` / ``wait``: a thread's wait returns once every thread of the cluster has arrived
  (threads that exited count as arrived). A cluster in which no warp can go on, with no copy in flight, stops
  with a ``WarpSyncError`` that names every CTA, warp, lane range and what it waits for.
* On the fast engine (``loop``: no seeded schedule, timeline or sanitizer) each CTA runs in the jitted CTA loop
  (``fastcore.engine.FastCTA.run``), one CTA at a time in rank order: a CTA runs until none of its warps can go
  on without another CTA (a ``barrier.cluster.wait``, an mbarrier a peer arrives on or a copy fills), then the
  next CTA runs; the loops' arrays keep each CTA's state between its turns. The cluster instructions the loop
  leaves to the executors run on the same arrays. When a whole pass over the CTAs changes nothing (or a CTA
  needs the scheduler, e.g. a spin check), every CTA's state goes to the warp-by-warp scheduler above, which
  goes on from there (and reports a deadlock with the same words).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..errors import WarpSyncError, fail
from ..ops.common import format_lanes
from ..ops.wgmma.state import check_cta_end as check_wgmma_end


BLOCKED = "blocked"     # what fastcore.engine.FastCTA.run(cluster=True) returns when the CTA waits on the others


class Cluster:
    """The CTAs of one cluster (rank order) and the state they share: the cluster barrier."""

    def __init__(self, cid, dims, explicit):
        self.cid, self.dims, self.explicit = tuple(cid), tuple(dims), bool(explicit)
        self.size = int(self.dims[0]) * int(self.dims[1]) * int(self.dims[2]) if len(self.dims) == 3 else \
            int(np.prod(dims))
        self.ctas = []
        self.phase = 0              # barrier.cluster: completed phases
        self.version = 0
        self.loop = False           # its CTAs run in the fast engine's CTA loop (set by the launch)

    # -- barrier.cluster -------------------------------------------------------------------------
    def _complete(self):
        """Advance the cluster barrier if every non-exited thread has arrived in the current phase."""
        for c in self.ctas:
            ws = c.warps
            fc = c.__dict__.get("_fast_arrays")     # the CTA loop's arrays: every warp's exits in one (warps, 32)
            arrived, phase = c.__dict__.get("cl_arrived"), c.__dict__.get("cl_phase")
            if fc is not None and arrived is not None and all(w.exited.base is fc.exited.base for w in ws[:1]):
                if (~fc.exited & ~(arrived & (phase == self.phase))).any():
                    return False
                continue
            for w in ws:
                if (~w.exited & ~(w.cl_arrived & (w.cl_phase == self.phase))).any():
                    return False
        self.phase += 1
        self.version += 1
        return True

    def arrive(self, w, mask, text):
        again = mask & w.cl_arrived
        if again.any():
            fail(WarpSyncError, text, "barrier.cluster.arrive again before this thread's barrier.cluster.wait "
                 "(each arrive must be followed by a wait)", int(np.flatnonzero(again)[0]))
        w.cl_arrived |= mask
        w.cl_phase[mask] = self.phase
        self.version += 1
        self._complete()

    def wait(self, w, mask, text):
        missing = mask & ~w.cl_arrived
        if missing.any():
            fail(WarpSyncError, text, "barrier.cluster.wait by a thread that has not arrived (barrier.cluster.arrive "
                 "first); it would wait forever", int(np.flatnonzero(missing)[0]))
        done = mask & (w.cl_phase < self.phase)
        if not (mask & ~done).any() or self._complete():
            done = mask
        w.cl_arrived[done] = False
        waiting = mask & ~done
        if waiting.any():
            w.stall(waiting, ClusterWait(self, w, waiting, text))
        return done

    def missing(self):
        """Warps and lanes that have not arrived in the current phase (and have not exited)."""
        out = []
        for c in self.ctas:
            for w in c.warps:
                m = ~w.exited & ~(w.cl_arrived & (w.cl_phase == self.phase))
                if m.any():
                    out.append(f"CTA {c.ctaid} (rank {c.rank}) warp {w.warp_id} lanes "
                               f"{format_lanes(np.flatnonzero(m))} (pc {int(w.pc[m].min())})")
        return out

    # -- the scheduler ---------------------------------------------------------------------------
    def run(self, rng=None):
        with np.errstate(all="ignore"):
            if rng is None and all(c.fast_cta is not None for c in self.ctas):
                return self._run_loops()
            return self._run(rng)

    # -- the CTAs in the fast engine's CTA loop ----------------------------------------------------------------
    def _state(self, c):
        """What changes when a CTA moves on, but for its registers: its loop's PCs, exits, waits, barrier counts,
        stalls and mbarriers' version (``_run_loops`` compares the registers only when these stayed the same
        while instructions ran: a loop that spins with unchanged registers does not move)."""
        fc = c.fast_cta
        au = c.__dict__.get("_au")
        return (fc.pcs.tobytes(), fc.exited.tobytes(), fc.waiting.tobytes(), fc.bar_arrived.tobytes(),
                len(c.stalls), au.mbarriers.version if au is not None else 0)

    def _run_loops(self):
        """Each CTA in the CTA loop until it is done or waits on the others, in rank order, until every CTA is
        done; the warp-by-warp scheduler (``_run``) takes over every CTA's state when a pass changes nothing or a
        CTA needs it."""
        ctas = self.ctas
        done = [False] * len(ctas)
        self._done = done
        from .fastcore.clusterx import CL_ROW
        self._ct = np.zeros((1 + len(ctas), CL_ROW), np.int64)  # the loop's table of the cluster (clusterx.CL_*)
        self._fixed = [None] * len(ctas)        # the CTA loop arrays whose addresses stand in the table
        self._ptrs = {}                         # id(array) -> (array, its address)
        # (a kernel with wgmma.mma_async: whether its in-flight reads of each CTA's shared memory are looked up)
        self._wgr = any(c.fast_cta.launch.tr.async_readers for c in ctas)
        for c in ctas:
            c.fast_cta.cluster_hook = partial(self._tables, c)
        quiet = [False] * len(ctas)     # the CTA's last turn ran instructions without changing _state
        while not all(done):
            moved = False
            version = self.version
            for i, c in enumerate(ctas):
                if done[i]:
                    continue
                fc = c.fast_cta
                before, issued = self._state(c), int(fc.issued.sum())
                regs = fc.arenas.copy() if quiet[i] else None
                r = fc.run(c, cluster=True)
                if r is None:                   # the CTA ran to its end (its copies complete)
                    done[i] = moved = True
                    if c.__dict__.get("_au") is not None:
                        c._au.pump()
                    continue
                if r != BLOCKED:                # a spin check or a rule the scheduler applies: it takes over
                    c.fast_cta = None
                    return self._hand_over(done)
                quiet[i] = False
                if self._state(c) != before:
                    moved = True
                elif int(fc.issued.sum()) != issued:
                    quiet[i] = True
                    if regs is None or not np.array_equal(regs, fc.arenas):
                        moved = True
            if moved or self.version != version:
                continue
            if any(c.async_unit.pending for c in ctas):
                for c in ctas:
                    c.async_unit.pump()
                continue
            return self._hand_over(done)     # nothing moves: the scheduler lifts waits or reports the deadlock
        for c in ctas:
            check_wgmma_end(c)
        return [c.warps for c in ctas]

    def _tables(self, c, before):
        """Before a run of CTA ``c`` in the CTA loop: its rank, the cluster's size and barrier phase, and per CTA its
        mbarrier table (raw pointer, rows in use; 0: none), whether its shared memory still exists, its loop's exit
        flags, its threads' ``cl_arrived`` / ``cl_phase`` (made here if its warps do not exist yet: they adopt
        them), its number of warps and its shared memory, for the rows that reach another CTA (hopcall.py,
        clusterx.py); returns the table's address. After the run: the changes the loop made to each CTA's barriers
        move its ``MBarriers.version`` on, and a cluster barrier phase the loop completed becomes ``phase``."""
        X = _X[0] or _clusterx()
        ct = self._ct
        ptr = self._ptr
        if before:
            ct[0, X.CL_RANK], ct[0, X.CL_SIZE], ct[0, X.CL_PHASE] = c.rank, self.size, self.phase
            fixed = self._fixed
            for r, p in enumerate(self.ctas):
                au = p.__dict__.get("_au")
                rows = au.mbarriers.rows if au is not None else None
                row = ct[1 + r]
                # (a table grows into new rows, an async unit is made on first need: read again before every run)
                row[X.CL_TAB] = ptr(rows) if rows is not None and rows.size else 0
                row[X.CL_N] = au.mbarriers.used if au is not None else 0
                row[X.CL_ALIVE] = not self._done[r]
                row[X.CL_INFL_N] = p.inflight_n
                row[X.CL_DIRTY] = ptr(au.dirty) if au is not None and au.dirty.size else 0
                row[X.CL_PYPEND] = int(au is not None and bool(au.pending))
                row[X.CL_WGR] = _wgmma_reads(p, ptr) if self._wgr and p is not c else 0
                fc = p.fast_cta or p.__dict__.get("_fast_arrays")
                if fc is None:
                    row[X.CL_ALIVE] = 0
                elif fixed[r] is not fc:        # (the arrays that stay where they are while the CTA exists)
                    fixed[r] = fc
                    arrived = p.__dict__.get("cl_arrived")
                    if arrived is None:
                        arrived = p.cl_arrived = np.zeros((p.nwarps, 32), np.bool_)
                        p.cl_phase = np.zeros((p.nwarps, 32), np.int64)
                    row[X.CL_EXITED] = fc.exited.ctypes.data
                    row[X.CL_ARRIVED] = arrived.ctypes.data
                    row[X.CL_PHASES] = p.cl_phase.ctypes.data
                    row[X.CL_NW] = p.nwarps
                    row[X.CL_SMEM] = p.smem.ctypes.data if p.smem.size else 0
                    row[X.CL_SMEM_N] = p.smem.size
                    row[X.CL_INFL] = p.smem_inflight.ctypes.data
            return ct.ctypes.data
        for r in np.flatnonzero(ct[1:, X.CL_CHANGED]).tolist():
            self.ctas[r].async_unit.mbarriers.version += int(ct[1 + r, X.CL_CHANGED])
            ct[1 + r, X.CL_CHANGED] = 0
        for r, p in enumerate(self.ctas):       # (multicast loads the loop put in flight in, or landed in, others)
            if p is not c and p.inflight_n != ct[1 + r, X.CL_INFL_N]:
                p.inflight_n = int(ct[1 + r, X.CL_INFL_N])
        if ct[0, X.CL_DIRTY_N]:             # (stores into another CTA: dsmemx.py)
            for r in np.flatnonzero(ct[1:, X.CL_DIRTY_N]).tolist():
                self.ctas[r].async_unit.any_dirty = True
            ct[:, X.CL_DIRTY_N] = 0
        if int(ct[0, X.CL_PHASE]) != self.phase:
            self.phase = int(ct[0, X.CL_PHASE])
            self.version += 1
        return 0

    def _ptr(self, a):
        """The raw address of array ``a`` (``a.ctypes.data``, which costs microseconds: kept per array)."""
        got = self._ptrs.get(id(a))
        if got is None or got[0] is not a:
            got = self._ptrs[id(a)] = (a, a.ctypes.data)
        return got[1]

    def _hand_over(self, done):
        """Every CTA still in the CTA loop hands its state (barriers, stalls, wgmma) to the warp-by-warp
        scheduler, which runs the cluster on from there."""
        for i, c in enumerate(self.ctas):
            fc = c.fast_cta or c.__dict__.get("_fast_arrays")
            if fc is not None:
                fc.cluster_hook = None
            fc = c.fast_cta
            if fc is not None:
                if not done[i]:
                    fc._handoff(c, len(c.warps), False)
                c.fast_cta = None
        return self._run(None)

    def _run(self, rng):
        ctas = self.ctas
        pairs = [(c, w) for c in ctas for w in c.warps]
        for c in ctas:
            c._rng = rng
        while True:
            progressed = False
            version = self.version + sum(c.async_unit.mbarriers.version for c in ctas)
            order = pairs if rng is None else [pairs[i] for i in rng.permutation(len(pairs))]
            for c, w in order:
                c._wake()
                if c._runnable(w):
                    if c._run_warp(w) not in ("spin", "deferred"):
                        progressed = True
                c._check_barriers()
                if rng is not None and rng.random() < 0.3:
                    for cc in ctas:
                        if cc.async_unit.pending:
                            cc.async_unit.pump(lambda _: rng.random() < 0.5)
            if all(w.exited.all() for c in ctas for w in c.warps):
                for c in ctas:
                    c.async_unit.pump()
                break
            if progressed or self.version + sum(c.async_unit.mbarriers.version for c in ctas) != version:
                continue
            if any(c.async_unit.pending for c in ctas):
                for c in ctas:
                    c.async_unit.pump()
                continue
            for c in ctas:
                c._wake()
            forced = False          # lane groups that wait for parked lanes (machine.convergence): lift the waits
            for c, w in pairs:
                if not c._can_run(w) and (~w.exited & ~w.waiting).any():
                    w._force = forced = True
            if forced:
                continue
            if not any(c._runnable(w) for c, w in pairs) or not progressed:
                parts = []
                for c in ctas:
                    p = c._deadlock_parts()
                    if p:
                        parts.append(f"CTA {c.ctaid} (rank {c.rank}): " + "; ".join(p))
                raise WarpSyncError(f"cluster {self.cid} ({self.size} CTAs): deadlock: no warp of the cluster can "
                                    f"go on and no copy is in flight; " + " | ".join(parts))
        for c in ctas:
            check_wgmma_end(c)
        return [c.warps for c in ctas]


def _clusterx():
    from .fastcore import clusterx
    _X[0] = clusterx
    return clusterx


_X = [None]


def _wgmma_reads(cta, ptr):
    """The raw address of the CTA's wgmma read counts (int32 a byte of shared memory) while an in-flight
    wgmma.mma_async reads its shared memory (a store from another CTA into those bytes is an error), else 0."""
    fc = cta.fast_cta
    wg = getattr(fc, "wg", None) if fc is not None else None
    if wg is not None:
        return ptr(wg.reads) if wg.ctl[wg.NREAD] > 0 else 0
    st = getattr(cta, "wgmma", None)
    return ptr(st.smem_reads) if st is not None and st.n_reading else 0


class ClusterWait:
    """Why lanes stall at barrier.cluster.wait (what the deadlock report names)."""

    def __init__(self, cluster, warp, lanes, text):
        self.cluster, self.warp, self.text = cluster, warp, text
        self.phase = int(warp.cl_phase[lanes].max())

    def ready(self):
        return self.cluster.phase > self.phase or self.cluster._complete()

    def describe(self):
        miss = self.cluster.missing()
        return (f"{self.text}: waits for every thread of the cluster to arrive (barrier.cluster phase {self.phase}); "
                f"not arrived: " + (", ".join(miss) if miss else "none"))
