"""Thread-block clusters in the CTA loop: ``barrier.cluster.arrive`` / ``wait`` and ``getctarank`` (``HOPX`` rows of
kinds ``asyncx.K_CL_ARRIVE``, ``K_CL_WAIT``, ``K_CTARANK``), as ``ops.cluster`` and ``machine.cluster.Cluster``
define them.

The CTAs of a cluster run in the CTA loop one at a time (``machine.cluster.Cluster._run_loops``). Before each run
``Cluster._tables`` fills the cluster's table (state ``S_CLUSTER``: int64 rows of ``CL_ROW`` columns): row 0 holds
the running CTA's rank, the cluster's size and the cluster barrier's phase (``Cluster.phase``, read back after the
run); row 1 + r the raw addresses of CTA rank r's mbarrier table (``hopcall.py``), its loop's exit flags, its
threads' ``cl_arrived`` / ``cl_phase`` arrays (``machine.cta.CTA``: bool and int64 (warps, 32), the same arrays
the executors use), its number of warps, its shared memory and whether that memory still exists.

* ``barrier.cluster.arrive``: each executing thread is marked arrived in the current phase; the barrier completes
  (the phase moves on) when every thread of the cluster that has not exited has arrived in it
  (``Cluster._complete``).
* ``barrier.cluster.wait``: threads that arrived in an earlier phase go on (their arrival is cleared); the others
  try to complete the barrier, and those that still cannot go on park as a stall record of the CTA loop
  (``ctaloop.py``: the record's parity column holds ``PAR_CLUSTER``, its value the phase waited on), exactly as a
  ``mbarrier.try_wait`` that has not completed; they wake (and run the wait again) once the phase moved past it.
  When the loop hands the CTA to the warp-by-warp scheduler the records become ``machine.cluster.ClusterWait``
  stalls (``engine.FastCTA._mb_stalls``), which name the threads that have not arrived in a deadlock report.
* ``getctarank``: the rank a shared::cluster address names (``memory.dsmem``).

Every rule broken (an arrive twice, a wait without an arrive, an ``.aligned`` barrier some lanes skip, an address
outside the window or the cluster, a CTA whose threads have all exited) returns 1 with nothing written: the loop
hands the instruction back and the executor raises its error. A CTA outside a cluster of several (no table) and a
warp run alone hand every such row back, except ``getctarank`` where the cluster has one CTA (%cluster_nctarank 1):
an address of the CTA's own window names rank 0.

The rows run in one C-callable function compiled apart (``cl_c``, "cluster" of ``families.APART``), bound only for
kernels with such rows; ``rarecall.rare_c`` calls it for HOPX rows of these kinds.
"""
import numpy as np
from numba import carray, njit, types

from . import ccall as C
from . import table as T
from .asyncx import K_CL_ARRIVE, K_CL_WAIT, K_CTARANK, LANES, SHIFT, U1
from .regs import _gather, _scatter
from .raw import _peek8, _peek64, _poke8, _poke64

# the cluster's table: row 0 (the running CTA), rows 1 + r (CTA rank r)
CL_ROW = 16
CL_RANK, CL_SIZE, CL_PHASE = 0, 1, 2
(CL_TAB, CL_N, CL_ALIVE, CL_CHANGED, CL_EXITED, CL_ARRIVED, CL_PHASES, CL_NW, CL_SMEM,
 CL_SMEM_N, CL_INFL, CL_INFL_N, CL_DIRTY, CL_PYPEND, CL_WGR, CL_DIRTY_N) = range(CL_ROW)
# (CL_WGR: the CTA's wgmma read counts (int32 a byte) while an in-flight wgmma.mma_async reads its shared memory, else
# 0; CL_DIRTY_N: stores of other CTAs the loop marked in its generic-proxy marks (read back: AsyncUnit.any_dirty;
# row 0's column: their sum); both for the loads, stores and atomics that reach it, dsmemx.py)
# (CL_INFL, CL_INFL_N, CL_DIRTY, CL_PYPEND: the CTA's shared in-flight counts (int32 a byte) and copies in flight
# (read back after the run), its async unit's generic-proxy marks (0: no unit) and whether that unit holds copies of
# its own: multicast TMA loads into it, bulkx.py)
PAR_CLUSTER = 2                 # a stall record's MB_PAR: a barrier.cluster.wait (MB_VAL: the phase it waits on)


