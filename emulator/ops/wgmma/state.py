"""The asynchronous state of wgmma in a CTA: groups in flight per warp, the registers and shared bytes they
hold, the fence rule, and the warpgroup's agreement (``.sync.aligned`` across its four warps).

Model.  ``wgmma.mma_async`` is one operation of the whole warpgroup: each warp's issue only hands its share
over, and the tensor core starts once all four warps have issued it.  So the emulator records each warp's issue
and computes the instruction when the last warp of the warpgroup issues it: then it reads the shared-memory
operands (written by any warp of the warpgroup before its own issue, e.g. each warp's own cp.async retired
by its ``cp.async.wait_all``: CUTLASS's CuTe tutorial ``wgmma_sm90.cu`` relies on this, without a barrier),
each warp's accumulator and A registers, and writes each warp's 16 rows of D (the rows of a warp depend only on
its own A rows, the common B and its own accumulator).  A ``wgmma.wait_group`` that must retire an instruction
the warpgroup has not all issued yet waits (the warp stalls) until the other warps issue it.  From issue to
retirement the instruction is *in flight*:

* its accumulator and A registers may be touched only by later ``wgmma.mma_async`` of the same warp
  (accumulating chains). Another instruction that reads or writes one waits, as ptxas compiles it, until
  every wgmma of the warp has completed: ptxas puts ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` before it (its info
  message C7517, "warpgroup.wait is injected"), and the launch records a note (``LaunchResult.notes``). That
  wait, like ``wgmma.wait_group``, first needs the other warps of the warpgroup to issue the instructions it
  waits for: until they have, the warp stalls before the instruction (``must_wait``, called by the CTA's
  scheduler), so it never reads an accumulator the warpgroup has not computed yet. With
  ``WarpOptions(wgmma_hazards="error")`` it raises AsyncHazardError instead (the PTX manual's rule);
* once computed, the shared bytes it reads may not be written (by any warp of the CTA) until a warp of the
  warpgroup retires it (the instruction is then complete for the whole warpgroup): AsyncHazardError.

``wgmma.fence`` must come before the first ``wgmma.mma_async`` of a warp and between any other write of an
accumulator or A register and the ``wgmma.mma_async`` that uses it. Where it is missing ptxas inserts one itself
(``WARPGROUP.ARRIVE``, info message C7519, "warpgroup.arrive is injected"): the launch records a note, or, with
``wgmma_hazards="error"``, raises ``AsyncHazardError`` ("missing wgmma.fence").  All four warps of the
warpgroup must issue the same ``wgmma.mma_async`` instructions in the same order with the same descriptors,
and no warp may be absent
(``check_cta_end`` runs when the CTA finishes).
"""
from __future__ import annotations

import numpy as np

from ...errors import AsyncHazardError, WarpSyncError, fail
from ...frontend.ptx import Mem, Not, Pair, Paren, Reg, TensorAddr, Vec


class WarpWgmma:
    """One warp's wgmma bookkeeping."""

    def __init__(self):
        self.pending = []          # issued, not yet committed: [record]
        self.groups = []           # committed, not yet retired: [[record]]
        self.expected = None       # register values the next wgmma may find (None: never fenced)
        self.issued = 0
        self.reg_count = {}        # in-flight register -> number of records holding it
        self.last_shape = None

    def in_flight(self):
        return bool(self.pending or self.groups)


class CtaWgmma:
    """The CTA-wide part: shared bytes being read, and the per-warpgroup issue logs."""

    def __init__(self, smem_size):
        self.smem_reads = np.zeros(smem_size, np.int32)
        self.n_reading = 0
        self.logs = {}             # warpgroup -> [(pc, text, descs)], what its first issuer issued
        self.warps = {}            # warp id -> WarpWgmma
        self.slots = {}            # (warpgroup, issue number) -> [record]: issued by some warps, not all four


