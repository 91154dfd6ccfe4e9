"""The asynchronous state of wgmma in a CTA: groups in flight per warp, the registers and shared bytes they
hold, the fence rule, and the warpgroup's agreement (``.sync.aligned`` across its four warps).

Model.  Each warp of a warpgroup computes its own 16 rows of D when it issues ``wgmma.mma_async`` (the rows
of a warp depend only on its own A rows, the common B and its own accumulator), and the instruction stays
*in flight* until a ``wgmma.wait_group`` retires its group.  While it is in flight:

* its accumulator and A registers are touched by later ``wgmma.mma_async`` of the same warp (accumulating
  chains); any other instruction reading or writing them waits for every wgmma of the warp first, as the
  ``warpgroup.wait`` ptxas injects there does (ptxas info C7517, C7514: the wgmmas are serialized);
* the shared bytes it reads may not be written (by any warp of the CTA): AsyncHazardError.

``wgmma.fence`` must come before the first ``wgmma.mma_async`` of a warp and between any other write of an
accumulator or A register and the ``wgmma.mma_async`` that uses it; otherwise WarpSyncError-style
``AsyncHazardError`` ("missing wgmma.fence").  All four warps of the warpgroup must issue the same
``wgmma.mma_async`` instructions in the same order with the same descriptors, and no warp may be absent
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
            _injected_wait(warp, ws)
        return cls.get_reg(warp, name, instr)

    def set_reg(name, values, mask):
        if name in counts:
            _injected_wait(warp, ws)
        return cls.set_reg(warp, name, values, mask)
    warp.get_reg = get_reg
    warp.set_reg = set_reg


def _remove_guard(warp):
    warp.__dict__.pop("get_reg", None)
    warp.__dict__.pop("set_reg", None)


def _injected_wait(warp, ws):
    """Another instruction reads or writes a register of an in-flight wgmma.mma_async: ptxas injects a
    ``warpgroup.wait`` there ("(C7517) warpgroup.wait is injected ... to allow use of registers defined by
    GMMA"), which retires every wgmma of the warp issued so far. The accumulators were computed at issue."""
    cst = warp._cta.wgmma
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
