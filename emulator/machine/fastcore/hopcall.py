"""The HOPX rows (``asyncx.py``), operand reads and register writes included, as one C-callable function compiled
apart from the loops (as ``xcall.py`` does for XROW and ATOM): the loops call ``hop_c`` through its address
(``asyncx.call_hop``). ``families.py`` compiles it (or loads it from numba's cache) as it does the instruction
families ("hopper"): only for kernels with such a row, under the compile lock, and with ``engine="auto"`` never
while another process compiles (the rows go to the reference executors until then).
"""
import numpy as np
from numba import carray, njit, types

from . import table as T
from .asyncx import (ADDR, COUNT_MAX, EXPECTED, K_MB_INIT, K_MB_INVAL, PENDING, TX, _mb_set, K_ELECT, K_WARPSYNC, K_TMCOPY, global_find, K_FENCE_ASYNC, K_MAPA, K_MB_ARRIVE, K_MB_TX, K_MB_WAIT, K_TMREPLACE, LANES,
                     MB_COUNT, MB_DROP, MB_EXPECT, OFFSET_MASK, PHASE, SHIFT, U0, U1, WINDOW_END, _mb, _replace,
                     mb_arrive, mb_complete_tx, mb_expect_tx, mb_find, mb_restore, mb_save)
from .clusterx import CL_ALIVE, CL_CHANGED, CL_N, CL_RANK, CL_ROW, CL_SIZE, CL_TAB
from .loop import _gather, _scatter
from .ccall import u8_1d
from .raw import _peek64, _poke64
from .scalarx import _members_ok

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


@njit(cache=True, _nrt=False)
def _addresses(row, imrow, out, a8, a16, a32, a64, field=T.A, slot=T.IMM_OFFSET):
    """The lanes' addresses of an [A + offset] operand (base in row ``field``, offset in immediate ``slot``) as
    ops.common.address computes them (a 32-bit register wraps at 2^32, a 64-bit one at 2^64), as int64 bits."""
    off = imrow[slot]
    e = row[field]
    if e == -1:
        for lane in range(LANES):
            out[lane] = off
        return
    _gather(e, 64, 0, out, a8, a16, a32, a64, imrow)
    wrap32 = e >> T.CLASS_SHIFT == T.R32
    for lane in range(LANES):
        out[lane] = (out[lane] + off) & np.uint64(0xFFFFFFFF) if wrap32 else out[lane] + off


# the cluster's table (state S_CLUSTER; machine.cluster fills it before each run of a CTA): row 0 holds the running
# CTA's rank and the cluster's size, row 1 + r the mbarrier table of CTA rank r (raw pointer, rows in use), whether
# its shared memory still exists (1) and the changes the loop made to its barriers
# (its layout: clusterx.CL_*, with the columns of the cluster barrier and the multicast loads)


@njit(cache=True, _nrt=False)
def _cluster_rank(ct, a):
    """The rank of the other CTA a shared::cluster address names (memory.dsmem: bits 24..31 hold the rank minus
    the own rank), or -1 when it is outside the window or the cluster, or that CTA's shared memory is gone (the
    executor raises)."""
    if a >= 1 << 32:
        return np.int64(-1)
    own = np.int64(_peek64(ct + 8 * CL_RANK))
    size = np.int64(_peek64(ct + 8 * CL_SIZE))
    r = (own + (a >> SHIFT)) & 0xFF
    if r >= size or r == own or np.int64(_peek64(ct + 8 * (CL_ROW * (1 + r) + CL_ALIVE))) == 0:
        return np.int64(-1)
    return r


@njit(cache=True, _nrt=False)
def _cluster_tables(ct, save):
    """mb_save (or mb_restore) on the mbarrier tables of the cluster's other CTAs."""
    own = np.int64(_peek64(ct + 8 * CL_RANK))
    for r in range(np.int64(_peek64(ct + 8 * CL_SIZE))):
        if r != own:
            t = np.int64(_peek64(ct + 8 * (CL_ROW * (1 + r) + CL_TAB)))
            tn = np.int64(_peek64(ct + 8 * (CL_ROW * (1 + r) + CL_N)))
            if t != 0:
                if save:
                    mb_save(t, tn)
                else:
                    mb_restore(t, tn)


