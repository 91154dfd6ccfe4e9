"""Lane-ownership pictures: which lane and register hold each element of a tile.

Every view is a :class:`Grid` (or a :class:`Figure` of several): ``str()`` gives a text table like the
figures of the PTX ISA manual, each cell ``T<lane>:<reg>[.<element>]`` (``T5:a2.1``: lane 5, register
a2, element 1 = the high half of a 32-bit register holding two 16-bit values); ``.svg()`` draws it with
one colour per lane, and Jupyter renders it inline (``_repr_svg_``).

    >>> print(mma_view("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "C").text().splitlines()[2])
     m0  T0:c0   T0:c1   T1:c0   T1:c1   T2:c0   T2:c1   T3:c0   T3:c1

Views:
  * :func:`mma_view` -- operand A (M x K), B (K x N), C or D (M x N) of an ``mma.sync`` variant, in the
    PTX manual's orientation;
  * :func:`ldmatrix_view` / :func:`stmatrix_view` -- which lane gives each row address, and which lane
    and register receive (or supply) each element of each 8x8 matrix, with or without ``.trans``;
  * :func:`registers_view` -- the values a live :class:`~emulator.Warp` holds in an operand's registers,
    laid out as the matrix they form.
"""
import colorsys
import html
import re

import numpy as np

from isa.mma import NUMPY_DTYPE

from .errors import UnsupportedError, fail
from .layouts import variant

OPERAND_NAMES = {"A": "a", "B": "b", "C": "c", "D": "d"}


# ---- colours ---------------------------------------------------------------------------------------

def lane_colour(lane):
    """A light fill for ``lane``: lanes of one quad (lane >> 2) get neighbouring hues, quads spread
    around the wheel, so the PTX 'groupID / threadID_in_group' structure shows."""
    if lane < 0:
        return "#ffffff"
    g, t = lane >> 2, lane & 3
    hue = ((g * 3) % 8) / 8 + t * 0.028
    light = 0.80 if t % 2 == 0 else 0.70
    r, gg, b = colorsys.hls_to_rgb(hue % 1.0, light, 0.65)
    return "#%02x%02x%02x" % (int(r * 255), int(gg * 255), int(b * 255))


def bank_colour(bank):
    """A light fill for one of the 32 shared-memory banks."""
    if bank < 0:
        return "#ffffff"
    r, g, b = colorsys.hls_to_rgb((bank * 7 % 32) / 32, 0.78, 0.55)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


# ---- the picture objects -------------------------------------------------------------------------

class Grid:
    """A titled table of labelled cells; ``keys`` (an int per cell, -1 for none) pick the colours."""

    def __init__(self, title, labels, keys, row_names=None, col_names=None, colour=lane_colour, note=""):
        self.title = title
        self.labels = [list(r) for r in labels]
        self.keys = np.asarray(keys)
        rows, cols = self.keys.shape
        self.row_names = list(row_names) if row_names is not None else [str(i) for i in range(rows)]
        self.col_names = list(col_names) if col_names is not None else [str(j) for j in range(cols)]
        self.colour = colour
        self.note = note

    @property
    def shape(self):
        return self.keys.shape

    def cell(self, r, c):
        return self.labels[r][c]

    def text(self):
        rows, cols = self.shape
        w = max([len(s) for row in self.labels for s in row] + [len(s) for s in self.col_names]) + 1
        rw = max(len(s) for s in self.row_names) + 1
        lines = [self.title]
        lines.append(" " * rw + " " + "".join(s.ljust(w) for s in self.col_names).rstrip())
        for r in range(rows):
            lines.append(self.row_names[r].rjust(rw) + " " + "".join(s.ljust(w) for s in self.labels[r]).rstrip())
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    __str__ = text

    def _svg_body(self, x0, y0):
        rows, cols = self.shape
        cw = max(46, 7 * max([len(s) for row in self.labels for s in row] + [1]) + 10,
                 6 * max(len(s) for s in self.col_names) + 8)
        ch, rh = 22, 6 * max(len(s) for s in self.row_names) + 10
        out = [f'<text x="{x0}" y="{y0 + 14}" font-size="13" font-weight="bold">{html.escape(self.title)}</text>']
        gy = y0 + 24
        for j in range(cols):
            out.append(f'<text x="{x0 + rh + j * cw + cw / 2}" y="{gy + 12}" font-size="10" text-anchor="middle" '
                       f'fill="#555">{html.escape(self.col_names[j])}</text>')
        gy += 16
        for r in range(rows):
            out.append(f'<text x="{x0 + rh - 4}" y="{gy + r * ch + 15}" font-size="10" text-anchor="end" '
                       f'fill="#555">{html.escape(self.row_names[r])}</text>')
            for j in range(cols):
                k = int(self.keys[r, j])
                x, y = x0 + rh + j * cw, gy + r * ch
                out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{self.colour(k)}" '
                           f'stroke="#888" stroke-width="0.5"><title>{html.escape(self.labels[r][j])}</title></rect>')
                out.append(f'<text x="{x + cw / 2}" y="{y + 15}" font-size="11" text-anchor="middle" '
                           f'font-family="monospace">{html.escape(self.labels[r][j])}</text>')
        height = gy - y0 + rows * ch + 8
        width = max(rh + cols * cw, int(7.6 * len(self.title)))
        if self.note:
            out.append(f'<text x="{x0}" y="{y0 + height + 8}" font-size="11" fill="#333">{html.escape(self.note)}</text>')
            height += 18
            width = max(width, int(6.2 * len(self.note)))
        return out, width, height

    def svg(self):
        return Figure([self]).svg()

    def _repr_svg_(self):
        return self.svg()


