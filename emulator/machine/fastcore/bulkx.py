"""TMA box copies in the fast engine (``BULKX`` rows), as ``ops.bulk`` defines them: the tiled loads
``cp.async.bulk.tensor.{1..5}d.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes`` into this CTA's shared
memory, the tiled stores ``cp.async.bulk.tensor.{1..5}d.global.shared::cta{.tile}.bulk_group`` and reductions
``cp.reduce.async.bulk.tensor.{1..5}d.global.shared::cta.<op>{.tile}.bulk_group``.

What the executor does when it issues such a copy, the row does here, in jitted code: it reads the 128 bytes of the
tensor map where the executor would (``KernelWarp.tensormap_bytes``: the kernel's parameters, shared or global
memory) and decodes them every time (``TensorMap.decode``; a map rewritten by ``tensormap.replace`` or a store is
read as it is now, so nothing has to be invalidated), checks what ``memory.tma.check_box`` and the executor check,
walks the box (``memory.tma.box_geometry``: dimension 0 fastest, element strides, rows padded to the swizzle
span), reads the global elements of a load (zeros or the NaN fill outside the tensor, the tf32 rounding of
TFLOAT32 maps) or the shared bytes of a store (after the same fence check, ``AsyncUnit.check_async_read``), marks
a load's shared destination bytes in flight (``smem_inflight``, and the CTA's count of copies in flight) and puts
the copy in a staging area (``Staging``).

The copy then lands where the reference lands it: when the loop returns, ``Staging.drain`` hands every staged copy
to the CTA's async unit, in issue order, as the executor would have (``ops.bulk.queue_load`` /
``ops.bulk.queue_store``, with the same completion: the shared bytes written and released (``land_bytes``, jitted),
complete_tx on the mbarrier, or the global bytes written or reduced); the CTA's scheduler completes it at the same point as before.

A ``.multicast::cluster`` load in the CTA loop of a cluster's CTAs (``_multicast``) stages the box once per CTA of
its ctaMask (rank order, the same shared offsets); a record for another CTA names it (``R_CTA``) and is marked in
flight, landed and completed on that CTA's arrays and mbarrier through the cluster's table (``clusterx.py``); the
pump leaves it to Python while that CTA's async unit holds copies of its own, and ``Staging.drain`` hands it to that
CTA's async unit.

Everything else returns 1 before anything is written (the loop hands the instruction back and the executor runs it
or raises its error): a tensor map the executor would refuse or fault on, a box past shared memory, an element
outside every allocation, a destination or mbarrier in another CTA of the cluster (but for a multicast), a
multicast rank outside the cluster or whose CTA is gone, an unfenced generic write in a store's source,
``.im2col``, the non-tensor ``cp.async.bulk`` forms (but for ``cp.async.bulk.shared::cluster.shared::cta``: ``_scopy``),
a sanitised or recorded launch (state ``S_BULK`` 0), a warp run
alone's multicast, and a staging area too small (it grows for the next time).

The rows run in one C-callable function compiled apart from the loops (``bulkcall.bulk_c``), which the loop calls
through its address (slot ``loop.BSLOT``), the way it calls ``hopcall.hop_c``. A multicast lane goes through one
more, ``bulkcall.mc_c`` ("bulk_mc" of ``families.APART``, slot ``MCSLOT``): compiled and bound only for kernels with
multicast loads (few have them), so the others' ``bulk`` compiles none of ``_multicast``; while it is not bound, a
multicast row goes back to the executor.
"""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .asyncx import _mb, global_find, mb_complete_tx, mb_find
from .ccall import data_ptr, i32_1d, i64_1d, i64_2d, reinterpret, u8_1d
from .asyncx import call_hop
from .families import APART_SLOT
from .raw import _peek8, _peek16, _peek32, _peek64, _poke8, _poke32, _peek, _poke
from .regs import _gather
from .hopcall import _addresses
from .clusterx import (CL_ALIVE, CL_DIRTY, CL_EXITED, CL_N, CL_NW, CL_PYPEND, CL_RANK, CL_SIZE, CL_SMEM_N, CL_TAB,
                       cl_get, cl_inflight, cl_target)
from ...memory.dsmem import OFFSET_MASK, SHIFT
from ...memory.mbarrier import TX, TX_MAX
from ...memory.tensormap import DTYPES, FLOAT_TYPES, SWIZZLE_BYTES
from ...memory.tma import NAN_FILL, TF32_NAN
from ...numerics.jitcache import lean

LEAN = lean()       # the loops' pipeline (jitcache.lean: no SSA; tests/test_lean_pipeline.py checks the types)

B_TLOAD, B_TSTORE, B_TRED = 1, 2, 3     # row X (B_TRED: Z, the reduction's index in ops.bulk.RED_OPS)
B_COMMIT, B_WAIT = 4, 5                 # cp.async.bulk.commit_group, cp.async.bulk.wait_group{.read} N (Y: N)
B_SCOPY = 6                             # cp.async.bulk.shared::cluster.shared::cta (``_scopy``: staged as a B_TLOAD of
                                        # rank 0, 8-byte elements; through bulkcall.sc_c, slot SCSLOT)
PUMP = -1                               # ``em`` of bulk_c's call at a round's end (run_cta): complete every copy
LANES = 32
PARAM_BASE = 0x7E00_0000_0000   # machine.kernel_warp.PARAM_BASE (the generic window of the kernel's parameters)

# the staging area's control vector (int64): counts, capacities and raw addresses of its three arrays
(C_NREC, C_RECCAP, C_REC, C_NDATA, C_DATACAP, C_DATA, C_NIDX, C_IDXCAP, C_IDX, C_WANT_DATA, C_WANT_IDX,
 C_WANT_REC) = range(12)
