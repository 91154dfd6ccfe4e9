"""The waits of the CTA loop (``loop.run_cta``), as the scheduler of ``machine.cta`` keeps them.

* **mbarrier stalls.** A ``try_wait`` whose phase has not completed parks its lanes (``hopcall.py`` returns 2 and
  ``loop.run`` stops with ``ST_MBWAIT``): one stall record per instruction and warp, numbered in the order the
  stalls happened (the numbers of the wgmma waits, ``wgmmax.K_SEQ``, when the kernel has wgmma, so that the two
  kinds keep one order). Before each warp's turn its records whose phase completed wake (``CTA._wake``: a record
  is ready when one of its lanes' barriers moved past the phase it waits for). The records are the reference's
  ``MBarrierWait`` stalls when the Python scheduler takes the CTA over (``engine.FastCTA._handoff``).
* **Yields.** A warp whose turn ends in a stall (an mbarrier or a wgmma wait) has yielded; the round it yields in
  counts as moving on when its registers, PCs and exits differ from those of its previous yield
  (``CTA._yield_changed``, whose digest covers the same state). The loop keeps a copy of that state per warp and
  compares; the scheduler's digest of the copy is set when it takes over.
* **Counted and register-numbered barriers** (``bar.sync 1, 128``, CUTLASS's NamedBarrier): ``loop.run`` reads
  the number and the count and checks them as ``CTA._arrive`` does (a rule broken goes back: the reference
  raises); a barrier keeps the count of its first arrival and releases when that many threads arrived (every
  non-exited thread without a count).
  The number and count of such a barrier are read in a C-callable function compiled apart (``bar_c``, "ctabar"
  of ``families.APART``), bound only for kernels with such a barrier; ``bar.sync 0`` and the other barriers of a
  constant number without a count are decided in ``loop.run`` itself (while ``bar_c`` is not bound, the warp loop
  hands such a barrier back and the Python scheduler takes the CTA over, with the same outcome).

The stalls, wakes and yields run in one C-callable function compiled apart from the loops (``cta_c``, "ctawait"
of ``families.APART``), which ``loop.run_cta`` calls through its address (slot ``loop.CSLOT`` of the translation's
pointer array), as it calls the families: a kernel that never waits on an mbarrier or a wgmma group (every sm_80
kernel) never compiles it. It is bound for every kernel with Hopper, wgmma or TMA rows, and the CTA loop runs
such a kernel only once it is (``families.CTA_NEEDS``; the Python scheduler runs its CTAs meanwhile).
"""
import numpy as np
from numba import njit, types

from . import ccall as C
from . import table as T
from .asyncx import PHASE, _mb, mb_find
from .clusterx import PAR_CLUSTER, cl_complete, cl_phase
from .raw import _peek64, _poke64
from .regs import I0, I32, _gather
from ...numerics.jitcache import INNER

LANES = 32
K_SEQ_OFFSET = 8 * 26          # wgmmax.K_SEQ: the stall counter in the wgmma control row (checked in engine.py)


@njit(cache=True, _nrt=False, **INNER)
def next_seq(state, cst):
    """The number of the next stall: the wgmma waits' counter when the CTA loop owns a wgmma state, else its own."""
    wg = state[T.S_WG]
    if wg != 0:
        v = np.int64(_peek64(wg + K_SEQ_OFFSET)) + 1
        _poke64(wg + K_SEQ_OFFSET, np.uint64(v))
        return v
    cst[T.C_MBSEQ] += 1
    return cst[T.C_MBSEQ]


@njit(cache=True, _nrt=False, **INNER)
def record_stall(w, p, stall, code, scratch, mbw, state, cst):
    """Lanes ``stall`` of warp ``w`` wait at the try_wait at ``p``: their barriers (scratch row 3) and parities or
    states (row 4), as hopcall.py left them, become one stall record, and the warp's last stall."""
    seq = next_seq(state, cst)
    par = code[p, T.Y]
    for lane in range(LANES):
        if (stall >> lane) & 1:
            a = np.int64(scratch[3, lane])
            v = np.int64(scratch[4, lane])
            mbw[w, T.MB_SEQ, lane] = seq
            mbw[w, T.MB_ADDR, lane] = a
            mbw[w, T.MB_VAL, lane] = v
            mbw[w, T.MB_PAR, lane] = par
            mbw[w, T.MB_LADDR, lane] = a
            mbw[w, T.MB_LVAL, lane] = v
            mbw[w, T.MB_LPAR, lane] = par
    mbw[w, T.MB_W, T.MW_LSEQ] = seq
    mbw[w, T.MB_W, T.MW_LMASK] = stall
    mbw[w, T.MB_W, T.MW_LPC] = p
    cst[T.C_NSTALL] += 1


