"""Whole kernels: ``nvcc -ptx`` output run on CTAs of 1..32 warps.

    module = load_ptx(open("kernel.ptx").read())
    module.launch("ptx_mma_shared", grid=(1, 1, 1), block=(32, 1, 1), args=[a, b, c, 16, 8, 16], gmem=g)

How a launch runs
-----------------
* A grid starts CTA after CTA (``%ctaid`` x fastest); CTAs that wait on each other through global memory stay
  resident together (``machine.residency``: ``run(park=True)`` returns None while the CTA only spins). A CTA is ``ceil(threads / 32)`` warps that share one
  shared memory (static ``.shared`` variables, demoted ones included, then the dynamic ``extern .shared``
  window of ``shared_bytes``); lanes beyond the block's thread count never run.
* Each lane has its own program counter. A warp executes one lane group (the lanes at one PC) at a time,
  with real masks; lanes that branch apart meet again at the branch's immediate post-dominator, and
  warp-synchronous instructions wait for the lanes they name (``machine/convergence.py``: the pick rule,
  the same in the fast engine). Inside calls the call-site chains compare first, so lanes in a callee run
  before the lanes waiting after its call site.
* The scheduler runs warp 0, 1, ... in turn, each until it finishes or waits at a barrier; ``bar.sync`` /
  ``barrier.sync`` release when every non-exited thread of the CTA (or the thread count given) arrived.
  A barrier nobody can reach raises an error (deadlock).
* Spin loops: every SPIN_CHECK-th backward branch a warp takes (and the next), the lanes that took it are
  compared with their previous time round; unchanged registers and PCs mean they wait for someone else.
  They are held back while other lanes of the warp can run (independent thread scheduling), else the warp
  yields. A yield is progress unless the warp's state equals that of its previous yield; a round of warps
  that only spin without progress is a deadlock, reported with each warp's spinning lane groups.
* ``.local`` memory (``__local_depot``) is private per thread; its generic addresses (``cvta.local``)
  are distinct per thread. ``.global`` / ``.const`` module variables live in the launch's GlobalMemory,
  allocated on first launch and kept across launches with the same GlobalMemory, like a loaded module.
* ``%clock`` / ``%clock64`` count the instructions the warp has issued: deterministic.
* ``call vprintf`` formats like CUDA's printf and writes to ``sys.stdout`` (lanes in order).
"""
from __future__ import annotations


import numpy as np

from ..errors import (DeviceAssertError, EmulatorError, OperandError, UnsupportedError, WarpSyncError, fail)
from ..memory import LANES
from ..memory.asyncunit import AsyncUnit
from ..ops.common import format_lanes
from ..ops.wgmma.state import (WgmmaStall, check_cta_end as check_wgmma_end, last_computed as wgmma_last_computed,
                               must_wait as wgmma_must_wait)
from .convergence import convergence, pick
from .kernel_warp import KernelWarp
from .cluster import Cluster
from .warp import H100_SMS
from .spin import SPIN_CHECK
from .tracing import dest_registers

_SOLO = ((1, 1, 1), False)     # the cluster shape of a CTA launched without clusters
PARK = "park"          # _step's answer when an executor stalled lanes or yielded the warp's turn


_READS = {"ld", "ldu", "atom", "ld.volatile", "mbarrier", "cp", "red", "ldmatrix", "tex", "suld"}


def _reads_memory(prog, lo, hi):
    """Whether the loop ``lo..hi`` (pcs of ``prog.code``) has an instruction that reads memory others write."""
    cache = prog.__dict__.setdefault("_loop_reads", {})
    key = (lo, hi)
    if key not in cache:
        cache[key] = any(op.kind == "op" and op.instr is not None and op.instr.base in _READS
                         for op in prog.code[lo:hi + 1])
    return cache[key]


class SpinWait:
    """Why lanes were held back or a warp yielded: a loop that repeats without changing anything."""

    def __init__(self, text):
        self.text = text

    def describe(self):
        return self.text

    def ready(self):
        return True