def cta_state(warp, instr_text):
    cta = getattr(warp, "_cta", None)
    if cta is None:
        fail(WarpSyncError, instr_text, "wgmma runs on a warpgroup (4 consecutive warps of a CTA); a lone Warp is "
             "one warp: run the PTX in a kernel (load_ptx ... launch with a multiple of 128 threads) or call "
             "emulator.wgmma() for a whole tile")
    st = getattr(cta, "wgmma", None)
    if st is None:
        st = cta.wgmma = CtaWgmma(warp.smem.size)
    return st


def warp_state(warp, instr_text):
    cst = cta_state(warp, instr_text)
    ws = cst.warps.get(warp.warp_id)
    if ws is None:
        ws = cst.warps[warp.warp_id] = WarpWgmma()
    return cst, ws


# ------------------------------------------------------------------------------------------------
# register guard: installed on the warp only while something is in flight
def _install_guard(warp, ws):
    if "get_reg" in warp.__dict__:
        return
    cls = type(warp)
    counts = ws.reg_count

    def get_reg(name, instr="read"):
        if name in counts:
            _reg_hazard(warp, ws, instr, name, "reads")
        return cls.get_reg(warp, name, instr)

    def set_reg(name, values, mask):
        if name in counts:
            _reg_hazard(warp, ws, getattr(warp, "cur_text", None), name, "writes")
        return cls.set_reg(warp, name, values, mask)
    warp.get_reg = get_reg
    warp.set_reg = set_reg


def _remove_guard(warp):
    warp.__dict__.pop("get_reg", None)
    warp.__dict__.pop("set_reg", None)


def strict(warp):
    """True under ``WarpOptions(wgmma_hazards="error")``: the PTX manual's rules raise instead of being
    repaired as ptxas repairs them."""
    return getattr(getattr(warp, "options", None), "wgmma_hazards", "wait") == "error"


def current(warp):
    """(line, text) of the instruction the warp is executing, when it runs in a kernel."""
    prog, pc = getattr(warp, "program", None), getattr(warp, "cur_pc", None)
    if prog is None or pc is None:
        return None, None
    instr = prog.code[pc].instr
    return instr.line, " ".join((instr.text or instr.opcode).split())


def note(warp, message):
    """Record a note on the launch (``LaunchResult.notes``), once per message."""
    cta = getattr(warp, "_cta", None)
    result = getattr(cta, "result", None)
    if result is not None and hasattr(result, "note"):
        result.note(message)


def _reg_hazard(warp, ws, instr, name, verb):
    line, text = current(warp)
    if strict(warp) or line is None:
        fail(AsyncHazardError, instr or text or "write", f"{verb} register {name} while a wgmma.mma_async that "
             f"uses it (accumulator or A fragment) is still in flight; retire it first with wgmma.commit_group and "
             f"wgmma.wait_group")
    rec = next((r for g in ws.groups + [ws.pending] for r in g if name in r["regs"]), None)
    at = f" (line {rec['line']})" if rec and rec.get("line") else ""
    cst = cta_state(warp, "wgmma")
    todo = _not_computed(ws)
    if todo:        # the scheduler's must_wait stalls before such an instruction; this one got past it
        raise WgmmaStall(WgmmaWait(text, todo, warp.warp_id, cst))
    note(warp, injected_wait_note(line, text, verb, name, at))
    drain(warp, cst, ws)


def injected_wait_note(line, text, verb, name, at):
    """The launch's note for ptxas's injected wait (C7517) before the instruction ``text`` at ``line``, which
    ``verb``s (reads, writes) ``name``, a register of an in-flight wgmma (``at``: " (line L)", its line, or "")."""
    return (f"line {line}: {text}: {verb} {name}, a register of an in-flight wgmma.mma_async{at}; as ptxas "
            f"compiles it (C7517: warpgroup.wait is injected), the warp first waits for every wgmma it has "
            f"issued to complete")


class WgmmaStall(Exception):
    """Raised out of an executor that touched a register of an in-flight wgmma.mma_async the warpgroup has not
    computed yet (the other warps have not all issued it): the CTA's scheduler stalls the warp on ``reason``
    and the instruction runs again when it is ready."""

    def __init__(self, reason):
        super().__init__(reason.describe())
        self.reason = reason


