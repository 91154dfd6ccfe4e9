"""Distributed shared memory in the loops: loads, stores and atomics whose addresses reach the shared memory of
another CTA of the cluster, as ``ops.memops`` and ``ops.atomics`` route them (``ops.cluster.cluster_groups``,
``generic_window``; the encoding in ``memory.dsmem``).

* a ``.shared::cluster`` address (LD/ST/ATOM rows of space ``table.SHARED_CLUSTER``) names CTA rank
  ``(own rank + bits 24..31) mod 256`` and byte ``bits 0..23`` of its shared memory; bits 24..31 zero: this CTA;
* a generic address below this CTA's shared-memory size is its own shared memory, one in ``[2^24, 2^32)`` another
  CTA's (``mapa``, ``cvta.shared::cluster``), the rest global memory.

``plan_c`` does what ``memplan.plan_c`` does (it calls ``memplan._mem_plan`` for every other row and lane) and gives
the lanes on another CTA the raw address of that CTA's byte through the cluster's table (state ``S_CLUSTER``,
``clusterx.CL_*``, which ``machine.cluster.Cluster._tables`` fills before each run of a CTA in the CTA loop). It
returns this CTA's shared lanes as ``_mem_plan`` does (the loop logs them and marks their generic-proxy writes); the
lanes on other CTAs are neither logged nor sanitised (as the executors: ``shared_load(..., log=False)``), and go in
ctx slot ``ccall.K_DSM`` for ``atom_c`` (with the row's address in ``K_DSM_ROW``). Every rule the executors check sends the row back (nothing written, the
executor raises its error): an address outside the window or the cluster, a CTA whose threads have all exited, the
alignment, the bounds of that CTA's shared memory, bytes a copy has yet to write there, a store or atomic into
bytes an in-flight wgmma.mma_async of that CTA reads (``clusterx.CL_WGR``), a store into a CTA without an async
unit in a kernel whose shared memory the async proxy reads. A store marks the bytes it writes in the other CTA's
generic-proxy marks (``CL_DIRTY``, counted in ``CL_DIRTY_N``: the cluster sets ``AsyncUnit.any_dirty``), as
``shared_store`` does. Outside a cluster's CTA loop (a warp run alone, a sanitised launch, a CTA the Python
scheduler runs: no table) the lanes on other CTAs go back.

``atom_c`` is ``xcall.atom_c`` with the lanes on other CTAs updated by the shared-memory rule (``loop``: for the
f32/f64 adds, ``numerics.atomics``), as ``ops.atomics.update`` applies it to ``remote`` lanes.

Both are compiled apart ("dsmem", "dsmem_atom" of ``families.APART``) and bound in the slots of
``memplan.plan_c`` and ``xcall.atom_c`` instead of them, only for the kernels whose rows may reach another CTA
(``Translation.apart``: a ``.shared::cluster`` load, store or atomic, or a generic one in a kernel with a generic
``mapa`` or a ``cvta`` of the cluster's window); the others compile nothing more.
"""
import numpy as np
from numba import carray, njit

from . import ccall as C
from . import table as T
from .ccall import SIG  # noqa: F401 (families.APART's signature attribute)
from .clusterx import (CL_ALIVE, CL_DIRTY, CL_DIRTY_N, CL_EXITED, CL_INFL, CL_INFL_N, CL_NW, CL_RANK, CL_SIZE,
                       CL_SMEM, CL_SMEM_N, CL_WGR, cl_add, cl_get)
from .memplan import _mem_plan
from .memx import smem_write_ok
from .raw import _peek8, _peek32, _peek64, _poke8
from .regs import I0, I64, _gather
from .xcall import ATOM_SIG, _atom  # noqa: F401 (ATOM_SIG: families.APART's signature attribute)

LANES = 32
SHIFT = 24                          # memory.dsmem.SHIFT
OFFSET_MASK = (1 << SHIFT) - 1
WINDOW_END = np.int64(1) << 32      # memory.dsmem.WINDOW_END
ONE = np.uint64(1)


@njit(cache=True, _nrt=False)
def _alive(ct, r):
    """Whether CTA rank ``r`` still has a thread that has not exited (else its shared memory is gone)."""
    if cl_get(ct, r, CL_ALIVE) == 0:
        return False
    ex = cl_get(ct, r, CL_EXITED)
    for i in range(cl_get(ct, r, CL_NW) * LANES):
        if _peek8(ex + i) == 0:
            return True
    return False


