"""The sanitizer on the fast engine (docs/sanitize.md, "Cost").

A sanitised launch on the fast engine runs each warp in the jitted loop (``fastcore.loop.run``), as a plain launch
does, with three differences:

* the loop gets a wider shared-memory log (``log_addr`` with more than 32 columns): besides the address of
  every lane of each shared ``ld``/``st``/``ldmatrix`` it records the values each lane stores, and one more
  record (mask bit 32) for the global lanes of every ``ld``/``st``;
* the instructions whose sanitizer rules need more than addresses go back to the reference executors, which
  call the sanitizer as they do on the reference engine: fences (``membar``/``fence``: release edges),
  strong loads and stores (volatile, relaxed, acquire, release), cp.async (its copies land at the waits),
  barriers (the per-warp loop hands them back anyway), and instructions that read a register no instruction
  writes (initcheck);
* every time the loop stops, before Python runs anything, :func:`replay` applies the log to the sanitizer's
  state (vector clocks, shadow of shared memory, global shadows) in jitted code: the same checks as
  ``CtaSanitizer.shared`` and ``CtaSanitizer.global_access`` make for weak accesses, in the same order, and
  the same reports.

The loop does not see the instructions it hands back, and the sanitizer sees every access in program order:
the log is emptied before each instruction Python runs. A copy of shared memory taken when the loop starts
gives each store the bytes it overwrites (a store of the bytes already there is no hazard).
"""
from __future__ import annotations

import copy
from functools import partial

import numpy as np
from numba import njit

from ..ops.common import format_lanes
from .fastcore import table as T
from .fastcore.engine import LOG_CAP, ArenaRegs, FastCTA, FastLaunch, FastWarp, _records
from .fastcore.raw import store_lane
from .sanitize import LANES, _semantics

WIDE = LANES + 4 * LANES          # log columns: each lane's address, then up to 4 stored values per lane
GLOBAL = 1 << 32                  # log_mask bit: the record lists the global lanes of an ld/st
SYNC = 1 << 33                    # log_mask bit: a barrier arrival or an exit (the CTA loop)
NHIT = 10                         # columns of a hit: code, record, lane, address, byte, other thread, other pc,
#                                   bytes, memory (low 8 bytes), memory (high 8 bytes)
H_INIT, H_RAW, H_WAW, H_WAR, H_DIV = 0, 1, 2, 3, 4
K_BAR, K_EXIT = 4, 5


def _regs_read(instr):
    """Register names an instruction reads: its guard and every operand after the first (and the first when
    it is an address or a store's operand list)."""
    from .fastcore.translate import _names
    ops = list(instr.operands)
    out = set()
    if instr.guard is not None:
        out.add(instr.guard[0].name)
    if ops:
        first = ops[0]
        if type(first).__name__ == "Mem" or instr.base in ("st", "stmatrix", "red", "bar", "barrier"):
            ops_read = ops
        else:
            ops_read = ops[1:]
        out.update(_names(ops_read))
    return out


