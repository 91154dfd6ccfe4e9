"""The shfl.sync family of the fast engine (table: SHFL), as ``ops.warpops`` defines it; compiled apart from the
loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``)."""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .ccall import NSCRATCH
from .raw import opaque
from .regs import I0, I1, I32, _copy_dst, _copy_src, _gather, _scatter
from ...numerics.jitcache import INNER, lean

LEAN = lean()       # the loops' pipeline (jitcache.lean: no SSA; tests/test_lean_pipeline.py checks the types)

U0 = np.uint64(0)
U1 = np.uint64(1)
LANES = 32


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _shfl(row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq):
    """shfl.sync as ``ops.warpops`` defines it; False (nothing written) when a lane breaks a rule."""
    # counts LLVM does not know (raw.opaque): one copy of the reads and of the writes, not one per operand
    # membermask (per lane) into xr, A, B, C into xa, xb, xc; in one loop: one copy of the reads (regs._copy_src)
    for k in range(opaque(np.int64(4))):
        ek, out = row[T.V0] if k == 0 else row[T.A + k - 1], xr if k == 0 else xa if k == 1 else xb if k == 2 else xc
        if not _copy_src(ek, I32, out, a8, a32, a64, imrow):
            _gather(ek, I32, I0, out, a8, a16, a32, a64, imrow)
    union = U0                                                  # the lanes the executing lanes name
    for lane in range(LANES):
        if (em >> lane) & 1:
            union |= xr[lane]
            if (xr[lane] >> np.uint64(lane)) & U1 == U0:      # an executing lane outside its own mask
                return False
    for lane in range(LANES):
        if (union >> np.uint64(lane)) & U1 != U0 and (em >> lane) & 1 == 0:
            return False
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
    for k in range(opaque(np.int64(2))):                        # D, and the predicate into Z (one copy of the writes)
        ek, res, tk = (row[T.D], xr, I32) if k == 0 else (row[T.Z], xq, I1)
        if not _copy_dst(ek, res, em, tk, a8, a32, a64):
            _scatter(ek, res, em, tk, I0, a8, a16, a32, a64)
    return True


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when a lane breaks a rule (nothing written)."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, NSCRATCH, LANES)
    ok = _shfl(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, a8, C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32),
               C.reinterpret(a8, np.uint64), s[3], s[4], s[5], s[6], s[7])
    return 0 if ok else 1