@njit(cache=True, _nrt=False, **INNER)
def _lane_ready(tab, n, mbw, w, lane, state):
    """MBarrierWait.ready for one lane: its barrier's phase moved past the one it waits for (an invalidated
    barrier: not ready); a barrier.cluster.wait's (clusterx.py): ClusterWait.ready, the cluster barrier's phase moved
    past the one it waits for, or it completes now."""
    if mbw[w, T.MB_PAR, lane] == PAR_CLUSTER:
        ct = state[T.S_CLUSTER]
        if ct == 0:
            return False
        return cl_phase(ct) > mbw[w, T.MB_VAL, lane] or cl_complete(ct)
    i = mb_find(tab, n, mbw[w, T.MB_ADDR, lane])
    if i < 0:
        return False
    ph = _mb(tab, i, PHASE)
    v = mbw[w, T.MB_VAL, lane]
    if mbw[w, T.MB_PAR, lane] == 1:
        return (ph & 1) != (v & 1)
    return ph != ((v >> 32) & 0xFFFFFFFF)


@njit(cache=True, _nrt=False, **INNER)
def wake(w, waiting, mbw, state, cst):
    """CTA._wake for warp ``w``'s mbarrier stall records: a record one of whose lanes' phase completed wakes all
    its lanes."""
    tab = state[T.S_MBAR]
    n = state[T.S_MBAR_N]       # (0 rows without a table: only barrier.cluster records can wake)
    done = np.int64(0)
    for lane in range(LANES):
        s = mbw[w, T.MB_SEQ, lane]
        if s < 0 or (done >> lane) & 1:
            continue
        ready = False
        for k in range(lane, LANES):
            if mbw[w, T.MB_SEQ, k] == s:
                done |= np.int64(1) << k
                if not ready and _lane_ready(tab, n, mbw, w, k, state):
                    ready = True
        if ready:
            for k in range(lane, LANES):
                if mbw[w, T.MB_SEQ, k] == s:
                    mbw[w, T.MB_SEQ, k] = -1
                    waiting[w, k] = False
            cst[T.C_NSTALL] -= 1


@njit(cache=True, _nrt=False, **INNER)
def yield_changed(w, arenas, pcs, exited, mbw, ysnap):
    """CTA._yield_changed: whether warp ``w``'s registers (its arena; the registers outside it by their version,
    MW_XVER, which the engine keeps), PCs and exits differ from those of its previous yield; they are kept."""
    wv = mbw[w, T.MB_W]
    same = wv[T.MW_YVALID] == 1 and wv[T.MW_XVER] == wv[T.MW_YVER]
    if same:
        for lane in range(LANES):
            if pcs[w, lane] != mbw[w, T.MB_YPC, lane] or np.int64(exited[w, lane]) != mbw[w, T.MB_YEXIT, lane]:
                same = False
                break
    if same:
        a = arenas[w]
        s = ysnap[w]
        for b in range(a.shape[0]):
            if a[b] != s[b]:
                same = False
                break
    if same:
        return False
    a = arenas[w]
    s = ysnap[w]
    for b in range(a.shape[0]):
        s[b] = a[b]
    for lane in range(LANES):
        mbw[w, T.MB_YPC, lane] = pcs[w, lane]
        mbw[w, T.MB_YEXIT, lane] = np.int64(exited[w, lane])
    wv[T.MW_YVALID] = 1
    wv[T.MW_YVER] = wv[T.MW_XVER]
    return True