@njit(cache=True, inline="always")
def cl_get(ct, r, c):
    """Column ``c`` of CTA rank ``r``'s row."""
    return np.int64(_peek64(ct + 8 * (CL_ROW * (1 + r) + c)))


@njit(cache=True, inline="always")
def cl_add(ct, r, c, v):
    """Add ``v`` to column ``c`` of CTA rank ``r``'s row."""
    p = ct + 8 * (CL_ROW * (1 + r) + c)
    _poke64(p, np.uint64(np.int64(_peek64(p)) + v))


@njit(cache=True, _nrt=False)
def cl_target(ct, r):
    """CTA rank ``r``'s shared memory, shared in-flight counts, generic-proxy marks, mbarrier table and its rows in
    use (raw addresses), for the multicast loads that land there (bulkx.py)."""
    return (cl_get(ct, r, CL_SMEM), cl_get(ct, r, CL_INFL), cl_get(ct, r, CL_DIRTY), cl_get(ct, r, CL_TAB),
            cl_get(ct, r, CL_N))


@njit(cache=True, _nrt=False)
def cl_inflight(ct, r, v):
    """A multicast load put in flight (``v`` 1) or landed (-1) in CTA rank ``r``: its count of copies in flight, and
    (landed) the change to its mbarriers."""
    cl_add(ct, r, CL_INFL_N, v)
    if v < 0:
        cl_add(ct, r, CL_CHANGED, 1)


@njit(cache=True, inline="always")
def cl_phase(ct):
    return np.int64(_peek64(ct + 8 * CL_PHASE))


@njit(cache=True, _nrt=False)
def cl_complete(ct):
    """Cluster._complete: the barrier moves to its next phase when every thread of the cluster that has not exited
    arrived in the current one (a CTA whose loop ended has exited); whether it did."""
    phase = cl_phase(ct)
    for r in range(np.int64(_peek64(ct + 8 * CL_SIZE))):
        if cl_get(ct, r, CL_ALIVE) == 0:
            continue
        ex, ar, ph = cl_get(ct, r, CL_EXITED), cl_get(ct, r, CL_ARRIVED), cl_get(ct, r, CL_PHASES)
        for i in range(cl_get(ct, r, CL_NW) * LANES):
            if _peek8(ex + i) == 0 and not (_peek8(ar + i) != 0 and np.int64(_peek64(ph + 8 * i)) == phase):
                return False
    _poke64(ct + 8 * CL_PHASE, np.uint64(phase + 1))
    return True


@njit(cache=True, _nrt=False)
def _aligned_ok(ct, own, w, em):
    """An .aligned barrier is executed by every non-exited lane of the warp (ops.cluster)."""
    ex = cl_get(ct, own, CL_EXITED) + LANES * w
    for lane in range(LANES):
        if (em >> lane) & 1 == 0 and _peek8(ex + lane) == 0:
            return False
    return True


@njit(cache=True, _nrt=False)
def _ctarank_alone(row, imrow, em, a8, a16, a32, a64, xa, xr):
    """getctarank without a cluster table: a CTA outside a cluster of several, or a warp run alone (B, C: the
    %cluster_ctarank and %cluster_nctarank special registers). Where the cluster has one CTA the only rank an
    address may name is the CTA's own (0); anything else (a cluster of several run warp by warp, an address
    outside the window or naming another rank) goes back to the executor."""
    bi, ci = row[T.B] & T.INDEX_MASK, row[T.C] & T.INDEX_MASK
    _gather(row[T.A], row[T.W], 0, xa, a8, a16, a32, a64, imrow)
    for lane in range(LANES):
        if (em >> lane) & 1:
            own = np.int64(a32[bi + lane])
            if np.int64(a32[ci + lane]) != 1:
                return 1
            a = xa[lane]
            if a >= np.uint64(1) << np.uint64(32):
                return 1
            r = (own + np.int64(a >> np.uint64(SHIFT))) & 0xFF
            if r != own:
                return 1
            xr[lane] = np.uint64(r)
    _scatter(row[T.D], xr, em, 32, 0, a8, a16, a32, a64)
    return 0


