"""The warp loop's pick of the lane group to run next, compiled apart ("pick" of ``families.APART``).

``loop.run`` decides the common case itself (``loop._one_group``: every lane that will come is live and at one PC,
as in a kernel whose warps never diverge, or after a barrier or a uniform branch). Only when the lanes of a warp
stand at several PCs, or some wait, does it call ``pick_c`` through its address (slot ``loop.PSLOT``), which runs
``machine.convergence.pick``'s rule without force. A kernel binds it the first time one of its warps needs it: the
loop stops with ``ST_PICK`` while the slot is 0, and the engine binds the function (compiled, or loaded from
numba's cache) and runs the loop on (``engine.bind_pick``); while it cannot be bound (``engine="auto"`` while
another process compiles) the engine picks the group with ``machine.convergence.pick`` and the reference
executor runs its instruction, with the same bits. So kernels whose warps never diverge never compile it.

``pick_c`` has the families' signature (``ccall.SIG``): ``em`` the live lanes, ``row`` the address of the
translation's code (``imm_row`` its number of rows), the arena and its length, the loop's scratch; the lanes that
will come and the warp's PCs it finds in the ctx (``ccall.K_COME``, ``K_PCS``), room for the distinct PCs in
scratch row 12. It returns the PC of the group, or -1.
"""
import numpy as np
from numba import njit

from . import ccall as C
from . import table as T
from .ccall import SIG, reinterpret  # noqa: F401 (SIG: families.APART's signature attribute)
from ...numerics.jitcache import INNER, lean

LANES = 32
LEAN = lean()               # the loops' pipeline (jitcache.lean; tests/test_lean_pipeline.py types these again)


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _joins(code, p, q):
    """machine.convergence.Convergence.joins: lanes at ``p`` wait for lanes at ``q``."""
    rp = code[p]
    rq = code[q]
    if rp[T.PDIN] < rq[T.PDIN] and rq[T.PDOUT] <= rp[T.PDOUT]:
        return True
    for d in range(4):
        lp = rp[T.LID + d]
        if lp < 0:
            return False
        for e in range(4):
            if rq[T.LID + e] == lp:
                return rp[T.LIN + d] < rq[T.LIN + e] and rq[T.LOUT + e] <= rp[T.LOUT + d]
    return False


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _pick(code, pc, live, come, qs, a32):
    """machine.convergence.pick without force (the Python scheduler lifts the waits): the PC of the lane group
    to run next, or -1. ``qs``: room for the distinct PCs of the lanes that will come."""
    nq = 0
    for lane in range(LANES):
        if (come >> lane) & 1:
            q = pc[lane]
            dup = False
            for i in range(nq):
                if qs[i] == q:
                    dup = True
                    break
            if not dup:
                qs[nq] = q
                nq += 1
    big = 1 << 62
    big_rank = np.int64(code.shape[0])
    bfree = big                 # the best group of each level: its key (free: lanes, then rank; else rank), PC
    bsync = big
    bjoin = big
    btail = big
    pfree = -1
    psync = -1
    pjoin = -1
    ptail = -1
    seen = 0
    for lane in range(LANES):
        if (live >> lane) & 1 and not (seen >> lane) & 1:
            p = pc[lane]
            row = code[p]
            n = 0                       # the group's lanes: the fewest run first among the free groups
            for ln in range(lane, LANES):
                if (live >> ln) & 1 and pc[ln] == p:
                    n += 1
                    seen |= 1 << ln
            r = row[T.RANK]
            key = n * big_rank + r
            join = False
            other = False
            for i in range(nq):
                q = qs[i]
                if q != p:
                    other = True
                    if _joins(code, p, q):
                        join = True
                        break
            wait = False
            if not join and other and row[T.SYNCPT] != 0:     # the lanes it names, elsewhere?
                kind = row[T.SYNCPT]
                names = np.int64(0xFFFFFFFF)
                if kind == 2:
                    names = row[T.MMASK]
                elif kind == 3:
                    names = np.int64(0)
                    idx = row[T.MMASK] & T.INDEX_MASK
                    for ln in range(LANES):
                        if (live >> ln) & 1 and pc[ln] == p:
                            names |= np.int64(a32[idx + ln])
                for k in range(LANES):
                    if (come >> k) & 1 and (names >> k) & 1 and pc[k] != p:
                        wait = True
                        break
            if join and row[T.TAIL] == 1:
                if r < btail:
                    btail = r
                    ptail = p
            elif join:
                if r < bjoin:
                    bjoin = r
                    pjoin = p
            elif wait:
                if r < bsync:
                    bsync = r
                    psync = p
            elif key < bfree:
                bfree = key
                pfree = p
    if pfree >= 0:
        return pfree
    if come & ~live:
        return -1               # the groups wait for lanes parked elsewhere
    if ptail >= 0:              # every lane of the warp is here and waits: lanes on the exit path leave,
        return ptail            # else a warp-synchronous group, else a join
    if psync >= 0:
        return psync
    return pjoin


def pick_c(live, pcode, ncode, parena, narena, pscratch):
    """The C-callable body (ccall.SIG): the PC of the lane group to run next, or -1 (the module's docstring)."""
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    return _pick(C.i64_2d(pcode, ncode, T.NFIELDS), C.i64_1d(ctx[C.K_PCS], LANES), live, ctx[C.K_COME],
                 reinterpret(s[12], np.int64), reinterpret(C.u8_1d(parena, narena), np.uint32))