@njit(cache=True, _nrt=False)
def _mbarrier(kind, row, imrow, em, state, a8, a16, a32, a64, xa, xb, xr):
    """K_MB_ARRIVE, K_MB_TX, K_MB_WAIT on barriers of this CTA (shared offsets below 2^24), and arrivals and tx
    counts on barriers of the cluster's other CTAs (shared::cluster addresses, state S_CLUSTER): lane after lane in
    ascending order, as ops.mbarrier applies them; 1 when a lane breaks a rule or a wait has not completed
    (every row as it was: the executor raises, or stalls the lanes)."""
    tab = state[T.S_MBAR]
    n = state[T.S_MBAR_N]
    if tab == 0:
        return 1
    _addresses(row, imrow, xa, a8, a16, a32, a64)
    y = row[T.Y]
    if kind == K_MB_INIT or kind == K_MB_INVAL:
        return _init_inval(kind, row, imrow, em, state, tab, n, a16, a8, a32, a64, xa, xb)
    if kind == K_MB_WAIT:                         # Y: 1 = .parity; B: the parity or the state; D: waitComplete;
        _gather(row[T.B], 32 if y == 1 else 64, 0, xb, a8, a16, a32, a64, imrow)       # Z: 1 = try_wait
        stall = np.int64(0)
        for lane in range(LANES):
            if (em >> lane) & 1:
                a = np.int64(xa[lane])
                if a < 0 or a >= 1 << SHIFT:
                    return 1
                i = mb_find(tab, n, a)
                if i < 0:
                    return 1
                ph = _mb(tab, i, PHASE)
                if y == 1:
                    done = (ph & 1) != np.int64(xb[lane] & U1)
                else:
                    done = ph != np.int64((xb[lane] >> np.uint64(32)) & np.uint64(0xFFFFFFFF))
                if not done:
                    stall |= np.int64(1) << lane
                xr[lane] = U1
        if stall != 0:
            # a try_wait in the CTA loop parks the lanes whose phase has not completed (ops.mbarrier: the predicate
            # of the others is written); the loop records the stall (ctaloop.py). Else the executor stalls or yields
            if row[T.Z] != 1 or state[T.S_MBW] == 0:
                return 1
            _scatter(row[T.D], xr, em & ~stall, 1, 0, a8, a16, a32, a64)
            state[T.S_MBSTALL] = stall
            return 2
        _scatter(row[T.D], xr, em, 1, 0, a8, a16, a32, a64)
        return 0
    if row[T.B] != -1:
        _gather(row[T.B], 32, 0, xb, a8, a16, a32, a64, imrow)
    ct = state[T.S_CLUSTER]
    remote = False
    for lane in range(LANES):
        if (em >> lane) & 1 and np.int64(xa[lane]) >= 1 << SHIFT:
            remote = True
    if remote and ct == 0:
        return 1
    mb_save(tab, n)
    if remote:
        _cluster_tables(ct, True)
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane])
            t, tn, r = tab, n, np.int64(-1)
            if a >= 1 << SHIFT:                   # a barrier of another CTA of the cluster (memory.dsmem)
                r = _cluster_rank(ct, a)
                if r >= 0:
                    t, tn = _peek64(ct + 8 * (CL_ROW * (1 + r) + CL_TAB)), _peek64(ct + 8 * (CL_ROW * (1 + r) + CL_N))
                    t, tn = np.int64(t), np.int64(tn)
                    a = a & OFFSET_MASK
            i = mb_find(t, tn, a) if 0 <= a < 1 << SHIFT and (r >= 0 or t == tab) else -1
            ok = i >= 0
            if ok and r >= 0:                     # (Python adds the changes to that CTA's MBarriers.version)
                p = ct + 8 * (CL_ROW * (1 + r) + CL_CHANGED)
                _poke64(p, np.uint64(np.int64(_peek64(p)) + 1))
            if ok and kind == K_MB_TX:            # Y: 0 = expect_tx, 1 = complete_tx
                nb = np.int64(xb[lane])
                ok = mb_complete_tx(t, i, nb) if y == 1 else mb_expect_tx(t, i, nb)
            elif ok:
                cnt = np.int64(1)
                if y & MB_EXPECT:
                    ok = mb_expect_tx(t, i, np.int64(xb[lane]))
                elif y & MB_COUNT:
                    cnt = np.int64(xb[lane])
                    ok = 1 <= cnt <= COUNT_MAX
                if ok:
                    st = mb_arrive(t, i, cnt, y & MB_DROP != 0)
                    ok = st != -1
                    xr[lane] = np.uint64(st)
            if not ok:
                mb_restore(tab, n)
                if remote:
                    _cluster_tables(ct, False)
                return 1
    state[T.S_MBAR_CHANGED] += 1
    if kind == K_MB_ARRIVE and row[T.D] != -1:
        _scatter(row[T.D], xr, em, 64, 0, a8, a16, a32, a64)
    return 0