class CTA:
    """One CTA's execution: warps, barriers, the scheduler."""

    san = None          # the sanitizer's observer of this CTA (machine.sanitize), when one watches
    quiet = False       # True: the caller runs the CTA under np.errstate(all="ignore") already (run)

    def __init__(self, module, prog, ctaid, grid, block, smem_size, gmem, param_init, var_addrs, local_bases,
                 options, trace, out, result, budget, fast=None, schedule=None, timeline=False, cluster=None,
                 rank=0, profile=None, debug=None):
        self.module, self.prog, self.ctaid = module, prog, ctaid
        self.cv = convergence(prog)
        # a launch without clusters: each CTA is a cluster of one, made when something asks for it (``cluster``);
        # the async unit (mbarriers, bulk copies, proxy marks) likewise (``async_unit``)
        if cluster is not None:
            self.cluster = cluster
        self.rank = rank
        self.smem_size = smem_size
        self._timeline = bool(timeline)
        self.stalls = []           # [warp, lanes, reason]: lanes parked by an executor until reason.ready()
        self._rng = None
        if schedule is not None and schedule[0] == "random":
            self._rng = np.random.default_rng([int(schedule[1])] + [int(c) for c in ctaid])
        self.smem_inflight = np.zeros(smem_size, np.int32)
        self.inflight_n = 0             # cp.async copies in flight in this CTA (all warps)
        self.out, self.result, self.trace, self.budget = out, result, trace, budget
        self.profile, self.debug = profile, debug      # machine.profile.Profile, machine.debugger hooks
        self.barriers = {}         # id -> {'arrived': int, 'waiters': [(warp, mask)], 'expected': int, 'red': []}
        nthreads = block[0] * block[1] * block[2]
        nwarps = -(-nthreads // LANES)
        self.nthreads, self.nwarps = nthreads, nwarps
        self._warps = None
        # special registers: the launch's (built once per launch shape, read-only, shared by every warp and
        # CTA), this CTA's %ctaid and its place in its cluster
        same, per_warp = _launch_specials(block, grid, smem_size, prog.shared_static, nwarps)
        self._grid = grid
        # what the launch-wide special registers depend on (the fast engine keeps a CTA's initial arrays per shape)
        self.shape = (tuple(block), tuple(grid), smem_size, prog.shared_static) + (
            _SOLO if cluster is None else (cluster.dims, bool(cluster.explicit)))
        # the fast engine's CTA loop (barriers included), when the kernel allows it; its arrays hold the state of
        # every warp (arenas, PCs, exit and wait masks), which the warps' own attributes are views of. The CTAs of
        # a cluster run in it too, one at a time, when the cluster's scheduler allows it (``Cluster.loop``: it
        # switches CTAs when one waits on the others); else they step warp by warp under that scheduler.
        # Spin checks (machine/spin.py) come back from the CTA loop at their backward branches; when one holds
        # lanes or parks a warp, this scheduler takes the CTA over from there (FastCTA.run).
        fast_cta = fast.cta_arrays(nwarps) if (fast is not None and self._rng is None and not timeline
                                               and (cluster is None or cluster.size == 1 or cluster.loop)) else None
        self._same, self._per_warp = same, per_warp
        self._make = (gmem, options, param_init, local_bases, trace, var_addrs, profile, fast)
        if fast_cta is not None:
            # the CTA loop runs on its arrays alone: the warps (KernelWarp, FastWarp) are built when something reads
            # them (a hand-back, the scheduler taking over, the sanitizer, ``result.ctas``), from those arrays; the
            # shared memory and the parameter rows are arrays of its block (``FastCTA.start``)
            self.fast_cta = fast_cta.start(self)
        else:
            self.fast_cta = None
            self.smem = np.zeros(smem_size, np.uint8)
            # every warp's per-lane parameter bytes, in one block (warp w: rows w)
            self.params = np.empty((nwarps, LANES, param_init.size), np.uint8)
            self.params[...] = param_init
            self._build_warps()

    @staticmethod
    def plan_fields(module, prog, grid, block, smem_size):
        """The fields ``__init__`` gives every CTA of a launch shape without clusters, seeded schedule, timeline,
        trace, profile or debugger (``CTA.planned``; made once per shape: ``machine.module._LaunchPlan``)."""
        nthreads = block[0] * block[1] * block[2]
        nwarps = -(-nthreads // LANES)
        same, per_warp = _launch_specials(block, grid, smem_size, prog.shared_static, nwarps)
        return {"module": module, "prog": prog, "cv": convergence(prog), "rank": 0, "smem_size": smem_size,
                "_timeline": False, "_rng": None, "trace": None, "profile": None, "debug": None,
                "nthreads": nthreads, "nwarps": nwarps, "_warps": None, "_grid": grid,
                "shape": (tuple(block), tuple(grid), smem_size, prog.shared_static) + _SOLO,
                "_same": same, "_per_warp": per_warp,
                "_start_memo": []}      # (FastCTA.start: its lookups for the shape's first CTA, kept for the others)

    @classmethod
    def planned(cls, fields, ctaid, out, result, budget, make, fast):
        """The CTA ``__init__`` makes for a launch of a planned shape (``fields``: ``plan_fields``; ``make``: its
        ``_make``) on the fast engine's CTA loop, or None when the CTA loop has no arrays for it (``__init__`` then
        makes it the other way)."""
        fc = fast.cta_arrays(fields["nwarps"])
        if fc is None:
            return None
        self = cls.__new__(cls)
        d = self.__dict__
        d.update(fields)
        d["ctaid"] = ctaid
        d["stalls"] = []
        d["smem_inflight"] = np.zeros(fields["smem_size"], np.int32)
        d["inflight_n"] = 0
        d["out"], d["result"], d["budget"] = out, result, budget
        d["barriers"] = {}
        d["_make"] = make
        self.fast_cta = fc.start(self)
        return self

    def __del__(self):
        # a CTA whose warps were never built hands its CTA-loop arrays (nothing else views them) to the next launch
        try:
            d = self.__dict__
            fc = d.get("_fast_arrays")
            if fc is not None and d.get("_warps") is None and d.get("fast_cta") is fc and fc.wg is None:
                d["_fast_arrays"] = d["fast_cta"] = None
                fc.retire()
        except Exception:           # (at interpreter exit, modules may be gone)
            pass

    @property
    def cluster(self):
        """The CTA's cluster (``machine.cluster.Cluster``); a CTA launched without clusters is a cluster of one,
        made the first time it is asked for."""
        cl = self.__dict__.get("_cluster")
        if cl is None:
            cl = self._cluster = Cluster(self.ctaid, (1, 1, 1), False)
            cl.ctas.append(self)
        return cl

    @cluster.setter
    def cluster(self, cl):
        self._cluster = cl

    @property
    def async_unit(self):
        """The CTA's async unit (``memory.asyncunit.AsyncUnit``: mbarriers, bulk copies, proxy marks), made the
        first time it is asked for (a kernel that uses none of them never makes it in the fast engine's CTA loop)."""
        au = self.__dict__.get("_au")
        if au is None:
            au = self._au = AsyncUnit(self.smem_size)
            au.record = self._timeline
        return au

    @property
    def warps(self):
        """The CTA's warps (``KernelWarp``), built the first time they are read."""
        ws = self._warps
        return ws if ws is not None else self._build_warps()

    @property
    def own_specials(self):
        """{name: lanes} of the special registers of the CTA's place in the grid and its cluster (made when first
        asked: the fast engine's CTA loop writes the few a kernel reads, ``own_special``)."""
        own = self.__dict__.get("_own")
        if own is None:
            cluster, ctaid, grid = self.cluster, self.ctaid, self._grid
            cdims = cluster.dims
            own = dict(_cluster_specials(tuple(grid), cdims, cluster.size, bool(cluster.explicit)))
            for k, (ctaid_n, cl_ctaid_n, _, clusterid_n, _) in enumerate(_CTA_NAMES):
                own[ctaid_n] = _same_lanes(ctaid[k])
                own[cl_ctaid_n] = _same_lanes(ctaid[k] % cdims[k])
                own[clusterid_n] = _same_lanes(ctaid[k] // cdims[k])
            linear = ctaid[0] + grid[0] * (ctaid[1] + grid[1] * ctaid[2])
            own["%smid"] = _same_lanes(linear % H100_SMS)      # a deterministic placement
            own["%cluster_ctarank"] = _same_lanes(self.rank)
            self._own = own
        return own

    def own_special(self, name):
        """One of ``own_specials`` (the CTA's ids, without making the others)."""
        own = self.__dict__.get("_own")
        if own is None:
            k = _CTAID_AXIS.get(name)
            if k is not None:
                return _same_lanes(self.ctaid[k])
            own = self.own_specials
        return own[name]

    def specials_of(self, w):
        """{name: lanes} of the special registers of warp ``w`` known at the launch (the warp's
        ``special_values`` when it is built)."""
        sv = dict(self._same)
        sv.update(self._per_warp[w])
        sv.update(self.own_specials)
        return sv

    def _build_warps(self):
        gmem, options, param_init, local_bases, trace, var_addrs, profile, fast = self._make
        prog, nwarps, nthreads = self.prog, self.nwarps, self.nthreads
        symbols = {n: ("global", a) for n, a in var_addrs.items()}
        fc = self.__dict__.get("_fast_arrays")      # the CTA loop's arrays, when it ran or runs this CTA
        # (the arrays the CTA loop of a cluster's CTAs made already, machine.cluster.Cluster._tables)
        cl_arrived = self.__dict__.get("cl_arrived")
        cl_phase = self.__dict__.get("cl_phase")
        if cl_arrived is None:
            cl_arrived = np.zeros((nwarps, LANES), np.bool_)
            cl_phase = np.zeros((nwarps, LANES), np.int64)
        ws = []
        for w in range(nwarps):
            bases = local_bases[w * LANES:(w + 1) * LANES]
            kw = KernelWarp(self, prog, w, nthreads - w * LANES, self.smem, gmem, prog.arch, options, param_init,
                            bases, prog.layout.local, trace, self.params[w],
                            None if fc is None else (fc.pcs[w], fc.exited[w], fc.waiting[w]), dict(symbols))
            if profile is not None:
                kw.profile = profile
            kw.special_values = self.specials_of(w)
            kw.cl_arrived = cl_arrived[w]       # barrier.cluster: arrived, not yet waited
            kw.cl_phase = cl_phase[w]           # the cluster barrier's phase at the arrival
            if fast is not None:
                kw.fast = fast.attach(kw, fc.arenas[w] if fc is not None else None)
            ws.append(kw)
        self._warps = ws
        self.cl_arrived, self.cl_phase = cl_arrived, cl_phase     # (every warp's rows: Cluster._complete)
        if fc is not None:
            fc.adopt(self, ws)                  # the state the CTA loop kept in its arrays so far
        return ws

    def __repr__(self):
        done = sum(bool(w.exited.all()) for w in self.warps)
        return (f"<CTA {tuple(self.ctaid)} of {self.prog.entry.name}: {len(self.warps)} warp(s) ({done} finished), "
                f"{self.smem.size} bytes of shared memory>")

    # -- scheduler ---------------------------------------------------------------------------------
    def run(self, park=False):
        """Run the CTA to its end and return its warps. With ``park`` (the grid scheduler, machine.residency),
        return None instead of reporting a deadlock when its warps only spin on memory another CTA may write;
        ``self.moved`` then says whether this call changed anything, and a later call goes on; a CTA that ran to
        its end returns True (its warps, ``self.warps``, are built when read)."""
        if self.quiet:                           # (the grid's loop set np.errstate for all its CTAs)
            done = self._run(park)
        else:
            with np.errstate(all="ignore"):      # IEEE exceptions are results here, not warnings
                done = self._run(park)
        if done is None:
            return None
        return True if park else self.warps

    def _run(self, park=False, handoff=False):
        """``run``'s scheduler; ``handoff``: what the CTA loop's run of this CTA returned, when the caller made that
        run (``machine.module``'s planned launch; False: not made)."""
        moved = False
        start = None
        if self.fast_cta is not None:
            if handoff is False:
                handoff = self.fast_cta.run(self)
            if handoff is None:
                if self.__dict__.get("_au") is not None:
                    self._au.pump()
                check_wgmma_end(self)
                return True
            # a spin check acted in the CTA loop: this scheduler goes on from that warp, as it would have
            self.fast_cta = None
            start = handoff
        au = self.async_unit
        rng = self._rng
        while True:
            progressed = False
            yielded = False                 # a warp yielded with its state changed since its previous yield
            version = au.mbarriers.version
            order = self.warps if rng is None else [self.warps[i] for i in rng.permutation(len(self.warps))]
            if start is not None:           # the rest of the CTA loop's round
                k, parked, progressed, yielded = start
                start = None
                if parked:
                    if self._yield_changed(self.warps[k]):
                        yielded = True
                    self._check_barriers()
                    k += 1
                order = self.warps[k:]
            for w in order:
                self._wake()
                if self._runnable(w):
                    if self._run_warp(w) not in ("spin", "deferred"):
                        progressed = True
                    elif self._yield_changed(w):
                        yielded = True
                self._check_barriers()
                if rng is not None and au.pending and rng.random() < 0.3:
                    au.pump(lambda c: rng.random() < 0.5)
            if all(w.exited.all() for w in self.warps):
                au.pump()                          # copies still in flight complete before the CTA retires
                break
            if progressed or au.mbarriers.version != version:
                moved = True
                continue
            if au.pending:                          # nobody can go on by itself: the async unit moves
                au.pump()
                moved = True
                continue
            if yielded:                             # spinning warps whose state still changes: not stuck yet
                moved = True
                continue
            self._wake()
            # lane groups that wait at joins or warp-synchronous instructions for lanes parked elsewhere:
            # nothing else can go on, so the waits are lifted for one pick (machine.convergence)
            forced = False
            for w in self.warps:
                if not self._can_run(w) and (~w.exited & ~w.waiting).any():
                    w._force = forced = True
            if forced:
                continue
            if not any(self._can_run(w) for w in self.warps) or not progressed:
                if park and self._may_wait_on_other_ctas():
                    self.moved = moved
                    return None
                self._deadlock()
        check_wgmma_end(self)
        return True

    @staticmethod
    def _yield_changed(w):
        """A warp that yielded made progress unless its registers and PCs are those of its previous yield
        (a spin loop whose iteration changes nothing waits for someone else)."""
        d = w.state_digest()
        if d == w._yield_digest:
            return False
        w._yield_digest = d
        return True

    def _wake(self):
        if not self.stalls:
            return
        keep = []
        for rec in self.stalls:
            w, lanes, reason = rec
            if reason.ready():
                w.waiting[lanes] = False
                if self.async_unit.record:
                    self.async_unit.events.append(("wake", self.async_unit.step, w.warp_id, ""))
            else:
                keep.append(rec)
        self.stalls = keep

    def _runnable(self, w):
        """Whether some lane group of ``w`` can run (``_pick``); lane groups held back by a spin get their turn
        again when nothing else in the warp can go on."""
        if self._pick(w) is not None:
            return True
        if w.held.any():
            w.waiting &= ~w.held
            w.held[:] = False
            return True
        return False

    def _can_run(self, w):
        return self._pick(w) is not None or bool(w.held.any())

    def _pick(self, w, force=None):
        """The lane group of ``w`` to run next, ``(pc, mask)``, or None (machine.convergence.pick): lanes
        inside calls compare their call-site chains first (a callee's lanes run before the lanes waiting
        after its call site), then the groups of one chain follow the reconvergence rule."""
        live = ~w.exited & ~w.waiting
        if not live.any():
            return None
        if force is None:
            force = w._force
        come = ~w.exited & ~w.held
        if not w.depth:
            got = pick(self.cv, w, live, come, force)
            if got is not None and w.san is not None:
                self._skipped_barrier(w, got, come)
            return got
        ids = w.chain_id
        chains = {c: i for i, c in w._chains.items()} if len(w._chain_of) != len(w._chains) else w._chain_of
        w._chain_of = chains
        keys = []
        for cid in np.unique(ids[live]).tolist():
            sel = ids == cid
            keys.append((tuple(r - 1 for r in chains[cid]) + (int(w.pc[live & sel].min()),), sel))
        keys.sort(key=lambda k: k[0])
        for _, sel in keys:
            got = pick(self.cv, w, live & sel, come & sel, force)
            if got is not None:
                return got
        return None

    def _may_wait_on_other_ctas(self):
        """Whether a spinning warp may wait for another CTA: a spin loop that reads global or generic memory
        (or calls), or a nanosleep. Warps that only wait on shared memory, barriers or mbarriers of this CTA
        do not."""
        code = self.prog.code
        for w in self.warps:
            if not self._can_run(w):
                continue
            if getattr(w._last_yield, "global_wait", False):
                return True
            for p in w.spins:
                if any(_reads_global(op) for op in code[min(code[p].target, p):p + 1]):
                    return True
        return False

    def _deadlock_parts(self):
        """What each waiting warp of this CTA waits for (the deadlock report)."""
        parts = []
        for w, lanes, reason in self.stalls:
            parts.append(f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(lanes))} (pc {int(w.pc[lanes].min())}) "
                         f"{reason.describe()}")
        for w in self.warps:
            if self._runnable(w):
                why = w._last_yield
                if w.spins:
                    parts.extend(f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(lanes))} spin: {how}"
                                 for lanes, how in w.spins.values())
                    continue
                parts.append(f"warp {w.warp_id} spins: " + (why.describe() if hasattr(why, "describe") else
                                                            "it keeps yielding without anything changing"))
        for bid, b in self.barriers.items():
            waiting = sum(int(m.sum()) for _, m in b["waiters"])
            who = ", ".join(f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(m))}" for w, m in b["waiters"])
            parts.append(f"barrier {bid}: {waiting} thread(s) waiting ({who}), {self._expected(b)} expected")
        return parts

    def _deadlock(self):
        parts = []
        for w, lanes, reason in self.stalls:
            parts.append(f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(lanes))} (pc {int(w.pc[lanes].min())}) "
                         f"{reason.describe()}")
        spinning = [w for w in self.warps if self._can_run(w)]
        for w in spinning:
            why = w._last_yield
            if w.spins:
                parts.extend(f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(lanes))} spin: {how}"
                             for lanes, how in w.spins.values())
            else:
                parts.append(f"warp {w.warp_id} spins: " + (why.describe() if hasattr(why, "describe") else
                                                            "it keeps yielding without anything changing"))
        if self.stalls or spinning:
            waits = [f"barrier {bid}: {sum(int(m.sum()) for _, m in b['waiters'])} thread(s) waiting, "
                     f"{self._expected(b)} expected" for bid, b in self.barriers.items()]
            raise WarpSyncError(f"CTA {self.ctaid}: deadlock: no warp can go on and no copy is in flight; "
                                + "; ".join(parts + waits))
        for bid, b in self.barriers.items():
            waiting = sum(int(m.sum()) for _, m in b["waiters"])
            parts.append(f"barrier {bid}: {waiting} thread(s) waiting, {self._expected(b)} expected")
        stuck = [f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(w.waiting))}" for w in self.warps
                 if w.waiting.any()]
        raise WarpSyncError(f"CTA {self.ctaid}: deadlock: {'; '.join(parts)} ({', '.join(stuck)} wait; the other "
                            f"threads exited or wait elsewhere)")

    def _expected(self, b):
        if b["count"] is not None:
            return b["count"]
        return sum(int((~w.exited).sum()) for w in self.warps)

    def _check_barriers(self):
        for bid in list(self.barriers):
            b = self.barriers[bid]
            if not b["arrived"] or b["arrived"] < self._expected(b):
                continue
            if b["red"]:
                rop = b["red"][0][0]
                entries = b["red"][1:]
                vals = np.concatenate([p[m] for _, _, p, m in entries])
                res = {"popc": np.uint32(int(vals.sum())), "and": bool(vals.all()), "or": bool(vals.any())}[rop]
                for w, writer, _, m in entries:
                    writer(w, np.full(LANES, res, np.uint32 if rop == "popc" else np.bool_), m)
            if self.san is not None:
                self.san.bar_release(b)
            for w, m in b["waiters"]:
                w.waiting[m] = False
            del self.barriers[bid]

    # -- one warp ----------------------------------------------------------------------------------
    def _run_warp(self, w: KernelWarp, reference=False):
        if w.fast is not None and not reference:
            return self._run_warp_fast(w)
        nxt = None          # (pc, mask) known without a search: every lane of the warp that will come moves together
        quantum = -1 if self._rng is None else int(self._rng.integers(1, 64))
        ran = False
        while True:
            if quantum == 0:
                return "quantum"
            quantum -= 1
            if nxt is not None:
                p, mask = nxt
                nxt = None
                together = True
            else:
                got = self._pick(w)
                w._force = False
                if got is None:
                    return "blocked" if ran else "deferred"
                p, mask = got
                together = bool((mask == (~w.exited & ~w.held)).all())
            ran = True
            nxt = self._step(w, p, mask, together)
            if nxt is PARK:
                return "spin"

    def _run_warp_fast(self, w: KernelWarp):
        """The fast engine runs the warp until an instruction it hands back, which the reference executes."""
        fast = w.fast
        while True:
            if w.held.any() or w._force:    # lanes held back by a spin, waits lifted: the reference steps
                return self._run_warp(w, reference=True)
            if w.depth:
                got = self._pick(w)
                if got is None:
                    return "blocked"
                p, mask = got
            else:
                status, p, mask = fast.run(w, self.budget)
                if status == fast.IDLE:
                    return "blocked"
                if status == fast.DEFER:
                    return "deferred"
                if status == fast.EXITED:
                    self._check_barriers()
                    continue
                if status == fast.LOG:
                    continue
                if status == fast.BAR:      # lanes ``mask`` arrived at the barrier at ``p`` (their PCs moved on)
                    self._arrive(w, self.prog.code[p], mask)
                    continue
            if self._step(w, p, mask, False) is PARK:
                return "spin"

    def _step(self, w, p, mask, together):
        """Execute the instruction at ``p`` for the lanes in ``mask``; returns the next (pc, mask) when the
        whole runnable warp is known to move together, else None."""
        pc = w.pc
        budget = self.budget
        nxt = None
        op = self.prog.code[p]
        if w.held.any() and _sync_point(op):
            # lanes held back by a spin must meet the others at a warp-synchronous instruction: they are let
            # go and the warp gives the other warps a turn (the spin waits for someone else); the instruction
            # issues when the lanes have come together (machine.convergence)
            w.waiting &= ~w.held
            w.held[:] = False
            w._last_yield = SpinWait(f"lanes {format_lanes(np.flatnonzero(mask))} wait at line {op.instr.line} "
                                     f"({' '.join((op.instr.text or op.instr.opcode).split())}) for lanes that spin")
            return PARK
        if self.debug is not None:
            self.debug.before(self, w, p, mask)
        w.cur_pc = p
        budget[0] -= 1
        if budget[0] < 0:
            total = budget[1] if len(budget) > 1 else "max_instructions"
            raise EmulatorError(f"line {op.instr.line}, column {op.instr.col}: {op.instr.text or op.instr.opcode}: "
                                f"the instruction limit ({total} warp instructions, max_instructions / "
                                f"--max-instructions) was reached here, in CTA {self.ctaid} warp {w.warp_id} lanes "
                                f"{format_lanes(np.flatnonzero(mask))}; an endless loop?"
                                + "".join(f"; lanes {format_lanes(np.flatnonzero(lanes))} spin: {how}"
                                          for lanes, how in w.spins.values()))
        w.clock = w.issued = w.issued + 1
        if self.profile is not None:
            self.profile.step(w, p, mask)
        au = self.async_unit
        au.mbarriers.step += 1
        if au.record:
            au.events.append(("instr", au.mbarriers.step, w.warp_id, p, op.instr.text or op.instr.opcode,
                              int(mask.sum())))
        if self.trace is not None:
            w._written = []
        kind = op.kind
        shown = mask
        if kind == "op":
            if self.trace is not None and op.instr.guard is not None:
                g, neg = op.instr.guard
                p_ = w.get_reg(g.name, op.instr.text)
                p_ = p_ if p_.dtype == np.bool_ else p_ != 0
                shown = mask & (~p_ if neg else p_)
            try:
                # ptxas's injected wait (C7517) before an instruction that touches registers of an in-flight
                # wgmma.mma_async: stall while the warpgroup has not computed it (its other warps have not
                # all issued it); the executor's register guard then retires it
                if "get_reg" in w.__dict__ and wgmma_must_wait(w, op.instr, mask):
                    return self._park(w, op, mask, shown)
                op.fn(w, mask)
                if w.san is not None and op.aligned_sync:
                    # a .sync.aligned instruction runs once for the whole warp, converged (ptxas lowers it to one
                    # warp-wide instruction): what a lane did before it is ordered before what any lane does after
                    w.san.warp_sync(w, mask)
            except WgmmaStall as e:
                w.stall(mask, e.reason)
                return self._park(w, op, mask, shown)
            except EmulatorError as e:
                if w.san is not None:
                    w.san.launch.failed_in = w          # the report names this warp (Module.launch)
                raise _located(e, op.instr) from None
            if w._stall is not None or w._yield is not None:
                return self._park(w, op, mask, shown)
            pc[mask] += 1
            if together:
                nxt = (p + 1, mask)
        elif kind == "bra":
            taken = mask & self._guard(w, op, mask)
            pc[taken] = op.target
            pc[mask & ~taken] += 1
            if op.target <= p and taken.any():
                w.back_taken += 1
                if w.back_taken % SPIN_CHECK < 2 and self._spin_check(w, p, taken, op):
                    return PARK if w._spin_yield else None
            if together:
                if not taken.any():
                    nxt = (p + 1, mask)
                elif (taken == mask).all():
                    nxt = (op.target, mask)
        elif kind == "brx":
            taken = mask & self._guard(w, op, mask)
            pc[mask & ~taken] += 1
            if taken.any():
                dest = self._brx_targets(w, op, taken)
                pc[taken] = dest[taken]
                if together and (taken == mask).all() and (dest[taken] == dest[taken][0]).all():
                    nxt = (int(dest[taken][0]), mask)
            elif together:
                nxt = (p + 1, mask)
        elif kind in ("ret", "exit"):
            g = mask & self._guard(w, op, mask)
            pc[mask & ~g] += 1
            if g.any():
                self._return(w, g, exit_=kind == "exit")
        elif kind == "call":
            g = mask & self._guard(w, op, mask)
            pc[mask & ~g] += 1
            if g.any():
                self._call(w, op, g)
        elif kind == "bar":
            g = mask & self._guard(w, op, mask)
            pc[mask & ~g] += 1
            if g.any():
                pc[g] += 1
                self._arrive(w, op, g)
        if self.trace is not None:
            self._trace(w, op, shown)
        return nxt

    def _spin_check(self, w, p, taken, op):
        """Called at two consecutive backward branches taken (every SPIN_CHECK-th and the next): when the lanes
        that loop came back with the same registers, the loop waits for someone else (independent thread
        scheduling lets the other lane groups of the warp run, and the other warps). Returns True when the
        scheduler acted: lanes held back, or the warp yields (``w._spin_yield``)."""
        w._spin_yield = False
        snap = (p, taken.tobytes(), w.state_digest())
        if w.back_taken % SPIN_CHECK == 0:
            w._spin_snap = snap
            return False
        if w._spin_snap != snap:
            return self._busy_check(w, p, taken, op)
        w._spin_snap = None
        instr = self.prog.code[p].instr
        loop = self.prog.code[op.target].instr
        w.spins[p] = (taken.copy(), f"the loop from line {loop.line} ({' '.join((loop.text or loop.opcode).split())}) "
                                    f"to line {instr.line} repeats with unchanged registers (it waits for memory "
                                    f"that no other thread writes)")
        return self._hold_or_yield(w, taken, SpinWait(w.spins[p][1]))

    def _busy_check(self, w, p, taken, op):
        """A loop whose registers change (a try counter, a backoff) but that reads memory may still wait for
        lanes of its own warp, parked where the paths meet: after SPIN_CHECK backward branches while another
        lane group of the warp waits to run, it steps aside for that group (the H100's scheduler guarantees
        it progress). A loop that reads no memory cannot wait for anyone and runs on."""
        others = ~w.exited & ~w.waiting & ~taken & ~w.held
        if w.back_taken <= SPIN_CHECK or not others.any() or not _reads_memory(self.prog, op.target, p):
            return False
        code = self.prog.code
        if all(_sync_point(code[int(w.pc[lane])]) for lane in np.flatnonzero(others)):
            return False
        instr, loop = code[p].instr, code[op.target].instr
        why = SpinWait(f"the loop from line {loop.line} ({' '.join((loop.text or loop.opcode).split())}) to line "
                       f"{instr.line} ran {SPIN_CHECK} times while lanes {format_lanes(np.flatnonzero(others))} "
                       f"waited to run")
        return self._hold_or_yield(w, taken, why)

    def _hold_or_yield(self, w, lanes, why):
        """Lanes ``lanes`` of ``w`` wait for someone else: let the warp's other lane groups run (the lanes are
        held back until nothing else in the warp can run), or, when none can, give the other warps a turn."""
        others = ~w.exited & ~w.waiting & ~lanes
        if others.any():
            # lanes that stand at a warp-synchronous instruction cannot go on without these: not an alternative
            code = self.prog.code
            for lane in np.flatnonzero(others):
                if _sync_point(code[int(w.pc[lane])]):
                    others[lane] = False
        w._last_yield = why
        if others.any():
            w.held |= lanes
            w.waiting |= lanes
            w._spin_yield = False
            return True
        if w.held.any():                  # the groups held earlier run next time; these lanes wait
            w.waiting &= ~w.held
            w.held[:] = False
            w.held |= lanes
            w.waiting |= lanes
        w._spin_yield = True
        return True

    def _park(self, w, op, mask, shown):
        """An executor stalled some lanes (they re-execute the instruction when woken) or yielded the turn."""
        stall, w._stall = w._stall, None
        why, w._yield = w._yield, None
        adv = mask if stall is None else mask & ~stall[0]
        w.pc[adv] += 1
        if stall is not None:
            w.waiting |= stall[0]
            self.stalls.append([w, stall[0], stall[1]])
            if self.async_unit.record:
                self.async_unit.events.append(("stall", self.async_unit.step, w.warp_id, stall[1].describe()))
        w._last_yield = why if why is not None else (stall[1] if stall else None)
        if stall is None and getattr(why, "lane_yield", False):      # nanosleep: the lanes step aside
            self._hold_or_yield(w, mask, why)
            if self.trace is not None:
                self._trace(w, op, shown)
            return PARK if w._spin_yield else None
        if self.trace is not None:
            self._trace(w, op, shown)
        return PARK

    @staticmethod
    def _guard(w, op, mask):
        if op.guard is None:
            return np.ones(LANES, np.bool_)
        name, neg = op.guard
        p = w.get_reg(name, op.instr.text)
        p = p if p.dtype == np.bool_ else p != 0
        return ~p if neg else p

    @staticmethod
    def _brx_targets(w, op, taken):
        """brx.idx: each taken lane's target PC from its index (an index past the list is an error: PTX leaves
        it undefined)."""
        idx = op.fn(w).astype(np.int64)
        n = len(op.targets)
        bad = taken & (idx >= n)
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            raise _located(EmulatorError(f"{op.instr.text or op.instr.opcode}: lane {lane}: index {int(idx[lane])} "
                                         f"is past the end of the .branchtargets list ({n} labels; PTX leaves "
                                         f"this undefined)"), op.instr)
        return np.asarray(op.targets, np.int64)[np.where(taken, idx, 0)]

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, w, op, mask):
        site = op.call
        if site.callee is None:                 # indirect: each lane calls the function its register names
            try:
                self._call_indirect(w, op, mask)
            except EmulatorError as e:
                raise _located(e, op.instr) from None
            return
        if site.callee == "vprintf":
            self._vprintf(w, op, mask)
            w.pc[mask] += 1
            return
        if site.callee == "__assertfail":
            from .printf import assert_message
            raise DeviceAssertError(assert_message(w, op, mask))
        if op.target < 0:
            raise UnsupportedError(f"{op.instr.text}: function {site.callee} has no body")
        self._enter(w, op, mask, site.callee, op.target)

    def _call_indirect(self, w, op, mask):
        site = op.call
        addrs = site.fptr(w).astype(np.uint64)
        for a in np.unique(addrs[mask]):
            group = mask & (addrs == a)
            lane = int(np.flatnonzero(group)[0])
            callee = self.prog.callee_at(op.instr, a, lane)
            if site.allowed is not None and callee not in site.allowed:
                fail(OperandError, op.instr.text, f"calls {callee}, which its .calltargets list "
                     f"({', '.join(site.allowed)}) does not name", lane)
            params, rets = self.prog.formals[callee]
            if len(params) != len(site.args) or len(rets) != len(site.rets):
                fail(OperandError, op.instr.text, f"calls {callee}, which takes {len(params)} argument(s) and "
                     f"returns {len(rets)} value(s); the call passes {len(site.args)} and receives "
                     f"{len(site.rets)}", lane)
            self._enter(w, op, group, callee, self.prog.entries[callee])

    def _enter(self, w, op, mask, callee, entry):
        site = op.call
        params, rets = self.prog.formals[callee]
        lanes = np.flatnonzero(mask)
        for (p, off), src_off in zip(params, site.args):
            w.param[lanes, off:off + p.size] = w.param[lanes, src_off:src_off + p.size]
        for lane in lanes:
            st = w.stacks[lane]
            if any(f[1] == callee for f in st):
                fail(UnsupportedError, op.instr.text, f"recursive call of {callee} (its registers and "
                     f"parameters are not kept per activation)", lane)
            if not st:
                w.depth += 1
            st.append((int(w.pc[lane]) + 1, callee, site))
            w.chain_id[lane] = w._chains.setdefault(tuple(f[0] for f in st), len(w._chains))
        w.pc[mask] = entry

    def _return(self, w, mask, exit_):
        for lane in np.flatnonzero(mask):
            st = w.stacks[lane]
            if exit_ or not st:
                w.exited[lane] = True
                if st:
                    st.clear()
                    w.depth -= 1
                    w.chain_id[lane] = 0
                continue
            ret_pc, callee, site = st.pop()
            w.chain_id[lane] = w._chains.setdefault(tuple(f[0] for f in st), len(w._chains))
            if not st:
                w.depth -= 1
            _, rets = self.prog.formals[callee]
            for (p, off), dst_off in zip(rets, site.rets):
                w.param[lane, dst_off:dst_off + p.size] = w.param[lane, off:off + p.size]
            w.pc[lane] = ret_pc
        if w.exited[mask].any():
            self._check_barriers()

    def _skipped_barrier(self, w, got, come):
        """synccheck under the reconvergence rule: lanes that left a barrier behind (they stand after it, on
        their way to the exit with work still to do) while other lanes of the warp wait at that ``.aligned``
        barrier: the barrier runs on a partial warp, as compute-sanitizer's "divergent barrier"."""
        p, mask = got
        code = self.prog.code
        if not self.cv.tail[p] or code[p].kind in ("ret", "exit"):
            return
        for q in np.unique(w.pc[come & ~mask]).tolist():
            op = code[q]
            ins = op.instr
            if ins is not None and (ins.base == "bar" or (ins.base == "barrier" and "aligned" in ins.mods)) \
                    and self.cv.joins(p, q):
                text = ins.text or ins.opcode
                lanes = format_lanes(np.flatnonzero(come & (w.pc == q)))
                w.cur_pc = q                    # the report names the barrier, once for every warp
                self.san.hazard(w, "synccheck", "divergent-barrier",
                                f"{text}: lanes {format_lanes(np.flatnonzero(mask))} of warp {w.warp_id} go on "
                                f"past this barrier without it while lanes {lanes} wait at it",
                                int(np.flatnonzero(mask)[0]))
                return

    # -- barriers ----------------------------------------------------------------------------------
    def _arrive(self, w, op, mask):
        bid_r, cnt_r, red, kind, aligned = op.fn
        text = op.instr.text or op.instr.opcode
        if aligned:
            missing = ~w.exited & ~mask
            if missing.any():
                self._run_to_assert(w, missing)
                msg = (f"an .aligned barrier must be executed by every non-exited lane of the warp; lanes "
                       f"{format_lanes(np.flatnonzero(missing))} are not executing it")
                if self.san is None or not self.san.hazard(w, "synccheck", "divergent-barrier", f"{text}: {msg}",
                                                           int(np.flatnonzero(mask)[0])):
                    fail(WarpSyncError, text, msg)
        bids = bid_r(w)[mask]
        if (bids != bids[0]).any() or int(bids[0]) > 15:
            fail(OperandError, text, f"barrier number must be uniform and 0..15, got {sorted(set(bids.tolist()))}")
        bid = int(bids[0])
        count = None
        if cnt_r is not None:
            count = int(cnt_r(w)[mask][0])
            if count % LANES or count <= 0:
                fail(OperandError, text, f"thread count {count} must be a positive multiple of 32")
        b = self.barriers.setdefault(bid, {"arrived": 0, "waiters": [], "count": count, "red": []})
        if count is not None and b["count"] is not None and b["count"] != count:
            msg = f"barrier {bid} used with thread counts {b['count']} and {count}"
            if self.san is None or not self.san.hazard(w, "synccheck", "barrier-count", f"{text}: {msg} (the "
                                                       f"first count stays)", int(np.flatnonzero(mask)[0])):
                fail(WarpSyncError, text, msg)
        b["arrived"] += int(mask.sum())
        if self.san is not None:
            self.san.bar_arrive(b, w, mask)
        if kind in ("sync", "red"):
            w.waiting |= mask
            b["waiters"].append((w, mask.copy()))
        if red:
            rop, writer, pred = red
            if not b["red"]:
                b["red"].append((rop,))
            b["red"].append((w, writer, pred(w).copy(), mask.copy()))
        self._check_barriers()

    def _run_to_assert(self, w, missing):
        """Lanes missing at an .aligned barrier that are on their way (straight-line code) to a failed
        device assert (``__assertfail``) or a ``trap`` run there first: on the GPU they stop the kernel before
        the barrier could be reported. Returns when they are not."""
        lanes = missing & ~w.waiting
        if not lanes.any():
            return
        p = int(w.pc[lanes].min())
        q = p
        while q < len(self.prog.code):
            op = self.prog.code[q]
            if op.kind == "call" and op.call.callee == "__assertfail":
                break
            if op.kind == "op" and op.instr.opcode == "trap":
                break
            if op.kind != "op" or op.instr.guard is not None or _sync_point(op):
                return
            q += 1
        else:
            return
        group = lanes & (w.pc == p)
        for _ in range(q - p + 1):
            self._step(w, int(w.pc[group].min()), group, False)

    # -- printf ------------------------------------------------------------------------------------
    def _vprintf(self, w, op, mask):
        from .printf import format_printf
        site = op.call
        fmt_off, args_off = site.args
        fmt_addr = w.param[:, fmt_off:fmt_off + 8].copy().view(np.uint64).reshape(LANES)
        arg_addr = w.param[:, args_off:args_off + 8].copy().view(np.uint64).reshape(LANES)
        for lane in np.flatnonzero(mask):
            text, nargs = format_printf(w.gmem, int(fmt_addr[lane]), int(arg_addr[lane]), op.instr.text)
            self.out.write(text)
            self.result.stdout.append(text)
            if site.rets:
                w.param[lane, site.rets[0]:site.rets[0] + 4] = np.frombuffer(
                    np.int32(len(text)).tobytes(), np.uint8)
        if hasattr(self.out, "flush"):
            self.out.flush()

    # -- trace -------------------------------------------------------------------------------------
    def _trace(self, w, op, mask):
        """One trace record (``machine.tracing.Trace``): the registers the instruction wrote, those of its
        destination operand included (mma/wgmma/wmma fragments are written without the per-register hook)."""
        dest = dest_registers(op.instr)
        if dest and op.instr.base == "wgmma" and not wgmma_last_computed(w):
            dest = ()       # the warpgroup computes it (writes D) when its last warp issues it
        names = dict.fromkeys(list(w._written or ()) + list(dest))
        self.trace.emit(self.ctaid, w, w.cur_pc, op.instr, mask, names)
        w._written = None


