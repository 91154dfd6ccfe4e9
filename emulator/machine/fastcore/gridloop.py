"""The independent CTAs of a launch in one jitted call (the grid loop).

A launch's CTAs that nothing reads after their run (``keep="none"``, all but the last with ``keep="last"``) run
one after the other on one CTA's arrays (``FastCTA``): for each, ``grid_loop`` restores the arrays' block from a
template (the block as ``FastCTA.start`` set it up for the batch's first CTA: PCs, exit masks, barrier state,
special registers, ``.local`` and variable addresses, parameter bytes, zeroed shared memory), writes the CTA's
own ids (``%ctaid``, ``%clusterid``, ``%smid``: the special registers that differ between the CTAs of a launch
without clusters), sets the state vector's fields as ``FastCTA.run`` does before its first run, and calls the
CTA loop (``loop.run_cta``) through its address (``ccall.call_native``: numba does not compile or link the CTA
loop into this function). A full shared-memory log is dropped and the loop goes on, as it is for a CTA nobody
keeps. The first CTA whose outcome needs Python (any status but "every thread exited": an instruction handed
back, printf, the instruction budget spent, a spin check, a deadlock) stops the grid loop: its arrays hold the
state the CTA loop left, and ``machine.cta.CTA`` takes it over there (``FastLaunch.resume``, ``FastCTA.run``
skips its first call), exactly as if ``FastCTA.run`` had made that call itself.

Only kernels whose CTAs need nothing of Python around the CTA loop take this path (``eligible``): no async unit
(mbarriers, bulk copies, wgmma, proxy fences), no sanitizer, profile, debugger, trace, seeded schedule or
timeline, no clusters. A kernel with cp.async runs its CTAs on the first CTA's cp.async table (its counts zeroed
for each CTA; a CTA that ends with copies in flight stops for Python). ``ON = False`` turns it off (every CTA then
runs through ``FastCTA.run``).
"""
import numpy as np
from numba import njit

from . import table as T
from .ccall import call_native
from .engine import LOG_CAP, FastCTA, FastLaunch, _has_cp_async, _touches_unit, _uses_cp_async
from ...numerics.jitcache import lean

ON = True               # False: every CTA goes through FastCTA.run (the tests compare both)
CHUNK = 4096            # CTAs per call of the grid loop (the progress bar moves between calls)
_SMID = 132             # %smid = linear CTA id % 132 (machine.warp.H100_SMS)

# the special registers that differ between the CTAs of a launch without clusters: the column's kind in
# ``grid_loop`` (0..2: the CTA id's axis, 3: %smid)
_KIND = {"%ctaid.x": 0, "%ctaid.y": 1, "%ctaid.z": 2, "%clusterid.x": 0, "%clusterid.y": 1, "%clusterid.z": 2,
         "%smid": 3}