@njit(cache=True, _nrt=False)
def _init_inval(kind, row, imrow, em, state, tab, n, a16, a8, a32, a64, xa, xb):
    """mbarrier.init [A], B / mbarrier.inval [A] in the CTA loop (state S_MBINIT), lane after lane as
    MBarriers.init/inval: a new barrier takes the first free row of the table, or the next one; 1 (nothing changed)
    when a lane's address is another CTA's, misaligned, its count out of range, or the table is full (Python grows
    it). The CTA loop gives MBarriers its objects back (engine.FastCTA._mbar_objects)."""
    if state[T.S_MBINIT] == 0:
        return 1
    cap = state[T.S_MBAR_CAP]
    init = kind == K_MB_INIT
    if init:
        _gather(row[T.B], 32, 0, xb, a8, a16, a32, a64, imrow)
    new = 0
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane])
            if a < 0 or a >= 1 << SHIFT:
                return 1
            if init:
                c = np.int64(xb[lane])
                if a % 8 != 0 or c < 1 or c > COUNT_MAX:
                    return 1
                if mb_find(tab, n, a) < 0:
                    dup = False
                    for k in range(lane):
                        if (em >> k) & 1 and np.int64(xa[k]) == a:
                            dup = True
                    if not dup:
                        new += 1
    if init and new > 0:
        free = cap - n
        for i in range(n):
            if _mb(tab, i, ADDR) < 0:
                free += 1
        if free < new:
            return 1
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane])
            i = mb_find(tab, n, a)
            if not init:
                if i >= 0:                          # (an address without a barrier: nothing to do)
                    _mb_set(tab, i, ADDR, -1)
                continue
            if i < 0:
                for j in range(n):
                    if _mb(tab, j, ADDR) < 0:
                        i = j
                        break
                if i < 0:
                    i = n
                    n += 1
            c = np.int64(xb[lane])
            _mb_set(tab, i, ADDR, a)
            _mb_set(tab, i, EXPECTED, c)
            _mb_set(tab, i, PENDING, c)
            _mb_set(tab, i, PHASE, 0)
            _mb_set(tab, i, TX, 0)
    state[T.S_MBAR_N] = n
    state[T.S_MBAR_REBUILT] = 1
    state[T.S_MBAR_CHANGED] += 1
    return 0


