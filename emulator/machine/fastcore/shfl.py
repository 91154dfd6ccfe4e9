"""The shfl.sync family of the fast engine (table: SHFL), as ``ops.warpops`` defines it; compiled apart from the
loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``)."""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .ccall import NSCRATCH
from .regs import I0, I1, I32, _g32, _gather, _is32, _s32, _scatter
from ...numerics.jitcache import INNER

U0 = np.uint64(0)
U1 = np.uint64(1)
LANES = 32


@njit(cache=True, inline="always")
def _src32(e, out, a8, a16, a32, a64, im):
    """A source read as .b32: a plain copy from a 32-bit register or an immediate, else ``_gather``."""
    if _is32(e):
        _g32(e, out, a32, im)
    else:
        _gather(e, I32, I0, out, a8, a16, a32, a64, im)


@njit(cache=True, _nrt=False, **INNER)
def _shfl(row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq):
    """shfl.sync as ``ops.warpops`` defines it; False (nothing written) when a lane breaks a rule."""
    _src32(row[T.V0], xr, a8, a16, a32, a64, imrow)              # membermask, per lane
    union = U0                                                  # the lanes the executing lanes name
    for lane in range(LANES):
        if (em >> lane) & 1:
            union |= xr[lane]
            if (xr[lane] >> np.uint64(lane)) & U1 == U0:      # an executing lane outside its own mask
                return False
    for lane in range(LANES):
        if (union >> np.uint64(lane)) & U1 != U0 and (em >> lane) & 1 == 0:
            return False
    _src32(row[T.A], xa, a8, a16, a32, a64, imrow)
    _src32(row[T.B], xb, a8, a16, a32, a64, imrow)
    _src32(row[T.C], xc, a8, a16, a32, a64, imrow)
    mode = row[T.X]
    m5 = np.uint64(0x1F)
    for lane in range(LANES):
        ul = np.uint64(lane)
        bval = xb[lane] & m5
        cv = xc[lane]
        cval = cv & m5
        seg = (cv >> np.uint64(8)) & m5
        max_lane = np.int64((ul & seg) | (cval & ~seg & m5))
        if mode == 0:
            j = lane - np.int64(bval)
            ok = j >= max_lane
        elif mode == 1:
            j = lane + np.int64(bval)
            ok = j <= max_lane
        elif mode == 2:
            j = np.int64(ul ^ bval)
            ok = j <= max_lane
        else:
            j = np.int64((ul & seg) | (bval & ~seg & m5))
            ok = j <= max_lane
        if not ok:
            j = lane
        if (em >> lane) & 1 and ok and not (em >> j) & 1:
            return False
        xq[lane] = U1 if ok else U0
        xr[lane] = xa[j]
    ed = row[T.D]
    if ed >= 0 and ed >> T.CLASS_SHIFT == T.R32:
        _s32(ed, xr, em, a32)
    else:
        _scatter(ed, xr, em, I32, I0, a8, a16, a32, a64)
    _scatter(row[T.Z], xq, em, I1, I0, a8, a16, a32, a64)
    return True


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when a lane breaks a rule (nothing written)."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, NSCRATCH, LANES)
    ok = _shfl(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, a8, C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32),
               C.reinterpret(a8, np.uint64), s[3], s[4], s[5], s[6], s[7])
    return 0 if ok else 1
