"""The XROW rows (``scalarx.x_rows``) and the atomic updates (``atomics.atom_rows``), operand reads and register
writes included, as C-callable functions compiled apart from the loops (as ``fcall.py`` does for the float
rows): the loops make one call through their addresses (``scalarx.call_x``, ``atomics.call_atom``; the
translation puts them in its table-pointer array), so these rows add next to nothing to the loops' compile time.
``families.py`` compiles them (or loads them from numba's cache) as it does the instruction families ("xrow",
"atom"): only for kernels with such a row, under the compile lock, and with ``engine="auto"`` never while another
process compiles (the rows go to the reference executors until then).
"""
import numpy as np
from numba import carray, njit, types

from . import table as T
from .atomics import atom_rows
from . import ccall as C
from .loop import _gather, _scatter
from .regs import _copy_dst, _copy_src
from .scalarx import K_BFI, K_LOP3, K_MMAX, K_PRMT, K_SHF, bit_rows, call_x, x_rows

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


@njit(cache=True, _nrt=False)
def _plain(row, imrow, a8, a32, a64, scratch):
    """The sources A, B, C, V0 (at widths W, V0 + 1, + 2, + 3) into scratch rows 3, 4, 5, 10 where each is none or
    a plain copy (``regs._copy_src``: what ``_gather`` reads there), in one loop; False as soon as one is not."""
    for k in range(4):
        e = row[T.A + k] if k < 3 else row[T.V0]
        tw = row[T.W] if k == 0 else row[T.V0 + k]
        if e != -1 and not _copy_src(e, tw, scratch[3 + k if k < 3 else 10], a8, a32, a64, imrow):
            return False
    return True


@njit(cache=True, _nrt=False)
def _xrow(row, imrow, em, a8, a16, a32, a64, scratch):
    """An XROW on the lanes in ``em``: gather its sources as the loop does, compute (scalarx.x_rows), write the
    destinations; 1 (nothing written) when a lane breaks a rule."""
    if row[T.X] == K_MMAX:                      # an mma tile: mmatile.mma_c (compiled apart, with numba's runtime)
        return call_x(row[T.V0 + 2], em, row.ctypes.data, imrow.ctypes.data, a8.ctypes.data, a8.shape[0],
                      scratch.ctypes.data)
    xa, xb, xc, xd, xr, xq = scratch[3], scratch[4], scratch[5], scratch[10], scratch[6], scratch[7]
    w, sgn = row[T.W], row[T.SGN]
    v = T.V0
    sb = row[v + 4]
    kind = row[T.X]
    if (kind == K_LOP3 or kind == K_PRMT or kind == K_SHF or kind == K_BFI) and row[v + 7] == -1 and \
            _plain(row, imrow, a8, a32, a64, scratch):
        # the common bit rows with plain operands (regs._copy_src): read, one loop of the kind, written
        bit_rows(kind, row[T.Y], row[T.Z], w, xa, xb, xc, xd, xr)
        if not _copy_dst(row[T.D], xr, em, row[v + 5], a8, a32, a64):
            _scatter(row[T.D], xr, em, row[v + 5], row[v + 6], a8, a16, a32, a64)
        return 0
    if row[T.A] != -1:
        _gather(row[T.A], w, sgn, xa, a8, a16, a32, a64, imrow)
    if row[T.B] != -1:
        _gather(row[T.B], row[v + 1], sb & 1, xb, a8, a16, a32, a64, imrow)
    if row[T.C] != -1:
        _gather(row[T.C], row[v + 2], (sb >> 1) & 1, xc, a8, a16, a32, a64, imrow)
    if row[v] != -1:
        _gather(row[v], row[v + 3], (sb >> 2) & 1, xd, a8, a16, a32, a64, imrow)
    if x_rows(row[T.X], row[T.Y], row[T.Z], w, sgn, em, xa, xb, xc, xd, xr, xq) != 0:
        return 1
    _scatter(row[T.D], xr, em, row[v + 5], row[v + 6], a8, a16, a32, a64)
    if row[v + 7] != -1:
        _scatter(row[v + 7], xq, em, 32, 0, a8, a16, a32, a64)
    return 0


@njit(cache=True, _nrt=False)
def _atom(row, imrow, em, shared, a8, a16, a32, a64, scratch):
    """An ATOM row on the lanes in ``em``, whose raw addresses (loop._mem_plan) are in scratch[7]."""
    xb, xc, ptrs, xr = scratch[3], scratch[4], scratch[7], scratch[6]
    w = row[T.W]
    _gather(row[T.B], w, 0, xb, a8, a16, a32, a64, imrow)
    if row[T.C] != -1:
        _gather(row[T.C], w, 0, xc, a8, a16, a32, a64, imrow)
    atom_rows(row[T.V0], row[T.V0 + 1], row[T.Z], em, shared, ptrs, xb, xc, xr)
    _scatter(row[T.D], xr, em, w, 0, a8, a16, a32, a64)
    return 0


# x_c and atom_c are compiled by families.py (cfunc with X_SIG, ATOM_SIG; cache=True), when a kernel first has
# such a row, under the compile lock
X_SIG = types.int64(types.int64, _PI64, _P64, _P8, types.int64, _P64)
ATOM_SIG = types.int64(types.int64, types.int64, _PI64, _P64, _P8, types.int64, _P64)


@njit(cache=True, _nrt=False)
def _xrow_at(em, prow, pimm, parena, n, pscratch):
    """``_xrow`` over the arrays at these addresses (made without numba's runtime: no reference counts)."""
    a8 = C.u8_1d(parena, n)
    return _xrow(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, a8, C.reinterpret(a8, np.uint16),
                 C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64), C.u64_2d(pscratch, 13, 32))


def x_c(em, prow, pimm, parena, n, pscratch):
    return _xrow_at(em, carray(prow, 1).ctypes.data, carray(pimm, 1).ctypes.data, carray(parena, 1).ctypes.data, n,
                    carray(pscratch, 1).ctypes.data)



def atom_c(em, shared, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return _atom(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, shared, a8, a8.view(np.uint16),
                 a8.view(np.uint32), a8.view(np.uint64), carray(pscratch, (13, 32)))

