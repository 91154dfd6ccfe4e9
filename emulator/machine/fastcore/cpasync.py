"""cp.async (Ampere's asynchronous copy from global into shared memory) in the fast engine.

The reference (``ops.datamove``, ``machine.warp._CpAsyncState``) keeps each warp's copies in flight as a list
of records; the fast engine keeps the same records in arrays (``CpAsyncTable``: one row per warp of a CTA), which
both the jitted loop (the functions below, called from ``loop.run``) and the reference executors (through
``CpAsyncRows``, the warp's ``cp_async`` while the fast engine runs it) read and write, so that a pipeline whose
instructions alternate between the two engines keeps one state.

The semantics are the reference's, step for step:

* ``cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}`` reads the source bytes at issue
  (``src-size`` of them, the rest of the ``cp-size`` bytes are zeros), marks the destination bytes in flight
  (``smem_inflight``, one count per copy covering a byte; ``S_INFLIGHT`` counts the lane copies of the CTA) and
  appends one record: destination per lane, data per lane, live lanes, group per lane (-1: not committed).
  It logs one shared-memory access (destination and source addresses of every lane).
* ``commit_group``: the active lanes' uncommitted copies join their next group number.
* ``wait_group N`` lands, in issue order, every copy of the active lanes whose group is older than their ``N``
  newest groups; ``wait_all`` commits, then waits with ``N = 0``. Records without live lanes are dropped.

Anything the loop does not check itself (an address that breaks a rule, a destination byte still in flight,
``src-size`` above ``cp-size``, a source outside every allocation, no free record, a full access log) hands
the instruction back: the reference then raises its error or runs it. The eager mode
(``WarpOptions(cp_async="eager")``) gets a table of no records, so every copy is handed back.

Record arrays of a table of ``nw`` warps and ``R`` records: ``dst`` int64[nw, R, 32]; ``data`` uint64[nw, R,
32, 2] (16 bytes a lane, zeros past the copy's size); ``group`` int64[nw, R, 32]; ``meta`` int64[nw, R, 2]
(bit mask of the live lanes, cp-size); ``count`` int64[nw, 33] (groups each lane committed, then the number
of records in use).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...memory import count_rows
from . import table as T
from . import ccall as C
from .raw import _allocation, _peek8, _peek64, _poke32, _poke64
from .memx import wg_free
from ...numerics.jitcache import INNER, lean

LEAN = lean()       # the loops' pipeline (jitcache.lean: no SSA; tests/test_lean_pipeline.py checks the types)

LANES = 32
RECORDS = 16                      # the fewest records a warp's table starts with (doubled when full)
MAX_FIRST = 256                   # the most it starts with (about 1 KiB a record and warp; more: grown when needed)
_BITS = np.int64(1) << np.arange(LANES, dtype=np.int64)


def _bits(mask):
    return int(_BITS[np.asarray(mask, np.bool_)].sum())


def _mask(bits):
    return ((int(bits) >> np.arange(LANES)) & 1).astype(np.bool_)


class CpAsyncTable:
    """The cp.async records of the warps of one CTA (or of one warp), in the arrays the jitted loop takes."""

    def __init__(self, nwarps, eager=False, sizes=None):
        """``sizes``: the translation's record count (``records``, see ``records_for``), kept up to date when a
        table grows, so that the next CTA or launch starts with the grown size."""
        self.count = np.zeros((nwarps, LANES + 1), np.int64)
        self.sizes = sizes
        self._alloc(nwarps, 0 if eager else RECORDS if sizes is None else sizes.get("records", RECORDS))

    def _alloc(self, nw, r):
        # a record is written whole when it is issued, before anything reads it: no need to clear the arrays
        self.dst = np.empty((nw, r, LANES), np.int64)
        self.data = np.empty((nw, r, LANES, 2), np.uint64)
        self.group = np.empty((nw, r, LANES), np.int64)
        self.meta = np.empty((nw, r, 2), np.int64)

    def grow(self):
        old = (self.dst, self.data, self.group, self.meta)
        nw, r = self.meta.shape[:2]
        self._alloc(nw, max(2 * r, RECORDS))
        for new, o in zip((self.dst, self.data, self.group, self.meta), old):
            new[:, :r] = o
        if self.sizes is not None:
            self.sizes["records"] = max(self.sizes.get("records", 0), self.meta.shape[1])

    def row(self, k):
        """Warp ``k``'s arrays, as ``loop.run`` takes them."""
        return self.dst[k], self.data[k], self.group[k], self.meta[k], self.count[k]