# the CTA loop's own completion of the staged copies (run_cta; set by FastCTA.run at each entry): whether the
# CTA's async unit holds copies of its own (issued by the executors: then the copies go to it, in issue order, and
# it completes them), the address and rows of the bulk async-group counts ((warps, 32) int64, as
# AsyncUnit.committed), whether the loop changed them, the shared in-flight counts (int32) and the generic-proxy
# marks (bool) of the CTA, and the staged copies not yet complete
C_PYPEND, C_GRP, C_GRPN, C_GRPCHG, C_INFL, C_DIRTYP, C_LIVE = range(12, 19)
NCTL = 19
# a staged copy (one int64 row): kind, pc, lane, shared offset (a load's destination, a store's source), mbarrier,
# bytes (the tx-count of a load, the box's bytes), its bytes and indices in the staging arrays (a load: the
# element's swizzled shared address; a store: the global address of each element inside the tensor), the element
# size, the rank, the coordinates and the box
(R_KIND, R_PC, R_LANE, R_SMEM, R_MBAR, R_BYTES, R_DATA, R_NDATA, R_IDX, R_NIDX, R_ES, R_RANK) = range(12)
R_COORD = 12
R_BOX = 17
R_TYPE = 22             # the tensor map's element type (a reduction's arithmetic); R_MBAR: its RED_OPS index
R_WARP = 23             # the warp's index in the CTA loop (loop.run_cta), -1 for a warp run alone
R_GROUP = 24            # a store's bulk async-group (-1: not committed yet; AsyncCopy.group)
R_CTA = 25              # a multicast load's CTA rank when not this CTA (clusterx.py's table), else -1
RECW = 26               # (R_KIND 0: a copy the CTA loop completed)

# CUtensorMapDataType by descriptor code and tf32 flag (TensorMap.decode's table): code | tf32 << 4 -> type, -1
_TYPE_OF = np.full(32, -1, np.int64)
_SIZE = np.zeros(16, np.int64)
_IS_FLOAT = np.zeros(16, np.int64)
_TF32 = np.zeros(16, np.int64)
for _t, (_name, _es, _code, _tf, _np) in DTYPES.items():
    _TYPE_OF[_code | _tf << 4] = _t
    _SIZE[_t] = _es
    _IS_FLOAT[_t] = int(_t in FLOAT_TYPES)
    _TF32[_t] = _tf
_SWZ = np.array([SWIZZLE_BYTES[k] for k in range(4)], np.int64)
_FILL = np.zeros(9, np.uint64)
for _k, _v in NAN_FILL.items():
    _FILL[_k] = np.uint64(_v)
U0 = np.uint64(0)
U1 = np.uint64(1)
_EXP = np.uint64(0x7F800000)
_MANT = np.uint64(0x7FFFFF)
_TF32_NAN = np.uint64(TF32_NAN)
_CROW = np.array([0, 1, 9, 10, 11], np.int64)     # the scratch rows of the coordinates
MCSLOT = APART_SLOT["bulk_mc"]                     # bulkcall.mc_c: a lane's multicast load
SCSLOT = APART_SLOT["bulk_s2s"]                    # bulkcall.sc_c: cp.async.bulk.shared::cluster.shared::cta


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _tmap_at(state, lane, a):
    """The raw address of the 128 bytes of the tensor map at generic address ``a`` (KernelWarp.tensormap_bytes:
    the lane's parameters, this CTA's shared memory, or global memory, 64-byte aligned), or 0 (the executor raises)."""
    psize = state[T.S_PARAM_SIZE]
    if PARAM_BASE <= a < PARAM_BASE + psize:
        off = a - PARAM_BASE
        if off + 128 > psize:
            return 0
        return state[T.S_PARAM_PTR] + lane * psize + off
    if 0 <= a < state[T.S_SMEM_SIZE]:
        if a + 128 > state[T.S_SMEM_SIZE]:
            return 0
        return state[T.S_SMEM_PTR] + a
    if a % 64 != 0:
        return 0
    return global_find(state[T.S_GTAB], state[T.S_GTAB_N], a, np.int64(128))


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _decode(p, tm):
    """TensorMap.decode of the 128 bytes at ``p`` into ``tm`` (int64[32]): 0 type, 1 rank, 2 global address,
    3..7 dims, 8..11 strides (bytes), 12..16 box, 17..21 element strides, 22 interleave, 23 swizzle, 24 OOB fill,
    25 element size; False for an unknown element type."""
    q = np.int64(_peek32(p + 8))
    key = ((q >> 7) & 0xF) | (((q >> 16) & 1) << 4)
    t = _TYPE_OF[key]
    if t < 0:
        return False
    r = ((q >> 4) & 7) + 1
    if r > 5:
        return False                         # (no instruction has that rank: the executor's rank check)
    tm[0] = t
    tm[1] = r
    tm[2] = np.int64(_peek64(p))
    hi = np.int64(_peek32(p + 28))
    est = np.int64(_peek16(p + 52))
    for k in range(5):
        tm[3 + k] = 1
        tm[12 + k] = 1
        tm[17 + k] = 1
    for k in range(4):
        tm[8 + k] = 0
    for k in range(r):
        tm[3 + k] = np.int64(_peek32(p + 32 + 4 * k)) + 1
        tm[12 + k] = np.int64(_peek8(p + 55 + k)) + 1
        tm[17 + k] = ((est >> (3 * k)) & 7) + 1
    for k in range(r - 1):
        tm[8 + k] = ((((hi >> (4 * k)) & 0xF) << 32) | np.int64(_peek32(p + 12 + 4 * k))) << 4
    tm[22] = (q >> 11) & 3
    tm[23] = (q >> 13) & 3
    tm[24] = (q >> 15) & 1
    tm[25] = _SIZE[t]
    return True


@njit(cache=True, inline="always")
def _swizzle(a, mode):
    """memory.tma.swizzle: 16-byte chunk bits [4, 4 + mode) XORed with bits [7, 7 + mode)."""
    if mode == 0:
        return a
    return a ^ (((a >> 7) & ((1 << mode) - 1)) << 4)