@njit(cache=True, _nrt=False, pipeline_class=lean())      # (the loops' pipeline)
def grid_loop(cta_addr, targs, block, template, a32, cols, gx, gy, first, count, state, fields, nhead, cst, out,
              store, logs, flw, flpc, flmask, fladdr, flsrc, klog, klog_addr, has_src, cpc, kcp):
    """Run CTAs ``first`` .. ``first + count - 1`` (linear ids of a grid ``gx`` x ``gy`` x ..) on the arrays of
    ``targs`` (``loop.run_cta``'s arguments, views of ``block``, whose words ``template`` restores), with the
    special registers of the CTA's ids written (``cols``: rows (arena column, kind)) and the state vector's fields
    set as ``FastCTA.run`` sets them (``fields``: rows (index, value), the first ``nhead`` once a CTA, the others
    before each call of the CTA loop). ``out[0]``: the
    instruction budget (read, then written back); ``out[1]``: how many CTAs ran to their end (the next one, if
    any, stopped for Python, or, ``out[2]`` = 1, did not start: the kept logs' room ran out).

    Kept CTAs (``store`` has rows): CTA i's block at its end is copied to row i of ``store`` and its shared-memory
    log (the launch's ``fl*`` arrays: warps, PCs, masks, addresses, cp.async sources when ``has_src``) to the
    ``logs[i, 1]`` entries of ``klog`` (warp, PC, mask rows) and ``klog_addr`` (addresses, sources) from
    ``logs[i, 0]``, its cp.async counts (``cpc``: the committed groups of each lane) to ``kcp[i]`` when ``kcp`` has
    rows; a CTA whose log fills during its run stops for Python (which keeps each full log).

    ``cpc`` (the CTA's cp.async counts) starts at zero for each CTA; a CTA that ends with copies in flight or
    records alive stops for Python (its shared memory's in-flight marks belong to it)."""
    budget = out[0]
    nw = a32.shape[0]
    kept = store.shape[0] > 0
    used = 0
    cap = klog.shape[1]
    out[2] = 0
    for i in range(count):
        if kept and (i >= store.shape[0] or used + flw.shape[0] > cap):
            out[0] = budget
            out[1] = i
            out[2] = 1
            return
        for k in range(block.shape[0]):        # (uint64 words: the block's size is a multiple of 64 bytes)
            block[k] = template[k]
        lin = first + i
        for j in range(cols.shape[0]):
            kind = cols[j, 1]
            if kind == 0:
                v = np.uint32(lin % gx)
            elif kind == 1:
                v = np.uint32((lin // gx) % gy)
            elif kind == 2:
                v = np.uint32(lin // (gx * gy))
            else:
                v = np.uint32(lin % _SMID)
            c = cols[j, 0]
            for w in range(nw):
                for lane in range(32):
                    a32[w, c + lane] = v
        for j in range(nhead):
            state[fields[j, 0]] = fields[j, 1]
        for w in range(cpc.shape[0]):
            for lane in range(cpc.shape[1]):
                cpc[w, lane] = 0
        inflight = 0
        while True:
            for j in range(nhead, fields.shape[0]):
                state[fields[j, 0]] = fields[j, 1]
            state[T.S_BUDGET] = budget
            state[T.S_INFLIGHT] = inflight
            call_native(cta_addr, targs)
            budget = state[T.S_BUDGET]
            inflight = state[T.S_INFLIGHT]
            if state[T.S_MBAR_CHANGED] != 0 or state[T.S_MBAR_REBUILT] != 0:
                break
            s = cst[T.C_STATUS]
            if s == T.CTA_DONE:
                break
            if s == T.CTA_SLOW and state[T.S_STATUS] == T.ST_LOG and not kept:
                continue            # (nobody keeps the CTA's bank records: the log starts again)
            break
        alive = inflight != 0
        for w in range(cpc.shape[0]):
            if cpc[w, 32] != 0:
                alive = True
        if cst[T.C_STATUS] != T.CTA_DONE or state[T.S_MBAR_CHANGED] != 0 or state[T.S_MBAR_REBUILT] != 0 or alive:
            out[0] = budget
            out[1] = i
            return
        if kept:
            for k in range(block.shape[0]):
                store[i, k] = block[k]
            n = state[T.S_NLOG]
            logs[i, 0] = used
            logs[i, 1] = n
            for e in range(n):
                klog[0, used + e] = flw[e]
                klog[1, used + e] = flpc[e]
                klog[2, used + e] = flmask[e]
                for lane in range(32):
                    klog_addr[0, used + e, lane] = fladdr[e, lane]
                    if has_src:
                        klog_addr[1, used + e, lane] = flsrc[e, lane]
            used += n
            if kcp.shape[0] > 0:
                for w in range(cpc.shape[0]):
                    for lane in range(cpc.shape[1]):
                        kcp[i, w, lane] = cpc[w, lane]
    out[0] = budget
    out[1] = count


_CTA_ADDRESS = {}


def cta_loop_address(args):
    """The address of the CTA loop (``loop.run_cta``) compiled for the types of ``args`` (compiled or loaded from
    numba's cache now)."""
    from .ccall import compiled_address
    from .loop import run_cta
    return compiled_address(run_cta, args, _CTA_ADDRESS, "CTA loop")


def eligible(fast, cta):
    """Whether the CTAs of ``cta``'s launch (``cta``: its first CTA the grid loop would run, just made) need
    nothing of Python around the CTA loop."""
    fc = cta.fast_cta
    if not ON or fc is None or cta.san is not None or cta._rng is not None or cta._timeline or \
            cta.profile is not None or cta.debug is not None or cta.trace is not None or \
            cta.__dict__.get("_au") is not None:
        return False
    if type(fast) is not FastLaunch:        # (a subclass, the sanitizer's: its CTAs keep their per-CTA Python)
        return False
    tr = fast.tr
    ok = tr.__dict__.get("_grid_loop_ok")
    if ok is None:
        # no row touches the CTA's async unit, but cp.async's own (copies, commit and wait groups: the loop keeps
        # them in the cp.async table, and such a CTA's async unit stays as it was made)
        ok = tr._grid_loop_ok = not (
            tr.wg is not None or tr.bulkx or tr.any_bulk or tr.async_readers or tr.cta_waits or
            any(op.kind == "op" and op.instr is not None and _touches_unit(op.instr.opcode) and
                not _plain_cp_async(op.instr.opcode) for op in cta.prog.code))
    return ok and _columns(fc, cta) is not None


def _plain_cp_async(opcode):
    """Whether an instruction is a (non-bulk) cp.async copy, commit or wait, which touch no mbarrier."""
    return opcode.startswith("cp.async.") and not opcode.startswith("cp.async.bulk") and "mbarrier" not in opcode


def _columns(fc, cta):
    """(n, 2) int64 rows (first 32-bit arena column, kind) of the special registers the grid loop writes for each
    CTA, or None when the kernel reads one that differs between CTAs otherwise (made once per launch shape)."""
    tr = fc.launch.tr
    got = tr.__dict__.setdefault("_grid_loop_cols", {})
    key = cta.shape
    if key not in got:
        if cta.cluster.size != 1:
            cols = None
        else:
            names = fc.own_columns(cta)
            if all(n in _KIND or n.startswith(("%cluster_ctaid.", "%cluster_nctaid.", "%nclusterid."))
                   or n == "%cluster_ctarank" for _, n in names):
                cols = np.array([(c, _KIND[n]) for c, n in names if n in _KIND], np.int64).reshape(-1, 2)
            else:
                cols = None
        if len(got) > 16:
            got.clear()
        got[key] = cols
    return got[key]


class KeptCTA:
    """A CTA the launch keeps that the grid loop ran to its end: a copy of its arrays' block and its shared-memory
    log; the CTA object (``machine.cta.CTA``, through ``make(ctaid, arrays)``) and its warps are made when the
    result is read (``LaunchResult.ctas``, ``async_units``)."""
    __slots__ = ("ctaid", "result", "_make", "_spec", "_words", "_log", "_counts", "_cta")

    def __init__(self, ctaid, make, spec, words, log, counts):
        self.ctaid, self.result = ctaid, None
        self._make, self._spec, self._words, self._log, self._counts, self._cta = make, spec, words, log, counts, None

    def cta(self):
        if self._cta is None:
            fc = FastCTA.on_kept(*self._spec, self._words.view(np.uint8).copy(), self._log, self._counts)
            self._cta = self._make(self.ctaid, fc)
            self._make = self._spec = self._words = self._log = self._counts = None
        return self._cta

    @property
    def warps(self):
        return self.cta().warps

    @property
    def async_unit(self):
        return self.cta().async_unit


KEPT_BYTES = 16 << 20   # the kept CTAs' blocks of one call of the grid loop (at most, unless one block is larger)
KEPT_LOG = 16           # their shared-memory log entries, in whole logs (engine.LOG_CAP)


def run(fast, cta, ctaids, first, stop, budget, make=None):
    """Run the CTAs ``first`` .. ``stop - 1`` of ``ctaids`` (``cta``: CTA ``first``, just made, not run) in the grid
    loop; the launch keeps none of them, or (``make``: ``make(ctaid, arrays)`` makes a kept CTA's object on its
    arrays) keeps all. Returns (how many ran to their end, [KeptCTA] of those). When that is fewer than
    ``stop - first``, the next CTA stopped for Python, its state in ``cta.fast_cta``'s arrays."""
    fc = cta.fast_cta
    fl = fast
    targs = fc.loop_args(cta)
    tr = fl.tr
    addr = tr.__dict__.get("_cta_address")     # (the same argument types at every launch of the translation)
    if addr is None:
        addr = tr._cta_address = cta_loop_address(targs)
    block64 = fc.block.view(np.uint64)
    template = block64.copy()
    cols = _columns(fc, cta)
    fields, nhead = fc.grid_state(cta)
    a32 = fc.arenas.view(np.uint32)
    grid = ctaids.grid
    lin0 = ctaids._r
    if lin0.step != 1:
        raise AssertionError("the grid loop runs CTAs in their serial order")
    out = np.zeros(3, np.int64)
    done = first
    st = fast.state
    got = []
    store = np.zeros((0, 1), np.uint64)
    logs = np.zeros((0, 2), np.int64)
    klog, klog_addr = tr.__dict__.get("_kept_logs") or (np.zeros((3, 0), np.int64), np.zeros((2, 0, 32), np.int64))
    cp_kernel = _uses_cp_async(cta.prog)        # (its CTAs' cp.async tables: one for the loop, counts kept apart)
    has_src = _has_cp_async(tr)                 # (the log's cp.async sources)
    options = cta._make[1]
    spec = (fl, fc.nw, fc.layout, None if cp_kernel else fc.cp, options is not None and options.cp_async == "eager")
    kcp = np.zeros((0, 1, 1), np.int64)
    cpc = fc.cp.count
    while done < stop:
        n = min(CHUNK, stop - done)
        if make is not None:
            m = max(1, min(n, KEPT_BYTES // block64.nbytes))
            store = np.empty((m, block64.size), np.uint64)
            logs = np.empty((m, 2), np.int64)
            cap = min(KEPT_LOG, m) * LOG_CAP
            if klog.shape[1] < cap:     # (the translation keeps them: the kept entries are copied out after each call)
                klog, klog_addr = tr._kept_logs = (np.empty((3, cap), np.int64), np.empty((2, cap, 32), np.int64))
            if cp_kernel:
                kcp = np.empty((m,) + cpc.shape, np.int64)
        out[0] = budget[0]
        grid_loop(addr, targs, block64, template, a32, cols, grid[0], grid[1], lin0.start + done, n, st, fields,
                  nhead, fc.cst, out, store, logs, fl.log_warp, fl.log_pc, fl.log_mask, fl.log_addr, fl.log_src,
                  klog, klog_addr, has_src, cpc, kcp)
        budget[0] = int(out[0])
        ran = int(out[1])
        if make is not None and ran:
            used = int(logs[ran - 1, 0] + logs[ran - 1, 1])
            kl, ka = klog[:, :used].copy(), klog_addr[:, :used].copy()
            if ran < store.shape[0] // 2:      # (the rows the kept CTAs hold, not the room they were given)
                store = store[:ran].copy()
            for j, (o, c) in enumerate(logs[:ran].tolist()):
                log = (kl[0, o:o + c], kl[1, o:o + c], kl[2, o:o + c], ka[0, o:o + c],
                       ka[1, o:o + c] if has_src else None) if c else None
                got.append(KeptCTA(ctaids[done + j], make, spec, store[j], log, kcp[j].copy() if cp_kernel else None))
        done += ran
        if ran < n and not out[2]:
            fc._ran = True          # (FastCTA.run goes on from the state the CTA loop left)
            break
    return done - first, got
