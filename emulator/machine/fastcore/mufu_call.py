"""The MUFU rows' arithmetic (``fmath.mufu_row``) as one C-callable function, compiled apart from the loops.

The loops call it through its address (``fmath.call_mufu``; the translation puts the address in the last slot
of its table-pointer array), so numba does not link the MUFU code into ``loop.run`` and ``loop.run_cta`` and
optimise it again with each: their compile time stays what it was. Importing this module compiles the function
(a few seconds, once: numba caches it); the translation imports it only for kernels with a MUFU row.
"""
from numba import carray, cfunc, types

from .fmath import TABLES, mufu_row

_P64, _PI64 = types.CPointer(types.uint64), types.CPointer(types.int64)
SIG = types.void(types.int64, types.int64, types.int64, types.int64, types.int64, _P64, _P64, _P64, _P64, _PI64,
                 _PI64)


@cfunc(SIG, cache=True, nopython=True)
def mufu_c(opc, form, ftz, neg, em, pxa, pxb, pxc, pxr, pmptr, pmsz):
    mufu_row(opc, form, ftz != 0, neg, em, carray(pxa, 32), carray(pxb, 32), carray(pxc, 32), carray(pxr, 32),
             carray(pmptr, len(TABLES)), carray(pmsz, len(TABLES)))


ADDRESS = mufu_c.address
