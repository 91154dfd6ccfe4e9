"""Shared-memory bank conflicts, counted the way Nsight Compute counts them on an H100.

One shared-memory instruction of one warp is served in *phases* (groups of lanes that the LSU handles
together); within a phase each of the 32 four-byte banks serves one distinct 4-byte word per *wavefront*.
:func:`analyze` turns one recorded access (``SmemAccess``: instruction, op, 32 lane
addresses, bytes per lane, active lanes, matrix count) into a :class:`BankRecord`:

* ``wavefronts`` -- what ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`` / ``_op_st`` report for it
  (for ``cp.async.ca``: the shared-memory fill, which ncu only shows in the total
  ``l1tex__data_pipe_lsu_wavefronts_mem_shared``);
* ``conflicts`` -- ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld`` / ``_op_st`` / ``_op_ldgsts``
  / ``_op_atom``: the wavefronts beyond one per non-empty phase.

:func:`counts` gives the same two numbers through a numba path (about 10x faster; tests prove the two
equal on every measured pattern and on random ones); :func:`schedule` lists which bank serves which lane
in each wavefront.

The rules (measured; see ``tests/data/banks/h100_ncu.json`` for the captures that check them):

1. bank = (address // 4) % 32. A phase costs as many wavefronts as the most distinct words any one bank
   must deliver; lanes reading the same word share it (broadcast); a 1- or 2-byte access occupies its word.
2. Phases: up to 4 bytes per lane, the whole warp; 8 bytes, half-warps; 16 bytes, quarter-warps.
3. Loads of 8 or 16 bytes whose active lanes come in equal-address pairs (lane l and l^1 everywhere, or
   l and l^2 everywhere) are served in phases twice as wide.
4. ``ldmatrix``/``stmatrix`` ``.xN``: one phase per 8x8 matrix (the eight 16-byte rows given by lanes
   8j..8j+7), never merged.
5. ``cp.async.ca`` fills shared memory in the phases of a store of its cp-size, but lanes writing the same
   word are not merged (each costs its own wavefront), and a fully predicated-off one still costs one
   wavefront. This holds when, inside each phase, consecutive lanes copy from consecutive global
   addresses (the usual tile copy); other source layouts regroup the fill and are flagged in ``note``.
   ``cp.async.cg`` bypasses the counted path (every shared-memory LSU counter reads 0).
   ``atom.shared`` is served like a 32-bit access, again without merging lanes on the same word.
6. Per kernel ncu also counts 1 ``_op_misc`` wavefront, and 3 more per ``cp.async`` (dummy ``LDS`` that
   ptxas places before ``LDGSTS``); those belong to no instruction and are left out here.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import OperandError, fail

@dataclass
class SmemAccess:
    """One shared-memory instruction's traffic, as seen by the bank-conflict model."""
    instruction: str
    op: str                 # 'ld', 'st', 'ldmatrix', 'stmatrix', 'cp.async.ca', 'cp.async.cg', 'atom'
    addrs: np.ndarray       # int64 (32,): byte address per lane (row address for ldmatrix/stmatrix)
    width: int              # bytes per lane access
    mask: np.ndarray        # bool (32,): lanes that take part
    nmat: int = 0           # ldmatrix/stmatrix: number of 8x8 matrices
    src: np.ndarray | None = None   # cp.async: int64 (32,) global source address per lane


NBANKS = 32
WORD = 4

OPS = ("ld", "st", "ldmatrix", "stmatrix", "cp.async.ca", "cp.async.cg", "atom")
_LANES_PER_PHASE = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}  # rule 2
_EMPTY_CP_NOTE = "no lane copies anything, yet Nsight Compute still counts one wavefront for the instruction"
_NO_MERGE = ("atom", "cp.async.ca")  # each lane's word is served on its own, even when lanes share it
_CG_NOTE = ("cp.async.cg bypasses L1 (LDGSTS.BYPASS): Nsight Compute counts no shared-memory "
            "wavefronts or bank conflicts for it")