class SanFastLaunch(FastLaunch):
    """A FastLaunch whose translation hands back what the sanitizer must see one instruction at a time, and
    whose log carries what :func:`replay` needs (also the barrier arrivals and exits of the CTA loop)."""

    def __init__(self, prog, gmem, san):
        super().__init__(prog, gmem)
        self.san = san
        tr = copy.copy(self.tr)
        code = tr.code.copy()
        n = len(code)
        self.pkind = np.zeros(n, np.int64)      # 1: load, 2: store, 3: ldmatrix (a load of 16 bytes per row)
        self.pnb = np.zeros(n, np.int64)        # bytes per lane
        self.pew = np.ones(n, np.int64)         # bytes per element (stores: where each value goes)
        self.pn = np.ones(n, np.int64)          # elements per lane
        self.shared_stores = False              # the loop stores to shared memory: replays need a copy of it
        self.pbid = np.full(n, -1, np.int64)    # barriers: number, 1 for bar.arrive, 1 for .aligned
        self.parrive = np.zeros(n, np.int64)
        self.paligned = np.zeros(n, np.int64)
        written = set()
        for op in prog.code:
            ins = getattr(op, "instr", None)
            if ins is not None and getattr(ins, "operands", None):
                first = ins.operands[0]
                for it in getattr(first, "items", None) or (first,):
                    nm = getattr(it, "name", None)
                    if isinstance(nm, str):
                        written.add(nm)
        # registers no instruction writes (initcheck reports their reads; the loop would read zeros silently)
        self.never = {nm for nm in tr.slots if nm not in written and nm not in tr.specials}
        for pc, op in enumerate(prog.code):
            row = code[pc]
            opc = int(row[T.OP])
            ins = getattr(op, "instr", None)
            text = (ins.text or ins.opcode) if ins is not None else ""
            if opc in (T.LD, T.ST):
                if _semantics(text)[0]:
                    row[T.OP] = T.SLOW          # strong: release/acquire edges in CtaSanitizer
                else:
                    self.pkind[pc] = 1 if opc == T.LD else 2
                    if opc == T.ST and row[T.X] in (T.SHARED, T.GENERIC):
                        self.shared_stores = True
                    self.pnb[pc] = int(row[T.Y] * row[T.Z])
                    self.pew[pc] = int(row[T.Z])
                    self.pn[pc] = int(row[T.Y])
            elif opc == T.LDMATRIX:
                self.pkind[pc] = 3
                self.pnb[pc] = 16
                self.pew[pc] = 16
            elif opc in (T.NOP, T.CPASYNC, T.CP_COMMIT, T.CP_WAIT, T.STMATRIX, T.WGMMA):
                row[T.OP] = T.SLOW              # wgmma: the reference checks the async proxy's reads
            elif opc == T.BAR:
                self.pkind[pc] = K_BAR
                self.pbid[pc] = int(row[T.X])
                self.parrive[pc] = int(row[T.Y])
                self.paligned[pc] = int(row[T.Z])
            elif opc == T.EXIT:
                self.pkind[pc] = K_EXIT
            if self.never and ins is not None and row[T.OP] != T.SLOW and _regs_read(ins) & self.never:
                row[T.OP] = T.SLOW
        self.aligned_bars = any(getattr(op, "instr", None) is not None and (
            op.instr.base == "bar" or (op.instr.base == "barrier" and "aligned" in op.instr.mods))
            for op in prog.code)
        tr.code = code
        if tr.wg is not None:
            tr.cta_ok = False                   # (its wgmma state stays with the reference)
        self.tr = tr
        self.log_addr = np.zeros((LOG_CAP, WIDE), np.int64)
        self.hits = np.zeros((5 * LOG_CAP + 8, NHIT), np.int64)

    def cta_arrays(self, nwarps):
        return SanFastCTA(self, nwarps) if self.tr.cta_ok and not self.tr.cta_waits else None

    def attach(self, warp, arena=None):
        return SanFastWarp(self, warp, arena)


class SanRegs(ArenaRegs):
    """ArenaRegs that tell the sanitizer when Python reads a register no instruction writes."""

    __slots__ = ("never", "warp")

    @classmethod
    def wrap(cls, regs, never, warp):
        out = cls.__new__(cls)
        out.arena, out.slots, out.views, out.other = regs.arena, regs.slots, regs.views, regs.other
        out.never, out.warp = never, warp
        return out

    def get(self, name, default=None):
        if name in self.never:
            san = self.warp.san
            if san is not None:
                san.uninit_reg(self.warp, name)
        return ArenaRegs.get(self, name, default)


class SanFastWarp(FastWarp):
    def __init__(self, launch, warp, arena=None):
        super().__init__(launch, warp, arena)
        if launch.never:
            warp.regs = SanRegs.wrap(warp.regs, launch.never, warp)
        self.pre = None

    def run(self, w, budget):
        san = w.san
        if san is not None and w.smem.size and ("racecheck" in san.tools or "initcheck" in san.tools
                                                  or "asynccheck" in san.tools):
            if not self.launch.shared_stores:
                self.pre = w.smem              # nothing the loop runs changes it
            else:
                if self.pre is None or self.pre.size != w.smem.size or self.pre is w.smem:
                    self.pre = np.empty(w.smem.size, np.uint8)
                np.copyto(self.pre, w.smem)    # the bytes each logged store overwrites start from here
        if san is None or not self.launch.aligned_bars or "synccheck" not in san.tools:
            return FastWarp.run(self, w, budget)
        before = w.exited.copy()
        got = FastWarp.run(self, w, budget)
        if got[0] == self.EXITED:
            _left_behind(w, w.exited & ~before)
        return got

    def _flush(self, w, n):
        fl = self.launch
        if w.san is not None:
            replay(w.san, w, fl, n, self.pre)
        shared = np.flatnonzero((fl.log_mask[:n] & GLOBAL) == 0)
        keep = min(shared.size, max(w.smem_log_cap - w._smem_n, 0))      # the bank-conflict log, as without
        w.smem_log_dropped += shared.size - keep
        w._smem_n += keep
        sel = shared[:keep]
        if sel.size:
            w._smem_pending.append(partial(_records, w.program.code, fl.tr.code, fl.log_pc[sel],
                                           fl.log_mask[sel], fl.log_addr[sel, :LANES], fl.log_src[sel]))