@njit(cache=True, _nrt=False)
def hop_rows(row, imrow, em, state, a8, a16, a32, a64, scratch):
    """A HOPX row on the lanes in ``em``; 0, or 1 when a lane breaks a rule (nothing written)."""
    xa, xb, xc, xd, xr, xq = scratch[3], scratch[4], scratch[5], scratch[10], scratch[6], scratch[7]
    kind = row[T.X]
    if kind == K_ELECT:                           # A: membermask; D: the leader's lane number; V0+7: the predicate
        _gather(row[T.A], 32, 0, xd, a8, a16, a32, a64, imrow)
        if not _members_ok(em, xd):
            return 1
        leader = 0
        while (em >> leader) & 1 == 0:
            leader += 1
        for lane in range(LANES):
            xr[lane] = np.uint64(leader)
            xq[lane] = U1 if lane == leader else U0
        _scatter(row[T.D], xr, em, 32, 0, a8, a16, a32, a64)
        if row[T.V0 + 7] != -1:
            _scatter(row[T.V0 + 7], xq, em, 1, 0, a8, a16, a32, a64)
        return 0
    if kind == K_WARPSYNC:                        # A: membermask. Lanes it names that do not exist (the reference
        _gather(row[T.A], 32, 0, xd, a8, a16, a32, a64, imrow)      # drops them) do not execute: handed back
        return 0 if _members_ok(em, xd) else 1
    if kind == K_MAPA:                            # A: address (W bits), B: rank; C, V0: %cluster_ctarank, _nctarank
        w = row[T.W]
        _gather(row[T.A], w, 0, xa, a8, a16, a32, a64, imrow)
        _gather(row[T.B], 32, 0, xb, a8, a16, a32, a64, imrow)
        _gather(row[T.C], 32, 0, xc, a8, a16, a32, a64, imrow)
        _gather(row[T.V0], 32, 0, xd, a8, a16, a32, a64, imrow)
        size = np.uint64(state[T.S_SMEM_SIZE])
        for lane in range(LANES):
            if (em >> lane) & 1:
                x = xa[lane]
                if xb[lane] >= xd[lane] or x >= np.uint64(WINDOW_END):
                    return 1
                if row[T.Y] == 1 and not (x < size or x >= np.uint64(1 << SHIFT)):
                    return 1                       # generic: neither this CTA's window nor the cluster's
                xr[lane] = (((xb[lane] - xc[lane]) & np.uint64(0xFF)) << np.uint64(SHIFT)) | \
                    (x & np.uint64(OFFSET_MASK))
        _scatter(row[T.D], xr, em, w, 0, a8, a16, a32, a64)
        return 0
    if kind >= K_MB_ARRIVE:
        return _mbarrier(kind, row, imrow, em, state, a8, a16, a32, a64, xa, xb, xr)
    if kind == K_TMREPLACE:                       # A: address base (offset in immediate 3), B: value; Y field, Z ordinal
        _addresses(row, imrow, xa, a8, a16, a32, a64)
        _gather(row[T.B], row[T.W], 0, xb, a8, a16, a32, a64, imrow)
        size = state[T.S_SMEM_SIZE]
        for lane in range(LANES):
            if (em >> lane) & 1:
                a = np.int64(xa[lane])
                if a < 0 or a + 128 > size:
                    return 1
        smem = state[T.S_SMEM_PTR]
        for lane in range(LANES):
            if (em >> lane) & 1:
                _replace(smem, np.int64(xa[lane]), row[T.Y], row[T.Z], xb[lane])
        return 0
    if kind == K_TMCOPY:                          # A: global destination (offset: immediate 3), C: shared source
        _addresses(row, imrow, xa, a8, a16, a32, a64)                            # (offset: immediate 2)
        _addresses(row, imrow, xb, a8, a16, a32, a64, T.C, 2)
        size = state[T.S_SMEM_SIZE]
        for lane in range(LANES):
            if (em >> lane) & 1:
                src = np.int64(xb[lane])
                if src < 0 or src + 128 > size:
                    return 1
                dst = global_find(state[T.S_GTAB], state[T.S_GTAB_N], np.int64(xa[lane]), 128)
                if dst == 0:
                    return 1
                xc[lane] = np.uint64(dst)
        smem = state[T.S_SMEM_PTR]
        for lane in range(LANES):
            if (em >> lane) & 1:
                for b in range(0, 128, 8):
                    _poke64(np.int64(xc[lane]) + b, _peek64(smem + np.int64(xb[lane]) + b))
        return 0
    if kind == K_FENCE_ASYNC:                     # AsyncUnit.fence_proxy_async on the marks memx.py keeps
        p = state[T.S_DIRTY]
        if p == 0:
            return 1                               # the marks are not the loop's to clear here (engine.FastWarp.run)
        if state[T.S_DIRTY_N] != 0:
            marks = u8_1d(p, state[T.S_SMEM_SIZE])      # (one contiguous clear)
            for b in range(marks.size):
                marks[b] = 0
            state[T.S_DIRTY_N] = 0
        return 0
    return 0


# compiled by families.py (cfunc with SIG, cache=True), when a kernel first has such a row, under the compile lock
SIG = types.int64(types.int64, _PI64, _PI64, _P64, _P8, types.int64, _P64)


def hop_c(em, pstate, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return hop_rows(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, carray(pstate, T.NSTATE), a8,
                    a8.view(np.uint16), a8.view(np.uint32), a8.view(np.uint64), carray(pscratch, (13, 32)))

