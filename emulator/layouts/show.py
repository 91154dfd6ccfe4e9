"""Lane-ownership pictures: which lane and register hold each element of a tile.

Every view is a :class:`Grid` (or a :class:`Figure` of several): ``str()`` gives a text table like the
figures of the PTX ISA manual, each cell ``T<lane>:<reg>[.<element>]`` (``T5:a2.1``: lane 5, register
a2, element 1 = the high half of a 32-bit register holding two 16-bit values); ``.svg()`` draws it with
one colour per lane, and Jupyter renders it inline (``_repr_svg_``).

    >>> print(mma_view("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "C").text().splitlines()[2])
     m0  T0:c0   T0:c1   T1:c0   T1:c1   T2:c0   T2:c1   T3:c0   T3:c1

Views:
  * :func:`mma_view` -- operand A (M x K), B (K x N), C or D (M x N) of an ``mma.sync`` variant, in the
    PTX manual's orientation (``mma.sp``: A is the compressed M x K/2 tile);
  * :func:`metadata_view` -- ``mma.sp``: which lane's metadata nibble describes each chunk of each row of A;
  * :func:`ldmatrix_view` / :func:`stmatrix_view` -- which lane gives each row address, and which lane
    and register receive (or supply) each element of each 8x8 matrix, with or without ``.trans``;
  * :func:`registers_view` -- the values a live :class:`~emulator.Warp` holds in an operand's registers,
    laid out as the matrix they form.
"""
import re

import numpy as np

from isa.mma import NUMPY_DTYPE

from ..errors import UnsupportedError, fail
from .draw import Figure, Grid, bank_colour, lane_colour, warp_colour, warp_legend  # noqa: F401 (re-exported)
from .fragments import variant

OPERAND_NAMES = {"A": "a", "B": "b", "C": "c", "D": "d"}


# ---- mma operands --------------------------------------------------------------------------------

def _elem_suffix(e, epr):
    return f".{e}" if epr > 1 else ""


def mma_cells(instr, operand):
    """(lane[r, c], reg[r, c], elem[r, c], elems_per_reg) over the PTX-orientation tile of an operand."""
    v = variant(instr)
    if operand not in OPERAND_NAMES:
        fail(UnsupportedError, instr, f"operand {operand!r}; choose one of A, B, C, D")
    f = v.fragment(operand)
    n_regs, _, epr, _ = f.shape
    rows, cols = v.tile_shape(operand)
    lane = np.full((rows, cols), -1, np.int64)
    reg, elem = lane.copy(), lane.copy()
    for r in range(n_regs):
        for e in range(epr):
            rr, cc = f[r, :, e, 0], f[r, :, e, 1]
            lane[rr, cc], reg[rr, cc], elem[rr, cc] = np.arange(f.shape[1]), r, e
    return lane, reg, elem, epr


def mma_view(instr, operand, short=False, cols=None):
    """Who holds each element of ``operand`` (A: M x K, B: K x N, C/D: M x N) of mma ``instr``
    (``short``: leave the instruction out of the title; ``cols``: (first, stop) columns only). A wgmma's
    operands belong to 4 warps: each warp has its own colour, named in the legend."""
    v = variant(instr)
    lane, reg, elem, epr = mma_cells(instr, operand)
    c0 = 0
    if cols is not None:
        c0 = cols[0]
        lane, reg, elem = lane[:, cols[0]:cols[1]], reg[:, cols[0]:cols[1]], elem[:, cols[0]:cols[1]]
    rows, cols = lane.shape
    n = OPERAND_NAMES[operand]
    labels = [[f"T{lane[r, c]}:{n}{reg[r, c]}{_elem_suffix(elem[r, c], epr)}" for c in range(cols)]
              for r in range(rows)]
    rn, cn = {"A": ("m", "k"), "B": ("k", "n"), "C": ("m", "n"), "D": ("m", "n")}[operand]
    sparse = operand == "A" and hasattr(v, "meta_owner")
    if sparse:
        cn = "q"                             # the compressed column: kept element q % kept of chunk q // kept
    typ = {"A": v.atype, "B": v.btype, "C": v.ctype, "D": v.dtype}[operand]
    full = v.tile_shape(operand)[1]
    part = f", columns {c0}..{c0 + cols - 1} of {full}" if cols != full else ""
    title = f"operand {operand} ({rows} x {full} {typ}, rows {rn}, columns {cn}{part})"
    if sparse:
        title += f", compressed: column q is kept element q % {v.chunk[1]} of chunk q // {v.chunk[1]}"
    title = title if short else f"{v.spelling}: {title}"
    nwarps = int(lane.max()) // 32 + 1 if lane.size else 1
    who = "T<thread = 32*warp + lane>" if nwarps > 1 else "T<lane>"
    note = (f"{who}:{n}<register>" + (f".<element> (element e = bits [{v.elem_bits(operand)}e, "
                                      f"{v.elem_bits(operand)}(e+1)) of the register)" if epr > 1 else ""))
    return Grid(title, labels, lane, [f"{rn}{i}" for i in range(rows)], [f"{cn}{j}" for j in range(c0, c0 + cols)],
                note=note, colour=warp_colour if nwarps > 1 else lane_colour,
                legend=warp_legend(nwarps) if nwarps > 1 else None)


