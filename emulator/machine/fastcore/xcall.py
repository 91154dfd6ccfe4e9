"""The XROW arithmetic (``scalarx.x_rows``) and the atomic updates (``atomics.atom_rows``) as C-callable
functions, compiled apart from the loops (as ``fcall.py`` does for the float rows): the loops call them through
their addresses (``scalarx.call_x``, ``atomics.call_atom``), which the translation puts in its table-pointer
array. Importing this module compiles them (or loads them from numba's cache); the translation imports it only
for kernels with such a row, and the background warm-up (``warmup.py``) compiles it beside the loops.
"""
from numba import carray, cfunc, types

from .atomics import atom_rows
from .scalarx import x_rows

_P64 = types.CPointer(types.uint64)
SIG = types.int64(*([types.int64] * 6), *([_P64] * 6))


@cfunc(SIG, cache=True, nopython=True)
def x_c(kind, y, z, w, sgn, em, pxa, pxb, pxc, pxd, pxr, pxq):
    return x_rows(kind, y, z, w, sgn, em, carray(pxa, 32), carray(pxb, 32), carray(pxc, 32), carray(pxd, 32),
                  carray(pxr, 32), carray(pxq, 32))


ADDRESS = x_c.address


@cfunc(types.int64(*([types.int64] * 5), *([_P64] * 4)), cache=True, nopython=True)
def atom_c(op, kind, ew, em, shared, pptrs, pxb, pxc, pxr):
    return atom_rows(op, kind, ew, em, shared, carray(pptrs, 32), carray(pxb, 32), carray(pxc, 32),
                     carray(pxr, 32))


ATOM_ADDRESS = atom_c.address