@njit(cache=True, _nrt=False, **INNER)
def bar_operands(row, imrow, em, state, xr, a8, a16, a32, a64):
    """The barrier number and thread count of a BAR row in the CTA loop (CTA._arrive's checks; False: a rule is
    broken, the row goes back and the reference raises): state S_BAR_ID, S_BAR_CNT (-1: no count)."""
    bid = row[T.X]
    if bid < 0:
        _gather(row[T.A], I32, I0, xr, a8, a16, a32, a64, imrow)
        first = -1
        for lane in range(LANES):
            if (em >> lane) & 1:
                v = np.int64(xr[lane])
                if first < 0:
                    first = v
                elif v != first:
                    return False
        if first > 15:
            return False
        bid = first
    cnt = np.int64(-1)
    if row[T.B] != -1:
        _gather(row[T.B], I32, I0, xr, a8, a16, a32, a64, imrow)
        for lane in range(LANES):
            if (em >> lane) & 1:
                cnt = np.int64(xr[lane])
                break
        if cnt % 32 != 0 or cnt <= 0:
            return False
        if np.int64(_peek64(state[T.S_BARSEQ] + 8 * bid)) != 0:
            was = np.int64(_peek64(state[T.S_BARCNT] + 8 * bid))
            if was != -1 and was != cnt:
                return False
    state[T.S_BAR_ID] = bid
    state[T.S_BAR_CNT] = cnt
    return True


# cta_c's operations: every warp's wake pass; a stall recorded, then a yield; a yield
OP_WAKE, OP_STALL, OP_YIELD = 0, 1, 2
# compiled by families.py ("ctawait": cfunc(SIG, cache=True)), for kernels with Hopper, wgmma or TMA rows
SIG = types.int64(types.int64, types.int64, types.int64)


def cta_c(op, w, pscratch):
    """The CTA loop's waits (``loop.run_cta``), over the CTA's arrays whose addresses it left in the ctx
    (``ccall.K_CTA_*``): OP_WAKE, every warp's stall records whose phase completed wake (returns 0); OP_STALL, the
    try_wait at state S_PC parks lanes S_MASK of warp ``w``, then OP_YIELD, whether the warp's yield changed its
    state (1) or not (0)."""
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    nw = ctx[C.K_CTA_NW]
    state = C.i64_1d(ctx[C.K_CTA_STATE], T.NSTATE)
    cst = C.i64_1d(ctx[C.K_CTA_CST], T.NCSTATE)
    waiting = C.b1_2d(ctx[C.K_CTA_WAITING], nw, LANES)
    mbw = C.i64_3d(ctx[C.K_CTA_MBW], nw, T.MB_ROWS, LANES)
    if op == OP_WAKE:
        for v in range(nw):
            wake(v, waiting, mbw, state, cst)
        return 0
    if op == OP_STALL:
        code = C.i64_2d(ctx[C.K_CTA_CODE], ctx[C.K_CTA_NCODE], T.NFIELDS)
        scratch = C.u64_2d(pscratch, C.NSCRATCH, LANES)
        record_stall(w, state[T.S_PC], state[T.S_MASK], code, scratch, mbw, state, cst)
    arenas = C.u8_2d(ctx[C.K_CTA_ARENAS], nw, ctx[C.K_CTA_AB])
    ysnap = C.u8_2d(ctx[C.K_CTA_YSNAP], nw, ctx[C.K_CTA_YB])
    pcs = C.i64_2d(ctx[C.K_CTA_PCS], nw, LANES)
    exited = C.b1_2d(ctx[C.K_CTA_EXITED], nw, LANES)
    return 1 if yield_changed(w, arenas, pcs, exited, mbw, ysnap) else 0


# compiled by families.py ("ctabar": cfunc(BAR_SIG, cache=True)), for kernels with a counted or register-numbered
# barrier: ccall.SIG, as the families
BAR_SIG = C.SIG


def bar_c(em, prow, pimm, parena, n, pscratch):
    """``bar_operands`` for the BAR row at ``prow`` in the CTA loop (``loop.run``): 0, the number and count are in
    state S_BAR_ID, S_BAR_CNT; 1, a rule is broken (the row goes back, the reference raises)."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    xr = C.u64_1d(pscratch + 8 * 6 * LANES, LANES)
    ok = bar_operands(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, C.i64_1d(ctx[C.K_STATE], T.NSTATE),
                      xr, a8, a16, a32, a64)
    return 0 if ok else 1
