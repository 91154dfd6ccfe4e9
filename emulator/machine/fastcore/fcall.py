"""The float rows (``fmath.py``) as six families of the fast engine, so that a kernel compiles only the code of
the kinds of float rows it has: "mufu" (``table.MUFU_ROWS``: MUFU's ex2 and rcp, the divisions, ``entry_mufu``),
"mufu_r" (``table.MUFU_R``: lg2, rsqrt, sqrt, ``entry_mufu_r``), "mufu_x" (``table.MUFU_X``: sin, cos, tanh,
``entry_mufu_x``), "fcvt" (``table.FCVT``: the float conversions, ``entry_cvt``), "float" (FMINMAX, FNEGABS:
min/max, neg/abs, ``entry``) and "farith" (FARITH, MUFU_DIVFMA: the .ftz arithmetic, a product or a division
contracted with an add, ``entry_farith``). Each is operand reads, the arithmetic and the register writes in one
C-callable function (``ccall.SIG``; ``families.py``), compiled apart from the loops. The measured MUFU tables come
through the translation's pointer array (ctx ``K_MPTR``/``K_MSZ``).
"""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .fmath import TABLES, cvt_rows, farith_rows, misc_rows, mufu_r_rows, mufu_rows, mufu_x_rows
from .regs import I0, I32, _copy_dst, _copy_src, _gather, _scatter

LANES = 32
NTAB = len(TABLES)
# the ``entry`` functions are compiled by families.py with cfunc(ccall.SIG, cache=True): numerics/jitcache.guard
# finds the modules whose cached functions it drops when the sources change by that text, so it must stay in this
# file


@njit(cache=True, inline="always")
def _operands(row, s, a8, a16, a32, a64, imrow):
    """The row's sources A, B, C (A and those it has) into scratch rows 3, 4, 5 at the row's width
    (``regs._copy_src``, else ``_gather``), in one loop: one copy of the reads for numba to compile."""
    w, sgn = row[T.W], row[T.SGN]
    for k in range(3):
        if k == 0 or row[T.A + k] != -1:
            if not _copy_src(row[T.A + k], w, s[3 + k], a8, a32, a64, imrow):
                _gather(row[T.A + k], w, sgn, s[3 + k], a8, a16, a32, a64, imrow)


@njit(cache=True, inline="always")
def _result(ed, xr, em, tw, a8, a16, a32, a64):
    """The result (scratch row 6) into D at ``tw`` bits (``regs._copy_dst``, else ``_scatter``)."""
    if not _copy_dst(ed, xr, em, tw, a8, a32, a64):
        _scatter(ed, xr, em, tw, I0, a8, a16, a32, a64)


def entry(em, prow, pimm, parena, n, pscratch):
    """The "float" family's C-callable body (ccall.SIG): FMINMAX, FNEGABS."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    misc_rows(row[T.OP], row[T.X], row[T.Y], row[T.Z], em, s[3], s[4], s[6])
    _result(row[T.D], s[6], em, I32, a8, a16, a32, a64)
    return 0


def entry_farith(em, prow, pimm, parena, n, pscratch):
    """The "farith" family's C-callable body (ccall.SIG): FARITH, MUFU_DIVFMA."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    farith_rows(row[T.OP], row[T.X], row[T.Y], row[T.Z], em, s[3], s[4], s[5], s[6], C.i64_1d(ctx[C.K_MPTR], NTAB))
    _result(row[T.D], s[6], em, I32, a8, a16, a32, a64)
    return 0


def entry_mufu(em, prow, pimm, parena, n, pscratch):
    """The "mufu" family's C-callable body (ccall.SIG): MUFU (ex2, rcp), MUFU_DIV."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    mufu_rows(row[T.OP], row[T.X], row[T.Y], em, s[3], s[4], s[6], C.i64_1d(ctx[C.K_MPTR], NTAB))
    _result(row[T.D], s[6], em, I32, a8, a16, a32, a64)
    return 0


def entry_mufu_r(em, prow, pimm, parena, n, pscratch):
    """The "mufu_r" family's C-callable body (ccall.SIG): MUFU_R (lg2, rsqrt, sqrt)."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    mufu_r_rows(row[T.X], row[T.Y], em, s[3], s[6], C.i64_1d(ctx[C.K_MPTR], NTAB))
    _result(row[T.D], s[6], em, I32, a8, a16, a32, a64)
    return 0


def entry_mufu_x(em, prow, pimm, parena, n, pscratch):
    """The "mufu_x" family's C-callable body (ccall.SIG): MUFU_X (sin, cos, tanh)."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    mufu_x_rows(row[T.X], em, s[3], s[6], C.i64_1d(ctx[C.K_MPTR], NTAB), C.i64_1d(ctx[C.K_MSZ], NTAB))
    _result(row[T.D], s[6], em, I32, a8, a16, a32, a64)
    return 0


def entry_cvt(em, prow, pimm, parena, n, pscratch):
    """The "fcvt" family's C-callable body (ccall.SIG): FCVT (the destination's width in the row's V0)."""
    a8 = C.u8_1d(parena, n)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    _operands(row, s, a8, a16, a32, a64, C.u64_1d(pimm, T.NIMM))
    cvt_rows(row[T.X], row[T.Y], row[T.Z], em, s[3], s[4], s[6])
    _result(row[T.D], s[6], em, row[T.V0], a8, a16, a32, a64)
    return 0