def _left_behind(w, gone):
    """synccheck: lanes ``gone`` of ``w`` just exited, leaving lanes of their warp at an ``.aligned`` barrier
    they skipped (``CTA._skipped_barrier``, which the reference scheduler checks at each pick)."""
    cta = getattr(w, "_cta", None)
    come = ~w.exited & ~w.held
    if cta is None or not gone.any() or not come.any():
        return
    lanes = np.flatnonzero(gone)
    p = int(w.pc[lanes[0]])
    code = cta.prog.code
    for q in np.unique(w.pc[come]).tolist():
        ins = code[q].instr
        if ins is not None and (ins.base == "bar" or (ins.base == "barrier" and "aligned" in ins.mods)) \
                and cta.cv.joins(p, q):
            w.cur_pc = q
            w.san.hazard(w, "synccheck", "divergent-barrier",
                         f"{ins.text or ins.opcode}: lanes {format_lanes(lanes)} of warp {w.warp_id} go on past this "
                         f"barrier without it while lanes {format_lanes(np.flatnonzero(come & (w.pc == q)))} wait at "
                         f"it", int(lanes[0]))
            return


class SanFastCTA(FastCTA):
    """The CTA loop of a sanitised launch: the replay follows its barriers (arrivals and exits are logged,
    releases happen where the loop's happen) in the sanitizer's state ``san.rb``."""

    def start(self, cta):
        FastCTA.start(self, cta)
        self.pre = np.empty(cta.smem.size, np.uint8)
        return self

    def _state(self, cta):
        san = cta.san
        rb = getattr(san, "rb", None)
        if rb is None:
            T_ = san.T
            exited = np.concatenate([w.exited for w in cta.warps]).copy()
            rb = san.rb = {"acc": np.zeros((16, T_), np.int32), "arrived": np.zeros(16, np.int64),
                           "wait": np.full(T_, -1, np.int64), "wait_pc": np.full(T_, -1, np.int64),
                           "exited": exited, "alive": np.array([int((~exited).sum())], np.int64),
                           "gone": np.zeros(len(cta.warps), np.int64), "gone_pc": np.full(len(cta.warps), -1,
                                                                                        np.int64)}
        return rb

    def _enter(self, cta):
        san = cta.san
        if san is None:
            return
        if not self.launch.shared_stores:
            self.pre = cta.smem
        elif cta.smem.size:
            if self.pre is cta.smem:
                self.pre = np.empty(cta.smem.size, np.uint8)
            np.copyto(self.pre, cta.smem)
        rb = self._state(cta)
        now = np.concatenate([w.exited for w in cta.warps])
        py = now & ~rb["exited"]                 # exits Python ran since the last look: the loop releases at once
        if py.any():
            _exits(np.flatnonzero(py).astype(np.int64), rb["exited"], rb["alive"], rb["arrived"], rb["acc"],
                   rb["wait"], san.vc)

    def _flush(self, ws, n):
        fl = self.launch
        cta = ws[0]._cta if ws else None
        san = cta.san if cta is not None else None
        if san is not None:
            replay(san, None, fl, n, self.pre, wids=self.log_warp[:n].copy(), ws=ws, rb=self._state(cta))
        masks = fl.log_mask[:n]
        who = self.log_warp[:n]
        plain = (masks >> 32) == 0
        for k, w in enumerate(ws):
            sel = np.flatnonzero((who == k) & plain)
            if sel.size:
                keep = min(sel.size, max(w.smem_log_cap - w._smem_n, 0))
                w.smem_log_dropped += sel.size - keep
                w._smem_n += keep
                sel = sel[:keep]
            if sel.size:
                w._smem_pending.append(partial(_records, w.program.code, fl.tr.code, fl.log_pc[sel],
                                               fl.log_mask[sel], fl.log_addr[sel, :LANES], fl.log_src[sel]))

    def _handoff(self, cta, k, parked, python_yield=False):
        got = FastCTA._handoff(self, cta, k, parked, python_yield)
        if cta.san is not None:                  # the Python scheduler goes on: its barriers get the clocks
            rb = self._state(cta)
            for b, d in cta.barriers.items():
                d["vc"] = rb["acc"][b].copy()
        return got


