"""The BULKX rows (``bulkx.py``: TMA box loads and stores) as one C-callable function compiled apart from the loops
(as ``hopcall.py`` does for HOPX): the loops call ``bulk_c`` through its address (``asyncx.call_hop``, the same
signature; slot ``loop.BSLOT`` of the translation's pointer array). ``families.py`` compiles it (or loads it from
numba's cache) as it does the instruction families ("bulk"): only for kernels with such a row, under the compile
lock, and with ``engine="auto"`` never while another process compiles (the rows go to the reference executors
until then). ``mc_c`` (a lane's multicast load, "bulk_mc") and ``sc_c`` (cp.async.bulk.shared::cluster.shared::cta,
"bulk_s2s") likewise, only for kernels with such rows.
"""
import numpy as np
from numba import carray, types

from . import table as T
from . import ccall as C
from .bulkx import B_COMMIT, B_WAIT, NCTL, PUMP, _multicast, bulk_rows, groups, pump, scopy_rows
from .ccall import CTX_ROW, NCTX, NSCRATCH, i64_1d, reinterpret

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


# compiled by families.py (cfunc with SIG, cache=True), when a kernel first has such a row, under the compile lock
SIG = types.int64(types.int64, _PI64, _PI64, _P64, _P8, types.int64, _P64)


def bulk_c(em, pstate, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    scratch = carray(pscratch, (NSCRATCH, 32))
    ctx = reinterpret(scratch[CTX_ROW:].reshape(NCTX), np.int64)
    state = carray(pstate, T.NSTATE)
    if state[T.S_BULK] == 0:
        return 1                            # (a sanitised or recorded launch: the executor)
    ctl = i64_1d(state[T.S_BULK], NCTL)
    if em == PUMP:
        return pump(ctl, state)
    row = carray(prow, T.NFIELDS)
    kind = row[T.X]
    if kind == B_COMMIT or kind == B_WAIT:
        return groups(ctl, state, em, kind, row[T.Y])
    # (reinterpret, not .view: numba's view is compiled again in every process, for each pair of types)
    return bulk_rows(row, carray(pimm, T.NIMM), em, state, a8, reinterpret(a8, np.uint16),
                     reinterpret(a8, np.uint32), reinterpret(a8, np.uint64), scratch, ctx)



def mc_c(lane, pstate, prow, pimm, parena, n, pscratch):
    """Lane ``lane``'s ``.multicast::cluster`` load (``bulkx._multicast``; SIG, "bulk_mc" of families.APART), called
    by ``bulk_rows`` through slot ``bulkx.MCSLOT`` once that row's operands are in the scratch rows: the coordinates
    in row 12, the decoded tensor map in row 8, the shared box, mbarrier and ctaMask in rows 5, 4 and 6. 0: staged,
    1: the executor must run the instruction (nothing kept)."""
    state = carray(pstate, T.NSTATE)
    row = carray(prow, T.NFIELDS)
    scratch = carray(pscratch, (NSCRATCH, 32))
    ctx = reinterpret(scratch[CTX_ROW:].reshape(NCTX), np.int64)
    ctl = i64_1d(state[T.S_BULK], NCTL)
    ok = _multicast(ctl, state, reinterpret(scratch[8], np.int64), row[T.Y], reinterpret(scratch[12], np.int64),
                    np.int64(scratch[5, lane]), np.int64(scratch[4, lane]), lane, ctx[C.K_P],
                    np.int64(scratch[6, lane] & np.uint64(0xFFFF)))
    return 0 if ok else 1


def sc_c(em, pstate, prow, pimm, parena, n, pscratch):
    """cp.async.bulk.shared::cluster.shared::cta on the lanes in ``em`` (``bulkx.scopy_rows``; SIG, "bulk_s2s" of
    families.APART), called by ``bulk_rows`` through slot ``bulkx.SCSLOT``. 0: staged, 1: the executor runs it."""
    a8 = carray(parena, n)
    scratch = carray(pscratch, (NSCRATCH, 32))
    ctx = reinterpret(scratch[CTX_ROW:].reshape(NCTX), np.int64)
    state = carray(pstate, T.NSTATE)
    ctl = i64_1d(state[T.S_BULK], NCTL)
    return scopy_rows(ctl, carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, state, a8, reinterpret(a8, np.uint16),
                      reinterpret(a8, np.uint32), reinterpret(a8, np.uint64), scratch, ctx)