def _not_computed(ws):
    return [rec for grp in ws.groups + [ws.pending] for rec in grp if not rec["done"]]


def drain(warp, cst, ws):
    """ptxas's injected wait: every wgmma of the warp completes (uncommitted ones too). The caller has seen
    that the warpgroup computed them all (``must_wait``)."""
    if ws.pending:
        commit(warp, ws)
    wait(warp, cst, ws, 0, "wgmma", None)


def operand_regs(instr):
    """The register names an instruction's operands mention (vectors, addresses, negations included)."""
    names = getattr(instr, "_wgmma_names", None)
    if names is None:
        names = set()
        todo = list(instr.operands)
        while todo:
            o = todo.pop()
            if isinstance(o, Reg):
                names.add(o.name)
            elif isinstance(o, (Vec, Pair, Paren)):
                todo.extend(o.items)
            elif isinstance(o, Not):
                todo.append(o.item)
            elif isinstance(o, Mem):
                if isinstance(o.base, Reg):
                    names.add(o.base.name)
            elif isinstance(o, TensorAddr):
                todo.extend((o.addr, o.coords))
        names = frozenset(names)
        instr._wgmma_names = names
    return names


def must_wait(warp, instr, mask):
    """Called by the CTA's scheduler before a non-wgmma instruction of a warp whose wgmma hold registers (the
    guard is installed): True when the instruction touches one of them and ptxas's injected wait (C7517) must
    wait for a wgmma.mma_async the other warps of the warpgroup have not issued yet; the warp then stalls
    (``warp.stall``) and runs the instruction again when the warpgroup has computed it. Under
    ``wgmma_hazards="error"`` the executor raises instead."""
    cst = getattr(getattr(warp, "_cta", None), "wgmma", None)
    ws = cst.warps.get(warp.warp_id) if cst is not None else None
    if ws is None or not ws.reg_count or instr.base == "wgmma" or strict(warp):
        return False
    counts = ws.reg_count
    if not any(n in counts for n in operand_regs(instr)):
        return False
    todo = _not_computed(ws)
    if not todo:
        return False
    text = " ".join((instr.text or instr.opcode).split())
    if warp.stall(mask, WgmmaWait(text, todo, warp.warp_id, cst)):
        return True
    fail(WarpSyncError, text, f"waits for '{todo[0]['text']}', which the other warps of the warpgroup never "
         "issued (.aligned: all four warps issue each wgmma.mma_async)")


def last_computed(warp):
    """Whether the wgmma.mma_async the warp issued last has been computed (its D registers written): at its
    issue only when the warp was the last of the warpgroup to issue it (the trace lists D then)."""
    cst = getattr(getattr(warp, "_cta", None), "wgmma", None)
    ws = cst.warps.get(warp.warp_id) if cst is not None else None
    last = ws.pending[-1] if ws is not None and ws.pending else None
    return last is None or last["done"]


def raw_get(warp, name, text):
    """A register's value without the in-flight guard (for the wgmma instructions themselves)."""
    return type(warp).get_reg(warp, name, text)


# Registers in bulk: the fast engine keeps a warp's registers in one arena (``machine.fastcore.engine.ArenaRegs``),
# whose ``rows(names)`` reads 32-bit registers as one (n, 32) array and ``set_rows(names, values)`` writes them
# (None / False when some name is not a 32-bit register of the arena); otherwise one register at a time.
def rows(warp, names):
    """(len(names), 32) uint32 copy of 32-bit registers when the warp's register file reads them in bulk, else
    None."""
    f = getattr(warp.regs, "rows", None)
    return f(names) if f is not None else None


def get_rows(warp, names, text):
    """(len(names), 32) uint32: the 32-bit registers ``names`` (without the in-flight guard)."""
    r = rows(warp, names)
    return r if r is not None else np.stack([raw_get(warp, n, text) for n in names])