def metadata_view(instr, sel=0, short=False):
    """Sparse ``mma.sp``: which lane's metadata register, and which of its nibbles, describes each chunk of
    each row of A (for sparsity selector ``sel``).  A cell ``T5:e[7:4]``: bits 7..4 of lane 5's metadata."""
    from isa.mma_sp import SpVariant
    from isa.wgmma_sp import WgmmaSpVariant
    v = variant(instr)
    if not isinstance(v, (SpVariant, WgmmaSpVariant)):
        fail(UnsupportedError, instr, "the metadata operand E belongs to the sparse mma.sp forms and to "
                                      "wgmma.mma_async.sp")
    if sel not in v.selectors:
        fail(UnsupportedError, instr, f"sparsity selector {sel}: this form takes "
                                      f"{', '.join(map(str, v.selectors))}")
    mo = v.meta_owner(sel)
    lane = 4 * (np.arange(16) % 8)[:, None] + mo[..., 0]
    labels = [[f"T{lane[m, c]}:e[{4 * mo[m, c, 1] + 3}:{4 * mo[m, c, 1]}]" for c in range(v.n_chunks)]
              for m in range(16)]
    width, kept = v.chunk
    what = {"tf32": "0b0100: element 0, 0b1110: element 1"}.get(
        v.atype, "bits [1:0] and [3:2]: the positions of the two kept " + ("pairs" if kept == 4 else "elements"))
    title = (f"metadata E, selector {sel} (16 rows x {v.n_chunks} chunks of {width} columns of k; "
             f"{kept} kept per chunk)")
    if isinstance(v, WgmmaSpVariant):
        title += "; warp w of the warpgroup: rows 16w.. in the same lanes of its own sp-meta registers"
    title = title if short else f"{v.spelling}: {title}"
    return Grid(title, labels, lane, [f"m{i}" for i in range(16)],
                [f"k{width * c}..{width * c + width - 1}" for c in range(v.n_chunks)],
                note=f"T<lane>:e[hi:lo]: those bits of the lane's metadata register; {what}", colour=lane_colour)


WIDE = 32          # a wgmma D wider than this many columns is drawn in panels of that many columns


def mma_figure(instr):
    """A, B and C/D of one instruction, side by side (wgmma: the register operands A and D; a D wider than
    32 columns in panels of 32 columns, and the picture scaled down to 1800 pixels at most)."""
    if instr.strip().startswith("wgmma"):
        n = variant(instr).tile_shape("D")[1]
        ds = [mma_view(instr, "D", short=True, cols=(c, min(c + WIDE, n))) for c in range(0, n, WIDE)]
        return Figure([mma_view(instr, "A", short=True)] + ds, variant(instr).spelling,
                      across=2 if len(ds) == 1 else 1, max_width=1800)
    if hasattr(variant(instr), "meta_owner"):
        return Figure([mma_view(instr, op, short=True) for op in ("A", "B", "C")]
                      + [metadata_view(instr, 0, short=True)], variant(instr).spelling, across=2)
    return Figure([mma_view(instr, op, short=True) for op in ("A", "B", "C")], variant(instr).spelling, across=3)


# ---- wgmma shared-memory descriptors -------------------------------------------------------------

