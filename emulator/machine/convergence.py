"""Where the diverged lanes of a warp meet again, as ptxas compiles it.

ptxas brackets every branch that may split a warp with ``BSSY Bn, join`` before it and ``BSYNC Bn`` at
``join``, the branch's immediate post-dominator: lanes that get to the join first wait there for the others.
The emulator keeps no such barrier registers; it derives the same waits from the post-dominator tree of each
function's control-flow graph:

* ``successors(code, pc)`` is the one place that says where an instruction can go: the next instruction,
  a branch's target(s) (every target of a multi-target branch), or the virtual exit node (``ret`` / ``exit``).
  A ``call`` goes to the next instruction (the callee is a graph of its own).
* The post-dominator tree of every function has the virtual exit at its root; instructions that cannot
  reach an exit (an endless loop) get an edge to it. Each instruction gets a pre-order interval
  (``pdin``, ``pdout``): ``a`` post-dominates ``b`` iff ``b``'s interval lies inside ``a``'s.
* The pick rule (``machine.cta`` and the fast engine's ``pickcall._pick``, identical): among the lane groups
  that can run (same PC), a group at PC ``p`` *waits at a join* while some other lane of the warp that will
  come (not exited, not held back by a spin) is at a PC that ``p`` strictly post-dominates: those lanes must
  pass ``p``. A group at a warp-synchronous instruction *waits for the lanes it names* while one of them is
  elsewhere (every lane for ``.aligned`` instructions and aligned barriers, the membermask for ``.sync``
  ones). Inside a loop the same test also runs on the loop's own graph (``Convergence.joins``): lanes that
  ``continue`` wait at the end of the iteration, lanes that ``break`` drop out (ptxas's ``BREAK``). Of the
  other groups, the one with the fewest lanes runs first, then the first in ``rank`` order
  (``Convergence._rank``), as the H100 ran them.
* When every runnable group waits and lanes of the warp are parked (a barrier, an mbarrier wait), the warp
  waits for them. When every lane of the warp waits at one of these, or nothing in the CTA can go on, the
  waits are lifted for one pick: a group on the kernel's exit path (straight-line code to ``ret``/``exit``:
  ptxas lets exiting lanes leave, so lanes that return early do not hold a barrier up), else one at a
  warp-synchronous instruction (its executor then reports what is missing), else one at a join.
"""
from __future__ import annotations

import numpy as np

EXIT = -1
LOOP_DEPTH = 4          # the loops around an instruction that reconvergence looks at (innermost first)


def successors(code, pc):
    """Where ``code[pc]`` can go next: PCs, and EXIT for leaving the function. Multi-target ops name their
    targets in ``op.targets``; a guard adds the fall-through."""
    op = code[pc]
    kind = op.kind
    targets = getattr(op, "targets", None)
    guarded = op.guard is not None
    if targets is not None:
        out = [int(t) for t in targets]
        return out + [pc + 1] if guarded else out
    if kind == "bra":
        return [op.target, pc + 1] if guarded else [op.target]
    if kind in ("ret", "exit"):
        return [EXIT, pc + 1] if guarded else [EXIT]
    if kind == "op" and op.instr.base == "trap" and not guarded:
        return [EXIT]
    return [pc + 1]


# what a warp-synchronous instruction waits for (Convergence.sync)
NOT_SYNC, ALL_LANES, MASK_IMM, MASK_REG = 0, 1, 2, 3


def sync_point(op):
    """(kind, membermask) of ``op``: ALL_LANES for .aligned instructions and aligned barriers (every lane of
    the warp executes them together), MASK_IMM / MASK_REG with the membermask (an integer, a register name)
    for the .sync instructions that name their lanes (``shfl``, ``vote``, ``match``, ``redux``, ``elect``,
    ``bar.warp.sync``: the last operand), NOT_SYNC otherwise (``barrier.sync`` without ``.aligned`` is a CTA
    barrier that lanes may reach apart)."""
    from ..frontend import ptx
    if op.kind == "bar":
        return (ALL_LANES, None) if op.fn[4] else (NOT_SYNC, None)
    if op.kind != "op":
        return NOT_SYNC, None
    mods = op.instr.mods
    if "aligned" in mods:
        return ALL_LANES, None
    if "sync" not in mods:
        return NOT_SYNC, None
    last = op.instr.operands[-1] if op.instr.operands else None
    if isinstance(last, ptx.Imm) and isinstance(last.value, int):
        return MASK_IMM, int(last.value) & 0xFFFFFFFF
    if isinstance(last, (ptx.Reg, ptx.Sym)) and op.env is not None and op.env.reg_width(last.name) == 32:
        return MASK_REG, last.name
    return ALL_LANES, None


