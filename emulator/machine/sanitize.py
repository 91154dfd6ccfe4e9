"""The sanitizer: races, synchronisation errors, uninitialised reads and async-proxy misuse, reported lane by lane
(docs/sanitize.md).

A launch with ``sanitize=`` runs on the reference executors with one observer per CTA (:class:`CtaSanitizer`)
attached to every warp as ``warp.san`` (``None`` otherwise: the memory operations test that one attribute and
pay nothing more). The observer keeps

* a vector clock per thread of the CTA (``vc[t, u]``: the clock of thread ``u`` that thread ``t`` knows to
  precede it); barriers, ``bar.warp.sync``, mbarrier arrive -> wait, cp.async waits, bulk-copy completion and
  release -> acquire pairs (``st.release`` / ``ld.acquire``, a fence before a relaxed or volatile store,
  atomics) join clocks;
* a shadow of every shared byte: its last writer (thread, clock, instruction, atomic or not) and up to two
  readers. Two accesses to one byte by different threads, one a write, neither ordered before the other
  by the clocks and not both atomic (or strong), are a race (RAW, WAR, WAW; between lanes of one warp it is a
  warning, as compute-sanitizer's "warp level programming" hazards);
* for global memory, the writer and a reader of each byte as (CTA, epoch): a CTA's epoch advances at each
  release at GPU scope, and an acquire carries the releasing CTA's epochs over. Accesses from different CTAs
  with no such edge between them are a ``global-race``. Global bytes of ``GlobalMemory.alloc`` allocations
  are uninitialised until the host (``write``) or a kernel writes them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import (AlignmentError, AsyncHazardError, EmulatorError, MBarrierError, MemoryAccessError,
                      OperandError, ProxyError, WarpSyncError)
from ..memory import LANES
from ..memory.spaces import store_order

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck", "asynccheck")
READERS = 2                       # readers remembered per shared byte
_STRONG = {"volatile", "relaxed", "acquire", "release", "acq_rel", "sc"}


def tools_of(sanitize):
    """The tools a ``sanitize=`` argument names (a frozenset), or None for no sanitizer."""
    if sanitize is None or sanitize is False:
        return None
    if sanitize is True or (isinstance(sanitize, str) and sanitize == "all"):
        return frozenset(TOOLS)
    names = (sanitize,) if isinstance(sanitize, str) else sanitize
    if not isinstance(names, (tuple, list, set, frozenset)) or not names or \
            not all(isinstance(n, str) for n in names):
        raise OperandError(f"sanitize: expected 'all', one of {', '.join(TOOLS)} or a tuple of them, not {sanitize!r}")
    bad = [n for n in names if n not in TOOLS and n != "all"]
    if bad:
        raise OperandError(f"sanitize: unknown tool {bad[0]!r}; tools: {', '.join(TOOLS)} or 'all'")
    return frozenset(TOOLS) if "all" in names else frozenset(names)


# ---------------------------------------------------------------------------------------------------
# reports

@dataclass
class Access:
    """One side of a report: the thread and the instruction."""
    cta: tuple
    warp: int
    lane: int
    op: str                       # 'read', 'write', 'atomic', 'arrive', ...
    line: int | None = None
    text: str = ""
    source: str | None = None     # file:line from .loc

    @property
    def thread(self):
        return self.warp * LANES + self.lane

    def __str__(self):
        where = f"line {self.line}" if self.line is not None else "Warp.run"
        src = f" ({self.source})" if self.source else ""
        return (f"{self.op} by thread {self.thread} (CTA {tuple(self.cta)}, warp {self.warp}, lane {self.lane}) at "
                f"{where}{src}: {' '.join(self.text.split())}")


@dataclass
class Report:
    tool: str
    kind: str
    message: str
    severity: str = "error"       # 'error' or 'warning' (races between lanes of one warp)
    space: str | None = None      # 'shared', 'global', 'register', ...
    address: int | None = None
    size: int = 0
    first: Access | None = None   # the earlier access (races) or the only one
    second: Access | None = None  # the later access
    values: dict = field(default_factory=dict)
    count: int = 1                # how many hazards of this pair of instructions were folded into this report

    def __str__(self):
        head = {"racecheck": f"{self.severity.capitalize()}: {self.kind} hazard", }.get(self.tool, self.kind)
        lines = [f"========= [{self.tool}] {head}: {self.message}"]
        if self.space is not None and self.address is not None:
            lines.append(f"=========     at {self.space} {self.address:#x} ({self.size} bytes)")
        for a in (self.first, self.second):
            if a is not None:
                lines.append(f"=========     {a}")
        if self.values:
            lines.append("=========     values: " + ", ".join(f"{k} {v:#x}" if isinstance(v, int) else f"{k} {v}"
                                                            for k, v in self.values.items()))
        if self.count > 1:
            lines.append(f"=========     [{self.count} hazards like this one]")
        return "\n".join(lines)


def summary(reports, tools=None):
    """compute-sanitizer's closing lines: one per tool that ran."""
    out = []
    for tool in (tools or TOOLS):
        rs = [r for r in reports if r.tool == tool]
        if tool == "racecheck":
            errs = sum(1 for r in rs if r.severity == "error")
            out.append(f"========= RACECHECK SUMMARY: {len(rs)} hazard(s) displayed ({errs} error(s), "
                       f"{len(rs) - errs} warning(s)); {sum(r.count for r in rs)} hazard(s) in all")
        else:
            out.append(f"========= {tool.upper()} SUMMARY: {len(rs)} error(s)"
                       + (f" ({sum(r.count for r in rs)} in all)" if sum(r.count for r in rs) != len(rs) else ""))
    return "\n".join(out)


