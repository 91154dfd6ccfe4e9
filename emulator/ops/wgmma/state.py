"""The asynchronous state of wgmma in a CTA: groups in flight per warp, the registers and shared bytes they
hold, the fence rule, and the warpgroup's agreement (``.sync.aligned`` across its four warps).

Model.  Each warp of a warpgroup computes its own 16 rows of D when it issues ``wgmma.mma_async`` (the rows
of a warp depend only on its own A rows, the common B and its own accumulator), and the instruction stays
*in flight* until a ``wgmma.wait_group`` retires its group.  While it is in flight:

* its accumulator and A registers may be touched only by later ``wgmma.mma_async`` of the same warp
  (accumulating chains). Another instruction that reads or writes one waits, as ptxas compiles it, until
  every wgmma of the warp has completed: ptxas puts ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` before it (its info
  message C7517, "warpgroup.wait is injected"), and the launch records a note (``LaunchResult.notes``). With
  ``WarpOptions(wgmma_hazards="error")`` it raises AsyncHazardError instead (the PTX manual's rule);
* the shared bytes it reads may not be written (by any warp of the CTA): AsyncHazardError.

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
    note(warp, f"line {line}: {text}: {verb} {name}, a register of an in-flight wgmma.mma_async{at}; as ptxas "
               f"compiles it (C7517: warpgroup.wait is injected), the warp first waits for every wgmma it has "
               f"issued to complete")
    drain(warp, ws)


def drain(warp, ws):
    """ptxas's injected wait: every wgmma of the warp completes (uncommitted ones too)."""
    cst = cta_state(warp, "wgmma")
    if ws.pending:
        commit(warp, ws)
    wait(warp, cst, ws, 0)


def raw_get(warp, name, text):
    """A register's value without the in-flight guard (for the wgmma instructions themselves)."""
    return type(warp).get_reg(warp, name, text)


# ------------------------------------------------------------------------------------------------
def issue(warp, cst, ws, record):
    """A new wgmma.mma_async in flight: record = dict(regs=set, smem=index array, text=...)."""
    ws.pending.append(record)
    for r in record["regs"]:
        ws.reg_count[r] = ws.reg_count.get(r, 0) + 1
    idx = record["smem"]
    if idx.size:
        cst.smem_reads[idx] += 1
        cst.n_reading += 1
    _install_guard(warp, ws)


def commit(warp, ws):
    ws.groups.append(ws.pending)
    ws.pending = []


def wait(warp, cst, ws, keep):
    """Retire every group but the ``keep`` newest."""
    while len(ws.groups) > keep:
        for rec in ws.groups.pop(0):
            for r in rec["regs"]:
                n = ws.reg_count[r] - 1
                if n:
                    ws.reg_count[r] = n
                else:
                    del ws.reg_count[r]
            if rec["smem"].size:
                cst.smem_reads[rec["smem"]] -= 1
                cst.n_reading -= 1
    if not ws.reg_count:
        _remove_guard(warp)


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