def _postdominators(blocks, succ, X):
    """{block: immediate post-dominator} over ``blocks`` (``succ[b]``: successors, X the virtual exit; blocks
    that cannot reach X get an edge to it), by Cooper, Harvey and Kennedy's algorithm on the reverse graph."""
    blocks = list(blocks)
    succ = {b: list(succ[b]) for b in blocks}
    pred = {b: [] for b in blocks}
    pred[X] = []
    for b in blocks:
        for t in succ[b]:
            pred.setdefault(t, []).append(b)
    seen = {X}
    stack = [X]
    while stack:
        for p in pred.get(stack.pop(), ()):
            if p not in seen:
                seen.add(p)
                stack.append(p)
    for b in blocks:
        if b not in seen:                # an endless loop: an edge to the exit
            succ[b].append(X)
            pred[X].append(b)
    order, visited = [], {X}             # post-order of the reverse graph from X
    stack = [(X, iter(pred[X]))]
    while stack:
        node, it = stack[-1]
        nxt = next((p for p in it if p not in visited), None)
        if nxt is None:
            order.append(node)
            stack.pop()
        else:
            visited.add(nxt)
            stack.append((nxt, iter(pred.get(nxt, ()))))
    po = {b: i for i, b in enumerate(order)}
    idom = {X: X}
    changed = True
    while changed:
        changed = False
        for b in reversed(order):
            if b == X:
                continue
            new = None
            for s in succ[b]:
                if s in idom:
                    if new is None:
                        new = s
                    else:
                        a, c = s, new
                        while a != c:
                            while po[a] < po[c]:
                                a = idom[a]
                            while po[c] < po[a]:
                                c = idom[c]
                        new = a
            if new is not None and idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _loops(succ, nb, X):
    """[(header, set of blocks)] of the natural loops (a back edge: an edge to a block on the depth-first
    walk's stack from block 0; loops with one header are merged)."""
    back = {}
    on, done = set(), set()
    stack = [(0, iter(succ[0]))] if nb else []
    on.add(0)
    while stack:
        b, it = stack[-1]
        t = next(it, None)
        if t is None:
            stack.pop()
            on.discard(b)
            done.add(b)
            continue
        if t == X:
            continue
        if t in on:
            back.setdefault(t, []).append(b)
        elif t not in done:
            on.add(t)
            stack.append((t, iter(succ[t])))
    pred = {}
    for b in range(nb):
        for t in succ[b]:
            pred.setdefault(t, []).append(b)
    out = []
    for head, tails in back.items():
        body = {head}
        work = [t for t in tails if t != head]
        body.update(work)
        while work:
            for p in pred.get(work.pop(), ()):
                if p not in body:
                    body.add(p)
                    work.append(p)
        out.append((head, body))
    return out