@njit(cache=True)
def _release(alive, arrived, acc, wait, vc):
    """The loop's _check_bars on the clocks: each barrier every live thread arrived at releases its waiters."""
    for bid in range(16):
        if arrived[bid] > 0 and arrived[bid] >= alive[0]:
            for t in range(wait.size):
                if wait[t] == bid:
                    for u in range(vc.shape[1]):
                        if vc[t, u] < acc[bid, u]:
                            vc[t, u] = acc[bid, u]
                    wait[t] = -1
            arrived[bid] = 0
            acc[bid, :] = 0


@njit(cache=True)
def _exits(tids, exited, alive, arrived, acc, wait, vc):
    for t in tids:
        if not exited[t]:
            exited[t] = True
            alive[0] -= 1
    _release(alive, arrived, acc, wait, vc)


# ---------------------------------------------------------------------------------------------------
# the replay

def replay(san, w, fl, n, pre, wids=None, ws=None, rb=None):
    """Apply the loop's ``n`` log records to the sanitizer ``san`` (a CtaSanitizer): those of warp ``w``, or,
    from the CTA loop, of the warps ``ws`` (``wids``: the warp of each record) with the barrier state ``rb``
    (``SanFastCTA._state``)."""
    tools = san.tools
    race, init = "racecheck" in tools, "initcheck" in tools
    cta_mode = rb is not None
    if not (race or init or cta_mode or "asynccheck" in tools):   # asynccheck: who last wrote each shared byte
        return
    pcs, masks, addrs = fl.log_pc[:n], fl.log_mask[:n], fl.log_addr
    if wids is None:
        wids = np.full(n, w.warp_id, np.int64)
    events = []                              # (record, order, report): reports in program order
    if rb is None:
        rb = _NO_RB
    shared = cta_mode or (san.w_tid.size and pre is not None)

    def shared_part(lo, hi):
        """Records lo..hi-1 through the jitted replay (shared accesses, barriers, exits)."""
        if not shared or hi <= lo:
            return
        hits = fl.hits
        nh = _replay_shared(pcs[lo:hi], masks[lo:hi], addrs[lo:hi], hi - lo, wids[lo:hi], fl.pkind, fl.pnb, fl.pew,
                            fl.pbid, fl.parrive, fl.paligned, san.vc, san.w_tid, san.w_clk, san.w_pc, san.w_strong,
                            san.r_tid, san.r_clk, san.r_pc, san.r_strong, pre if pre is not None else _NO_PRE, init,
                            race, hits, cta_mode, rb["acc"], rb["arrived"], rb["wait"], rb["wait_pc"], rb["exited"],
                            rb["alive"], rb["gone"], rb["gone_pc"])
        for k in range(nh):
            code, r, lane, a0, x, other, opc, nb, lo_, hi_ = hits[k].tolist()
            r += lo
            wk = ws[int(wids[r])] if ws is not None else w
            pc = int(pcs[r])
            if code == H_DIV:
                q, gone, waiting, p_exit = a0, x, other, opc
                events.append((r, k, partial(_divergent, san, wk, q, p_exit, gone, waiting)))
                continue
            mem = ((lo_ & 0xFFFFFFFFFFFFFFFF) | ((hi_ & 0xFFFFFFFFFFFFFFFF) << 64)) & ((1 << (8 * nb)) - 1)
            if code == H_INIT:
                events.append((r, k, partial(san.init_shared, wk, lane, pc, x, nb, partial(int, mem))))
            else:
                written = None
                if code != H_RAW:
                    ew, ne = int(fl.pew[pc]), int(fl.pn[pc])
                    written = sum((int(addrs[r, LANES + 4 * lane + i]) & ((1 << (8 * ew)) - 1)) << (8 * ew * i)
                                  for i in range(ne))
                kind = ("RAW", "WAW", "WAR")[code - 1]
                events.append((r, k, partial(san.race, wk, lane, pc, other, opc, kind, a0, nb, code != H_RAW,
                                             partial(int, mem), written)))

    glob = np.flatnonzero(masks & GLOBAL)
    if not glob.size or not (init or race):
        shared_part(0, n)
    else:
        # global accesses see the clocks of their moment: the records run in pieces cut at the barrier
        # arrivals and exits that come between them
        syncs = np.flatnonzero(masks & SYNC) if cta_mode else np.zeros(0, np.int64)
        seg = np.searchsorted(syncs, glob)
        cur = 0
        for k in np.unique(seg).tolist():
            end = int(syncs[k - 1]) + 1 if k > 0 else 0
            if end > cur:
                shared_part(cur, end)
                cur = end
            _replay_global(san, w, ws, wids, fl, pcs, masks, addrs, glob[seg == k], init, race, events)
        shared_part(cur, n)
    events.sort(key=lambda e: (e[0], e[1]))
    for _, _, report in events:
        report()


