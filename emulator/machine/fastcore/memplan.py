"""The warp loop's slow load/store plan, compiled apart ("memplan" of ``families.APART``) and bound only for the
kernels that may need it.

``ldst.plan`` plans the common rows (a shared, global, generic or .param address in a 32- or 64-bit register or a
constant one). The others go to ``_mem_plan``, which looks at each lane alone: ``.local`` rows, an address in a
register of another width, a generic row whose lanes are on both sides of the shared window, lanes in several
global allocations, a sanitised launch's rows.
``loop.run`` calls it through ``plan_c`` (the families' signature, ``ccall.SIG``) at slot ``loop.MSLOT``; a kernel
binds it when its rows may need it (``Translation.apart``; a sanitised launch always), and while it is not bound
the loop hands such a row back to the reference executor, which gives the same bits. So a kernel that never
takes this path never compiles it. ``rarecall.rare_c`` calls ``plan_c`` for the atomics' addresses
(a kernel with atomics binds it).

What ``plan_c`` needs besides the row it finds in the ctx (``ccall.K_*``, ``loop.fill_ctx``): the state, the
cp.async bytes in flight, the allocation table; the addresses go to scratch rows 2 (every lane's) and 7 (the
active lanes' host addresses), as the loop reads them.
"""
import numpy as np
from numba import njit

from . import ccall as C
from . import table as T
from .ccall import SIG  # noqa: F401 (families.APART's signature attribute)
from .memx import smem_write_ok
from .raw import _allocation
from .regs import I0, I64, _gather, _rd
from ...numerics.jitcache import INNER, lean

LANES = 32
LEAN = lean()               # the loops' pipeline (jitcache.lean): integer code, each variable of one type


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _mem_plan(row, imrow, m, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs):
    """Addresses of every lane and, for the active ones, the raw host address of the access (``ptrs``).
    Returns the lanes that access shared memory, or -1 when an active lane needs the reference's checks
    (alignment, bounds, a cp.async destination in flight, an address outside every allocation)."""
    nbytes = row[T.Y] * row[T.Z]
    space = row[T.X]
    if space == T.SHARED_CLUSTER:           # (dsmemx.py plans these: the reference executor, when it is not bound)
        return -1
    off = np.int64(imrow[T.IMM_OFFSET])
    base = row[T.A]
    if base == -1:
        for lane in range(LANES):
            addrs[lane] = off
    else:
        _gather(base, I64, I0, ptrs, a8, a16, a32, a64, imrow)     # zero-extended register, as int64
        wrap = np.int64(0xFFFFFFFF) if base >> T.CLASS_SHIFT == T.R32 else np.int64(-1)   # 32 bits wrap at 2^32
        for lane in range(LANES):
            addrs[lane] = (np.int64(ptrs[lane]) + off) & wrap
    smem_size = state[T.S_SMEM_SIZE]
    shared = 0
    k = state[T.S_LASTALLOC]
    for lane in range(LANES):
        if not (m >> lane) & 1:
            continue
        a = addrs[lane]
        if a % nbytes != 0:
            return -1
        sp = space
        if sp == T.GENERIC:
            sp = T.SHARED if 0 <= a < smem_size else T.GLOBAL
        elif sp == T.LOCAL:                 # an offset into the lane's depot (KernelWarp._local_addrs), a global
            if a < 0 or a + nbytes > row[T.C]:      # allocation
                return -1
            a += np.int64(_rd(row[T.B], lane, a8, a16, a32, a64, imrow))
            sp = T.GLOBAL
        if sp == T.SHARED:
            if a < 0 or a + nbytes > smem_size:
                return -1
            if state[T.S_INFLIGHT] > 0:
                for b in range(nbytes):
                    if inflight[a + b] != 0:
                        return -1
            shared |= 1 << lane
            ptrs[lane] = np.uint64(state[T.S_SMEM_PTR] + a)
        elif sp == T.GLOBAL:
            if a < 0:
                return -1
            k = _allocation(gtab, state, k, a, nbytes)
            if k < 0:
                return -1
            ptrs[lane] = np.uint64(gtab[k, 2] + (a - gtab[k, 0]))
        else:
            if a < 0 or a + nbytes > state[T.S_PARAM_SIZE]:
                return -1
            ptrs[lane] = np.uint64(state[T.S_PARAM_PTR] + lane * state[T.S_PARAM_SIZE] + a)
    if row[T.OP] == T.ATOM and not smem_write_ok(state, addrs, shared, nbytes):
        return -1       # an atomic into bytes an in-flight wgmma.mma_async reads: the reference's AsyncHazardError
                        # (a store's bytes the loop checks itself, memx.py)
    return shared


def plan_c(em, prow, pimm, parena, n, pscratch):
    """The C-callable body (ccall.SIG): ``_mem_plan``'s answer (the shared lanes, or -1: the reference decides)."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    return _mem_plan(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, a8, C.reinterpret(a8, np.uint16),
                     C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64),
                     C.i32_1d(ctx[C.K_INFLIGHT], ctx[C.K_INFLIGHT_N]), C.i64_2d(ctx[C.K_GTAB], ctx[C.K_GTAB_N], 3),
                     C.i64_1d(ctx[C.K_STATE], T.NSTATE), C.reinterpret(s[2], np.int64), s[7])