def descriptor_view(desc, rows=64, mn_major=False, elem_bytes=2, k_bytes=32):
    """Which shared-memory bytes each 16-byte row of each core matrix is read from, for a wgmma matrix
    descriptor (an int, or a ``(swizzle, mn_major)`` canonical layout at address 0).  K-major: a row per
    M/N index, a column per 16 bytes of K; MN-major: a row per k, a column per 16 bytes of M/N.  Cells give
    the address; colours the 16-byte slot inside its 128-byte line (what the swizzle permutes)."""
    from ..ops.wgmma import desc as D
    if not isinstance(desc, int):
        swz, mn_major = desc
        desc = D.canonical_descriptor(0, rows, mn_major, swz, elem_bytes, k_bytes)
    d = D.Descriptor.decode(desc)
    if mn_major:
        a = D.mn_major_addresses(d, rows, k_bytes // elem_bytes, elem_bytes)[::16 // elem_bytes].T   # (k, chunks)
        rn, cn = "k", "mn"
        cols = [f"{cn}{16 // elem_bytes * j}" for j in range(a.shape[1])]
    else:
        a = D.k_major_addresses(d, rows, k_bytes)[:, ::16]                                     # (rows, chunks)
        rn, cn = "mn", "kbyte"
        cols = [f"{cn}{16 * j}" for j in range(a.shape[1])]
    labels = [[f"0x{int(x):x}" for x in row] for row in a]
    title = f"wgmma descriptor 0x{desc:016x} ({d}), {'MN' if mn_major else 'K'}-major, {elem_bytes}-byte elements"
    return Grid(title, labels, (a >> 4) & 7, [f"{rn}{i}" for i in range(a.shape[0])], cols, colour=bank_colour,
                note="cell: shared address of the 16 bytes; colour: 16-byte slot in the 128-byte line")


# ---- ldmatrix / stmatrix -------------------------------------------------------------------------

_MATRIX = re.compile(r"^(ldmatrix|stmatrix)\.")


def parse_matrix_instr(instr):
    """(kind, nmat, trans) of an ldmatrix/stmatrix spelling; only .m8n8 .b16 forms."""
    parts = instr.strip().split()[0].split(".")
    kind = parts[0]
    if kind not in ("ldmatrix", "stmatrix"):
        fail(UnsupportedError, instr, "not an ldmatrix/stmatrix instruction")
    nums = [p for p in parts if p in ("x1", "x2", "x4")]
    if len(nums) != 1 or "m8n8" not in parts:
        fail(UnsupportedError, instr, "needs .m8n8 and one of .x1 .x2 .x4 (the .b16 forms; .m16n16/.m8n16 "
                                      "need sm_100+)")
    return kind, int(nums[0][1]), "trans" in parts


def matrix_cells(nmat, trans):
    """For each matrix j and element (row, col): the lane and the element (0 low half, 1 high half) of
    register d_j that holds it. Without .trans lane l holds M_j[l>>2][2(l&3)+e]; with .trans
    M_j[2(l&3)+e][l>>2] (PTX ISA, ldmatrix)."""
    lane = np.zeros((nmat, 8, 8), np.int64)
    elem = np.zeros((nmat, 8, 8), np.int64)
    for j in range(nmat):
        for l in range(32):
            for e in range(2):
                r, c = (l >> 2, 2 * (l & 3) + e)
                if trans:
                    r, c = c, r
                lane[j, r, c], elem[j, r, c] = l, e
    return lane, elem


def ldmatrix_view(instr, row_addrs=None, banks=True):
    """Source rows (which lane gives each row's address; with ``row_addrs`` also the address and its
    banks) and the destination fragment of each matrix."""
    kind, nmat, trans = parse_matrix_instr(instr)
    regs = "d" if kind == "ldmatrix" else "r"
    src_rows = np.arange(8 * nmat)
    labels, keys, names = [], [], []
    for j in range(nmat):
        for r in range(8):
            l = 8 * j + r
            cell = [f"T{l}"]
            if row_addrs is not None:
                a = int(row_addrs[l])
                cell.append(f"0x{a:x}")
                if banks:
                    cell.append(f"b{(a // 4) % 32}-{(a // 4 + 3) % 32}")
            labels.append(cell)
            keys.append([l] * len(cell))
            names.append(f"M{j} row {r}")
    cols = ["address from"] + (["byte address", "banks"][:(1 + bool(banks))] if row_addrs is not None else [])
    verb = "reads" if kind == "ldmatrix" else "writes"
    note = "matrix j row r comes from the address in lane 8j+r" + (
        f" (lanes {8 * nmat}..31 unused)" if nmat < 4 else "")
    if row_addrs is not None and banks:
        from ..memory.banks import SmemAccess, analyze
        rec = analyze(SmemAccess(instr.split()[0], kind, np.asarray(row_addrs, np.int64), 16,
                                 np.arange(32) < 8 * nmat, nmat))
        note += f"; {rec.wavefronts} wavefronts, {rec.conflicts} bank conflicts"
    src = Grid(f"{kind} .x{nmat}{' .trans' if trans else ''}: each 16-byte row it {verb} and the lane giving its address",
               labels, np.array(keys), names, cols, note=note)
    lane, elem = matrix_cells(nmat, trans)
    panels = [src]
    for j in range(nmat):
        lab = [[f"T{lane[j, r, c]}:{regs}{j}.{elem[j, r, c]}" for c in range(8)] for r in range(8)]
        what = "destination" if kind == "ldmatrix" else "source"
        panels.append(Grid(f"matrix {j} ({what} register {regs}{j}){' transposed' if trans else ''}", lab,
                           lane[j], [f"row {r}" for r in range(8)], [f"c{c}" for c in range(8)],
                           note=".0 = low 16 bits, .1 = high 16 bits"))
    title = f"{instr.split()[0]}"
    return Figure(panels, title, across=1 + min(nmat, 2))


stmatrix_view = ldmatrix_view


# ---- bank schedules --------------------------------------------------------------------------------

def bank_view(rec):
    """One row per wavefront, one column per bank: which lane(s) each bank serves when, for a recorded
    shared-memory access (``emulator.memory.SmemAccess``). Rows beyond one per phase are the conflicts."""
    from ..memory.banks import analyze, schedule
    r = analyze(rec)
    sched = schedule(rec)
    labels, keys, names = [], [], []
    for n, (phase, served) in enumerate(sched):
        row, krow = [], []
        for b in range(32):
            if b in served:
                word, lanes = served[b]
                row.append(f"T{lanes[0]}" + (f"+{len(lanes) - 1}" if len(lanes) > 1 else ""))
                krow.append(lanes[0])
            else:
                row.append("")
                krow.append(-1)
        labels.append(row)
        keys.append(krow)
        names.append(f"p{phase} w{n}")
    if not labels:
        labels, keys, names = [[""] * 32], [[-1] * 32], ["-"]
    return Grid(f"{r.instruction}: {r.wavefronts} wavefronts, {r.conflicts} conflicts ({r.mode})", labels,
                np.array(keys), names, [f"b{b}" for b in range(32)],
                note=r.note or "T<lane>[+n]: the bank serves that lane's word (and n more lanes reading the same word)")


# ---- live registers ------------------------------------------------------------------------------

def _decode(bits, typ):
    """Raw element bits (uint64) -> numpy values of an mma element type."""
    import ml_dtypes  # noqa: F401  (registers the bfloat16 / float8 dtypes with numpy)
    w = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8,
         "s4": 4, "u4": 4, "s32": 32}[typ]
    if typ in ("s4", "u4"):
        b = bits.astype(np.int64)
        return (np.where(b >= 8, b - 16, b) if typ == "s4" else b).astype(np.int8 if typ == "s4" else np.uint8)
    uint = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
    dt = np.dtype(getattr(ml_dtypes, NUMPY_DTYPE[typ], None) or NUMPY_DTYPE[typ])
    return bits.astype(uint).view(dt)