@njit(cache=True, _nrt=False)
def _plan(row, imrow, em, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs, ctx):
    """memplan._mem_plan with the cluster's shared windows: this CTA's shared lanes (-1: the reference decides);
    the lanes on other CTAs in ctx[K_DSM]."""
    ctx[C.K_DSM] = 0
    ctx[C.K_DSM_ROW] = C.data_ptr(row)
    space = row[T.X]
    if space != T.SHARED_CLUSTER and space != T.GENERIC:
        return _mem_plan(row, imrow, em, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs)
    nbytes = row[T.Y] * row[T.Z]
    off = np.int64(imrow[T.IMM_OFFSET])
    base = row[T.A]
    if base == -1:
        for lane in range(LANES):
            addrs[lane] = off
    else:
        _gather(base, I64, I0, ptrs, a8, a16, a32, a64, imrow)     # zero-extended register, as int64
        wrap = np.int64(0xFFFFFFFF) if base >> T.CLASS_SHIFT == T.R32 else np.int64(-1)
        for lane in range(LANES):
            addrs[lane] = (np.int64(ptrs[lane]) + off) & wrap
    smem = state[T.S_SMEM_SIZE]
    remote = np.int64(0)
    own = np.int64(0)
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = addrs[lane]
            if space == T.SHARED_CLUSTER:
                if a < 0 or a >= WINDOW_END:
                    return -1
                if (a >> SHIFT) & 0xFF == 0:
                    own |= np.int64(1) << lane
                else:
                    remote |= np.int64(1) << lane
            elif (np.int64(1) << SHIFT) <= a and a < WINDOW_END:
                remote |= np.int64(1) << lane
    if remote == 0 and space == T.GENERIC:
        return _mem_plan(row, imrow, em, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs)
    opc = row[T.OP]
    shared = np.int64(0)
    if space == T.GENERIC:
        rest = em & ~remote
        if rest != 0:                       # this CTA's window and global memory (addrs the same again)
            shared = _mem_plan(row, imrow, rest, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs)
            if shared < 0:
                return -1
    else:                                   # this CTA through its rank: a shared access
        sp = state[T.S_SMEM_PTR]
        for lane in range(LANES):
            if (own >> lane) & 1:
                a = addrs[lane]
                if a % nbytes != 0 or a + nbytes > smem:
                    return -1
                if state[T.S_INFLIGHT] > 0:
                    for b in range(nbytes):
                        if inflight[a + b] != 0:
                            return -1
                ptrs[lane] = np.uint64(sp + a)
        shared = own
    if opc == T.ATOM and not smem_write_ok(state, addrs, shared, nbytes):    # (a store's: the loop checks them)
        return -1
    if remote == 0:
        return shared
    ct = state[T.S_CLUSTER]
    if ct == 0 or ctx[C.K_LOG_W] > LANES:
        return -1                           # no cluster table (outside the CTA loop), a sanitised launch
    me = np.int64(_peek64(ct + 8 * CL_RANK))
    size = np.int64(_peek64(ct + 8 * CL_SIZE))
    marks = opc == T.ST and state[T.S_DIRTY] != 0
    checked = np.int64(0)
    for lane in range(LANES):
        if (remote >> lane) & 1:
            a = addrs[lane]
            if a % nbytes != 0:
                return -1
            r = (me + (a >> SHIFT)) & 0xFF
            if r >= size:
                return -1
            if not (checked >> r) & 1:
                if not _alive(ct, r):
                    return -1
                checked |= np.int64(1) << r
            o = a & OFFSET_MASK
            if o + nbytes > cl_get(ct, r, CL_SMEM_N):
                return -1
            if cl_get(ct, r, CL_INFL_N) > 0:          # bytes a copy has yet to write there
                infl = cl_get(ct, r, CL_INFL)
                for b in range(nbytes):
                    if _peek32(infl + 4 * (o + b)) != 0:
                        return -1
            if opc != T.LD:
                wr = cl_get(ct, r, CL_WGR)
                if wr != 0:
                    for b in range(nbytes):
                        if _peek32(wr + 4 * (o + b)) != 0:
                            return -1
                if marks and cl_get(ct, r, CL_DIRTY) == 0:
                    return -1
            ptrs[lane] = np.uint64(cl_get(ct, r, CL_SMEM) + o)
    if marks:                               # AsyncUnit.generic_write of that CTA
        for lane in range(LANES):
            if (remote >> lane) & 1:
                a = addrs[lane]
                r = (me + (a >> SHIFT)) & 0xFF
                d = cl_get(ct, r, CL_DIRTY) + (a & OFFSET_MASK)
                for b in range(nbytes):
                    _poke8(d + b, ONE)
                cl_add(ct, r, CL_DIRTY_N, 1)
                cl_add(ct, -1, CL_DIRTY_N, 1)        # (row 0: some CTA's count moved)
    ctx[C.K_DSM] = remote
    return shared


def plan_c(em, prow, pimm, parena, n, pscratch):
    """The C-callable body (ccall.SIG), as memplan.plan_c."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    return _plan(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), em, a8, C.reinterpret(a8, np.uint16),
                 C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64),
                 C.i32_1d(ctx[C.K_INFLIGHT], ctx[C.K_INFLIGHT_N]), C.i64_2d(ctx[C.K_GTAB], ctx[C.K_GTAB_N], 3),
                 C.i64_1d(ctx[C.K_STATE], T.NSTATE), C.reinterpret(s[2], np.int64), s[7], ctx)


def atom_c(em, shared, prow, pimm, parena, n, pscratch):
    """xcall.atom_c (ATOM_SIG), the lanes ``plan_c`` found on other CTAs (ctx[K_DSM]) with the shared rule."""
    a8 = carray(parena, n)
    ctx = carray(pscratch, (C.NSCRATCH * LANES,)).view(np.int64)[C.CTX_ROW * LANES:]
    # (the lanes plan_c found on other CTAs, when it planned this row: a row memplan.plan_c planned has none)
    remote = ctx[C.K_DSM] if ctx[C.K_DSM_ROW] == carray(prow, T.NFIELDS).ctypes.data else np.int64(0)
    return _atom(carray(prow, T.NFIELDS), carray(pimm, T.NIMM), em, shared | remote, a8, a8.view(np.uint16),
                 a8.view(np.uint32), a8.view(np.uint64), carray(pscratch, (13, 32)))