def set_rows(warp, names, values, mask):
    """Write row i of ``values`` to register ``names[i]`` (``_``: discarded) for the lanes in ``mask``."""
    f = getattr(warp.regs, "set_rows", None)
    if f is not None and mask.all() and getattr(warp, "_written", None) is None and f(names, values):
        return
    setr = type(warp).set_reg
    for i, n in enumerate(names):
        if n != "_":
            setr(warp, n, values[i], mask)


class Expected(dict):
    """Register name -> the values the next wgmma.mma_async may find (``WarpWgmma.expected``), as the last
    wgmma.fence or the warp's last wgmma.mma_async left them. The names written together by ``set_rows`` are
    also kept as the rows of one array (``block``), which ``changed_since_fence`` compares in one step."""

    __slots__ = ("block",)

    def __init__(self, *a):
        super().__init__(*a)
        self.block = None

    def set_rows(self, names, rows):
        super().update(zip(names, rows))
        self.block = (tuple(names), rows)

    def __setitem__(self, name, value):
        self.block = None
        super().__setitem__(name, value)

    def update(self, *a, **k):
        self.block = None
        super().update(*a, **k)


def changed_since_fence(warp, expected, names, text):
    """The registers of ``names``, in order, whose values differ from those ``expected`` (name -> values, as the
    last wgmma.fence or this warp's last wgmma.mma_async left them); names it does not hold are not checked."""
    known = [n for n in names if n in expected]
    if not known:
        return []
    cur = get_rows(warp, known, text)
    block = getattr(expected, "block", None)
    old = None
    if block is not None:
        key = tuple(known)
        if block[0] == key:
            old = block[1]
        elif len(block) == 3 or len(block[0]) <= 1024:        # the rows of a fence's block, by name
            if len(block) == 2:
                block = expected.block = block + ({n: i for i, n in enumerate(block[0])},)
            at = block[2]
            if all(n in at for n in key):
                old = block[1][[at[n] for n in key]]
    if old is None:
        old = np.stack([expected[n] for n in known])
    if cur.shape == old.shape and cur.dtype == old.dtype:
        bad = (cur != old).any(axis=1)
        return [known[i] for i in np.flatnonzero(bad)]
    return [n for n in known if not np.array_equal(expected[n], raw_get(warp, n, text))]


# ------------------------------------------------------------------------------------------------
def issue(warp, cst, ws, record, group, number):
    """A warp issues its share of a wgmma.mma_async (``record``: dict(regs=set, text=..., run=callable that
    computes it and returns the shared byte indices it read)); the instruction is computed for all four warps
    when the last of them issues it."""
    ws.pending.append(record)
    record["done"] = False
    record["warp"] = warp.warp_id
    record["number"] = number
    for r in record["regs"]:
        ws.reg_count[r] = ws.reg_count.get(r, 0) + 1
    _install_guard(warp, ws)
    slot = cst.slots.setdefault((group, number), [])
    slot.append(record)
    if len(slot) < 4:
        return
    del cst.slots[(group, number)]
    reads = None
    recs = sorted(slot, key=lambda r: r["warp"])
    batches = [rec.pop("batch", None) for rec in recs]
    if all(b is not None for b in batches) and len({b[0][1:] for b in batches}) == 1 and \
            all(b[0][0] is batches[0][0][0] for b in batches):
        # one tile for the warpgroup (``op``'s ``batch``: (op, scale-d, scale-a, scale-b), operands, finish)
        (op, scd, sa, sb), _, _ = batches[0]
        parts = [b[1](warp) for b in batches]
        Dt = op.compute(np.concatenate([p[0] for p in parts]), parts[0][1], np.concatenate([p[2] for p in parts]),
                        scd, sa, sb)
        for k, (b, rec) in enumerate(zip(batches, recs)):
            b[2](Dt[16 * k:16 * k + 16])
            rec["run"] = lambda _w, idx=parts[k][3]: idx
    for rec in recs:
        idx = rec.pop("run")(warp)      # the same bytes for the four warps (their descriptors agree)
        if reads is None:
            reads = {"idx": idx, "held": bool(idx.size)}
            if idx.size:
                cst.smem_reads[idx] += 1
                cst.n_reading += 1
        rec["smem"] = reads
        rec["done"] = True


