"""The float rows (``table.FLOAT_ROWS``: MUFU, the divisions, min/max, neg/abs, the .ftz arithmetic, the float
conversions; ``fmath.float_rows``) as one family of the fast engine: operand reads, the arithmetic and the
register writes in one C-callable function (``entry``, ``ccall.SIG``; ``families.py``), compiled apart from the
loops. The measured MUFU tables come through the translation's pointer array (ctx ``K_MPTR``/``K_MSZ``).
"""
import numpy as np

from . import table as T
from . import ccall as C
from .fmath import TABLES, float_rows
from .regs import I0, I32, _gather, _scatter

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
    _gather(row[T.A], w, sgn, xa, a8, a16, a32, a64, imrow)
    if row[T.B] != -1:
        _gather(row[T.B], w, sgn, xb, a8, a16, a32, a64, imrow)
    if row[T.C] != -1:
        _gather(row[T.C], w, sgn, xc, a8, a16, a32, a64, imrow)
    float_rows(opc, row[T.X], row[T.Y], row[T.Z], em, xa, xb, xc, xr, C.i64_1d(ctx[C.K_MPTR], NTAB),
               C.i64_1d(ctx[C.K_MSZ], NTAB))
    _scatter(row[T.D], xr, em, row[T.V0] if opc == T.FCVT else I32, I0, a8, a16, a32, a64)
    return 0