class Convergence:
    """Per-PC arrays of a Program: ``pdin``, ``pdout`` (post-dominator intervals), ``sync`` (warp-synchronous),
    ``tail`` (straight-line code to the kernel's exit: never waits) and ``ipdom`` (-1: the virtual exit)."""

    def __init__(self, prog):
        code = prog.code
        n = len(code)
        self.pdin = np.zeros(n, np.int64)
        self.pdout = np.zeros(n, np.int64)
        self.ipdom = np.full(n, -1, np.int64)
        kinds = [sync_point(op) for op in code]
        self.sync = np.array([k for k, _ in kinds], np.int64)
        self.mmask = [m for _, m in kinds]
        self.tail = np.zeros(n, np.bool_)
        self.rank = np.arange(n, dtype=np.int64)
        self.loops = {}                      # pc -> [(loop size, loop id, pdin, pdout)] in its loops
        self._loop_base = 0
        starts = sorted(set(prog.entries.values()))
        bounds = list(zip(starts, starts[1:] + [n]))
        counter = [0]
        for lo, hi in bounds:
            self._function(code, lo, hi, counter)
        # per PC, its innermost LOOP_DEPTH loops (smallest first): ids and post-dominator intervals
        self.lid = np.full((n, LOOP_DEPTH), -1, np.int32)
        self.lin = np.zeros((n, LOOP_DEPTH), np.int32)
        self.lout = np.zeros((n, LOOP_DEPTH), np.int32)
        for pc, ls in self.loops.items():
            for d, (_, lid, a, b) in enumerate(sorted(ls)[:LOOP_DEPTH]):
                self.lid[pc, d], self.lin[pc, d], self.lout[pc, d] = lid, a, b
        self.loops = None                    # per PC: only needed here (a long loop holds a list per PC)
        entry = prog.entries[prog.entry.name]
        hi = next(h for lo, h in bounds if lo == entry)
        follow = False           # code[pc + 1] is on the exit path
        for pc in range(hi - 1, entry - 1, -1):
            op = code[pc]
            if op.kind in ("ret", "exit") and op.guard is None:
                follow = True
            elif op.kind != "op" or self.sync[pc] != NOT_SYNC or getattr(op, "targets", None) is not None:
                follow = False
            self.tail[pc] = follow

    def _function(self, code, lo, hi, counter):
        # basic blocks
        leaders = {lo}
        for pc in range(lo, hi):
            succ = successors(code, pc)
            if succ != [pc + 1]:
                leaders.update(s for s in succ if lo <= s < hi)
                if pc + 1 < hi:
                    leaders.add(pc + 1)
        starts = sorted(leaders)
        block_of = np.zeros(hi - lo, np.int64)
        ends = starts[1:] + [hi]
        for b, (s, e) in enumerate(zip(starts, ends)):
            block_of[s - lo:e - lo] = b
        nb = len(starts)
        X = nb                                   # the virtual exit node
        succ = [[] for _ in range(nb)]
        for b, e in enumerate(ends):
            for s in successors(code, e - 1):
                t = X if (s == EXIT or not lo <= s < hi) else int(block_of[s - lo])
                if t not in succ[b]:
                    succ[b].append(t)
        self._rank(code, lo, hi, starts, ends, block_of, X)
        idom = _postdominators(range(nb), succ, X)
        self._intervals(range(nb), idom, starts, ends, X, self.pdin, self.pdout, counter, self.ipdom)
        # each loop on its own: its back edges lead to its exit, edges that leave it are dropped (lanes that
        # break out leave the loop's reconvergence, as ptxas's BREAK does), so the end of an iteration
        # post-dominates the body and lanes that ``continue`` wait there for the others
        for k, (head, body) in enumerate(_loops(succ, nb, X)):
            lsucc = {}
            for b in body:
                lsucc[b] = [X if t == head else t for t in succ[b] if t == head or t in body]
            lidom = _postdominators(sorted(body), lsucc, X)
            lin, lout = {}, {}
            self._intervals(sorted(body), lidom, starts, ends, X, lin, lout, counter, None)
            for pc in lin:
                self.loops.setdefault(pc, []).append((len(body), self._loop_base + k, lin[pc], lout[pc]))
        self._loop_base += nb + 1

    def _intervals(self, blocks, idom, starts, ends, X, pdin, pdout, counter, ipdom):
        """Instruction-level post-dominator tree of ``blocks``: an instruction's parent is the next one of
        its block; a block's last instruction hangs from the first instruction of the block's immediate
        post-dominator. Writes pre-order intervals into ``pdin``/``pdout`` (and parents into ``ipdom``)."""
        children = {}
        for b in blocks:
            s, e = starts[b], ends[b]
            for pc in range(s, e - 1):
                children.setdefault(pc + 1, []).append(pc)
                if ipdom is not None:
                    ipdom[pc] = pc + 1
            d = idom.get(b, X)
            parent = EXIT if d == X else starts[d]
            children.setdefault(parent, []).append(e - 1)
            if ipdom is not None:
                ipdom[e - 1] = parent
        stack = [(EXIT, False)]
        while stack:
            node, done = stack.pop()
            if done:
                if node != EXIT:
                    pdout[node] = counter[0]
                continue
            counter[0] += 1
            if node != EXIT:
                pdin[node] = counter[0]
            stack.append((node, True))
            for c in children.get(node, ()):
                stack.append((c, False))
        counter[0] += 1

    def _rank(self, code, lo, hi, starts, ends, block_of, X):
        """The order in which lane groups that wait for nobody run: the blocks in reverse post-order of a
        depth-first walk that takes a branch's target before its fall-through, so that at a divergent branch
        the lanes that do not take it run first, whatever order the PTX lists the blocks in (the H100 runs the
        code ptxas laid out this way). Blocks the walk does not reach follow, in PTX order."""
        def nexts(b):
            out = []
            for s in reversed(successors(code, ends[b] - 1)):     # [fall-through, target]: the walk pops
                if s != EXIT and lo <= s < hi:                     # from the end, so the target goes first
                    t = int(block_of[s - lo])
                    if t not in out:
                        out.append(t)
            return out
        post, seen = [], {0}
        stack = [(0, nexts(0))]
        while stack:
            b, todo = stack[-1]
            while todo and todo[-1] in seen:
                todo.pop()
            if not todo:
                post.append(b)
                stack.pop()
                continue
            t = todo.pop()
            seen.add(t)
            stack.append((t, nexts(t)))
        order = post[::-1] + [b for b in range(len(starts)) if b not in seen]
        r = lo
        for b in order:
            for pc in range(starts[b], ends[b]):
                self.rank[pc] = r
                r += 1

    def postdominates(self, a, b):
        """Whether PC ``a`` strictly post-dominates PC ``b``."""
        return a != b and self.pdin[a] < self.pdin[b] and self.pdout[b] <= self.pdout[a]

    def joins(self, p, q):
        """Whether lanes at ``p`` wait for lanes at ``q``: ``p`` post-dominates ``q``, or, in the innermost
        loop around both, ``p`` post-dominates ``q`` within an iteration (the lanes at ``q`` get to ``p``
        unless they leave the loop)."""
        if p == q:
            return False
        if self.pdin[p] < self.pdin[q] and self.pdout[q] <= self.pdout[p]:
            return True
        for d in range(LOOP_DEPTH):
            lp = self.lid[p, d]
            if lp < 0:
                return False
            for e in range(LOOP_DEPTH):
                if self.lid[q, e] == lp:
                    return bool(self.lin[p, d] < self.lin[q, e] and self.lout[q, e] <= self.lout[p, d])
        return False