class Figure:
    """Several grids, side by side (``across`` per row of panels) in SVG, one after another in text."""

    def __init__(self, panels, title="", across=None):
        self.panels, self.title = list(panels), title
        self.across = across or len(self.panels)

    def text(self):
        parts = ([self.title, ""] if self.title else []) + ["\n\n".join(p.text() for p in self.panels)]
        return "\n".join(parts)

    __str__ = text

    def svg(self):
        body, x, y, row_h, width = [], 10, 10, 0, 0
        if self.title:
            body.append(f'<text x="10" y="24" font-size="15" font-weight="bold">{html.escape(self.title)}</text>')
            y += 28
        for i, p in enumerate(self.panels):
            if i and i % self.across == 0:
                x, y, row_h = 10, y + row_h + 16, 0
            parts, w, h = p._svg_body(x, y)
            body += parts
            x += w + 24
            width, row_h = max(width, x), max(row_h, h)
        height = y + row_h + 10
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")

    def _repr_svg_(self):
        return self.svg()


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
            lane[rr, cc], reg[rr, cc], elem[rr, cc] = np.arange(32), r, e
    return lane, reg, elem, epr


def mma_view(instr, operand, short=False):
    """Who holds each element of ``operand`` (A: M x K, B: K x N, C/D: M x N) of mma ``instr``
    (``short``: leave the instruction out of the title)."""
    v = variant(instr)
    lane, reg, elem, epr = mma_cells(instr, operand)
    rows, cols = lane.shape
    n = OPERAND_NAMES[operand]
    labels = [[f"T{lane[r, c]}:{n}{reg[r, c]}{_elem_suffix(elem[r, c], epr)}" for c in range(cols)]
              for r in range(rows)]
    rn, cn = {"A": ("m", "k"), "B": ("k", "n"), "C": ("m", "n"), "D": ("m", "n")}[operand]
    typ = {"A": v.atype, "B": v.btype, "C": v.ctype, "D": v.dtype}[operand]
    title = f"operand {operand} ({rows} x {cols} {typ}, rows {rn}, columns {cn})"
    title = title if short else f"{v.spelling}: {title}"
    note = (f"T<lane>:{n}<register>" + (f".<element> (element e = bits [{v.elem_bits(operand)}e, "
                                       f"{v.elem_bits(operand)}(e+1)) of the register)" if epr > 1 else ""))
    return Grid(title, labels, lane, [f"{rn}{i}" for i in range(rows)], [f"{cn}{j}" for j in range(cols)],
                note=note)


def mma_figure(instr):
    """A, B and C/D of one instruction, side by side."""
    return Figure([mma_view(instr, op, short=True) for op in ("A", "B", "C")], variant(instr).spelling, across=3)


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
        from .banks import analyze
        from .warp import SmemAccess
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
    shared-memory access (``emulator.warp.SmemAccess``). Rows beyond one per phase are the conflicts."""
    from .banks import analyze, schedule
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


# ---- command line ---------------------------------------------------------------------------------

def _render(obj, args):
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(obj.svg())
        print(f"wrote {args.svg}")
    else:
        print(obj.text())
    return 0


def _cmd(args):
    what = args.what.strip()
    if what.startswith("mma"):
        obj = mma_view(what, args.operand) if args.operand else mma_figure(what)
    elif _MATRIX.match(what):
        addrs = None
        if args.row_stride is not None:
            l = np.arange(32)
            addrs = (l % 8) * args.row_stride + (l // 8) * 16
        obj = ldmatrix_view(what, addrs)
    else:
        from . import swizzle
        obj = swizzle.view_from_text(what, args)
    return _render(obj, args)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "show", help="draw who owns what: mma fragments, ldmatrix/stmatrix, swizzles",
        description="Lane-ownership pictures. WHAT is an mma.sync spelling (with --operand A/B/C/D, or all), "
                    "an ldmatrix/stmatrix spelling, 'Swizzle<B,M,S>', 'nvmma:32|64|128' (with --rows/--cols/"
                    "--elem-bytes), 'threadblock:N' (with --tiles M,N), 'conflicts', or a rank-2 CuTe layout "
                    "'shape:stride' (with --swizzle B,M,S and --elem-bytes).")
    p.add_argument("what")
    p.add_argument("--operand", choices=list("ABCD"))
    p.add_argument("--svg", metavar="FILE", help="write an SVG picture instead of printing text")
    p.add_argument("--row-stride", type=int, help="ldmatrix/stmatrix: bytes between the rows of each matrix "
                                                  "(shows addresses and banks)")
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--elem-bytes", type=int, default=2)
    p.add_argument("--tiles", default="8,8", help="threadblock swizzle: output tiles M,N")
    p.add_argument("--swizzle", metavar="B,M,S", help="layout: compose Swizzle<B,M,S> on element offsets")
    p.set_defaults(func=_cmd)
    return p