_NO_PRE = np.zeros(0, np.uint8)
_NO_RB = {"acc": np.zeros((16, 1), np.int32), "arrived": np.zeros(16, np.int64), "wait": np.zeros(1, np.int64),
          "wait_pc": np.zeros(1, np.int64), "exited": np.zeros(1, np.bool_), "alive": np.zeros(1, np.int64),
          "gone": np.zeros(1, np.int64), "gone_pc": np.zeros(1, np.int64)}


def _divergent(san, w, q, p_exit, gone, waiting):
    """synccheck in the CTA loop: lanes ``gone`` of ``w`` exited at ``p_exit`` past the ``.aligned`` barrier at
    ``q`` that lanes ``waiting`` of the warp execute (``CTA._skipped_barrier``). An exit that is a branch target
    (an early ``return``) may have been reached without passing the barrier: not reported."""
    cta = w._cta
    if p_exit in _targets(cta) or not cta.cv.joins(p_exit, q):
        return
    ins = cta.prog.code[q].instr
    lanes = np.flatnonzero((gone >> np.arange(32)) & 1)
    wl = np.flatnonzero((waiting >> np.arange(32)) & 1)
    keep = getattr(w, "cur_pc", -1)
    w.cur_pc = q
    san.hazard(w, "synccheck", "divergent-barrier",
               f"{ins.text or ins.opcode}: lanes {format_lanes(lanes)} of warp {w.warp_id} go on past this barrier "
               f"without it while lanes {format_lanes(wl)} wait at it", int(lanes[0]))
    w.cur_pc = keep


def _targets(cta):
    t = getattr(cta.prog, "_san_targets", None)
    if t is None:
        t = cta.prog._san_targets = {op.target for op in cta.prog.code if op.kind == "bra"}
    return t


_LANE_BITS = np.arange(LANES, dtype=np.int64)


def _replay_global(san, w, ws, wids, fl, pcs, masks, addrs, glob, init, race, events):
    launch = san.launch
    g = launch.gmem
    bits = ((masks[glob][:, None] >> _LANE_BITS) & 1).astype(np.bool_)
    ri, lanes = np.nonzero(bits)
    rec = glob[ri]
    a = addrs[rec, lanes]
    pc = pcs[rec]
    nb = fl.pnb[pc]
    write = fl.pkind[pc] == 2
    bases = np.asarray(g._bases, np.int64)
    which = np.searchsorted(bases, a, "right") - 1
    # where a store's values are: its own record, or the shared record just before it (a generic store
    # whose lanes reach both spaces)
    prev = np.maximum(rec - 1, 0)
    drow = np.where(~write, -1, np.where((rec > 0) & (pcs[prev] == pc) & ((masks[prev] >> 32) == 0), prev, rec))
    wrec = wids[rec]
    tids = wrec * LANES + lanes
    who = (lambda k: ws[int(wrec[k])]) if ws is not None else (lambda k: w)
    for i in np.unique(which).tolist():
        if i < 0:
            continue
        base = int(bases[i])
        if base in launch.untracked:
            continue
        buf = g._bufs[i]
        sel = np.flatnonzero(which == i)
        off = a[sel] - base
        if base in g._uninit and (init or write[sel].any()):
            st = g._uninit[base]
            if st is None:
                st = g._uninit[base] = np.zeros(buf.size, np.bool_)
            hits = np.full((sel.size, 3), -1, np.int64)
            nh = _global_init(off, nb[sel], write[sel], rec[sel], st, init, hits)
            for h in range(nh):
                k, byte, _ = hits[h].tolist()
                o = int(off[k])
                n_ = int(nb[sel][k])
                events.append((int(rec[sel][k]), -1, partial(
                    san.init_global, who(sel[k]), int(lanes[sel][k]), int(pc[sel][k]), base, base + byte, n_,
                    int.from_bytes(buf[o:o + n_].tobytes(), "little"))))
        if race:
            sh = launch.gshadow(base, buf.size)
            hits = np.full((sel.size, 6), -1, np.int64)
            nh = _global_race(off, nb[sel], write[sel], rec[sel], tids[sel], pc[sel], sh["w_cta"], sh["w_ep"],
                              sh["w_pc"], sh["w_strong"], sh["w_tid"], sh["r_cta"], sh["r_ep"], sh["r_pc"],
                              sh["r_tid"], san.index, san.epoch, san.known, hits, san.vc, sh["w_clk"], sh["r_clk"],
                              sh["r_strong"], sh["w_val"], addrs, drow[sel], lanes[sel], fl.pew[pc[sel]])
            for h in range(nh):
                k, kind, c2, t2, opc, _ = hits[h].tolist()
                name = ("RAW", "WAW", "WAR")[kind - 1]
                if c2 >= 0:
                    rep = partial(san.global_race, who(sel[k]), int(lanes[sel][k]), int(pc[sel][k]), name, c2, t2,
                                  opc, base + int(off[k]), int(nb[sel][k]), bool(write[sel][k]))
                else:
                    rep = partial(san.global_race_cta, who(sel[k]), int(lanes[sel][k]), int(pc[sel][k]), name, t2,
                                  opc, base + int(off[k]), int(nb[sel][k]), bool(write[sel][k]))
                events.append((int(rec[sel][k]), -1, rep))