@dataclass(frozen=True)
class BankRecord:
    """The bank-conflict account of one shared-memory instruction."""
    instruction: str
    op: str
    wavefronts: int
    conflicts: int
    phases: int                    # non-empty phases (lane groups served together)
    mode: str = ""                 # how lanes were grouped: "warp", "half-warps", "quarter-warps", "matrices", ...
    phase_lanes: tuple = ()        # per non-empty phase: the active lanes in it
    phase_wavefronts: tuple = ()   # per non-empty phase: its wavefronts
    note: str = ""
    banks: tuple = field(default=(), repr=False)  # per lane: first bank touched (-1: inactive)
    # the access itself, so that a record can be drawn (show.bank_view) or re-analysed
    addrs: tuple = field(default=(), repr=False)
    width: int = field(default=0, repr=False)
    mask: tuple = field(default=(), repr=False)
    nmat: int = field(default=0, repr=False)

    def __str__(self):
        s = f"{self.instruction}: {self.wavefronts} wavefronts, {self.conflicts} conflicts ({self.phases} phases, {self.mode})"
        return s + (f" -- {self.note}" if self.note else "")


def _words(addr, width):
    """The 4-byte words a lane touches."""
    return range(addr // WORD, (addr + width - 1) // WORD + 1)


def _phase_wavefronts(lanes, addrs, width, merge=True):
    """Most words any bank must serve for these lanes (rule 1): distinct words when lanes touching the
    same word share it (``merge``), else every lane's word separately (atomics, cp.async fills)."""
    per_bank = {}
    for l in lanes:
        for w in _words(int(addrs[l]), width):
            per_bank.setdefault(w % NBANKS, []).append(w)
    return max((len(set(s)) if merge else len(s) for s in per_bank.values()), default=0)


def _paired(active, addrs):
    """Rule 3: some m in (1, 2) with addrs[l] == addrs[l ^ m] for every active l whose partner is active."""
    for m in (1, 2):
        if all(addrs[l] == addrs[l ^ m] for l in range(32) if active[l] and active[l ^ m]):
            return m
    return 0


def analyze(rec):
    """Wavefronts and bank conflicts of one recorded shared-memory access (a ``SmemAccess``, or a
    BankRecord, which carries its access)."""
    r = _analyze(rec)
    return replace(r, addrs=tuple(int(a) for a in np.asarray(rec.addrs)), width=int(rec.width),
                   mask=tuple(bool(m) for m in np.asarray(rec.mask)), nmat=int(getattr(rec, "nmat", 0)))


def _analyze(rec):
    instr, op, width = rec.instruction, rec.op, int(rec.width)
    addrs = np.asarray(rec.addrs, dtype=np.int64)
    active = np.asarray(rec.mask, dtype=bool)
    if op not in OPS:
        fail(OperandError, instr, f"unknown shared-memory access kind {op!r}; known: {', '.join(OPS)}")
    if addrs.shape != (32,) or active.shape != (32,):
        fail(OperandError, instr, "a shared-memory access record needs 32 lane addresses and 32 mask bits")
    banks = tuple(int(a // WORD % NBANKS) if m else -1 for a, m in zip(addrs, active))
    if op == "cp.async.cg":  # rule 5
        return BankRecord(instr, op, 0, 0, 0, "bypass", note=_CG_NOTE, banks=banks)
    if op in ("ldmatrix", "stmatrix"):  # rule 4
        nmat = int(rec.nmat)
        groups = [range(8 * j, 8 * j + 8) for j in range(nmat)]
        width, mode = 16, "matrices"
    else:
        if width not in _LANES_PER_PHASE:
            fail(OperandError, instr, f"{width} bytes per lane; shared-memory accesses are 1, 2, 4, 8 or 16 bytes")
        n = _LANES_PER_PHASE[width]
        mode = {32: "warp", 16: "half-warps", 8: "quarter-warps"}[n]
        if op == "ld" and width >= 8 and _paired(active, addrs):
            n, mode = 2 * n, mode + ", paired"
        groups = [range(s, s + n) for s in range(0, 32, n)]
    lanes = [tuple(l for l in g if active[l]) for g in groups]
    lanes = [g for g in lanes if g]
    if op == "cp.async.ca" and not lanes:  # measured: a cp.async that copies nothing still costs one
        return BankRecord(instr, op, 1, 0, 0, mode, note=_EMPTY_CP_NOTE, banks=banks)
    merge = op not in _NO_MERGE
    wf = tuple(_phase_wavefronts(g, addrs, width, merge) for g in lanes)
    total = sum(wf)
    note = _src_note(rec, lanes, width) if op == "cp.async.ca" else ""
    return BankRecord(instr, op, total, total - len(lanes), len(lanes), mode, tuple(lanes), wf, note, banks)


def _src_note(rec, phases, width):
    """cp.async.ca: the count is exact when, within each phase, consecutive lanes copy from consecutive
    global addresses (ascending or descending); say so when the record shows otherwise."""
    src = getattr(rec, "src", None)
    if src is None:
        return ""
    src = np.asarray(src, dtype=np.int64)
    for g in phases:
        d = np.diff(src[list(g)])
        if len(d) and not (np.all(d == width * np.diff(g)) or np.all(d == -width * np.diff(g))):
            return ("the global source addresses are not contiguous in lane order within a phase; the fill "
                    "into shared memory is then grouped by the source too, which this count does not model")
    return ""


# ---- fast path -----------------------------------------------------------------------------------

_OP_CODE = {op: i for i, op in enumerate(OPS)}


def counts(rec):
    """(wavefronts, conflicts) of a recorded access: the numba path, equal to :func:`analyze`'s counts."""
    if rec.op not in _OP_CODE:
        fail(OperandError, rec.instruction, f"unknown shared-memory access kind {rec.op!r}; known: {', '.join(OPS)}")
    if rec.op not in ("ldmatrix", "stmatrix") and int(rec.width) not in _LANES_PER_PHASE:
        fail(OperandError, rec.instruction, f"{rec.width} bytes per lane; shared-memory accesses are 1, 2, 4, 8 or 16 bytes")
    from .banks_fast import counts_kernel     # numba loads here, not at `import emulator`
    wf, conflicts = counts_kernel(np.asarray(rec.addrs, np.int64), np.asarray(rec.mask, np.bool_),
                                   int(rec.width), _OP_CODE[rec.op], int(rec.nmat))
    return int(wf), int(conflicts)


def schedule(rec):
    """How the banks serve one access, wavefront by wavefront: a list with one entry per wavefront,
    ``(phase, {bank: (word, lanes)})`` -- in that wavefront, ``bank`` delivers 4-byte ``word`` (address
    // 4) to ``lanes``. Its length is ``analyze(rec).wavefronts`` (0 for cp.async.cg)."""
    r = analyze(rec)
    addrs = np.asarray(rec.addrs, dtype=np.int64)
    width = 16 if rec.op in ("ldmatrix", "stmatrix") else int(rec.width)
    merge = rec.op not in _NO_MERGE
    out = []
    for p, lanes in enumerate(r.phase_lanes):
        queues = {}  # bank -> list of (word, [lanes]) in first-come order
        for l in lanes:
            for w in _words(int(addrs[l]), width):
                q = queues.setdefault(w % NBANKS, [])
                hit = next((e for e in q if e[0] == w), None) if merge else None
                if hit:
                    hit[1].append(l)
                else:
                    q.append((w, [l]))
        for i in range(r.phase_wavefronts[p]):
            out.append((p, {b: (q[i][0], tuple(q[i][1])) for b, q in sorted(queues.items()) if i < len(q)}))
    if not out and r.wavefronts:  # an empty cp.async: one wavefront that serves nothing
        out = [(0, {})] * r.wavefronts
    return out


def report(records):
    """A text table of bank records, one line per instruction, with totals."""
    records = list(records)
    lines = [f"{'#':>3}  {'wavefronts':>10}  {'conflicts':>9}  instruction"]
    for i, r in enumerate(records):
        lines.append(f"{i:>3}  {r.wavefronts:>10}  {r.conflicts:>9}  {r.instruction}" + (f"  ({r.note})" if r.note else ""))
    lines.append(f"{'sum':>3}  {sum(r.wavefronts for r in records):>10}  {sum(r.conflicts for r in records):>9}")
    return "\n".join(lines)