class WgmmaWait:
    """Why a warp stalls at ``wgmma.wait_group``, or before an instruction where ptxas injects its wait (C7517):
    a wgmma.mma_async it must retire that other warps of its warpgroup have not issued yet (the deadlock report
    names them)."""

    def __init__(self, text, records, warp_id, cst):
        self.text, self.records, self.warp_id, self.cst = text, records, warp_id, cst

    def ready(self):
        return all(r["done"] for r in self.records)

    def describe(self):
        r = next(r for r in self.records if not r["done"])
        g = self.warp_id // 4
        late = [w for w in range(4 * g, 4 * g + 4)
                if (self.cst.warps[w].issued if w in self.cst.warps else 0) <= r["number"]]
        who = ", ".join(f"warp {w}" for w in late)
        return (f"{self.text}: waits for '{r['text']}' (wgmma number {r['number'] + 1}), which {who} of warpgroup "
                f"{g} never executed: the warpgroup's four warps issue each wgmma.mma_async together (.aligned)")


def commit(warp, ws):
    ws.groups.append(ws.pending)
    ws.pending = []


def wait(warp, cst, ws, keep, text, mask):
    """Retire every group but the ``keep`` newest; False (the warp stalls) while one of them waits for the
    other warps of the warpgroup to issue its instructions."""
    todo = [rec for grp in ws.groups[:max(len(ws.groups) - keep, 0)] for rec in grp if not rec["done"]]
    if todo:
        if warp.stall(mask, WgmmaWait(text, todo, warp.warp_id, cst)):
            return False
        fail(WarpSyncError, text, f"waits for '{todo[0]['text']}', which the other warps of the warpgroup never "
             "issued (.aligned: all four warps issue each wgmma.mma_async)")
    while len(ws.groups) > keep:
        for rec in ws.groups.pop(0):
            for r in rec["regs"]:
                n = ws.reg_count[r] - 1
                if n:
                    ws.reg_count[r] = n
                else:
                    del ws.reg_count[r]
            reads = rec["smem"]
            if reads["held"]:           # the warpgroup's instruction is complete: its shared reads are over
                reads["held"] = False
                cst.smem_reads[reads["idx"]] -= 1
                cst.n_reading -= 1
    if not ws.reg_count:
        _remove_guard(warp)
    return True


def check_smem_write(warp, instr, addrs, mask, nbytes):
    """Called by every shared-memory writer: no write into bytes an in-flight wgmma reads."""
    cta = getattr(warp, "_cta", None)
    st = getattr(cta, "wgmma", None) if cta is not None else None
    if st is None or not st.n_reading:
        return
    lanes = np.flatnonzero(mask)
    idx = np.asarray(addrs)[lanes][:, None] + np.arange(nbytes)
    idx = np.clip(idx, 0, st.smem_reads.size - 1)
    hit = st.smem_reads[idx].any(axis=1)
    if hit.any():
        lane = int(lanes[np.flatnonzero(hit)[0]])
        a = int(addrs[lane])
        fail(AsyncHazardError, instr, f"overwrites shared bytes [{a:#x}, {a + nbytes:#x}) that an in-flight "
             f"wgmma.mma_async reads through its matrix descriptor; wgmma.wait_group first", lane)


# ------------------------------------------------------------------------------------------------
def check_cta_end(cta):
    """Every warp of a warpgroup issued the same wgmma.mma_async instructions (none absent)."""
    st = getattr(cta, "wgmma", None)
    if st is None:
        return
    for g, log in st.logs.items():
        for w in range(4 * g, 4 * g + 4):
            ws = st.warps.get(w)
            n = ws.issued if ws else 0
            if n < len(log):
                pc, text, _ = log[n]
                fail(WarpSyncError, text, f"warp {w} of warpgroup {g} never executed this wgmma.mma_async "
                     f"(its wgmma number {n + 1}), which the other warps of the warpgroup executed; .aligned "
                     f"needs all four warps")