_SPECIALS = {}
_CLUSTER_SPECIALS = {}
_CTA_NAMES = tuple((f"%ctaid.{c}", f"%cluster_ctaid.{c}", f"%cluster_nctaid.{c}", f"%clusterid.{c}", f"%nclusterid.{c}")
                   for c in "xyz")


_SAME: dict = {}
_CTAID_AXIS = {f"%ctaid.{c}": k for k, c in enumerate("xyz")}


def _same_lanes(value, dtype=np.uint32):
    """A read-only (32,) array of ``value`` in every lane, made once per value (special registers)."""
    key = (int(value), dtype)
    got = _SAME.get(key)
    if got is None:
        if len(_SAME) > 4096:
            _SAME.clear()
        got = _SAME[key] = np.full(LANES, value, dtype)
        got.flags.writeable = False
    return got


def _cluster_specials(grid, cdims, size, explicit):
    """{name: lanes} of the cluster shape's special registers (the same in every CTA of a launch); cached."""
    key = (grid, cdims, size, explicit)
    got = _CLUSTER_SPECIALS.get(key)
    if got is None:
        got = {}
        for k, (_, _, cl_nctaid_n, _, nclusterid_n) in enumerate(_CTA_NAMES):
            got[cl_nctaid_n] = _same_lanes(cdims[k])
            got[nclusterid_n] = _same_lanes(grid[k] // cdims[k])
        got["%cluster_nctarank"] = _same_lanes(size)
        got["%is_explicit_cluster"] = _same_lanes(explicit, np.bool_)
        if len(_CLUSTER_SPECIALS) > 64:
            _CLUSTER_SPECIALS.clear()
        _CLUSTER_SPECIALS[key] = got
    return got


def _launch_specials(block, grid, smem_size, shared_static, nwarps):
    """({name: lanes} equal in every warp, [{name: lanes} of warp w]) for a launch shape; cached, read-only."""
    key = (tuple(block), tuple(grid), smem_size, shared_static, nwarps)
    got = _SPECIALS.get(key)
    if got is not None:
        return got
    nthreads = block[0] * block[1] * block[2]
    same = {"%laneid": np.arange(LANES, dtype=np.uint32), "%nwarpid": np.full(LANES, nwarps, np.uint32),
            "%dynamic_smem_size": np.full(LANES, smem_size - shared_static, np.uint32),
            "%total_smem_size": np.full(LANES, smem_size, np.uint32)}
    for c, k in zip("xyz", range(3)):
        same[f"%ntid.{c}"] = np.full(LANES, block[k], np.uint32)
        same[f"%nctaid.{c}"] = np.full(LANES, grid[k], np.uint32)
    per_warp = []
    for w in range(nwarps):
        tid = np.minimum(np.arange(w * LANES, (w + 1) * LANES), nthreads - 1)
        per_warp.append({"%tid.x": (tid % block[0]).astype(np.uint32),
                         "%tid.y": ((tid // block[0]) % block[1]).astype(np.uint32),
                         "%tid.z": (tid // (block[0] * block[1])).astype(np.uint32),
                         "%warpid": np.full(LANES, w, np.uint32)})
    for arr in list(same.values()) + [a for d in per_warp for a in d.values()]:
        arr.flags.writeable = False
    if len(_SPECIALS) > 64:
        _SPECIALS.clear()
    _SPECIALS[key] = (same, per_warp)
    return same, per_warp


_LOCAL_SPACES = {"shared", "shared::cta", "local", "param", "const", "param::entry", "param::func"}


def _reads_global(op):
    """Whether ``op`` may read memory another CTA writes: a global or generic load, atomic, or a call."""
    if op.kind == "call":
        return True
    if op.kind != "op" or op.instr is None or op.instr.base not in ("ld", "ldu", "atom", "red", "multimem"):
        return False
    return not _LOCAL_SPACES.intersection(op.instr.mods)


def _sync_point(op):
    """Whether the lanes of a warp must meet at ``op``: barriers, and instructions with .sync or .aligned."""
    sp = getattr(op, "_sync_point", None)
    if sp is None:
        sp = op.kind == "bar" or (op.kind == "op" and any(m in ("sync", "aligned") for m in op.instr.mods))
        try:
            op._sync_point = sp
        except AttributeError:
            pass
    return sp


def _located(e, instr):
    msg = str(e)
    if msg.startswith("line "):
        return e
    return type(e)(f"line {instr.line}, column {instr.col}: {msg}")