def registers_matrix(warp, instr, operand, regs):
    """The matrix (PTX orientation) that registers ``regs`` of a live warp hold as ``operand`` of mma
    ``instr``: reads the registers, undoes the fragment layout and decodes the element type."""
    from isa.fragments import unpack
    v = variant(instr)
    n = v.n_regs(operand)
    if len(regs) != n:
        fail(UnsupportedError, instr, f"operand {operand} lives in {n} registers per lane, {len(regs)} given")
    raw = np.stack([np.asarray(warp.read(r)).astype(np.uint64) for r in regs])
    typ = {"A": v.atype, "B": v.btype, "C": v.ctype, "D": v.dtype}[operand]
    return _decode(unpack(v, operand, raw), typ)


def matrices_from_registers(warp, regs, trans=False):
    """The 8x8 16-bit matrices that registers ``regs`` (d0, d1, ...) of a live warp hold in the
    ldmatrix/stmatrix fragment layout: array (len(regs), 8, 8) of uint16 (transposed back with ``trans``)."""
    lane, elem = matrix_cells(len(regs), trans)
    out = np.zeros((len(regs), 8, 8), np.uint16)
    for j, name in enumerate(regs):
        v = np.asarray(warp.read(name)).astype(np.uint32)
        out[j] = (v[lane[j]] >> (16 * elem[j]).astype(np.uint32)) & 0xFFFF
    return out


def registers_view(warp, instr, operand, regs, fmt="{:g}"):
    """A grid of the values a live warp holds for ``operand``, each cell coloured by its lane."""
    M = registers_matrix(warp, instr, operand, regs)
    lane, reg, elem, epr = mma_cells(instr, operand)
    rows, cols = lane.shape

    integer = np.issubdtype(M.dtype, np.integer)

    def f(x):
        return str(int(x)) if integer else fmt.format(float(x))
    labels = [[f(M[r, c]) for c in range(cols)] for r in range(rows)]
    names = ", ".join(regs)
    return Grid(f"{operand} as held in {{{names}}} ({variant(instr).spelling})", labels, lane,
                [str(i) for i in range(rows)], [str(j) for j in range(cols)],
                note="colour = the lane holding the value")