@njit(cache=True, _nrt=False)
def cl_rows(row, imrow, em, state, a8, a16, a32, a64, scratch):
    """A cluster HOPX row on the lanes in ``em``: 0; 1 when a lane breaks a rule or the row needs Python (nothing
    written); 2 when lanes of a barrier.cluster.wait park (state S_MBSTALL; their barrier (-1) and the phase they wait
    on in scratch rows 3 and 4, as ctaloop.record_stall reads them)."""
    ct = state[T.S_CLUSTER]
    xa, xb, xr = scratch[3], scratch[4], scratch[6]
    if ct == 0:
        if row[T.X] == K_CTARANK and row[T.B] >= 0:
            return _ctarank_alone(row, imrow, em, a8, a16, a32, a64, xa, xr)
        return 1
    kind = row[T.X]
    own = np.int64(_peek64(ct + 8 * CL_RANK))
    size = np.int64(_peek64(ct + 8 * CL_SIZE))
    if kind == K_CTARANK:                       # A: the address (W bits); D: the rank (u32)
        _gather(row[T.A], row[T.W], 0, xa, a8, a16, a32, a64, imrow)
        for lane in range(LANES):
            if (em >> lane) & 1:
                a = xa[lane]
                if a >= np.uint64(1) << np.uint64(32):
                    return 1
                r = (own + np.int64(a >> np.uint64(SHIFT))) & 0xFF
                if r >= size or (r != own and cl_get(ct, r, CL_ALIVE) == 0):
                    return 1
                xr[lane] = np.uint64(r)
        _scatter(row[T.D], xr, em, 32, 0, a8, a16, a32, a64)
        return 0
    w = state[T.S_WARP]
    if row[T.Z] == 1 and not _aligned_ok(ct, own, w, em):
        return 1
    ar = cl_get(ct, own, CL_ARRIVED) + LANES * w
    ph = cl_get(ct, own, CL_PHASES) + 8 * LANES * w
    phase = cl_phase(ct)
    if kind == K_CL_ARRIVE:
        for lane in range(LANES):
            if (em >> lane) & 1 and _peek8(ar + lane) != 0:
                return 1                        # arrive again before a wait
        for lane in range(LANES):
            if (em >> lane) & 1:
                _poke8(ar + lane, U1)
                _poke64(ph + 8 * lane, np.uint64(phase))
        if cl_complete(ct):
            state[T.S_MBAR_CHANGED] += 1        # (the CTA loop's stall records wake: ctaloop.wake)
        return 0
    if kind != K_CL_WAIT:
        return 1
    if state[T.S_MBW] == 0:
        return 1                                # the loop does not park lanes here: the executor stalls them
    for lane in range(LANES):
        if (em >> lane) & 1 and _peek8(ar + lane) == 0:
            return 1                            # a wait without an arrive
    done = np.int64(0)
    for lane in range(LANES):
        if (em >> lane) & 1 and np.int64(_peek64(ph + 8 * lane)) < phase:
            done |= np.int64(1) << lane
    if done != em and cl_complete(ct):
        done = em
        state[T.S_MBAR_CHANGED] += 1
    for lane in range(LANES):
        if (done >> lane) & 1:
            _poke8(ar + lane, np.uint64(0))
    stall = em & ~done
    if stall == 0:
        return 0
    phase = cl_phase(ct)
    for lane in range(LANES):
        xa[lane] = np.uint64(0xFFFFFFFFFFFFFFFF)
        xb[lane] = np.uint64(phase)
    state[T.S_MBSTALL] = stall
    return 2


# compiled by families.py ("cluster": cfunc(SIG, cache=True)), for kernels with cluster rows
SIG = types.int64(types.int64, types.CPointer(types.int64), types.CPointer(types.int64),
                  types.CPointer(types.uint64), types.CPointer(types.uint8), types.int64, types.CPointer(types.uint64))


def cl_c(em, pstate, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return cl_rows(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, carray(pstate, T.NSTATE), a8,
                   a8.view(np.uint16), a8.view(np.uint32), a8.view(np.uint64), carray(pscratch, (C.NSCRATCH, 32)))