@njit(cache=True, inline="always")
def _to_tf32(b):
    """memory.tma.to_tf32 of one f32's bits (uint64)."""
    if (b & _EXP) == _EXP and (b & _MANT) != U0:
        return _TF32_NAN
    return ((b + np.uint64(0xFFF) + ((b >> np.uint64(13)) & U1)) & ~np.uint64(0x1FFF)) & np.uint64(0xFFFFFFFF)


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _box_ok(tm, rank, coords, store):
    """The executor's rank check and the rules of memory.tma.check_box: True when the copy may go on."""
    if tm[1] != rank:
        return False
    es = tm[25]
    first = tm[2] + coords[0] * es
    for k in range(1, rank):
        first += coords[k] * tm[8 + k - 1]
    if first & 15 != 0:                      # (mod 16: the same with the int64 wrap as with Python's integers)
        return False
    if store:
        for k in range(rank):
            if coords[k] < 0:
                return False
    if tm[17] != 1 or tm[22] != 0:
        return False
    if tm[2] < 0 or tm[2] >= 1 << 62:       # (an address the reference's int64 box arithmetic may not hold)
        return False
    for k in range(rank):                    # box elements per dimension (tm[26..30]), ceil(box / element stride)
        tm[26 + k] = (tm[12 + k] + tm[17 + k] - 1) // tm[17 + k]
    for k in range(rank, 5):
        tm[26 + k] = 1
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _reserve(ctl, ndata, nidx):
    """Room for one more copy of ``ndata`` bytes and ``nidx`` indices in the staging area; False (and the sizes
    the next loop needs, C_WANT_*) when it is too small."""
    ok = True
    if ctl[C_NREC] + 1 > ctl[C_RECCAP]:
        ctl[C_WANT_REC] = max(ctl[C_WANT_REC], ctl[C_NREC] + 1)
        ok = False
    if ctl[C_NDATA] + ndata > ctl[C_DATACAP]:
        ctl[C_WANT_DATA] = max(ctl[C_WANT_DATA], ctl[C_NDATA] + ndata)
        ok = False
    if ctl[C_NIDX] + nidx > ctl[C_IDXCAP]:
        ctl[C_WANT_IDX] = max(ctl[C_WANT_IDX], ctl[C_NIDX] + nidx)
        ok = False
    return ok


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _record(ctl, kind, pc, lane, smem, mbar, nbytes, ndata, nidx, es, rank, coords, tm):
    """Keep the copy just staged: its row, then its bytes and indices become part of the staging area."""
    rec = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)[ctl[C_NREC]]
    rec[R_KIND] = kind
    rec[R_PC] = pc
    rec[R_LANE] = lane
    rec[R_SMEM] = smem
    rec[R_MBAR] = mbar
    rec[R_BYTES] = nbytes
    rec[R_DATA] = ctl[C_NDATA]
    rec[R_NDATA] = ndata
    rec[R_IDX] = ctl[C_NIDX]
    rec[R_NIDX] = nidx
    rec[R_ES] = es
    rec[R_RANK] = rank
    for k in range(5):
        rec[R_COORD + k] = coords[k]
        rec[R_BOX + k] = tm[12 + k]
    rec[R_TYPE] = tm[0]
    rec[R_GROUP] = -1
    rec[R_CTA] = -1
    ctl[C_NREC] += 1
    ctl[C_LIVE] += 1
    ctl[C_NDATA] += ndata
    ctl[C_NIDX] += nidx


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _row_base(tm, rank, coords, i1, i2, i3, i4):
    """The global address of element 0 of a box row (before dimension 0's coordinate) and whether the row's outer
    coordinates lie inside the tensor (-1 as the flag: they do not)."""
    base = tm[2]
    inside = True
    for k in range(1, rank):
        i = i1 if k == 1 else (i2 if k == 2 else (i3 if k == 3 else i4))
        g = coords[k] + i * tm[17 + k]
        base += g * tm[8 + k - 1]
        if g < 0 or g >= tm[3 + k]:
            inside = False
    return base, inside


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _row_starts(idx, at, rowoff, n0, es, swz, size):
    """The swizzled shared offsets of a box row's ``n0`` elements (``idx[at:at + n0]``); False when one runs past
    shared memory."""
    out = idx[at:at + n0]
    if swz == 0:
        if rowoff + n0 * es > size:
            return False
        for j in range(n0):
            out[j] = rowoff + j * es
        return True
    for j in range(n0):
        s = _swizzle(rowoff + j * es, swz)
        if s + es > size:
            return False
        out[j] = s
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _copy_run(dst, src, nbytes):
    """``nbytes`` bytes from raw address ``src`` to raw address ``dst`` (regions apart)."""
    d = u8_1d(dst, nbytes)
    s = u8_1d(src, nbytes)
    for i in range(nbytes):
        d[i] = s[i]


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _fill_run(dst, count, es, v):
    """``count`` elements of ``es`` bytes, each ``v``, at raw address ``dst``."""
    if v == U0:
        d = u8_1d(dst, count * es)
        for i in range(count * es):
            d[i] = 0
        return
    for i in range(count):
        _poke(dst + i * es, es, v)


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _tf32_run(dst, src, count):
    """``count`` f32 elements from ``src`` to ``dst``, each rounded as a TFLOAT32 map reads it (``_to_tf32``)."""
    for i in range(count):
        _poke32(dst + 4 * i, _to_tf32(np.uint64(_peek32(src + 4 * i))))


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _load(ctl, state, tm, rank, coords, doff, moff, lane, pc):
    """One lane's tiled load (ops.bulk._tensor with memory.tma.tile_load): staged, or False (nothing kept)."""
    es = tm[25]
    n = tm[26:31]
    total = n[0] * n[1] * n[2] * n[3] * n[4]
    pitch = max(n[0] * es, _SWZ[tm[23]])
    size = state[T.S_SMEM_SIZE]
    last = ((total - 1) // n[0]) * pitch + ((total - 1) % n[0]) * es
    if doff < 0 or doff + last + es > size:
        return False                        # check_bounds
    if not _reserve(ctl, total * es, total):
        return False
    gtab = state[T.S_GTAB]
    ngtab = state[T.S_GTAB_N]
    data = ctl[C_DATA] + ctl[C_NDATA]
    idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
    i0 = ctl[C_NIDX]
    swz = tm[23]
    tf32 = _TF32[tm[0]] != 0
    fill = tm[24] != 0 and _IS_FLOAT[tm[0]] != 0
    nan = _FILL[es]
    c0 = coords[0]
    e = 0
    for i4 in range(n[4]):
        for i3 in range(n[3]):
            for i2 in range(n[2]):
                for i1 in range(n[1]):
                    base, inside = _row_base(tm, rank, coords, i1, i2, i3, i4)
                    lo = max(np.int64(0), -c0)       # the row's elements inside dimension 0: [lo, hi)
                    hi = min(n[0], tm[3] - c0)
                    if not inside or hi < lo:
                        hi = lo
                    run = 0
                    if hi > lo:
                        run = global_find(gtab, ngtab, base + (c0 + lo) * es, (hi - lo) * es)
                    rowoff = doff + (e // n[0]) * pitch
                    if not _row_starts(idx, i0 + e, rowoff, n[0], es, swz, size):
                        return False                # the box runs past shared memory
                    # the row's staged bytes in element order: [0, a) and [b, n0) filled, [a, b) read as one run
                    a = min(lo, n[0])
                    b = min(max(a, hi), n[0])
                    dst = data + e * es
                    if a > 0:
                        _fill_run(dst, a, es, nan if fill else U0)
                    if b > a:
                        if run != 0:
                            if tf32:
                                _tf32_run(dst + a * es, run, b - a)
                            else:
                                _copy_run(dst + a * es, run, (b - a) * es)
                        else:
                            for j in range(a, b):
                                src = global_find(gtab, ngtab, base + (c0 + j) * es, es)
                                if src == 0:
                                    return False    # outside every allocation: the executor raises
                                v = _peek(src, es)
                                if tf32:
                                    v = _to_tf32(v)
                                _poke(dst + j * es, es, v)
                    if b < n[0]:
                        _fill_run(dst + b * es, n[0] - b, es, nan if fill else U0)
                    e += n[0]
    _record(ctl, np.int64(B_TLOAD), pc, lane, doff, moff, total * es, total * es, total, es, rank, coords, tm)
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _store(ctl, state, tm, rank, coords, base, lane, pc, kind, op):
    """One lane's tiled store or reduction (ops.bulk._tensor with memory.tma.tile_store_targets): staged, or
    False."""
    es = tm[25]
    n = tm[26:31]
    total = n[0] * n[1] * n[2] * n[3] * n[4]
    pitch = max(n[0] * es, _SWZ[tm[23]])
    size = state[T.S_SMEM_SIZE]
    if base < 0 or total * es > size:
        return False                        # (a box larger than shared memory reaches past it: the executor)
    if not _reserve(ctl, total * es, total):
        return False
    smem = state[T.S_SMEM_PTR]
    dirty = state[T.S_DIRTY]
    check = state[T.S_DIRTY_N] != 0         # AsyncUnit.any_dirty: the fence check reads the marks
    if check and dirty == 0:
        return False
    data = ctl[C_DATA] + ctl[C_NDATA]
    idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
    i0 = ctl[C_NIDX]
    swz = tm[23]
    c0 = coords[0]
    dim0 = tm[3] if kind == B_TRED else (tm[3] * es + 15) // 16 * 16 // es   # memory.tma.store_extent
    e = 0
    kept = 0
    for i4 in range(n[4]):
        for i3 in range(n[3]):
            for i2 in range(n[2]):
                for i1 in range(n[1]):
                    row, inside = _row_base(tm, rank, coords, i1, i2, i3, i4)
                    rowoff = base + (e // n[0]) * pitch
                    keep = min(n[0], dim0 - c0) if inside else 0    # the row's elements inside the tensor: [0, keep)
                    j = 0
                    while j < n[0]:         # 16-byte chunks of the row (a swizzle moves each chunk whole)
                        u = rowoff + j * es
                        m = min(n[0] - j, ((u | 15) + 1 - u) // es)
                        s = _swizzle(u, swz)
                        if s + m * es > size:
                            return False            # the box runs past shared memory
                        if check:
                            marks = u8_1d(dirty + s, m * es)
                            for b in range(m * es):
                                if marks[b] != 0:
                                    return False    # an unfenced generic write: the executor reports it
                        k = min(m, keep - j)
                        if k > 0:
                            _copy_run(data + kept * es, smem + s, k * es)
                            for q in range(k):
                                idx[i0 + kept + q] = row + (c0 + j + q) * es
                            kept += k
                        j += m
                    e += n[0]
    _record(ctl, kind, pc, lane, base, op, total * es, kept * es, np.int64(kept), es, rank, coords, tm)
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _multicast(ctl, state, tm, rank, coords, base, moff, lane, pc, m):
    """A lane's .multicast::cluster load (ops.bulk._tensor): the box staged once per CTA of ctaMask ``m``, in rank
    order, at the same shared offsets (memory.dsmem.offset of the destination and the mbarrier), each record naming
    its CTA (R_CTA; clusterx.py's table); False when the executor must run it (a rank outside the cluster, a CTA gone,
    no such mbarrier there, a CTA outside the CTA loop's table)."""
    ct = state[T.S_CLUSTER]
    if ct == 0 or state[T.S_CTA] != 1 or base < 0 or moff < 0 or base >= 1 << 32 or moff >= 1 << 32:
        return False
    own = np.int64(_peek64(ct + 8 * CL_RANK))
    size = np.int64(_peek64(ct + 8 * CL_SIZE))
    doff = base & OFFSET_MASK
    mo = moff & OFFSET_MASK
    for r in range(16):
        if (m >> r) & 1 == 0:
            continue
        if r >= size:
            return False
        if r == own:
            if mb_find(state[T.S_MBAR], state[T.S_MBAR_N], mo) < 0:
                return False
        elif cl_get(ct, r, CL_ALIVE) == 0 or cl_get(ct, r, CL_DIRTY) == 0 or \
                cl_get(ct, r, CL_SMEM_N) != state[T.S_SMEM_SIZE] or \
                mb_find(cl_get(ct, r, CL_TAB), cl_get(ct, r, CL_N), mo) < 0:
            return False
        if not _load(ctl, state, tm, rank, coords, doff, mo, lane, pc):
            return False
        if r != own:
            i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)[ctl[C_NREC] - 1, R_CTA] = r
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _scopy(ctl, row, imrow, em, state, a8, a16, a32, a64, scratch, ctx):
    """cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
    (ops.bulk._bulk): each lane's ``size`` bytes of this CTA's shared memory, read now (after the fence check,
    ``AsyncUnit.check_async_read``), staged as a load into the CTA the destination names (this one, or another through
    the cluster's table, R_CTA, as a multicast's), landing with complete_tx on that CTA's mbarrier; False (nothing
    kept) when the executor must run it: a size or address not a multiple of 16, an address outside the window or the
    cluster, the destination and the mbarrier in different CTAs, a CTA gone or outside the CTA loop's table, bytes past
    either shared memory, no mbarrier there, an unfenced generic write in the source, no room."""
    xa, xb, xc, xs = scratch[3], scratch[4], scratch[5], scratch[6]
    _addresses(row, imrow, xa, a8, a16, a32, a64, np.int64(T.A), np.int64(T.IMM_OFFSET))     # the destination
    _addresses(row, imrow, xb, a8, a16, a32, a64, np.int64(T.B), np.int64(1))                # the mbarrier
    _addresses(row, imrow, xc, a8, a16, a32, a64, np.int64(T.C), np.int64(2))                # the source
    _gather(row[T.V0], np.int64(32), np.int64(0), xs, a8, a16, a32, a64, imrow)               # the size
    tm = reinterpret(scratch[8], np.int64)
    coords = reinterpret(scratch[12], np.int64)
    for k in range(32):
        tm[k] = 0
    ct = state[T.S_CLUSTER]
    own = np.int64(_peek64(ct + 8 * CL_RANK)) if ct != 0 else np.int64(0)
    nctas = np.int64(_peek64(ct + 8 * CL_SIZE)) if ct != 0 else np.int64(1)
    smem = state[T.S_SMEM_SIZE]
    sp = state[T.S_SMEM_PTR]
    dirty = state[T.S_DIRTY]
    check = state[T.S_DIRTY_N] != 0         # AsyncUnit.any_dirty: the fence check reads the marks
    if state[T.S_MBAR] == 0 or check and dirty == 0:
        return False
    pc = ctx[C.K_P]
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        nb = np.int64(xs[lane] & np.uint64(0xFFFFFFFF))
        d, m, src = np.int64(xa[lane]), np.int64(xb[lane]), np.int64(xc[lane])
        if nb % 16 != 0 or d < 0 or d >= 1 << 32 or m < 0 or m >= 1 << 32 or d % 16 != 0 or src % 16 != 0:
            return False
        rd = (own + (d >> SHIFT)) & 0xFF
        if rd != (own + (m >> SHIFT)) & 0xFF or rd >= nctas:
            return False
        doff, moff = d & OFFSET_MASK, m & OFFSET_MASK
        tsize, tab, tn = smem, state[T.S_MBAR], state[T.S_MBAR_N]
        if rd != own:
            if ct == 0 or state[T.S_CTA] != 1 or cl_get(ct, rd, CL_ALIVE) == 0 or cl_get(ct, rd, CL_DIRTY) == 0:
                return False
            ex = cl_get(ct, rd, CL_EXITED)          # (a CTA whose threads have all exited: its memory is gone)
            live = False
            for i in range(cl_get(ct, rd, CL_NW) * LANES):
                live |= _peek8(ex + i) == 0
            if not live:
                return False
            tsize, tab, tn = cl_get(ct, rd, CL_SMEM_N), cl_get(ct, rd, CL_TAB), cl_get(ct, rd, CL_N)
        if doff + nb > tsize or src < 0 or src + nb > smem or mb_find(tab, tn, moff) < 0:
            return False
        if check:
            for b in range(nb):
                if _peek8(dirty + src + b) != U0:
                    return False            # an unfenced generic write: the executor reports it
        if not _reserve(ctl, nb, nb // 8):
            return False
        data = ctl[C_DATA] + ctl[C_NDATA]
        idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
        i0 = ctl[C_NIDX]
        for i in range(nb // 8):
            idx[i0 + i] = doff + 8 * i
            _poke(data + 8 * i, 8, _peek64(sp + src + 8 * i))
        _record(ctl, np.int64(B_TLOAD), pc, lane, doff, moff, nb, nb, nb // 8, np.int64(8), np.int64(0), coords, tm)
        if rd != own:
            i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)[ctl[C_NREC] - 1, R_CTA] = rd
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def scopy_rows(ctl, row, imrow, em, state, a8, a16, a32, a64, scratch, ctx):
    """A B_SCOPY row on the lanes in ``em`` (``bulkcall.sc_c``, "bulk_s2s" of families.APART: compiled and bound only
    for kernels with such rows): 0 staged, 1 the executor runs it (nothing kept)."""
    n0, d0, i0 = ctl[C_NREC], ctl[C_NDATA], ctl[C_NIDX]
    if not _scopy(ctl, row, imrow, em, state, a8, a16, a32, a64, scratch, ctx):
        ctl[C_LIVE] -= ctl[C_NREC] - n0
        ctl[C_NREC] = n0
        ctl[C_NDATA] = d0
        ctl[C_NIDX] = i0
        return 1
    _staged(ctl, state, ctx, n0, True)
    return 0


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _staged(ctl, state, ctx, n0, load):
    """The copies staged from record ``n0`` on: their warp, and (loads) their destinations marked in flight
    (ops.bulk._start_load)."""
    recs = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)
    for r in range(n0, ctl[C_NREC]):
        recs[r, R_WARP] = state[T.S_WARP] if state[T.S_CTA] == 1 else -1
    if load:                                # every lane went: mark the destinations in flight
        idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
        for r in range(n0, ctl[C_NREC]):
            tgt = recs[r, R_CTA]            # (a multicast's other CTAs: their counts, clusterx.py's table)
            inflight = ctx[C.K_INFLIGHT] if tgt < 0 else cl_target(state[T.S_CLUSTER], tgt)[1]
            es = recs[r, R_ES]
            first = recs[r, R_IDX]
            for i in range(recs[r, R_NIDX]):
                s = idx[first + i]
                for b in range(es):
                    q = inflight + 4 * (s + b)
                    _poke32(q, _peek32(q) + U1)
            if tgt < 0:
                state[T.S_INFLIGHT] += 1
            else:
                cl_inflight(state[T.S_CLUSTER], tgt, np.int64(1))


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def bulk_rows(row, imrow, em, state, a8, a16, a32, a64, scratch, ctx):
    """A BULKX copy row (a load, store or reduction: ``bulkcall.bulk_c`` calls ``pump`` and ``groups`` itself, so
    that their code is optimised once less) on the lanes in ``em``: 0, or 1 when the executor must run it (nothing
    kept or marked)."""
    ctl = i64_1d(state[T.S_BULK], NCTL)
    kind = row[T.X]
    rank = row[T.Y]
    if kind == B_SCOPY:                     # (bulkcall.sc_c, compiled apart: 0 while not bound, the executor runs it)
        sc = np.int64(_peek64(ctx[C.K_MPTR] + 8 * SCSLOT))
        if sc == 0:
            return 1
        return call_hop(sc, em, data_ptr(state), data_ptr(row), data_ptr(imrow), data_ptr(a8), a8.size,
                        data_ptr(scratch))
    xa, xb, xc = scratch[3], scratch[4], scratch[5]
    tm = reinterpret(scratch[8], np.int64)
    coords = reinterpret(scratch[12], np.int64)
    # (the operands as int64 variables, not literals: one specialisation of each helper)
    _addresses(row, imrow, xa, a8, a16, a32, a64, np.int64(T.A), np.int64(T.IMM_OFFSET))      # the tensor map
    _addresses(row, imrow, xc, a8, a16, a32, a64, np.int64(T.C), np.int64(2))                 # the shared box
    if kind == B_TLOAD:
        if state[T.S_MBAR] == 0:
            return 1
        _addresses(row, imrow, xb, a8, a16, a32, a64, np.int64(T.B), np.int64(1))             # the mbarrier
    for k in range(rank):                                                 # the coordinates (s32) in rows 0, 1, 9..11
        _gather(row[T.V0 + k], np.int64(32), np.int64(0), scratch[_CROW[k]], a8, a16, a32, a64, imrow)
    mcast = kind == B_TLOAD and row[T.V0 + 5] != -1                       # ctaMask (b16) in row 6
    mc = np.int64(0)
    if mcast:                               # (bulkcall.mc_c, compiled apart: 0 while not bound, the executor runs it)
        mc = np.int64(_peek64(ctx[C.K_MPTR] + 8 * MCSLOT))
        if mc == 0:
            return 1
        _gather(row[T.V0 + 5], np.int64(16), np.int64(0), scratch[6], a8, a16, a32, a64, imrow)
    pc = ctx[C.K_P]
    n0, d0, i0 = ctl[C_NREC], ctl[C_NDATA], ctl[C_NIDX]
    ok = True
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        for k in range(5):
            coords[k] = 0
        for k in range(rank):
            v = np.int64(scratch[_CROW[k], lane] & np.uint64(0xFFFFFFFF))
            coords[k] = v - (np.int64(1) << 32) if v >= 1 << 31 else v
        p = _tmap_at(state, lane, np.int64(xa[lane]))
        if p == 0 or not _decode(p, tm) or not _box_ok(tm, rank, coords, kind != B_TLOAD):
            ok = False
            break
        base = np.int64(xc[lane])
        if base % 128 != 0:
            ok = False
            break
        if mcast:
            if call_hop(mc, lane, data_ptr(state), data_ptr(row), data_ptr(imrow), data_ptr(a8), a8.size,
                        data_ptr(scratch)) != 0:
                ok = False
                break
        elif kind == B_TLOAD:
            moff = np.int64(xb[lane])
            if base < 0 or base >= 1 << SHIFT or moff < 0 or moff >= 1 << SHIFT or \
                    mb_find(state[T.S_MBAR], state[T.S_MBAR_N], moff) < 0:
                ok = False                  # another CTA of the cluster, or no such mbarrier: the executor
                break
            if not _load(ctl, state, tm, rank, coords, base, moff, lane, pc):
                ok = False
                break
        elif not _store(ctl, state, tm, rank, coords, base, lane, pc, kind, row[T.Z] if kind == B_TRED else -1):
            ok = False
            break
    if not ok:
        ctl[C_LIVE] -= ctl[C_NREC] - n0
        ctl[C_NREC] = n0
        ctl[C_NDATA] = d0
        ctl[C_NIDX] = i0
        return 1
    _staged(ctl, state, ctx, n0, kind == B_TLOAD)
    return 0


# -- the CTA loop completes its staged copies (the async unit's pump and the bulk async-groups, on the rows) ---------

@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _span(ctl, state, rec):
    """(host address of the lowest global address of staged store ``rec``, that address) when all its elements lie
    in one allocation (tma.global_write's fast path), else (0, 0)."""
    idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
    n = rec[R_NIDX]
    if n == 0:
        return np.int64(0), np.int64(0)
    lo = idx[rec[R_IDX]]
    hi = lo
    for i in range(rec[R_IDX], rec[R_IDX] + n):
        lo = min(lo, idx[i])
        hi = max(hi, idx[i])
    return global_find(state[T.S_GTAB], state[T.S_GTAB_N], lo, hi + rec[R_ES] - lo), lo


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _store_ok(ctl, state, r):
    """Whether staged store ``r`` can complete in the loop: a plain store (a reduction's arithmetic is the
    executor's) whose every element lies inside an allocation (else tma.global_write raises: the executor's)."""
    rec = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)[r]
    if rec[R_KIND] != B_TSTORE:
        return False
    if rec[R_NIDX] == 0 or _span(ctl, state, rec)[0] != 0:
        return True
    idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
    es = rec[R_ES]
    for i in range(rec[R_IDX], rec[R_IDX] + rec[R_NIDX]):
        if global_find(state[T.S_GTAB], state[T.S_GTAB_N], idx[i], es) == 0:
            return False
    return True


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _complete(ctl, state, r):
    """AsyncCopy.complete of staged copy ``r`` (checked before: ``_store_ok``, ``pump``): a load's bytes land in
    shared memory, their in-flight counts and generic-proxy marks are released and its mbarrier's tx-count completes
    (ops.bulk._land, ``land_bytes``); a store's bytes go to global memory (tma.global_write). The mbarriers' version
    moves once a copy (AsyncUnit.pump)."""
    rec = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)[r]
    idx = i64_1d(ctl[C_IDX], ctl[C_IDXCAP])
    es = rec[R_ES]
    data = ctl[C_DATA] + rec[R_DATA]
    if rec[R_KIND] == B_TLOAD:
        tgt = rec[R_CTA]
        smem, infl, dirty, tab, nb = state[T.S_SMEM_PTR], ctl[C_INFL], ctl[C_DIRTYP], state[T.S_MBAR], state[T.S_MBAR_N]
        if tgt >= 0:                        # (another CTA of a multicast: its arrays, clusterx.py's table)
            smem, infl, dirty, tab, nb = cl_target(state[T.S_CLUSTER], tgt)
        nid = rec[R_NIDX]
        at = rec[R_IDX]
        i = 0
        while i < nid:                      # runs of elements contiguous in shared memory, as byte runs
            s = idx[at + i]
            k = i + 1
            while k < nid and idx[at + k] == s + (k - i) * es:
                k += 1
            span = (k - i) * es
            _copy_run(smem + s, data + i * es, span)
            q = i32_1d(infl + 4 * s, span)
            d = u8_1d(dirty + s, span)
            for b in range(span):
                q[b] -= 1
                d[b] = 0
            i = k
        if tgt < 0:
            state[T.S_INFLIGHT] -= 1
        else:
            cl_inflight(state[T.S_CLUSTER], tgt, np.int64(-1))
        mb_complete_tx(tab, mb_find(tab, nb, rec[R_MBAR]), rec[R_BYTES])
        state[T.S_MBAR_CHANGED] += 1
    else:
        base, lo = _span(ctl, state, rec)
        nid = rec[R_NIDX]
        at = rec[R_IDX]
        if base != 0:                       # one allocation: runs of elements contiguous in global memory
            i = 0
            while i < nid:
                a = idx[at + i]
                k = i + 1
                while k < nid and idx[at + k] == a + (k - i) * es:
                    k += 1
                _copy_run(base + (a - lo), data + i * es, (k - i) * es)
                i = k
        else:
            for i in range(nid):
                a = idx[at + i]
                _poke(global_find(state[T.S_GTAB], state[T.S_GTAB_N], a, es), es, _peek(data + i * es, es))
    state[T.S_MBAR_CHANGED] += 1
    rec[R_KIND] = 0
    ctl[C_LIVE] -= 1


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def _empty(ctl):
    """Every staged copy completed: the staging area starts again from its beginning."""
    if ctl[C_LIVE] == 0:
        ctl[C_NREC] = 0
        ctl[C_NDATA] = 0
        ctl[C_NIDX] = 0


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def pump(ctl, state):
    """AsyncUnit.pump at a round's end of the CTA loop: every staged copy completes, in issue order. 0: none was
    staged; 1: they completed; 2: Python must (the async unit holds copies of its own, issued before these, or a
    copy would raise: a reduction, a store outside every allocation, an mbarrier gone or a tx-count underflow)."""
    n = ctl[C_NREC]
    if ctl[C_LIVE] == 0:
        return 0
    if ctl[C_PYPEND] != 0 or state[T.S_MBAR] == 0:
        return 2
    recs = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)
    tab = state[T.S_MBAR]
    nb = state[T.S_MBAR_N]
    ct = state[T.S_CLUSTER]
    for r in range(n):
        k = recs[r, R_KIND]
        if k == B_TLOAD:
            tgt = recs[r, R_CTA]            # (another CTA of a multicast: its table; its async unit holds none)
            if tgt >= 0 and (ct == 0 or cl_get(ct, tgt, CL_PYPEND) != 0):
                return 2
            t, tn = tab, nb
            if tgt >= 0:
                t, tn = cl_target(ct, tgt)[3:5]
            i = mb_find(t, tn, recs[r, R_MBAR])
            if i < 0:
                return 2
            total = 0                       # the tx-count after this copy and the ones before it on its barrier
            for q in range(r + 1):
                if recs[q, R_KIND] == B_TLOAD and recs[q, R_MBAR] == recs[r, R_MBAR] and recs[q, R_CTA] == tgt:
                    total += recs[q, R_BYTES]
            if _mb(t, i, TX) - total < -TX_MAX:
                return 2
        elif k != 0 and not _store_ok(ctl, state, r):
            return 2
    for r in range(n):
        if recs[r, R_KIND] != 0:
            _complete(ctl, state, r)
    _empty(ctl)
    return 1


@njit(cache=True, _nrt=False, pipeline_class=LEAN)
def groups(ctl, state, em, kind, keep):
    """cp.async.bulk.commit_group (AsyncUnit.commit_lanes) and wait_group{.read} N (wait_group_lanes) of warp
    S_WARP of the CTA loop on the staged copies: 0, or 1 when the executor must run it (a warp run alone, copies in
    the async unit, a copy that would raise or a reduction among those the wait completes)."""
    if state[T.S_CTA] != 1 or ctl[C_GRP] == 0 or ctl[C_PYPEND] != 0:
        return 1
    w = state[T.S_WARP]
    grp = i64_2d(ctl[C_GRP], ctl[C_GRPN], LANES)
    recs = i64_2d(ctl[C_REC], ctl[C_RECCAP], RECW)
    n = ctl[C_NREC]
    if kind == B_COMMIT:
        for r in range(n):
            k = recs[r, R_KIND]
            if (k == B_TSTORE or k == B_TRED) and recs[r, R_WARP] == w and recs[r, R_GROUP] < 0 and \
                    (em >> recs[r, R_LANE]) & 1:
                recs[r, R_GROUP] = grp[w, recs[r, R_LANE]]
        for lane in range(LANES):
            if (em >> lane) & 1:
                grp[w, lane] += 1
        ctl[C_GRPCHG] = 1
        return 0
    lanes = np.int64(0)                     # the lanes with copies to complete: checked first
    for r in range(n):
        k = recs[r, R_KIND]
        if (k == B_TSTORE or k == B_TRED) and recs[r, R_WARP] == w and (em >> recs[r, R_LANE]) & 1 and \
                0 <= recs[r, R_GROUP] < grp[w, recs[r, R_LANE]] - keep:
            if not _store_ok(ctl, state, r):
                return 1
            lanes |= np.int64(1) << recs[r, R_LANE]
    for lane in range(LANES):               # lane after lane, each lane's copies in issue order
        if (lanes >> lane) & 1:
            limit = grp[w, lane] - keep
            for r in range(n):
                k = recs[r, R_KIND]
                if (k == B_TSTORE or k == B_TRED) and recs[r, R_WARP] == w and recs[r, R_LANE] == lane and \
                        0 <= recs[r, R_GROUP] < limit:
                    _complete(ctl, state, r)
    _empty(ctl)
    return 0


@njit(cache=True)
def land_bytes(smem, inflight, dirty, starts, data, es):
    """ops.bulk._land's byte moves for a staged load: element i's ``es`` bytes ``data[i * es:]`` into shared memory at
    ``starts[i]``, their in-flight marks released, their generic-proxy marks cleared."""
    for i in range(starts.size):
        s = starts[i]
        for b in range(es):
            smem[s + b] = data[i * es + b]
            inflight[s + b] -= 1
            dirty[s + b] = False


def _lands(w, starts, data, es, mbar, nbytes, text):
    """The completion of a staged load (ops.bulk._land without a sanitiser, which these copies never have)."""
    def make(copy):
        au = w.async_unit

        def complete():
            land_bytes(w.smem, w.smem_inflight, au.dirty, starts, data, es)
            w._inflight_n -= 1
            au.mbarriers.complete_tx(text, mbar, nbytes, copy.lane)
        return complete
    return make


class Staging:
    """The staged copies of one launch (the arrays the rows write through ``ctl``) and their hand-over to the
    async unit of the CTA (``drain``)."""

    def __init__(self, smem=0):
        self.ctl = np.zeros(NCTL, np.int64)
        # a store or reduction stages one index per element, and what the CTA loop completes keeps its room until the
        # loop returns: room for the CTA's shared memory copied out four times over, so that the first launch of a
        # translation (an epilogue's stores) hands no copy back for want of room (np.zeros: pages are touched only
        # where copies are staged)
        self._alloc(256, max(1 << 20, 4 * int(smem)), max(1 << 17, 4 * int(smem)))

    def _alloc(self, nrec, ndata, nidx):
        self.rec = np.zeros((nrec, RECW), np.int64)
        self.data = np.zeros(ndata, np.uint8)
        self.idx = np.zeros(nidx, np.int64)
        c = self.ctl
        c[C_RECCAP], c[C_REC] = nrec, self.rec.ctypes.data
        c[C_DATACAP], c[C_DATA] = ndata, self.data.ctypes.data
        c[C_IDXCAP], c[C_IDX] = nidx, self.idx.ctypes.data
        c[C_NREC] = c[C_NDATA] = c[C_NIDX] = c[C_LIVE] = 0
        c[C_WANT_REC] = c[C_WANT_DATA] = c[C_WANT_IDX] = 0

    @property
    def address(self):
        return self.ctl.ctypes.data

    def used(self):
        """Whether copies are staged, or a copy did not fit (the area grows at the next drain)."""
        c = self.ctl
        return bool(c[C_NREC] or c[C_WANT_REC] or c[C_WANT_DATA] or c[C_WANT_IDX])

    def drain(self, w, warps=None):
        """Hand the staged copies to the CTA's async unit, in issue order, as ``ops.bulk`` issues them (warp ``w``'s, or
        those of the CTA loop's ``warps``); then empty the staging area (grown when a copy did not fit)."""
        from ...ops.bulk import RED_OPS, queue_load, queue_store
        c = self.ctl
        n = int(c[C_NREC])
        code = w.program.code
        for r in self.rec[:n].tolist():
            kind, pc, lane, smem, mbar, nbytes, d, nd, i, ni, es, rank = r[:12]
            if kind == 0:
                continue                    # completed in the CTA loop
            if warps is not None:
                w = warps[r[R_WARP]]
            text = code[pc].instr.text or code[pc].instr.opcode
            coords = r[R_COORD:R_COORD + rank]
            data = self.data[d:d + nd].copy()
            if kind == B_TLOAD:
                starts = self.idx[i:i + ni].copy()
                tw = w if r[R_CTA] < 0 else w._cta.cluster.ctas[r[R_CTA]].warps[0]     # (a multicast's CTA)
                info = {"bytes": nbytes, "dst": smem, "mbar": mbar, "coords": coords,
                        "box": r[R_BOX:R_BOX + rank], "cta": tw.cluster_rank} if rank else \
                    {"bytes": nbytes, "dst": smem, "mbar": mbar, "cta": tw.cluster_rank}     # (B_SCOPY)
                queue_load(tw, text, lane, None, data, mbar, nbytes, info, _lands(tw, starts, data, es, mbar, nbytes,
                                                                                  text))
            else:
                queue_store(w, text, lane, self.idx[i:i + ni].copy(), data.reshape(ni, es),
                            None if kind == B_TSTORE else RED_OPS[mbar], r[R_TYPE],
                            {"bytes": nbytes, "src": smem, "coords": coords}, r[R_GROUP])
        want = (int(c[C_WANT_REC]), int(c[C_WANT_DATA]), int(c[C_WANT_IDX]))
        if any(want):
            self._alloc(max(2 * want[0], self.rec.shape[0]), max(2 * want[1], self.data.size),
                        max(2 * want[2], self.idx.size))
        else:
            c[C_NREC] = c[C_NDATA] = c[C_NIDX] = 0
        c[C_LIVE] = 0