def convergence(prog) -> Convergence:
    """The program's Convergence, made once and kept on the Program."""
    cv = getattr(prog, "_convergence", None)
    if cv is None:
        cv = prog._convergence = Convergence(prog)
    return cv


# The levels of a lane group: it runs / waits for the warp at a warp-synchronous instruction / waits at a join
# (a group waiting at a join on the kernel's exit path goes first when the waits are lifted: it exits)
FREE, SYNC_WAIT, JOIN_WAIT, TAIL_WAIT = 0, 1, 2, 3


def named(cv, w, p, group):
    """The lanes that the warp-synchronous instruction at ``p`` names for the lanes ``group`` (the union of
    their membermasks), a boolean mask; every lane for .aligned instructions."""
    kind = cv.sync[p]
    if kind == MASK_IMM:
        bits = cv.mmask[p]
    elif kind == MASK_REG:
        bits = 0
        reg = w.regs.get(cv.mmask[p])           # a register never written reads as zero, as in the fast engine
        for v in (np.asarray(reg)[group].tolist() if reg is not None else ()):
            bits |= int(v)
    else:
        return np.ones(len(group), np.bool_)
    return ((bits >> np.arange(len(group))) & 1).astype(np.bool_)


def pick(cv, w, live, come, force):
    """The lane group of warp ``w`` to run next: ``(p, mask)``, or None when every runnable group waits for
    lanes that are parked (``come & ~live``) and ``force`` is off. ``live``: lanes that can run; ``come``: lanes
    that will get somewhere (``live`` plus the parked ones, minus exited lanes and lanes held back by a spin)."""
    pc = w.pc
    ps = np.unique(pc[live])
    qs = np.unique(pc[come])
    best = [None, None, None, None]
    free_key = None
    for p in sorted(ps.tolist(), key=lambda q: cv.rank[q]):
        others = qs[qs != p]
        if others.size == 0:
            level = FREE
        elif any(cv.joins(p, q) for q in others.tolist()):
            level = TAIL_WAIT if cv.tail[p] else JOIN_WAIT
        elif cv.sync[p] != NOT_SYNC and (come & (pc != p) & named(cv, w, p, live & (pc == p))).any():
            level = SYNC_WAIT
        else:
            level = FREE
        if level == FREE:            # the group with the fewest lanes first, then rank order
            key = (int((live & (pc == p)).sum()), int(cv.rank[p]))
            if free_key is None or key < free_key:
                best[FREE], free_key = p, key
        elif best[level] is None:
            best[level] = p          # in rank order: the first is the one to run
    p = best[FREE]
    if p is None:
        if (come & ~live).any() and not force:
            return None
        p = next(b for b in (best[TAIL_WAIT], best[SYNC_WAIT], best[JOIN_WAIT]) if b is not None)
    return p, live & (pc == p)
