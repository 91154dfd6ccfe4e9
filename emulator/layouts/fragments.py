"""Who owns what: CuTe TV layouts checked against the emulator's fragment tables, and the
TiledCopy / TiledMMA partitions of a tile among threads.

A *TV layout* (CuTe's name) maps (thread, value) to the column-major index of an element of the operand
tile. The tiles follow CuTe's MMA_Traits: A is M x K, **B is N x K** (transposed against the PTX manual's
K x N), C and D are M x N. Value ``v`` of thread ``t`` is element number v of that lane's fragment,
counting registers first and then the elements packed inside a register: register r, element e ->
``v = r * elems_per_reg + e`` (element e sits at bits [e*w, (e+1)*w) of the register).

    >>> r = check_layout("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "A",
    ...                  "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))")
    >>> r.ok
    True
"""
from dataclasses import dataclass, field

import numpy as np

from isa.mma import VARIANTS

from . import cute
from .cute import Layout, LayoutError
from ..errors import UnsupportedError, expect_str, fail

OPERANDS = ("A", "B", "C", "D")

# TV layouts in CuTe's SM80 MMA_Traits convention (cute/atom/mma_traits_sm80.hpp), written out here so that
# docs and tests can cite them by atom name; every one is confirmed cell by cell against the fragment tables.
CUTE_SM80 = {
    "SM80_16x8x8_F32F16F16F32_TN": {
        "instr": "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        "A": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))",
        "B": "((_4,_8),_2):((_16,_1),_8)",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_16x8x16_F32F16F16F32_TN": {
        "instr": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "A": "((_4,_8),(_2,_2,_2)):((_32,_1),(_16,_8,_128))",
        "B": "((_4,_8),(_2,_2)):((_16,_1),(_8,_64))",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_16x8x4_F32TF32TF32F32_TN": {
        "instr": "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
        "A": "((_4,_8),_2):((_16,_1),_8)",
        "B": "((_4,_8),_1):((_8,_1),_0)",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_16x8x8_F32TF32TF32F32_TN": {
        "instr": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "A": "((_4,_8),(_2,_2)):((_16,_1),(_8,_64))",
        "B": "((_4,_8),_2):((_8,_1),_32)",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_16x8x16_S32S8S8S32_TN": {
        "instr": "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32",
        "A": "((_4,_8),(_4,_2)):((_64,_1),(_16,_8))",
        "B": "((_4,_8),_4):((_32,_1),_8)",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_16x8x32_S32S8S8S32_TN": {
        "instr": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
        "A": "((_4,_8),(_4,_2,_2)):((_64,_1),(_16,_8,_256))",
        "B": "((_4,_8),(_4,_2)):((_32,_1),(_8,_128))",
        "C": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"},
    "SM80_8x8x4_F64F64F64F64_TN": {
        "instr": "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
        "A": "((_4,_8),_1):((_8,_1),_0)",
        "B": "((_4,_8),_1):((_8,_1),_0)",
        "C": "((_4,_8),_2):((_16,_1),_8)"},
}


# CuTe's SM90 GMMA register layouts (cute/atom/mma_traits_sm90_gmma.hpp): 128 threads of a warpgroup.
def gmma_c_layout(n):
    """CLayout_64xN: (T128, V N/2) -> (M64, N) column-major."""
    return f"((_4,_8,_4),(_2,_2,_{n // 8})):((_128,_1,_16),(_64,_8,_512))"


CUTE_SM90 = {
    "SM90_64x64x16_F32F16F16_SS": {"instr": "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
                                   "C": gmma_c_layout(64)},
    "SM90_64x128x16_F32BF16BF16_RS": {"instr": "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                                      "A": "((_4,_8,_4),(_2,_2,_2)):((_128,_1,_16),(_64,_8,_512))",
                                      "C": gmma_c_layout(128)},
    "SM90_64x256x8_F32TF32TF32_RS_TN": {"instr": "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
                                        "A": "((_4,_8,_4),(_1,_2,_2)):((_64,_1,_16),(_0,_8,_256))",
                                        "C": gmma_c_layout(256)},
}


def variant(instr):
    """The ``isa.mma`` (or ``isa.wgmma``, or ``isa.wmma``) entry for a spelling (modifiers in any order ptxas
    accepts)."""
    expect_str(instr, "check_layout: instr")
    if instr.strip().startswith("wmma"):
        from isa.wmma import MMA_FORMS, FragmentView
        from ..ops.wmma import canonical_mma
        form = MMA_FORMS.get(canonical_mma(instr.strip()) or "") if instr.strip().startswith("wmma.mma") else None
        if form is None:
            fail(UnsupportedError, instr, "not a supported wmma.mma form (see docs/wmma.md)")
        return FragmentView(form, copies=False)
    if instr.strip().startswith("wgmma"):
        from isa.wgmma import VARIANTS as WG
        from isa.wgmma_sp import VARIANTS as WSP
        from ..ops.wgmma.op import canonical_spelling as wg_spelling
        v = WG.get(wg_spelling(instr) or "") or WSP.get(wg_spelling(instr) or "")
        if v is None:
            fail(UnsupportedError, instr, f"not a supported wgmma.mma_async variant ({len(WG)} are, see isa/wgmma.py)")
        return v
    if instr.strip().startswith("mma") and any(m in ("sp", "sp::ordered_metadata")
                                               for m in instr.strip().split(".")[1:]):
        from isa.mma_sp import VARIANTS as SP
        from ..ops.mma_sp import canonical_spelling as sp_spelling
        v = SP.get(sp_spelling(instr.strip()) or "")
        if v is None:
            fail(UnsupportedError, instr, f"not a supported mma.sp variant ({len(SP)} are, see isa/mma_sp.py)")
        return v
    from ..ops.mma import canonical_spelling
    spelling = canonical_spelling(instr) if instr.startswith("mma") else None
    v = VARIANTS.get(spelling) if spelling else None
    if v is None:
        fail(UnsupportedError, instr, "not a supported mma.sync variant; supported: " + ", ".join(VARIANTS))
    return v


def _operand(instr, op):
    if not isinstance(op, str) or op not in OPERANDS:
        fail(UnsupportedError, instr, f"operand {op!r}; choose one of {', '.join(OPERANDS)}")
    if op == "B" and instr.strip().startswith("wgmma"):
        fail(UnsupportedError, instr, "wgmma's B lives in shared memory, read through a matrix descriptor: see "
             "emulator.ops.wgmma.core_matrix_map or 'python -m emulator show gmma:K:128'")
    return op


def cute_tile_shape(v, op):
    """(rows, cols) of the operand tile as CuTe indexes it: A (M,K), B (N,K), C/D (M,N)."""
    rows, cols = v.tile_shape(op)
    return (cols, rows) if op == "B" else (rows, cols)


def fragment_cells(v, op):
    """(n_threads=32, n_values, 2): the CuTe-tile (row, col) of value v of each thread."""
    f = v.fragment(op)                                   # (n_regs, threads, epr, 2) in PTX (row, col)
    n_regs, nthr, epr, _ = f.shape
    cells = f.transpose(1, 0, 2, 3).reshape(nthr, n_regs * epr, 2)
    return cells[..., ::-1] if op == "B" else cells      # B: (k, n) -> (n, k)


@dataclass
class LayoutCheck:
    """Result of :func:`check_layout`. ``mismatches``: (thread, value, expected (row, col), got (row, col)),
    coordinates in the CuTe tile of the operand (A: (m, k); B: (n, k); C/D: (m, n))."""
    instruction: str
    operand: str
    layout: str
    tile: tuple
    mismatches: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.mismatches

    def __bool__(self):
        return self.ok

    def __str__(self):
        what = {"A": "M x K", "B": "N x K", "C": "M x N", "D": "M x N"}[self.operand]
        head = (f"{self.instruction} operand {self.operand} ({what} = {self.tile[0]} x {self.tile[1]}), "
                f"TV layout {self.layout}: ")
        if self.ok:
            return head + "matches the hardware fragment"
        lines = [head + f"{len(self.mismatches)} of {self.n_threads * self.n_values} cells differ"]
        for t, v, e, g in self.mismatches[:16]:
            lines.append(f"  thread {t:2d} value {v:2d}: hardware holds {e}, layout says {g}")
        if len(self.mismatches) > 16:
            lines.append(f"  ... {len(self.mismatches) - 16} more")
        return "\n".join(lines)

    n_values: int = 0
    n_threads: int = 32


def check_layout(instr, operand, layout):
    """Compare a CuTe TV layout ((thread, value) -> column-major index of the operand tile) with the
    fragment the hardware uses for ``operand`` of mma ``instr``; every cell is checked."""
    v = variant(instr)
    op = _operand(instr, operand)
    L = layout if isinstance(layout, Layout) else Layout.parse(str(layout))
    rows, cols = cute_tile_shape(v, op)
    cells = fragment_cells(v, op)
    nval = cells.shape[1]
    if cute.rank(L) != 2:
        raise LayoutError(f"{instr}: operand {op}: a TV layout has two modes (thread, value); {L} has "
                          f"{cute.rank(L)}")
    nt, nv = cute.size(L[0]), cute.size(L[1])
    nthr = cells.shape[0]
    if (nt, nv) != (nthr, nval):
        raise LayoutError(f"{instr}: operand {op}: the TV layout must be {nthr} threads x {nval} values "
                          f"(one value per element a thread holds); {L} is {nt} x {nv}")
    res = LayoutCheck(v.spelling, op, str(L), (rows, cols), n_values=nval, n_threads=nthr)
    for t in range(nthr):
        for val in range(nval):
            idx = L((t, val))
            got = (idx % rows, idx // rows)
            exp = tuple(int(x) for x in cells[t, val])
            if got != exp or idx >= rows * cols:
                res.mismatches.append((t, val, exp, got))
    return res


def tv_layout(instr, operand):
    """The owner map of an operand as arrays: ``thread[row, col]``, ``value[row, col]`` over the CuTe
    tile (A: M x K, B: N x K, C/D: M x N)."""
    v = variant(instr)
    op = _operand(instr, operand)
    rows, cols = cute_tile_shape(v, op)
    cells = fragment_cells(v, op)
    thread = np.full((rows, cols), -1, np.int64)
    value = np.full((rows, cols), -1, np.int64)
    for t in range(cells.shape[0]):
        for val in range(cells.shape[1]):
            r, c = cells[t, val]
            thread[r, c], value[r, c] = t, val
    return thread, value


# ---- TiledCopy ------------------------------------------------------------------------------------

class TiledCopy:
    """CuTe's ``make_tiled_copy(atom, thr_layout, val_layout)`` partition: the tile is
    ``raked_product(thr_layout, val_layout)``, so thread (tm, tn) of ``thr_layout`` copies a
    ``val_layout`` block, and the blocks of neighbouring threads are neighbours.

    ``owner[m, n]`` is the thread copying tile element (m, n), ``value[m, n]`` its value index;
    ``partition(t)`` lists thread t's elements in value order.
    """

    def __init__(self, thr_layout, val_layout):
        self.thr = thr_layout if isinstance(thr_layout, Layout) else Layout.parse(str(thr_layout))
        self.val = val_layout if isinstance(val_layout, Layout) else Layout.parse(str(val_layout))
        if cute.rank(self.thr) != 2 or cute.rank(self.val) > 2:
            raise LayoutError(f"TiledCopy: thread layout {self.thr} must be rank 2 (m, n), value layout "
                              f"{self.val} rank 1 or 2")
        val = self.val if cute.rank(self.val) == 2 else cute.make_layout(self.val, Layout(1, 0))
        self.nthr, self.nval = cute.size(self.thr), cute.size(val)
        for name, L in (("thread", self.thr), ("value", val)):
            img = sorted(L(i) for i in range(cute.size(L)))
            if img != list(range(cute.size(L))):
                raise LayoutError(f"TiledCopy: the {name} layout {L} must be a bijection onto "
                                  f"[0, {cute.size(L)})")
        self.layout_mn = cute.raked_product(self.thr, val)
        self.tile_shape = (cute.size(self.layout_mn[0]), cute.size(self.layout_mn[1]))
        M, N = self.tile_shape
        idx = np.array([[self.layout_mn((m, n)) for n in range(N)] for m in range(M)])
        self.owner, self.value = idx % self.nthr, idx // self.nthr

    @property
    def tv_layout(self):
        """CuTe's TV layout of the copy: (thread, value) -> column-major index of the (M, N) tile,
        ``right_inverse(layout_mn)`` shaped as (threads, values)."""
        inv = cute.right_inverse(self.layout_mn)
        if cute.size(inv) != self.nthr * self.nval:
            raise LayoutError(f"{self}: the tile layout {self.layout_mn} has no full right inverse")
        return cute.composition(inv, Layout((self.nthr, self.nval)))

    def partition(self, thread):
        """(m, n) of each value thread ``thread`` copies, in value order."""
        if not 0 <= thread < self.nthr:
            raise LayoutError(f"TiledCopy: thread {thread} is outside the {self.nthr} threads")
        ms, ns = np.nonzero(self.owner == thread)
        order = np.argsort(self.value[ms, ns])
        return [(int(ms[i]), int(ns[i])) for i in order]

    def __str__(self):
        return f"TiledCopy(thr={self.thr}, val={self.val}) tile {self.tile_shape[0]}x{self.tile_shape[1]}"


# ---- TiledMMA -------------------------------------------------------------------------------------

class TiledMMA:
    """``make_tiled_mma(atom, atom_layout)`` for one mma.sync atom repeated over a tile.

    ``atom_layout`` (m, n) places warps (CuTe: the AtomLayoutMNK); ``tile`` (M, N, K) is the whole tile,
    a multiple of the atom's shape times ``atom_layout``; the atoms one warp repeats become extra
    values of its threads. ``owner(op)`` gives ``thread[r, c]`` and ``value[r, c]`` over the operand
    tile in CuTe orientation (A: M x K, B: N x K, C: M x N); thread = lane + 32 * warp.
    """

    def __init__(self, instr, atom_layout=(1, 1), tile=None):
        self.variant = variant(instr)
        m, n, k = self.variant.shape
        self.atom_layout = tuple(atom_layout)
        wm, wn = self.atom_layout
        self.tile = tuple(tile) if tile is not None else (m * wm, n * wn, k)
        M, N, K = self.tile
        if M % (m * wm) or N % (n * wn) or K % k:
            raise LayoutError(f"TiledMMA: tile {M}x{N}x{K} is not a multiple of the atom {m}x{n}x{k} "
                              f"times the warp layout {wm}x{wn}")
        self.nthreads = 32 * wm * wn

    def owner(self, op):
        op = _operand(self.variant.spelling, op)
        m, n, k = self.variant.shape
        wm, wn = self.atom_layout
        M, N, K = self.tile
        extent = {"A": (M, K, m, k, 0), "B": (N, K, n, k, 1), "C": (M, N, m, n, 2), "D": (M, N, m, n, 2)}[op]
        rows, cols, ar, ac, kind = extent
        cells = fragment_cells(self.variant, op)             # atom-local (row, col)
        nv = cells.shape[1]
        thread = np.full((rows, cols), -1, np.int64)
        value = np.full((rows, cols), -1, np.int64)
        rep_r, rep_c = rows // ar, cols // ac                # atom tiles along each tile dimension
        for i in range(rep_r):
            for j in range(rep_c):
                # which warp owns atom tile (i, j), and which repetition of that warp it is
                if kind == 0:      # A: rows follow M (warps along m), cols follow K (every warp)
                    warp_m, warp_n, rep = i % wm, None, (i // wm, j)
                elif kind == 1:    # B: rows follow N (warps along n)
                    warp_m, warp_n, rep = None, i % wn, (i // wn, j)
                else:
                    warp_m, warp_n, rep = i % wm, j % wn, (i // wm, j // wn)
                warps = [(wi, wj) for wi in range(wm) for wj in range(wn)
                         if (warp_m is None or wi == warp_m) and (warp_n is None or wj == warp_n)]
                nrep0 = {0: rows // (ar * wm), 1: rows // (ar * wn), 2: rows // (ar * wm)}[kind]
                r_index = rep[0] + nrep0 * rep[1]
                for (wi, wj) in warps[:1]:   # A and B are shared by the warps of a row/column: show the first
                    widx = wi + wm * wj
                    for t in range(32):
                        for v in range(nv):
                            r, c = cells[t, v]
                            thread[i * ar + r, j * ac + c] = t + 32 * widx
                            value[i * ar + r, j * ac + c] = v + nv * r_index
        return thread, value
