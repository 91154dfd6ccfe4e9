"""The HOPX rows (``asyncx.py``), operand reads and register writes included, as one C-callable function compiled
apart from the loops (as ``xcall.py`` does for XROW and ATOM): the loops call ``hop_c`` through its address
(``asyncx.call_hop``). Importing this module compiles it (or loads it from numba's cache); the translation imports
it only for kernels with such a row, and the background warm-up (``warmup.py``) compiles it beside the loops.
"""
import numpy as np
from numba import carray, cfunc, njit, types

from . import table as T
from .asyncx import (K_ELECT, K_FENCE_ASYNC, K_MAPA, K_TMREPLACE, LANES, OFFSET_MASK, SHIFT, U0, U1, WINDOW_END,
                     _replace)
from .loop import _gather, _scatter
from .raw import _poke8
from .scalarx import _members_ok

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


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
    if kind == K_TMREPLACE:                       # A: address base (offset in immediate 3), B: value; Y field, Z ordinal
        if row[T.A] == -1:
            for lane in range(LANES):
                xa[lane] = U0
        else:
            _gather(row[T.A], 64, 0, xa, a8, a16, a32, a64, imrow)
        _gather(row[T.B], row[T.W], 0, xb, a8, a16, a32, a64, imrow)
        off = imrow[T.IMM_OFFSET]
        size = state[T.S_SMEM_SIZE]
        for lane in range(LANES):
            if (em >> lane) & 1:
                a = np.int64(xa[lane] + off)
                if a < 0 or a + 128 > size:
                    return 1
        smem = state[T.S_SMEM_PTR]
        for lane in range(LANES):
            if (em >> lane) & 1:
                _replace(smem, np.int64(xa[lane] + off), row[T.Y], row[T.Z], xb[lane])
        return 0
    if kind == K_FENCE_ASYNC:                     # AsyncUnit.fence_proxy_async on the marks memx.py keeps
        p = state[T.S_DIRTY]
        if p == 0:
            return 1                               # the marks are not the loop's to clear here (engine.FastWarp.run)
        if state[T.S_DIRTY_N] != 0:
            for b in range(state[T.S_SMEM_SIZE]):
                _poke8(p + b, U0)
            state[T.S_DIRTY_N] = 0
        return 0
    return 0


@cfunc(types.int64(types.int64, _PI64, _PI64, _P64, _P8, types.int64, _P64), cache=True, nopython=True)
def hop_c(em, pstate, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return hop_rows(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, carray(pstate, T.NSTATE), a8,
                    a8.view(np.uint16), a8.view(np.uint32), a8.view(np.uint64), carray(pscratch, (13, 32)))


ADDRESS = hop_c.address
