"""The BULKX rows (``bulkx.py``: TMA box loads and stores) as one C-callable function compiled apart from the loops
(as ``hopcall.py`` does for HOPX): the loops call ``bulk_c`` through its address (``asyncx.call_hop``, the same
signature; slot ``loop.BSLOT`` of the translation's pointer array). ``families.py`` compiles it (or loads it from
numba's cache) as it does the instruction families ("bulk"): only for kernels with such a row, under the compile
lock, and with ``engine="auto"`` never while another process compiles (the rows go to the reference executors
until then).
"""
import numpy as np
from numba import carray, types

from . import table as T
from .bulkx import bulk_rows
from .ccall import CTX_ROW, NCTX, NSCRATCH

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


# compiled by families.py (cfunc with SIG, cache=True), when a kernel first has such a row, under the compile lock
SIG = types.int64(types.int64, _PI64, _PI64, _P64, _P8, types.int64, _P64)


def bulk_c(em, pstate, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    scratch = carray(pscratch, (NSCRATCH, 32))
    ctx = scratch[CTX_ROW:].reshape(NCTX).view(np.int64)
    return bulk_rows(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, carray(pstate, T.NSTATE), a8,
                     a8.view(np.uint16), a8.view(np.uint32), a8.view(np.uint64), scratch, ctx)