def records_for(tr, prog):
    """The record sizes of ``prog``'s cp.async tables on the translation ``tr`` (a dict, shared by its CTAs and
    launches): the records start as many as the program has cp.async copy instructions (rounded up to 16, at most
    MAX_FIRST; a warp that runs straight through them with no wait needs one record each, e.g. a pipeline's
    prologue and first stage), and a table that grows past that (a loop issuing more before it waits) leaves its
    size here."""
    sizes = tr.__dict__.get("_cp_sizes")
    if sizes is None:
        n = sum(1 for op in prog.code if op.kind == "op" and op.instr is not None and
                op.instr.opcode.startswith("cp.async.") and not op.instr.opcode.startswith("cp.async.bulk") and
                "group" not in op.instr.opcode and "wait" not in op.instr.opcode and "mbarrier" not in op.instr.opcode)
        sizes = tr._cp_sizes = {"records": min(max(RECORDS, -(-n // RECORDS) * RECORDS), MAX_FIRST)}
    return sizes


class CpAsyncRows:
    """Warp ``k``'s cp.async state in a ``CpAsyncTable``, with the interface of ``machine.warp._CpAsyncState``
    (the reference executors' calls); same results, record for record."""

    def __init__(self, table, k):
        self.table, self.k = table, k

    @property
    def committed(self):
        return self.table.count[self.k, :LANES]

    def _n(self):
        return int(self.table.count[self.k, LANES])

    def issue(self, dst, data, mask):
        t, k = self.table, self.k
        n = self._n()
        if n == t.meta.shape[1]:
            t.grow()
        cp = data.shape[1]
        t.dst[k, n] = dst
        raw = t.data[k, n].view(np.uint8)
        raw[:] = 0
        raw[:, :cp] = np.where(np.asarray(mask)[:, None], data, 0)
        t.group[k, n] = -1
        t.meta[k, n] = (_bits(mask), cp)
        t.count[k, LANES] = n + 1

    def commit(self, mask):
        t, k = self.table, self.k
        committed = self.committed
        for r in range(self._n()):
            group = t.group[k, r]
            new = mask & _mask(t.meta[k, r, 0]) & (group < 0)
            group[new] = committed[new]
        committed[mask] += 1

    def retire(self, warp, mask, keep):
        t, k = self.table, self.k
        limit = self.committed - keep
        alive = []
        for r in range(self._n()):
            live = _mask(t.meta[k, r, 0])
            group = t.group[k, r]
            done = mask & live & (group >= 0) & (group < limit)
            if done.any():
                lanes = np.flatnonzero(done)
                cp = int(t.meta[k, r, 1])
                idx = t.dst[k, r, lanes, None] + np.arange(cp)
                if warp.san is not None:        # the copy lands: a write by the lanes that issued it (sanitizer)
                    warp.san.shared(warp, "cp.async", t.dst[k, r], done, cp, True,
                                    t.data[k, r].view(np.uint8)[:, :cp])
                warp.smem[idx] = t.data[k, r].view(np.uint8)[lanes, :cp]
                count_rows(warp.smem_inflight, t.dst[k, r, lanes], cp, -1)
                warp._inflight_n -= lanes.size
                live &= ~done
                t.meta[k, r, 0] = _bits(live)
            if live.any():
                alive.append(r)
        for i, r in enumerate(alive):
            if i != r:
                for a in (t.dst, t.data, t.group, t.meta):
                    a[k, i] = a[k, r]
        t.count[k, LANES] = len(alive)

    def pending(self):
        """The copies in flight, in issue order, and the groups each lane committed (``_CpAsyncState.pending``)."""
        t, k = self.table, self.k
        out = []
        for r in range(self._n()):
            live = _mask(t.meta[k, r, 0])
            cp = int(t.meta[k, r, 1])
            out.append((np.flatnonzero(live).tolist(), t.dst[k, r][live].tolist(),
                        t.data[k, r].view(np.uint8)[live, :cp].tobytes(), t.group[k, r][live].tolist()))
        return out, self.committed.tolist()


# -- the loop's side ---------------------------------------------------------------------------------------

@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def cp_step(opc, row, imrow, em, p, nlog, a32, a64, inflight, gtab, state, log_pc, log_addr, log_mask, log_src,
            cdst, cdata, cgroup, cmeta, ccount, addrs, srcs, sizes, ptrs):
    """One cp.async instruction (opcode ``opc``: CPASYNC, CP_COMMIT, CP_WAIT) for the lanes ``em``, with the
    warp's records ``cdst`` .. ``ccount``. Returns the access log's new length, or -1 (nothing done) when the
    reference must run it. (One function with few loops: compile time counts; ``nl`` is 32, read from an
    array so that the compiler does not unroll every loop over the lanes.)"""
    nl = addrs.shape[0]
    if opc != T.CPASYNC:
        if opc == T.CP_COMMIT or row[T.Y] == 1:
            for r in range(ccount[nl]):         # commit_group: the uncommitted copies join the lane's next group
                new = cmeta[r, 0] & em
                for lane in range(nl):
                    if (new >> lane) & 1 and cgroup[r, lane] < 0:
                        cgroup[r, lane] = ccount[lane]
            for lane in range(nl):
                if (em >> lane) & 1:
                    ccount[lane] += 1
        if opc == T.CP_WAIT:
            _wait(em, row[T.X], cdst, cdata, cgroup, cmeta, ccount, inflight, state)
        return nlog
    n = ccount[nl]
    if n >= cmeta.shape[0] or nlog >= log_pc.shape[0]:
        return -1
    cp = row[T.X]
    ed, es, en = row[T.A], row[T.B], row[T.C]
    od, os = np.int64(imrow[0]), np.int64(imrow[1])
    size = state[T.S_SMEM_SIZE]
    check = state[T.S_INFLIGHT] > 0
    k = state[T.S_LASTALLOC]
    for lane in range(nl):                      # addresses as ops.common.address computes them, then the rules
        d = od if ed == -1 else (np.int64(a32[(ed & T.INDEX_MASK) + lane]) + od) & 0xFFFFFFFF \
            if ed >> T.CLASS_SHIFT == T.R32 else np.int64(a64[(ed & T.INDEX_MASK) + lane]) + od
        s = os if es == -1 else (np.int64(a32[(es & T.INDEX_MASK) + lane]) + os) & 0xFFFFFFFF \
            if es >> T.CLASS_SHIFT == T.R32 else np.int64(a64[(es & T.INDEX_MASK) + lane]) + os
        nb = cp if en == -1 else np.int64(imrow[-2 - en]) if en < -1 else np.int64(a32[(en & T.INDEX_MASK) + lane])
        addrs[lane] = d
        srcs[lane] = s
        sizes[lane] = nb
        if not (em >> lane) & 1:
            continue
        if d % cp != 0 or d < 0 or d + cp > size or s % cp != 0 or nb > cp:
            return -1                           # the reference raises
        if nb > 0:
            if s < 0:
                return -1
            k = _allocation(gtab, state, k, s, nb)
            if k < 0:
                return -1
            ptrs[lane] = gtab[k, 2] + (s - gtab[k, 0])
        if check:
            for b in range(cp):
                if inflight[d + b] != 0:
                    return -1
        if not wg_free(state, d, cp):           # bytes an in-flight wgmma.mma_async reads (memx.py)
            return -1
    active = 0
    for lane in range(nl):
        d = addrs[lane]
        cdst[n, lane] = d
        cgroup[n, lane] = -1
        log_addr[nlog, lane] = d
        log_src[nlog, lane] = srcs[lane]
        w0 = np.uint64(0)
        w1 = np.uint64(0)
        if (em >> lane) & 1:
            active += 1
            nb = sizes[lane]
            q = ptrs[lane]
            if nb == 16:
                w0 = _peek64(q)
                w1 = _peek64(q + 8)
            elif nb == 8:
                w0 = _peek64(q)
            else:                               # 4 bytes, or a src-size: byte by byte
                for b in range(nb):
                    v = _peek8(q + b) << np.uint64(8 * (b & 7))
                    if b < 8:
                        w0 |= v
                    else:
                        w1 |= v
            for b in range(cp):
                inflight[d + b] += 1
        cdata[n, lane, 0] = w0
        cdata[n, lane, 1] = w1
    cmeta[n, 0] = em
    cmeta[n, 1] = cp
    ccount[nl] = n + 1
    state[T.S_INFLIGHT] += active
    log_pc[nlog] = p
    log_mask[nlog] = em
    return nlog + 1


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _wait(em, keep, cdst, cdata, cgroup, cmeta, ccount, inflight, state):
    """cp.async.wait_group ``keep`` for the lanes ``em``: land the older groups' copies, in issue order (and,
    within a copy, in lane order: where two lanes copy to the same bytes, the last wins)."""
    nl = cdst.shape[1]
    base = state[T.S_SMEM_PTR]
    landed = 0
    out = 0
    for r in range(ccount[nl]):
        live = cmeta[r, 0]
        cp = cmeta[r, 1]
        for lane in range(nl):
            if (live & em) >> lane & 1 and 0 <= cgroup[r, lane] < ccount[lane] - keep:
                d = cdst[r, lane]
                if cp == 16:
                    _poke64(base + d, cdata[r, lane, 0])
                    _poke64(base + d + 8, cdata[r, lane, 1])
                elif cp == 8:
                    _poke64(base + d, cdata[r, lane, 0])
                else:
                    _poke32(base + d, cdata[r, lane, 0])
                for b in range(cp):
                    inflight[d + b] -= 1
                landed += 1
                live &= ~(1 << lane)
        cmeta[r, 0] = live
        if live:
            if out != r:
                for lane in range(nl):
                    cdst[out, lane] = cdst[r, lane]
                    cgroup[out, lane] = cgroup[r, lane]
                    cdata[out, lane, 0] = cdata[r, lane, 0]
                    cdata[out, lane, 1] = cdata[r, lane, 1]
                cmeta[out, 0] = live
                cmeta[out, 1] = cp
            out += 1
    ccount[nl] = out
    state[T.S_INFLIGHT] -= landed


def entry(em, prow, pimm, parena, n, pscratch):
    """The cp.async family (CPASYNC, CP_COMMIT, CP_WAIT) as one C-callable function (``ccall.SIG``;
    ``families.py``): ``cp_step`` with the warp's records and the access log found through the ctx; the new log
    length goes back in ctx ``K_NLOG``. 1: hand the instruction back."""
    a8 = C.u8_1d(parena, n)
    row = C.i64_1d(prow, T.NFIELDS)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    cap, r = ctx[C.K_LOG_N], ctx[C.K_CP_R]
    got = cp_step(row[T.OP], row, C.u64_1d(pimm, T.NIMM), em, ctx[C.K_P], ctx[C.K_NLOG], C.reinterpret(a8, np.uint32),
                  C.reinterpret(a8, np.uint64), C.i32_1d(ctx[C.K_INFLIGHT], ctx[C.K_INFLIGHT_N]),
                  C.i64_2d(ctx[C.K_GTAB], ctx[C.K_GTAB_N], 3), C.i64_1d(ctx[C.K_STATE], T.NSTATE),
                  C.i64_1d(ctx[C.K_LOG_PC], cap), C.i64_2d(ctx[C.K_LOG_ADDR], cap, ctx[C.K_LOG_W]),
                  C.i64_1d(ctx[C.K_LOG_MASK], cap), C.i64_2d(ctx[C.K_LOG_SRC], cap, ctx[C.K_LOG_SRC_W]),
                  C.i64_2d(ctx[C.K_CPD], r, LANES), C.u64_3d(ctx[C.K_CPX], r, LANES, 2),
                  C.i64_2d(ctx[C.K_CPG], r, LANES), C.i64_2d(ctx[C.K_CPM], r, 2),
                  C.i64_1d(ctx[C.K_CPC], LANES + 1), C.reinterpret(s[2], np.int64), C.reinterpret(s[10], np.int64),
                  C.reinterpret(s[11], np.int64), C.reinterpret(s[7], np.int64))
    if got < 0:
        return 1
    ctx[C.K_NLOG] = got
    return 0
