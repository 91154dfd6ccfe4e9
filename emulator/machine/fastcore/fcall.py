"""The float rows' arithmetic (``fmath.float_rows``: MUFU, the other float rows) as one C-callable function,
compiled apart from the loops.

The loops call it through its address (``fmath.call_rows``; the translation puts the address in the last slot
of its table-pointer array), so numba does not link this code into ``loop.run`` and ``loop.run_cta`` and
optimise it again with each: their compile time stays what it was. Importing this module compiles the function
(a few seconds, once: numba caches it; the background warm-up of ``warmup.py`` does it too); the translation
imports it only for kernels with such a row.
"""
from numba import carray, cfunc, types

from .fmath import TABLES, float_rows

_P64, _PI64 = types.CPointer(types.uint64), types.CPointer(types.int64)
SIG = types.void(types.int64, types.int64, types.int64, types.int64, types.int64, _P64, _P64, _P64, _P64, _PI64,
                 _PI64)


@cfunc(SIG, cache=True, nopython=True)
def rows_c(opc, x, y, z, em, pxa, pxb, pxc, pxr, pmptr, pmsz):
    float_rows(opc, x, y, z, em, carray(pxa, 32), carray(pxb, 32), carray(pxc, 32), carray(pxr, 32),
               carray(pmptr, len(TABLES)), carray(pmsz, len(TABLES)))


ADDRESS = rows_c.address
