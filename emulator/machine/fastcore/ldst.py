"""The warp loop's common loads and stores: a shared, global, generic or .param address in a 32- or 64-bit
register or a constant one, an access of a power-of-two size, no sanitizer.

``plan`` does what ``memplan._mem_plan`` does for these, with each test once over the 32 lanes instead of per lane
and space: the alignment as a mask, the bounds of shared memory or of the allocation the last global access hit
(``S_LASTALLOC``, else the one holding the first lane's address, which becomes the last hit; any lane outside
it and the row goes to ``memplan._mem_plan``, which looks each lane's up). ``load`` and
``store`` move each element between memory and a register of the element's width directly, with no per-lane
temporary; other widths (a narrower or wider register, sign extension) go through ``_gather``/``_scatter`` as
before. A store keeps ``memory.spaces.store_order``'s lane order. Anything that breaks a rule still goes back to
the reference executor, which raises the error it defines (``memplan._mem_plan`` finds it).
"""
import numpy as np
from numba import njit

from . import table as T
from .raw import _find, _peek, _peek32, _peek64, _poke, _poke32, store_lane
from .regs import _gather, _scatter
from ...numerics.jitcache import INNER, lean

LANES = 32
FULL = 0xFFFFFFFF
IDX = T.INDEX_MASK
W32 = np.int64(0xFFFFFFFF)
LEAN = lean()               # the loops' pipeline (jitcache.lean): integer code, each variable of one type


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def plan(row, imrow, em, a32, a64, inflight, gtab, state, addrs, ptrs):
    """Every lane's address (``addrs``) and the active lanes' host addresses (``ptrs``). Returns the lanes that
    access shared memory (all of ``em`` or none), -1 when an active lane breaks a rule shared memory's bounds or
    the alignment define (the reference raises), or -2 when the row is not one of this path's (``memplan._mem_plan``
    decides)."""
    space = row[T.X]
    base = row[T.A]
    if space != T.SHARED and space != T.GLOBAL and space != T.GENERIC and space != T.PARAM:
        return np.int64(-2)
    nbytes = row[T.Y] * row[T.Z]
    amask = nbytes - 1
    if nbytes & amask:
        return np.int64(-2)
    off = np.int64(imrow[T.IMM_OFFSET])
    c = base >> T.CLASS_SHIFT
    i = base & IDX
    if base == -1:                          # a constant address ([imm], a .param or .shared symbol)
        for lane in range(LANES):
            addrs[lane] = off
    elif c == T.R64:
        for lane in range(LANES):
            addrs[lane] = np.int64(a64[i + lane]) + off
    elif c == T.R32:
        for lane in range(LANES):
            addrs[lane] = (np.int64(a32[i + lane]) + off) & W32
    else:
        return np.int64(-2)
    bad = False
    if space == T.PARAM:                    # an offset into the lane's own .param bytes
        psize = state[T.S_PARAM_SIZE]
        pp = state[T.S_PARAM_PTR]
        for lane in range(LANES):
            a = addrs[lane]
            if (em >> lane) & 1:
                bad |= (a & amask) != 0 or a < 0 or a + nbytes > psize
            ptrs[lane] = np.uint64(pp + lane * psize + a)
        return np.int64(-1) if bad else np.int64(0)
    smem = state[T.S_SMEM_SIZE]
    if space == T.GENERIC:                  # all in the shared window, or all outside it
        ins = 0
        for lane in range(LANES):
            a = addrs[lane]
            ins |= np.int64(0 <= a and a < smem) << lane
        ins &= em
        if ins == em:
            space = T.SHARED
        elif ins == 0:
            space = T.GLOBAL
        else:
            return np.int64(-2)
    if space == T.SHARED:
        sp = state[T.S_SMEM_PTR]
        for lane in range(LANES):
            a = addrs[lane]
            if (em >> lane) & 1:
                bad |= (a & amask) != 0 or a < 0 or a + nbytes > smem
            ptrs[lane] = np.uint64(sp + a)
        if bad:
            return np.int64(-1)
        if state[T.S_INFLIGHT] > 0:         # bytes a cp.async or TMA copy has yet to write: the reference raises
            for lane in range(LANES):
                if (em >> lane) & 1:
                    a = addrs[lane]
                    for b in range(nbytes):
                        if inflight[a + b] != 0:
                            return np.int64(-1)
        return em
    k = state[T.S_LASTALLOC]
    for attempt in range(2):
        lo = gtab[k, 0]
        hi = lo + gtab[k, 1] - nbytes
        hb = gtab[k, 2] - lo
        bad = False
        for lane in range(LANES):
            a = addrs[lane]
            if (em >> lane) & 1:
                bad |= (a & amask) != 0 or a < lo or a > hi
            ptrs[lane] = np.uint64(hb + a)
        if not bad:
            return np.int64(0)
        if attempt == 1:
            break
        first = 0                           # not the last allocation hit: the one holding the first lane's address
        while not (em >> first) & 1:
            first += 1
        k = _find(gtab, addrs[first], nbytes)
        if k < 0:
            break
        state[T.S_LASTALLOC] = k
    return np.int64(-2)


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def load(row, em, a8, a16, a32, a64, ptrs, xr):
    """The loads of an LD row planned by ``plan`` or ``memplan._mem_plan`` (host addresses in ``ptrs``)."""
    n = row[T.Y]
    ew = row[T.Z]
    w = row[T.W]
    for i in range(n):
        d = row[T.V0 + i]
        c = d >> T.CLASS_SHIFT
        di = d & IDX
        o = i * ew
        if d >= 0 and c == T.R32 and ew == 4 and w == 32:
            for lane in range(LANES):
                if (em >> lane) & 1:
                    a32[di + lane] = np.uint32(_peek32(np.int64(ptrs[lane]) + o))
        elif d >= 0 and c == T.R64 and ew == 8 and w == 64:
            for lane in range(LANES):
                if (em >> lane) & 1:
                    a64[di + lane] = _peek64(np.int64(ptrs[lane]) + o)
        else:
            for lane in range(LANES):
                if (em >> lane) & 1:
                    xr[lane] = _peek(np.int64(ptrs[lane]) + o, ew)
            _scatter(d, xr, em, w, row[T.SGN], a8, a16, a32, a64)


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def store(row, imrow, em, a8, a16, a32, a64, ptrs, xr, log_addr, nlog, wide):
    """The stores of an ST row planned by ``plan`` or ``memplan._mem_plan``, lanes in ``spaces.store_order``'s order
    (the phases of 32 / max(1, bytes / 4) lanes in turn, within a phase the lowest lane last). A sanitised launch
    (``wide``) also logs the value each lane stores (``log_addr`` row ``nlog``, from column 32: 4 a lane)."""
    n = row[T.Y]
    ew = row[T.Z]
    w = row[T.W]
    per = 32 // max(1, (n * ew) // 4)           # a power of two (the sizes are; else store_lane's division)
    if per & (per - 1) or wide:
        for i in range(n):
            _gather(row[T.V0 + i], w, row[T.SGN], xr, a8, a16, a32, a64, imrow)
            for j in range(LANES):
                lane = store_lane(j, n * ew)
                if (em >> lane) & 1:
                    _poke(np.int64(ptrs[lane]) + i * ew, ew, xr[lane])
                    if wide:
                        log_addr[nlog, LANES + 4 * lane + i] = np.int64(xr[lane])
        return
    if ew == 4 and w == 32:
        direct = True
        for i in range(n):
            direct &= row[T.V0 + i] >= 0 and row[T.V0 + i] >> T.CLASS_SHIFT == T.R32
        if direct:              # 32-bit registers: lane by lane (aligned vectors overlap whole or not at all, so
            s0 = row[T.V0] & IDX                # each byte's last writer is the same lane)
            s1 = row[T.V0 + 1] & IDX
            s2 = row[T.V0 + 2] & IDX
            s3 = row[T.V0 + 3] & IDX
            for j in range(LANES):
                lane = (j & -per) + per - 1 - (j & (per - 1))
                if (em >> lane) & 1:
                    p = np.int64(ptrs[lane])
                    _poke32(p, np.uint64(a32[s0 + lane]))
                    if n > 1:
                        _poke32(p + 4, np.uint64(a32[s1 + lane]))
                        if n == 4:
                            _poke32(p + 8, np.uint64(a32[s2 + lane]))
                            _poke32(p + 12, np.uint64(a32[s3 + lane]))
            return
    for i in range(n):
        _gather(row[T.V0 + i], w, row[T.SGN], xr, a8, a16, a32, a64, imrow)
        for j in range(LANES):
            lane = (j & -per) + per - 1 - (j & (per - 1))
            if (em >> lane) & 1:
                _poke(np.int64(ptrs[lane]) + i * ew, ew, xr[lane])