@njit(cache=True)
def _replay_shared(pcs, masks, addrs, n, wids, pkind, pnb, pew, pbid, parrive, paligned, vc, w_tid, w_clk, w_pc,
                   w_strong, r_tid, r_clk, r_pc, r_strong, pre, do_init, do_race, hits, cta_mode, acc, arrived, wait,
                   wait_pc, exited, alive, gone, gone_pc):
    """``CtaSanitizer.shared`` for the weak shared accesses of one warp's log, in order. Per record: the
    checks against the state before it, then its updates (as the vectorised reference: a byte two lanes
    touch keeps the last lane's access). Hits: at most one per kind and side (between warps, within the
    warp) per record, the first lane and byte, as the reference's reports."""
    nh = 0
    tmp = np.zeros((5, 10), np.int64)
    got = np.zeros(5, np.bool_)
    for r in range(n):
        m = masks[r]
        p = pcs[r]
        kind = pkind[p]
        wid = wids[r]
        if (m >> 33) & 1:
            if cta_mode:
                nh = _sync(r, m & 0xFFFFFFFF, p, kind, wid, pbid, parrive, paligned, vc, acc, arrived, wait, wait_pc,
                           exited, alive, gone, gone_pc, hits, nh)
            continue
        if m >> 32 != 0 or kind == 0 or kind > 3:
            continue
        write = kind == 2
        nb = pnb[p]
        ew = pew[p]
        got[:] = False
        for lane in range(32):
            if not (m >> lane) & 1:
                continue
            t = wid * 32 + lane
            a0 = addrs[r, lane]
            for b in range(nb):
                x = a0 + b
                wt = w_tid[x]
                if do_init and not write and wt == -1 and not got[0]:
                    got[0] = True
                    _hit(tmp[0], H_INIT, r, lane, a0, x, -1, -1, nb, pre)
                if not do_race:
                    continue
                sv = False
                if write:
                    v = (addrs[r, 32 + 4 * lane + b // ew] >> (8 * (b % ew))) & 0xFF
                    sv = pre[x] == v
                if wt >= 0 and wt != t and vc[t, wt] < w_clk[x] and not sv:
                    k = 1 + (1 if wt // 32 == wid else 0)
                    if not got[k]:
                        got[k] = True
                        _hit(tmp[k], H_WAW if write else H_RAW, r, lane, a0, x, wt, w_pc[x], nb, pre)
                if write and not sv:
                    for s in range(2):
                        rt = r_tid[x, s]
                        if rt >= 0 and rt != t and vc[t, rt] < r_clk[x, s]:
                            k = 3 + (1 if rt // 32 == wid else 0)
                            if not got[k]:
                                got[k] = True
                                _hit(tmp[k], H_WAR, r, lane, a0, x, rt, r_pc[x, s], nb, pre)
                            break
        for k in range(5):
            if got[k] and nh < hits.shape[0]:
                for c in range(10):
                    hits[nh, c] = tmp[k, c]
                nh += 1
        # the shadow (and the copy of shared memory) after the access
        if write:
            for j in range(32):
                lane = store_lane(j, nb)         # memory.spaces.store_order: the lane whose bytes stay goes last
                if not (m >> lane) & 1:
                    continue
                t = wid * 32 + lane
                a0 = addrs[r, lane]
                for b in range(nb):
                    x = a0 + b
                    w_tid[x] = t
                    w_clk[x] = vc[t, t]
                    w_pc[x] = p
                    w_strong[x] = False
                    r_tid[x, 0] = -1
                    r_tid[x, 1] = -1
                    pre[x] = (addrs[r, 32 + 4 * lane + b // ew] >> (8 * (b % ew))) & 0xFF
        else:
            for lane in range(32):
                if not (m >> lane) & 1:
                    continue
                t = wid * 32 + lane
                a0 = addrs[r, lane]
                for b in range(nb):
                    x = a0 + b
                    if r_tid[x, 0] != t:
                        r_tid[x, 1] = r_tid[x, 0]
                        r_clk[x, 1] = r_clk[x, 0]
                        r_pc[x, 1] = r_pc[x, 0]
                        r_strong[x, 1] = r_strong[x, 0]
            for lane in range(32):
                if not (m >> lane) & 1:
                    continue
                t = wid * 32 + lane
                a0 = addrs[r, lane]
                for b in range(nb):
                    x = a0 + b
                    r_tid[x, 0] = t
                    r_clk[x, 0] = vc[t, t]
                    r_pc[x, 0] = p
                    r_strong[x, 0] = False
    return nh


@njit(cache=True)
def _sync(r, em, p, kind, wid, pbid, parrive, paligned, vc, acc, arrived, wait, wait_pc, exited, alive, gone, gone_pc,
          hits, nh):
    """A barrier arrival or an exit of the CTA loop (``CtaSanitizer.bar_arrive`` / ``bar_release``)."""
    T_ = vc.shape[0]
    if kind == K_BAR:
        bid = pbid[p]
        if paligned[p] == 1 and gone[wid] != 0 and nh < hits.shape[0]:
            g = gone[wid]
            first = 0
            while not (g >> first) & 1:
                first += 1
            hits[nh, 0], hits[nh, 1], hits[nh, 2], hits[nh, 3], hits[nh, 4] = H_DIV, r, first, p, g
            hits[nh, 5], hits[nh, 6] = em, gone_pc[wid]
            nh += 1
        gone[wid] = 0
        for lane in range(32):
            if (em >> lane) & 1:
                t = wid * 32 + lane
                for u in range(T_):
                    if acc[bid, u] < vc[t, u]:
                        acc[bid, u] = vc[t, u]
        for lane in range(32):
            if (em >> lane) & 1:
                t = wid * 32 + lane
                vc[t, t] += 1
                arrived[bid] += 1
                if parrive[p] == 0:
                    wait[t] = bid
                    wait_pc[t] = p
    else:
        waiting = 0
        q = -1
        for lane in range(32):
            t = wid * 32 + lane
            if not (em >> lane) & 1 and wait[t] >= 0 and not exited[t] and paligned[wait_pc[t]] == 1:
                waiting |= 1 << lane
                q = wait_pc[t]
        if waiting != 0 and nh < hits.shape[0]:
            first = 0
            while not (em >> first) & 1:
                first += 1
            hits[nh, 0], hits[nh, 1], hits[nh, 2], hits[nh, 3], hits[nh, 4] = H_DIV, r, first, q, em
            hits[nh, 5], hits[nh, 6] = waiting, p
            nh += 1
        for lane in range(32):
            if (em >> lane) & 1:
                t = wid * 32 + lane
                if not exited[t]:
                    exited[t] = True
                    alive[0] -= 1
        gone[wid] |= em
        gone_pc[wid] = p
    _release(alive, arrived, acc, wait, vc)
    return nh


@njit(cache=True, inline="always")
def _hit(row, kind, r, lane, a0, x, other, other_pc, nb, pre):
    """One hit row: kind, record, lane, access address, byte, the other thread and its PC, size, the bytes."""
    row[0], row[1], row[2], row[3], row[4] = kind, r, lane, a0, x
    row[5], row[6], row[7] = other, other_pc, nb
    _mem(pre, a0, nb, row)


@njit(cache=True)
def _mem(pre, a0, nb, row):
    lo = np.int64(0)
    hi = np.int64(0)
    for b in range(nb):
        v = np.int64(pre[a0 + b])
        if b < 8:
            lo |= v << (8 * b)
        else:
            hi |= v << (8 * (b - 8))
    row[8] = lo
    row[9] = hi


@njit(cache=True)
def _global_init(off, nb, write, rec, init, do_init, hits):
    """initcheck of global bytes, access after access (one allocation): the first byte nothing wrote that each
    record reads; writes mark their bytes."""
    nh = 0
    i = 0
    n = off.size
    while i < n:
        j = i
        while j < n and rec[j] == rec[i]:
            j += 1
        if write[i]:
            for k in range(i, j):
                for b in range(nb[k]):
                    init[off[k] + b] = True
        elif do_init:
            found = False
            for k in range(i, j):
                for b in range(nb[k]):
                    if not init[off[k] + b]:
                        hits[nh, 0], hits[nh, 1] = k, off[k] + b
                        nh += 1
                        found = True
                        break
                if found:
                    break
        i = j
    return nh


@njit(cache=True)
def _global_race(off, nb, write, rec, tids, pcs, w_cta, w_ep, w_pc, w_strong, w_tid, r_cta, r_ep, r_pc, r_tid, me,
                 epoch, known, hits, vc, w_clk, r_clk, r_strong, w_val, addrs, drow, lanes, ew):
    """``CtaSanitizer._global_race`` for the weak accesses of one allocation, record after record: with other
    CTAs (epochs), then stores from two warps of this CTA (vector clocks; a store of the bytes the last writer
    stored is no hazard). Hits: (entry, kind 1 RAW / 2 WAW / 3 WAR, CTA or -1 for this one, thread, pc)."""
    nh = 0
    i = 0
    n = off.size
    while i < n:
        j = i
        while j < n and rec[j] == rec[i]:
            j += 1
        wr = write[i]
        found = False
        for k in range(i, j):
            for b in range(nb[k]):
                x = off[k] + b
                c = w_cta[x]
                if c >= 0 and c != me and known[c] < w_ep[x]:
                    hits[nh, 0], hits[nh, 1], hits[nh, 2], hits[nh, 3], hits[nh, 4] = k, 2 if wr else 1, c, \
                        w_tid[x], w_pc[x]
                    nh += 1
                    found = True
                    break
            if found:
                break
        if not found and wr:
            for k in range(i, j):
                for b in range(nb[k]):
                    x = off[k] + b
                    c = r_cta[x]
                    if c >= 0 and c != me and known[c] < r_ep[x]:
                        hits[nh, 0], hits[nh, 1], hits[nh, 2], hits[nh, 3], hits[nh, 4] = k, 3, c, r_tid[x], r_pc[x]
                        nh += 1
                        found = True
                        break
                if found:
                    break
        if not found and wr:
            for k in range(i, j):
                t = tids[k]
                for b in range(nb[k]):
                    x = off[k] + b
                    wt = w_tid[x]
                    if w_cta[x] == me and wt // 32 != t // 32 and vc[t, wt] < w_clk[x]:
                        if drow[k] >= 0:
                            e = ew[k]
                            v = (addrs[drow[k], 32 + 4 * lanes[k] + b // e] >> (8 * (b % e))) & 0xFF
                            if v == w_val[x]:
                                continue
                        hits[nh, 0], hits[nh, 1], hits[nh, 2], hits[nh, 3], hits[nh, 4] = k, 2, -1, wt, w_pc[x]
                        nh += 1
                        found = True
                        break
                if found:
                    break
        for k in range(i, j):
            t = tids[k]
            for b in range(nb[k]):
                x = off[k] + b
                if wr:
                    w_cta[x] = me
                    w_ep[x] = epoch
                    w_pc[x] = pcs[k]
                    w_tid[x] = t
                    w_clk[x] = vc[t, t]
                    w_strong[x] = False
                    if drow[k] >= 0:
                        e = ew[k]
                        w_val[x] = (addrs[drow[k], 32 + 4 * lanes[k] + b // e] >> (8 * (b % e))) & 0xFF
                    r_cta[x] = -1
                else:
                    r_cta[x] = me
                    r_ep[x] = epoch
                    r_pc[x] = pcs[k]
                    r_tid[x] = t
                    r_clk[x] = vc[t, t]
                    r_strong[x] = False
        i = j
    return nh
