"""The float rows (``table.FLOAT_ROWS``: MUFU, the divisions, min/max, neg/abs, the .ftz arithmetic, the float
conversions; ``fmath.float_rows``) as one family of the fast engine: operand reads, the arithmetic and the
register writes in one C-callable function (``entry``, ``ccall.SIG``; ``families.py``), compiled apart from the
loops. The measured MUFU tables come through the translation's pointer array (ctx ``K_MPTR``/``K_MSZ``).
"""
import numpy as np

from . import table as T
from . import ccall as C
from .fmath import TABLES, float_rows
from .regs import I0, I32, _g32, _gather, _is32, _s32, _scatter

LANES = 32
NTAB = len(TABLES)
# ``entry`` is compiled by families.py with cfunc(ccall.SIG, cache=True): numerics/jitcache.guard finds the modules
# whose cached functions it drops when the sources change by that text, so it must stay in this file


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG)."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    imrow = C.u64_1d(pimm, T.NIMM)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    xa, xb, xc, xr = s[3], s[4], s[5], s[6]
    opc, w, sgn = row[T.OP], row[T.W], row[T.SGN]
    ea, eb, ec, ed = row[T.A], row[T.B], row[T.C], row[T.D]
    # 32-bit registers and immediates: plain copies (_g32), as _gather reads them at 32 bits
    if w == 32 and _is32(ea) and (eb == -1 or _is32(eb)) and (ec == -1 or _is32(ec)):
        _g32(ea, xa, a32, imrow)
        if eb != -1:
            _g32(eb, xb, a32, imrow)
        if ec != -1:
            _g32(ec, xc, a32, imrow)
    else:
        _gather(ea, w, sgn, xa, a8, a16, a32, a64, imrow)
        if eb != -1:
            _gather(eb, w, sgn, xb, a8, a16, a32, a64, imrow)
        if ec != -1:
            _gather(ec, w, sgn, xc, a8, a16, a32, a64, imrow)
    float_rows(opc, row[T.X], row[T.Y], row[T.Z], em, xa, xb, xc, xr, C.i64_1d(ctx[C.K_MPTR], NTAB),
               C.i64_1d(ctx[C.K_MSZ], NTAB))
    tw = row[T.V0] if opc == T.FCVT else I32
    if tw == 32 and ed >= 0 and ed >> T.CLASS_SHIFT == T.R32:
        _s32(ed, xr, em, a32)                       # (_scatter at 32 bits into a 32-bit register: the low bits)
    else:
        _scatter(ed, xr, em, tw, I0, a8, a16, a32, a64)
    return 0