def print_reports(reports, tools, out):
    """The CLI's output: a banner, each report, a summary per tool (compute-sanitizer's layout, with lanes
    where it gives SASS offsets)."""
    out.write("========= EMULATOR SANITIZER (" + ", ".join(t for t in TOOLS if t in tools) + ")\n")
    for r in reports:
        out.write(str(r) + "\n=========\n")
    out.write(summary(reports, [t for t in TOOLS if t in tools]) + "\n")


def _sources(text):
    """PTX line -> 'file:line' from the .loc directives (the last one before each line)."""
    files = {int(m.group(1)): m.group(2).rsplit("/", 1)[-1]
             for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', text, re.M)}
    if not files:
        return {}
    out = {}
    cur = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith(".loc"):
            parts = s.split()
            try:
                cur = f"{files.get(int(parts[1]), parts[1])}:{int(parts[2])}"
            except (IndexError, ValueError):
                cur = None
        elif s.startswith("}") or s.startswith(".entry") or s.startswith(".func") or s.startswith(".visible"):
            cur = None
        elif cur is not None:
            out[n] = cur
    return out


_SEM = {}


def _semantics(text):
    """(strong, release, acquire, gpu scope) of an instruction from its spelling."""
    got = _SEM.get(text)
    if got is None:
        words = [w for w in text.split() if not w.startswith("@")]      # the guard is not the opcode
        op = words[0] if words else ""
        mods = set(op.split(".")[1:])
        base = op.split(".")[0]
        atomic = base in ("atom", "red")
        strong = atomic or bool(mods & _STRONG)
        release = bool(mods & {"release", "acq_rel", "sc"})
        acquire = bool(mods & {"acquire", "acq_rel", "sc"})
        gpu = bool(mods & {"gpu", "sys"}) or "volatile" in mods or (atomic and not mods & {"cta", "cluster"})
        got = _SEM[text] = (strong, release, acquire, gpu, atomic)
    return got


# ---------------------------------------------------------------------------------------------------
# the launch

class Sanitizer:
    """What one sanitised launch gathers: the reports, and the global-memory shadow shared by its CTAs."""

    MAX_REPORTS = 1000

    def __init__(self, tools, module=None, gmem=None, grid=(1, 1, 1), untracked=()):
        self.tools = tools
        self.reports: list[Report] = []
        self._keys = {}
        self.gmem = gmem
        self.sources = _sources(module.text) if module is not None else {}
        self.nctas = int(np.prod(grid))
        self.grid = grid
        self.untracked = set(int(a) for a in untracked)     # allocations not checked (.local depots)
        self._gshadow = {}         # allocation base -> dict of arrays
        self.sync = {}             # global address -> epochs (nctas,) released there
        # mbarrier waits whose parity is not the phase the thread's own arrival fell in: reported only if the
        # wait never succeeds (a deadlock, or the CTA ends first); a thread that waits for a later phase that
        # others complete (ThunderKittens' producers and consumers) is not an over-arrival
        self.pending_over = {}     # (cta id, thread, mbarrier address) -> (key, make)

    def attach(self, cta):
        """Give a CTA (machine.cta.CTA) its observer, before it runs."""
        s = CtaSanitizer(self, cta)
        cta.san = s
        for w in cta.warps:
            w.san = s
        if cta.async_unit is not None:
            cta.async_unit.on_hazard = s.async_hazard
        return s

    def detach(self, cta):
        """A CTA ran to its end: drop its observer (its shadows and clocks) so that a long grid keeps only
        the reports."""
        self.flush_pending(id(cta))
        cta.san = None
        for w in cta.warps:
            w.san = None
        if cta.async_unit is not None:
            cta.async_unit.on_hazard = None

    # -- reports -----------------------------------------------------------------------------------
    def add(self, key, make):
        """Record a report, or count it against the earlier report of the same pair of instructions."""
        rep = self._keys.get(key)
        if rep is not None:
            rep.count += 1
            return rep
        if len(self.reports) >= self.MAX_REPORTS:
            return None
        rep = make()
        self._keys[key] = rep
        self.reports.append(rep)
        return rep

    def summary(self):
        return summary(self.reports, [t for t in TOOLS if t in self.tools])

    def flush_pending(self, cta=None):
        """Report the over-arrival waits that never succeeded (of one CTA, or of all)."""
        for k in [k for k in self.pending_over if cta is None or k[0] == cta]:
            self.add(*self.pending_over.pop(k))

    def fatal(self, err, warp=None, lane=None):
        """An error the launch cannot continue past: a report of it (memcheck for bad addresses), then the
        reports are attached to the exception."""
        self.flush_pending()
        tool, kind = "memcheck", None
        if isinstance(err, AlignmentError):
            kind = "misaligned"
        elif isinstance(err, MemoryAccessError):
            kind = "out-of-bounds"
        elif isinstance(err, WarpSyncError):
            tool, kind = "synccheck", "deadlock" if "deadlock" in str(err) else "warp-sync"
        elif isinstance(err, MBarrierError):
            tool, kind = "synccheck", "mbarrier"
        elif isinstance(err, AsyncHazardError):
            tool, kind = "asynccheck", "proxy-fence" if isinstance(err, ProxyError) else "in-flight-read"
        if kind is not None and tool in self.tools and not getattr(err, "_san_reported", False):
            m = re.search(r"lane (\d+)", str(err))
            ln = int(m.group(1)) if m else (lane or 0)
            acc = None
            if warp is not None:
                acc = warp.san.access(warp, ln, "executes") if warp.san is not None else None
            addr = re.search(r"address (0x[0-9a-f]+)", str(err))
            space = "global" if "global" in str(err) else "shared" if "shared" in str(err) else None
            self.add(("fatal", id(err)), lambda: Report(tool, kind, str(err), space=space,
                                                        address=int(addr.group(1), 16) if addr else None,
                                                        first=acc))
        err._san_reported = True
        err.reports = self.reports
        err.sanitizer_summary = self.summary()
        return err

    # -- global memory -------------------------------------------------------------------------------
    def gshadow(self, base, size):
        sh = self._gshadow.get(base)
        if sh is None:
            sh = self._gshadow[base] = {
                "w_cta": np.full(size, -1, np.int32), "w_ep": np.zeros(size, np.int32),
                "w_pc": np.zeros(size, np.int32), "w_strong": np.zeros(size, np.bool_),
                "w_tid": np.zeros(size, np.int32),
                "r_cta": np.full(size, -1, np.int32), "r_ep": np.zeros(size, np.int32),
                "r_pc": np.zeros(size, np.int32), "r_tid": np.zeros(size, np.int32),
                "w_clk": np.zeros(size, np.int32), "r_clk": np.zeros(size, np.int32),
                "r_strong": np.zeros(size, np.bool_), "w_val": np.zeros(size, np.uint8)}
        return sh


class CtaSanitizer:
    """The observer of one CTA: vector clocks, the shared-memory shadow, barrier and mbarrier clocks."""

    def __init__(self, launch: Sanitizer, cta):
        self.launch = launch
        self.tools = launch.tools
        self.cta = cta
        self.ctaid = tuple(cta.ctaid) if cta is not None else (0, 0, 0)
        nwarps = len(cta.warps) if cta is not None else 1
        smem = cta.smem.size if cta is not None else 0
        self._init(nwarps, smem)
        g = launch.grid
        self.index = self.ctaid[0] + g[0] * (self.ctaid[1] + g[1] * self.ctaid[2])
        self.epoch = 1
        self.known = np.zeros(max(launch.nctas, 1), np.int32)     # epochs of other CTAs acquired

    def _init(self, nwarps, smem):
        T = nwarps * LANES
        self.T = T
        self.vc = np.zeros((T, T), np.int32)
        self.vc[np.arange(T), np.arange(T)] = 1
        self.fenced = np.zeros(T, np.bool_)
        self.w_tid = np.full(smem, -1, np.int32)      # -1: never written; -2: written by an untracked agent
        self.w_clk = np.zeros(smem, np.int32)
        self.w_pc = np.zeros(smem, np.int32)
        self.w_strong = np.zeros(smem, np.bool_)
        self.r_tid = np.full((smem, READERS), -1, np.int32)
        self.r_clk = np.zeros((smem, READERS), np.int32)
        self.r_pc = np.zeros((smem, READERS), np.int32)
        self.r_strong = np.zeros((smem, READERS), np.bool_)
        self.s_sync = {}                              # shared address -> clock released there
        self.mbar = {}                                # (unit id, address) -> [clock, max phase waited, unit]
        self.cluster_vc = np.zeros(T, np.int32)
        self.regs_seen = set()
        # racecheck divergent-order: the last strong write and the strong reads since, per byte
        # (("shared" | "global", address) -> [(thread, clock, pc, step) or None, {thread: (thread, clock, pc, step)}]),
        # and per warp the last step at which each pair of lanes made a strong access together
        self.order_shadow = {}
        self.together = {}
        self.order_step = 0

    # -- where -------------------------------------------------------------------------------------
    def _pc(self, warp):
        return int(getattr(warp, "cur_pc", -1))

    def _instr(self, pc):
        cta = self.cta
        if cta is None or pc < 0:
            return None
        return cta.prog.code[pc].instr

    def _text(self, warp):
        ins = self._instr(self._pc(warp))
        return (ins.text or ins.opcode) if ins is not None else ""

    def access(self, warp, lane, op, pc=None, text=None):
        pc = self._pc(warp) if pc is None else pc
        ins = self._instr(pc)
        if ins is None:
            return Access(self.ctaid, warp.warp_id, int(lane), op, None, text or "")
        return Access(self.ctaid, warp.warp_id, int(lane), op, ins.line, ins.text or ins.opcode,
                      self.launch.sources.get(ins.line))

    # -- shared memory -------------------------------------------------------------------------------
    def shared(self, warp, instr, addrs, mask, nbytes, write, data=None):
        """An access by the lanes ``mask`` of ``warp`` to shared bytes [addr, addr + nbytes) of its CTA."""
        lanes = np.flatnonzero(mask)
        if not lanes.size:
            return
        idx = addrs[lanes].astype(np.int64)[:, None] + np.arange(nbytes)
        strong, release, acquire, gpu, atomic = _semantics(instr)
        tids = warp.warp_id * LANES + lanes
        vc = self.vc
        # acquire: a strong read of an address something released to
        if (acquire or strong) and not write and self.s_sync:
            for k, lane in enumerate(lanes):
                rel = self.s_sync.get(int(addrs[lane]))
                if rel is not None:
                    np.maximum(vc[tids[k]], rel, out=vc[tids[k]])
        if atomic and self.s_sync:
            for k, lane in enumerate(lanes):
                rel = self.s_sync.get(int(addrs[lane]))
                if rel is not None:
                    np.maximum(vc[tids[k]], rel, out=vc[tids[k]])
        if strong and not (atomic or release or acquire) and "racecheck" in self.tools:
            self.divergent_order(warp, "shared", addrs, lanes, nbytes, write, self.s_sync)
        my = vc[tids, tids][:, None]                             # (L, 1) own clocks
        wt = self.w_tid[idx]
        pc = self._pc(warp)
        if "initcheck" in self.tools and (not write or atomic):
            un = wt == -1
            if un.any():
                k, b = np.argwhere(un)[0]
                self.init_shared(warp, int(lanes[k]), pc, int(idx[k, b]), nbytes,
                                 lambda: int.from_bytes(warp.smem[idx[k]].tobytes(), "little"))
        same_value = None
        if write and data is not None:          # writing the bytes already there changes nothing another
            same_value = warp.smem[idx] == np.asarray(data, np.uint8)[lanes]     # thread could see (benign)
        if "racecheck" in self.tools:
            tracked = wt >= 0
            if tracked.any():
                known = vc[tids[:, None], np.where(tracked, wt, 0)]
                race = tracked & (wt != tids[:, None]) & (known < self.w_clk[idx]) & \
                    ~(strong & self.w_strong[idx])
                if same_value is not None:
                    race &= ~same_value
                if race.any():
                    self._race(warp, lanes, tids, idx, race, wt, self.w_pc[idx], "RAW" if not write else "WAW",
                               nbytes, write, data)
            if write:
                rt = self.r_tid[idx]                                 # (L, n, R)
                rtr = rt >= 0
                if rtr.any():
                    known = vc[tids[:, None, None], np.where(rtr, rt, 0)]
                    race = rtr & (rt != tids[:, None, None]) & (known < self.r_clk[idx]) & \
                        ~(strong & self.r_strong[idx])
                    if same_value is not None:
                        race &= ~same_value[..., None]
                    if race.any():
                        hit = race.any(axis=2)
                        slot = race.argmax(axis=2)
                        pick = np.take_along_axis(rt, slot[..., None], 2)[..., 0]
                        ppc = np.take_along_axis(self.r_pc[idx], slot[..., None], 2)[..., 0]
                        self._race(warp, lanes, tids, idx, hit, pick, ppc, "WAR", nbytes, write, data)
        # update the shadow
        tcol = np.broadcast_to(tids[:, None], idx.shape)
        if write:
            so = np.searchsorted(lanes, store_order(mask, nbytes))     # the lane whose bytes stay, written last
            self.w_tid[idx[so]] = tcol[so]
            self.w_clk[idx[so]] = np.broadcast_to(my, idx.shape)[so]
            self.w_pc[idx] = pc
            self.w_strong[idx] = strong
            self.r_tid[idx] = -1
            if atomic or release or (strong and self.fenced[tids].any()):
                for k, lane in enumerate(lanes):
                    t = tids[k]
                    if release or atomic or self.fenced[t]:
                        a = int(addrs[lane])
                        cur = self.s_sync.get(a)
                        self.s_sync[a] = vc[t].copy() if cur is None else np.maximum(cur, vc[t])
                        vc[t, t] += 1
                        self.fenced[t] = False
        if not write or atomic:
            first = self.r_tid[idx, 0]
            same = first == tcol
            shift = ~same
            if shift.any():
                ii = idx[shift]
                self.r_tid[ii, 1] = self.r_tid[ii, 0]
                self.r_clk[ii, 1] = self.r_clk[ii, 0]
                self.r_pc[ii, 1] = self.r_pc[ii, 0]
                self.r_strong[ii, 1] = self.r_strong[ii, 0]
            self.r_tid[idx, 0] = tcol
            self.r_clk[idx, 0] = np.broadcast_to(vc[tids, tids][:, None], idx.shape)
            self.r_pc[idx, 0] = pc
            self.r_strong[idx, 0] = strong

    def _race(self, warp, lanes, tids, idx, race, other, other_pc, kind, nbytes, write, data):
        """One report per severity: the first hazard between warps, the first between lanes of one warp."""
        same = (other // LANES) == warp.warp_id
        for part in (race & ~same, race & same):
            if part.any():
                self._race1(warp, lanes, tids, idx, part, other, other_pc, kind, nbytes, write, data)

    def _race1(self, warp, lanes, tids, idx, race, other, other_pc, kind, nbytes, write, data):
        k, b = np.argwhere(race)[0]
        a = int(idx[k, 0])
        lane = int(lanes[k])
        written = None
        if write and data is not None:
            written = int.from_bytes(np.asarray(data[lane], np.uint8).tobytes(), "little")
        self.race(warp, lane, self._pc(warp), int(other[k, b]), int(other_pc[k, b]), kind, a, nbytes, write,
                  lambda: int.from_bytes(warp.smem[a:a + nbytes].tobytes(), "little") if
                  a + nbytes <= warp.smem.size else 0, written)

    def divergent_order(self, warp, space, addrs, lanes, nbytes, write, released):
        """racecheck ``divergent-order``: a volatile or relaxed access by the lanes ``lanes`` of ``warp`` to bytes
        that other lanes of the same warp accessed (one of the two a write) while the two lane groups were apart,
        with nothing between them that orders them: no ``__syncwarp`` or barrier (the vector clocks), no strong
        access the lanes made together since (they met again), no release or acquire at the address. The value
        depends on the order in which the lane groups run, which ptxas decides (where it predicates the sides of
        a short branch they run in its order, where it keeps the branch the smaller group runs first). A read
        inside a loop is a poll (a spin-wait: the loop runs until the other group's write arrives, and the
        scheduler lets that group run) and takes no part."""
        w = warp.warp_id
        co = self.together.get(w)
        if co is None:
            co = self.together[w] = np.zeros((LANES, LANES), np.int64)
        self.order_step += 1
        step = self.order_step
        co[np.ix_(lanes, lanes)] = step
        pc = self._pc(warp)
        if not write and self._in_loop(pc):
            return
        here = np.zeros(LANES, np.bool_)
        here[lanes] = True
        vc = self.vc
        shadow = self.order_shadow
        for lane in lanes.tolist():
            t = w * LANES + lane
            a0 = int(addrs[lane])
            if a0 in released or self.fenced[t]:
                continue                            # a flag: release -> acquire orders what it guards
            for b in range(nbytes):
                ent = shadow.get((space, a0 + b))
                if ent is None:
                    continue
                prev = ([ent[0]] if ent[0] is not None else []) + (list(ent[1].values()) if write else [])
                hit = next((p for p in prev if p[0] // LANES == w and not here[p[0] % LANES]
                            and vc[t, p[0]] < p[1] and co[p[0] % LANES, lane] < p[3]), None)
                if hit is not None:
                    self._order_report(warp, space, a0, nbytes, lane, write, hit, ent[0] is hit)
                    break
        for lane in lanes.tolist():
            t = w * LANES + lane
            rec = (t, int(vc[t, t]), pc, step)
            for b in range(int(nbytes)):
                key = (space, int(addrs[lane]) + b)
                ent = shadow.get(key)
                if ent is None:
                    ent = shadow[key] = [None, {}]
                if write:
                    ent[0], ent[1] = rec, {}
                else:
                    ent[1][t] = rec

    def _in_loop(self, pc):
        loops = getattr(self, "_loops", None)
        if loops is None:
            from .convergence import convergence
            loops = self._loops = convergence(self.cta.prog).lid[:, 0] >= 0 if self.cta is not None else ()
        return 0 <= pc < len(loops) and bool(loops[pc])

    def _order_report(self, warp, space, a, nbytes, lane, write, prev, prev_write):
        t2, _, opc, _ = prev
        pc = self._pc(warp)
        kind = "RAW" if prev_write and not write else "WAW" if prev_write else "WAR"

        def make():
            first = self.access(_Lane(t2 // LANES), t2 % LANES, "write" if prev_write else "read", pc=opc)
            second = self.access(warp, lane, "write" if write else "read", pc=pc)
            return Report("racecheck", "divergent-order", f"{kind}: lanes {t2 % LANES} and {lane} of warp "
                          f"{warp.warp_id} took different paths and access {space} {a:#x} (lines {first.line} and "
                          f"{second.line}) with no __syncwarp or reconvergence between them: the bits depend on the "
                          f"order in which the lane groups run, which ptxas decides (a predicated short branch runs "
                          f"its sides in ptxas's order); the emulator's order may not be the GPU's",
                          severity="warning", space=space, address=a, size=nbytes, first=first, second=second)
        self.launch.add(("divergent-order", opc, pc), make)

    def init_shared(self, warp, lane, pc, a, nbytes, memory):
        """initcheck: lane ``lane`` of ``warp`` reads shared byte ``a`` that nothing wrote (``memory()``: the
        bytes its access reads, as an integer)."""
        self.launch.add(("init-shared", pc), lambda: Report(
            "initcheck", "uninitialized-read", f"reads shared byte {a:#x}, which nothing wrote",
            space="shared", address=a, size=nbytes, first=self.access(warp, lane, "read", pc=pc),
            values={"memory": memory()}))

    def race(self, warp, lane, pc, t2, opc, kind, a, nbytes, write, memory, written=None):
        """A shared-memory hazard of ``kind`` between thread ``t2`` (at ``opc``) and lane ``lane`` of ``warp`` (at
        ``pc``) on the access of ``nbytes`` at ``a`` (``memory()``: the bytes there before the access)."""
        same_warp = t2 // LANES == warp.warp_id
        sev = "warning" if same_warp else "error"
        first_op = {"RAW": "write", "WAW": "write", "WAR": "read"}[kind]

        def make():
            first = self.access(_Lane(t2 // LANES), t2 % LANES, first_op, pc=opc)
            ins = self._instr(pc)
            atomic = ins is not None and _semantics(ins.text or ins.opcode)[4]
            second = self.access(warp, lane, ("atomic" if atomic else "write") if write else "read", pc=pc)
            vals = {"memory": memory()}
            if written is not None:
                vals["written"] = written
            who = "lanes of one warp" if same_warp else "warps"
            return Report("racecheck", kind, f"{kind} hazard on shared {a:#x} between {who}: thread {t2} "
                          f"{'wrote' if first_op == 'write' else 'read'} it at line {first.line}, thread "
                          f"{second.thread} {'writes' if write else 'reads'} it at line {second.line} with no "
                          f"barrier or other synchronisation in between", severity=sev, space="shared", address=a,
                          size=nbytes, first=first, second=second, values=vals)
        self.launch.add(("race", kind, sev, opc, pc), make)

    def untracked_write(self, idx):
        """Shared bytes written by something the race check does not follow (stmatrix, another CTA of the
        cluster): they count as initialised and their earlier accesses are forgotten."""
        idx = np.asarray(idx, np.int64).reshape(-1)
        self.w_tid[idx] = -2
        self.r_tid[idx] = -1

    def async_write(self, idx, snap):
        """A copy lands in shared memory (cp.async.bulk, TMA): ``snap`` = (issuing thread, its clocks at
        issue) or None (untracked)."""
        idx = np.asarray(idx, np.int64).reshape(-1)
        if snap is None:
            return self.untracked_write(idx)
        t, clocks, pc, warp_id = snap
        if "racecheck" in self.tools:
            rt = self.r_tid[idx]
            rtr = rt >= 0
            if rtr.any():
                known = clocks[np.where(rtr, rt, 0)]
                race = rtr & (known < self.r_clk[idx])
                same = (rt // LANES) == warp_id
                for part in (race & ~same, race & same):
                    if not part.any():
                        continue
                    i, s = np.argwhere(part)[0]
                    t2 = int(rt[i, s])
                    a = int(idx[i])
                    opc = int(self.r_pc[idx[i], s])
                    sev = "warning" if t2 // LANES == warp_id else "error"

                    def make():
                        first = self.access(_Lane(t2 // LANES), t2 % LANES, "read", pc=opc)
                        second = self.access(_Lane(warp_id), t % LANES, "write (by its bulk copy)", pc=pc)
                        return Report("racecheck", "WAR", f"WAR hazard on shared {a:#x}: thread {t2} read it at "
                                      f"line {first.line} before the copy issued at line {second.line} landed "
                                      f"there, with no wait on its mbarrier in between", severity=sev,
                                      space="shared", address=a, size=1, first=first, second=second)
                    self.launch.add(("race", "WAR", sev, opc, pc), make)
        self.w_tid[idx] = t
        self.w_clk[idx] = clocks[t]
        self.w_pc[idx] = pc
        self.w_strong[idx] = False
        self.r_tid[idx] = -1

    def snapshot(self, warp, lane):
        """The issuing thread's clocks for a copy it issues now (its own clock then moves on)."""
        t = warp.warp_id * LANES + int(lane)
        snap = (t, self.vc[t].copy(), self._pc(warp), warp.warp_id)
        self.vc[t, t] += 1
        return snap

    # -- global memory -------------------------------------------------------------------------------
    def global_access(self, warp, instr, addrs, mask, nbytes, write, data=None):
        """An access to global memory: initcheck, and races (with other CTAs, between threads of this one);
        ``data``: the bytes a store writes (32, nbytes)."""
        lanes = np.flatnonzero(mask)
        if not lanes.size:
            return
        launch = self.launch
        g = launch.gmem
        a = addrs[lanes].astype(np.uint64).astype(np.int64)
        bases = np.asarray(g._bases, np.int64)
        which = np.searchsorted(bases, a, "right") - 1
        strong, release, acquire, gpu, atomic = _semantics(instr)
        tids = warp.warp_id * LANES + lanes
        pc = self._pc(warp)
        if (acquire or strong) and launch.sync and (not write or atomic):
            for k in range(lanes.size):
                rel = launch.sync.get(int(a[k]))
                if rel is not None:
                    np.maximum(self.known, rel, out=self.known)
        if strong and not (atomic or release or acquire) and "racecheck" in self.tools:
            self.divergent_order(warp, "global", addrs.astype(np.uint64).astype(np.int64), lanes, nbytes, write,
                                 launch.sync)
        for i in np.unique(which):
            if i < 0:
                continue
            base = int(bases[i])
            if base in launch.untracked:
                continue
            buf = g._bufs[i]
            sel = which == i
            off = (a[sel] - base)[:, None] + np.arange(nbytes)
            ls = lanes[sel]
            if "initcheck" in self.tools and base in g._uninit and (not write or atomic):
                init = g._uninit[base]
                un = np.ones(off.shape, np.bool_) if init is None else ~init[off]
                if un.any():
                    k, b = np.argwhere(un)[0]
                    self.init_global(warp, int(ls[k]), pc, base, base + int(off[k, b]), nbytes,
                                     int.from_bytes(buf[off[k]].tobytes(), "little"))
            if write and base in g._uninit:
                init = g._uninit[base]
                if init is None:
                    init = g._uninit[base] = np.zeros(buf.size, np.bool_)
                init[off] = True
            if "racecheck" in self.tools:
                self._global_race(warp, launch.gshadow(base, buf.size), base, off, ls, write, strong, pc, nbytes,
                                  None if data is None else np.asarray(data, np.uint8)[ls])
        if write and (release or (strong and self.fenced[tids].any())) and gpu:
            for k in range(lanes.size):
                t = tids[k]
                if release or self.fenced[t]:
                    self._release(int(a[k]))
                    self.fenced[t] = False

    def init_global(self, warp, lane, pc, base, addr, nbytes, memory):
        """initcheck: lane ``lane`` reads global byte ``addr`` of the allocation at ``base`` that nothing wrote."""
        self.launch.add(("init-global", pc), lambda: Report(
            "initcheck", "uninitialized-read", f"reads global byte {addr:#x} of the allocation at "
            f"{base:#x}, which neither the host nor a kernel wrote", space="global", address=addr,
            size=nbytes, first=self.access(warp, lane, "read", pc=pc), values={"memory": memory}))

    def global_race(self, warp, lane, pc, kind, c2, t2, opc, addr, nbytes, write):
        """racecheck: an access of lane ``lane`` races with thread ``t2`` of the CTA numbered ``c2`` (at ``opc``)."""
        g = self.launch.grid
        cid = (c2 % g[0], (c2 // g[0]) % g[1], c2 // (g[0] * g[1]))

        def make():
            first = self.access(_Lane(t2 // LANES), t2 % LANES, "write" if kind != "WAR" else "read", pc=opc)
            first.cta = cid
            second = self.access(warp, lane, "write" if write else "read", pc=pc)
            return Report("racecheck", "global-race", f"{kind} race on global {addr:#x} between CTAs {cid} and "
                          f"{self.ctaid}: no release/acquire (fence + atomic, st.release/ld.acquire) orders the "
                          f"two accesses", space="global", address=addr, size=nbytes, first=first, second=second)
        self.launch.add(("grace", kind, opc, pc), make)

    def _release(self, addr):
        launch = self.launch
        rel = self.known.copy()
        rel[self.index] = self.epoch
        cur = launch.sync.get(addr)
        launch.sync[addr] = rel if cur is None else np.maximum(cur, rel)
        self.epoch += 1

    def _global_race(self, warp, sh, base, off, lanes, write, strong, pc, nbytes, data=None):
        me = self.index
        tids = warp.warp_id * LANES + lanes
        wc = sh["w_cta"][off]
        other = (wc >= 0) & (wc != me)
        hit = other & (self.known[np.where(other, wc, 0)] < sh["w_ep"][off]) & ~(strong & sh["w_strong"][off])
        kind = "WAW" if write else "RAW"
        if not hit.any() and write:
            rc = sh["r_cta"][off]
            other = (rc >= 0) & (rc != me)
            hit = other & (self.known[np.where(other, rc, 0)] < sh["r_ep"][off])
            kind, wc, src_pc, src_tid = "WAR", rc, sh["r_pc"][off], sh["r_tid"][off]
        else:
            src_pc, src_tid = sh["w_pc"][off], sh["w_tid"][off]
        if hit.any():
            k, b = np.argwhere(hit)[0]
            self.global_race(warp, int(lanes[k]), pc, kind, int(wc[k, b]), int(src_tid[k, b]), int(src_pc[k, b]),
                             base + int(off[k, 0]), nbytes, write)
        elif write:                             # stores of different bytes from two warps of this CTA that
            tcol = tids[:, None]                # nothing orders (the vector clocks). Reads are not compared
            wc, wt = sh["w_cta"][off], sh["w_tid"][off]     # here: Triton's replicated lanes read what another
            mine = (wc == me) & (wt // LANES != warp.warp_id)   # warp stores and drop the value
            hit = mine & (self.vc[tcol, np.where(mine, wt, 0)] < sh["w_clk"][off]) & \
                ~(strong & sh["w_strong"][off])
            if data is not None:                # the same bytes again (replicated layouts): nothing changes
                hit &= sh["w_val"][off] != data
            if hit.any():
                k, b = np.argwhere(hit)[0]
                self.global_race_cta(warp, int(lanes[k]), pc, "WAW", int(wt[k, b]), int(sh["w_pc"][off][k, b]),
                                     base + int(off[k, 0]), nbytes, write)
        clk = self.vc[tids, tids][:, None]
        if write:
            sh["w_cta"][off] = me
            sh["w_ep"][off] = self.epoch
            sh["w_pc"][off] = pc
            sh["w_tid"][off] = np.broadcast_to(tids[:, None], off.shape)
            sh["w_clk"][off] = np.broadcast_to(clk, off.shape)
            sh["w_strong"][off] = strong
            if data is not None:
                sh["w_val"][off] = data
            sh["r_cta"][off] = -1
        else:
            sh["r_cta"][off] = me
            sh["r_ep"][off] = self.epoch
            sh["r_pc"][off] = pc
            sh["r_tid"][off] = np.broadcast_to(tids[:, None], off.shape)
            sh["r_clk"][off] = np.broadcast_to(clk, off.shape)
            sh["r_strong"][off] = strong

    def global_race_cta(self, warp, lane, pc, kind, t2, opc, addr, nbytes, write):
        """racecheck: an access to global memory races with one by thread ``t2`` of another warp of the same CTA
        (at ``opc``)."""
        sev = "error"

        def make():
            first = self.access(_Lane(t2 // LANES), t2 % LANES, "write" if kind != "WAR" else "read", pc=opc)
            second = self.access(warp, lane, "write" if write else "read", pc=pc)
            return Report("racecheck", "global-race", f"{kind} race on global {addr:#x} between threads {t2} and "
                          f"{second.thread} of CTA {self.ctaid}: no barrier or other synchronisation orders the two "
                          f"accesses", severity=sev, space="global", address=addr, size=nbytes, first=first,
                          second=second)
        self.launch.add(("grace-cta", kind, sev, opc, pc), make)

    def fence(self, warp, mask, text):
        """membar / fence.sc / fence.acq_rel: the lane's next strong store or atomic releases."""
        tids = warp.warp_id * LANES + np.flatnonzero(mask)
        self.fenced[tids] = True

    # -- barriers ------------------------------------------------------------------------------------
    def bar_arrive(self, b, warp, mask):
        tids = warp.warp_id * LANES + np.flatnonzero(mask)
        acc = self.vc[tids].max(axis=0)
        cur = b.get("vc")
        b["vc"] = acc if cur is None else np.maximum(cur, acc)
        self.vc[tids, tids] += 1

    def bar_release(self, b):
        acc = b.get("vc")
        if acc is None:
            return
        for w, m in b["waiters"]:
            tids = w.warp_id * LANES + np.flatnonzero(m)
            self.vc[tids] = np.maximum(self.vc[tids], acc)

    def warp_sync(self, warp, mask):
        """bar.warp.sync: the lanes ``mask`` meet."""
        tids = warp.warp_id * LANES + np.flatnonzero(mask)
        if tids.size:
            self.vc[tids] = self.vc[tids].max(axis=0)
            self.vc[tids, tids] += 1

    def cluster_arrive(self, warp, mask):
        tids = warp.warp_id * LANES + np.flatnonzero(mask)
        np.maximum(self.cluster_vc, self.vc[tids].max(axis=0), out=self.cluster_vc)
        self.vc[tids, tids] += 1

    def cluster_wait(self, warp, mask):
        tids = warp.warp_id * LANES + np.flatnonzero(mask)
        self.vc[tids] = np.maximum(self.vc[tids], self.cluster_vc)

    # -- mbarriers -----------------------------------------------------------------------------------
    def _mb(self, unit, addr):
        key = (id(unit), int(addr))
        m = self.mbar.get(key)
        if m is None:           # [clocks released to it, phase each thread last arrived on, the unit]
            m = self.mbar[key] = [np.zeros(self.T, np.int32), np.full(self.T, -1, np.int64), unit,
                                  np.zeros(self.T, np.int32)]
        return m

    def mbar_arrive(self, warp, unit, addr, lane, phase_before):
        t = warp.warp_id * LANES + int(lane)
        m = self._mb(unit, addr)
        np.maximum(m[0], self.vc[t], out=m[0])
        m[1][t] = phase_before
        m[3][t] = self._pc(warp)
        self.vc[t, t] += 1

    def mbar_wait(self, warp, unit, addr, lane, done, parity):
        """A test_wait / try_wait of a lane: an acquire when it succeeds. synccheck: a thread that waits with
        the parity of a phase other than the one its own arrival fell in (its arrival came after the expected
        count was reached, so it completed the next phase instead: arrivals beyond the expected count)."""
        t = warp.warp_id * LANES + int(lane)
        m = self._mb(unit, addr)
        if done:
            np.maximum(self.vc[t], m[0], out=self.vc[t])
            self.launch.pending_over.pop((id(self.cta), t, int(addr)), None)
        arrived = int(m[1][t])
        if parity is None or arrived < 0 or (arrived & 1) == parity or "synccheck" not in self.tools:
            return
        b = unit.mbarriers.live.get(int(addr))
        if b is None or done:
            return
        pc = self._pc(warp)
        apc = int(m[3][t])
        self.launch.pending_over[(id(self.cta), t, int(addr))] = (("mbar-over", apc, pc), lambda: Report(
            "synccheck", "mbarrier-overarrival", f"mbarrier at shared {int(addr):#x} (expected count "
            f"{b.expected}): thread {t} arrived in phase {arrived}, after the expected count of arrivals had "
            f"completed phase {arrived - 1}, and waits for parity {parity}: more threads arrive than the count "
            f"the mbarrier was initialised with (or a wait is missing)", space="shared", address=int(addr), size=8,
            first=self.access(warp, lane, "arrive", pc=apc), second=self.access(warp, lane, "wait")))

    def mbar_tx(self, unit, addr, snap):
        if snap is None:
            return
        m = self._mb(unit, addr)
        np.maximum(m[0], snap[1], out=m[0])


    # -- hazards the emulator raises one at a time ------------------------------------------------------
    def hazard(self, warp, tool, kind, message, lane=None, space=None, address=None):
        """A rule broken that the launch can run past: a report when ``tool`` is on (True: go on), else
        False (the caller raises as without a sanitizer)."""
        if tool not in self.tools:
            return False
        pc = self._pc(warp) if warp is not None else -1
        self.launch.add((tool, kind, pc), lambda: Report(
            tool, kind, message, space=space, address=address,
            first=self.access(warp, lane if lane is not None else 0, "executes") if warp is not None else None))
        return True

    def async_hazard(self, instr, message, address, who=None):
        """AsyncUnit.check_async_read: a generic write not fenced before the async proxy reads it; ``who``:
        (warp, lane) that issued the read."""
        if "asynccheck" not in self.tools:
            return False
        w, lane = who if who is not None else (None, 0)
        self.launch.add(("proxy", instr), lambda: Report(
            "asynccheck", "proxy-fence", f"{' '.join(instr.split())}: {message}", space="shared", address=address,
            size=1, first=self._proxy_writer(address),
            second=self.access(w, lane, "read (async proxy)") if w is not None else
            Access(self.ctaid, 0, 0, "read (async proxy)", None, instr)))
        return True

    def _proxy_writer(self, address):
        t = int(self.w_tid[address]) if 0 <= address < self.w_tid.size else -1
        if t < 0:
            return None
        return self.access(_Lane(t // LANES), t % LANES, "write (generic proxy)", pc=int(self.w_pc[address]))

    def _written_anywhere(self):
        """Registers some instruction of the kernel writes (its first operand), guarded or not."""
        got = getattr(self, "_writable", None)
        if got is None:
            got = self._writable = set()
            for op in (self.cta.prog.code if self.cta is not None else ()):
                ins = getattr(op, "instr", None)
                if ins is None or not getattr(ins, "operands", None):
                    continue
                first = ins.operands[0]
                for it in getattr(first, "items", None) or (first,):
                    n = getattr(it, "name", None)
                    if isinstance(n, str):
                        got.add(n)
        return got

    def uninit_reg(self, warp, name):
        """A register read before anything wrote it. In a kernel only registers that no instruction writes
        at all are reported: a guarded write (``@%p ld ...``) leaves some lanes' values undefined on purpose,
        and compilers read such registers where the result is then unused."""
        if "initcheck" not in self.tools or name in self.regs_seen:
            return
        self.regs_seen.add(name)
        if name in self._written_anywhere():
            return
        pc = self._pc(warp)
        live = ~getattr(warp, "exited", np.zeros(LANES, np.bool_))
        lane = int(np.flatnonzero(live)[0]) if live.any() else 0
        self.launch.add(("reg", name), lambda: Report(
            "initcheck", "uninitialized-read", f"reads register {name}, which nothing wrote", space="register",
            first=self.access(warp, lane, "read")))


class _Lane:
    """A stand-in warp for an access recorded earlier (only its number is needed)."""

    def __init__(self, warp_id):
        self.warp_id = warp_id
        self.cur_pc = -1


def lone_warp(tools, warp):
    """A sanitizer for ``Warp.run``: one warp, no CTA."""
    launch = Sanitizer(tools, None, warp.gmem)
    s = CtaSanitizer.__new__(CtaSanitizer)
    s.launch, s.tools, s.cta, s.ctaid = launch, tools, None, (0, 0, 0)
    s._init(1, warp.smem.size)
    s.index, s.epoch = 0, 1
    s.known = np.zeros(1, np.int32)
    return launch, s


__all__ = ["TOOLS", "Report", "Access", "Sanitizer", "CtaSanitizer", "tools_of", "summary", "EmulatorError"]
