"""Swizzles and their pictures: CuTe ``Swizzle<B,M,S>``, the NVMMA 32/64/128-byte shared-memory swizzles,
CUTLASS's ``GemmIdentityThreadblockSwizzle<N>``, and how a swizzle removes ldmatrix bank conflicts.

* ``nvmma(bytes)`` -- the shared-memory swizzle that TMA/wgmma and Triton/Gluon's NVMMA shared layout use,
  as a CuTe swizzle on *byte* offsets: ``Swizzle<log2(bytes/16), 4, 3>``. Inside each group of
  8 x 128 bytes, the 16-byte chunk index (bits 4..6) of a row is XORed with the row's bits 7..9, so a
  column of chunks is spread over every bank.
* :func:`tile_view` -- where each 16-byte chunk of a row-major tile lands, and which banks it occupies.
* :func:`conflict_figure` -- an ldmatrix.x4 reading an 8-row tile, unswizzled vs swizzled, with the
  wavefronts and conflicts of :mod:`emulator.memory.banks`.
* :class:`GemmIdentityThreadblockSwizzle` -- blockIdx -> output tile, as CUTLASS computes it, and
  :func:`threadblock_view` to draw which CTA (in launch order) computes which output tile.
"""
import math
import re

import numpy as np

from ..memory.banks import analyze
from .cute import ComposedLayout, Layout, LayoutError, Swizzle
from .draw import Figure, Grid, bank_colour

NVMMA_BYTES = (0, 32, 64, 128)


def nvmma(swizzle_bytes):
    """The NVMMA shared-memory swizzle of ``swizzle_bytes`` (0 = none, 32, 64, 128) on byte offsets."""
    if swizzle_bytes not in NVMMA_BYTES:
        raise LayoutError(f"NVMMA swizzle of {swizzle_bytes} bytes; supported: {', '.join(map(str, NVMMA_BYTES))}")
    if swizzle_bytes == 0:
        return Swizzle(0, 4, 3)
    return Swizzle(int(math.log2(swizzle_bytes // 16)), 4, 3)


def nvmma_elements(swizzle_bytes, elem_bytes):
    """The same swizzle on *element* offsets (what CuTe writes for a typed tile): the XOR source bits
    stay at byte bits 7..9, the target at byte bits 4..6, so M drops by log2(elem_bytes).
    128-byte swizzle of f16 -> ``Swizzle<3,3,3>``; of f32 -> ``Swizzle<3,2,3>``; of 8-bit -> ``Swizzle<3,4,3>``."""
    sw = nvmma(swizzle_bytes)
    if elem_bytes not in (1, 2, 4, 8, 16):
        raise LayoutError(f"element size {elem_bytes} bytes; NVMMA swizzles take 1, 2, 4, 8 or 16")
    return Swizzle(sw.bits, sw.base - int(math.log2(elem_bytes)), sw.shift)


def element_banks(sw, rows, row_bytes, elem_bytes):
    """bank[r, c]: the first bank holding element (r, c) of a row-major tile stored through byte swizzle sw."""
    cols = row_bytes // elem_bytes
    return np.array([[(sw(r * row_bytes + c * elem_bytes) // 4) % 32 for c in range(cols)] for r in range(rows)])


def bank_tile_view(sw, rows=8, row_bytes=128, elem_bytes=4):
    """Every element of a row-major tile, labelled and coloured with the bank it lands in."""
    b = element_banks(sw, rows, row_bytes, elem_bytes)
    labels = [[str(x) for x in row] for row in b]
    return Grid(f"{sw}: bank of each {elem_bytes}-byte element of {rows} rows of {row_bytes} bytes", labels, b,
                [f"row {r}" for r in range(rows)], [f"c{c}" for c in range(b.shape[1])], colour=bank_colour)


def layout_view(L, elem_bytes=2, max_cols=32):
    """Any rank-2 CuTe layout (or a swizzle composed with one) mapping (m, n) to an element offset: each
    cell shows the offset, coloured by the shared-memory bank the element's first byte lands in."""
    from .cute import ComposedLayout, composition, rank, size
    if not isinstance(L, (Layout, ComposedLayout)):
        L = Layout.parse(str(L))
    inner = L.inner if isinstance(L, ComposedLayout) else L
    if rank(inner) != 2:
        raise LayoutError(f"layout_view draws rank-2 layouts (m, n); {inner} has rank {rank(inner)}")
    M, N = size(inner[0]), min(size(inner[1]), max_cols)
    off = np.array([[L((m, n)) for n in range(N)] for m in range(M)])
    banks = (off * elem_bytes // 4) % 32
    return Grid(f"{L}: element offset of (m, n), coloured by bank ({elem_bytes}-byte elements)",
                [[str(x) for x in row] for row in off], banks, [f"m{m}" for m in range(M)],
                [f"n{n}" for n in range(N)], colour=bank_colour,
                note="same colour in one column = same bank" + ("" if N == size(inner[1]) else
                                                               f"; first {N} of {size(inner[1])} columns"))


def swizzled_offset(sw, row, col, row_bytes, elem_bytes):
    """Byte offset of element (row, col) of a row-major tile with ``row_bytes`` per row, after the
    byte-address swizzle ``sw``."""
    return sw(row * row_bytes + col * elem_bytes)


def tile_view(sw, rows=8, row_bytes=128, title=None):
    """Rows x 16-byte chunks: the cell at (row, physical chunk) names the logical chunk stored there,
    coloured by the logical chunk; column headers give the banks of each physical chunk."""
    nch = row_bytes // 16
    where = np.zeros((rows, nch), np.int64)   # physical chunk index holding logical chunk c of row r
    labels = [[""] * nch for _ in range(rows)]
    keys = np.zeros((rows, nch), np.int64)
    for r in range(rows):
        for c in range(nch):
            a = sw(r * row_bytes + 16 * c)
            pr, pc = divmod(a, row_bytes)
            pc //= 16
            if pr != r:
                raise LayoutError(f"{sw}: row {r} chunk {c} leaves its row ({row_bytes}-byte rows)")
            where[r, c] = pc
            labels[r][pc] = f"c{c}"
            keys[r, pc] = c
    cols = [f"b{(16 * p // 4) % 32}-{(16 * p // 4 + 3) % 32}" for p in range(nch)]
    t = title or f"{sw} on {rows} rows of {row_bytes} bytes: logical 16-byte chunk c stored at each place"
    return Grid(t, labels, keys, [f"row {r}" for r in range(rows)], cols, colour=bank_colour,
                note="columns: physical 16-byte chunks and the banks they occupy")


def _ldmatrix_rows(sw, row_bytes=128):
    """Row addresses of an ldmatrix.x4 reading chunks 0..3 of rows 0..7 (matrix j = chunk j)."""
    lane = np.arange(32)
    return np.array([sw(int((l % 8) * row_bytes + (l // 8) * 16)) for l in lane], np.int64)


class _Access:
    def __init__(self, addrs):
        self.instruction = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
        self.op, self.addrs, self.width, self.nmat = "ldmatrix", addrs, 16, 4
        self.mask = np.ones(32, bool)


def conflict_panel(sw, title):
    """One 8 x 128-byte f16 tile read by ldmatrix.x4 (matrix j = logical chunk j of rows 0..7):
    cells show which matrix row reads each physical chunk; the note gives the bank-conflict count."""
    addrs = _ldmatrix_rows(sw)
    rec = analyze(_Access(addrs))
    labels = [[""] * 8 for _ in range(8)]
    keys = np.full((8, 8), -1, np.int64)
    for l in range(32):
        r, pc = divmod(int(addrs[l]), 128)
        pc //= 16
        labels[r][pc] = f"T{l}:M{l // 8}"
        keys[r, pc] = l // 8
    cols = [f"b{4 * p}-{4 * p + 3}" for p in range(8)]
    note = (f"{rec.wavefronts} wavefronts, {rec.conflicts} bank conflicts "
            f"(per matrix: {', '.join(map(str, rec.phase_wavefronts))})")
    return Grid(title, labels, keys, [f"row {r}" for r in range(8)], cols, colour=matrix_colour, note=note), rec


def matrix_colour(j):
    """One colour per ldmatrix matrix (= per phase): cells of one colour in one column conflict."""
    return ["#ffffff", "#f4a582", "#92c5de", "#b8e186", "#d7b5d8"][j + 1]


def conflict_figure():
    """The classic picture: ldmatrix.x4 over an 8 x 64 f16 tile (128-byte rows), plain vs 128B-swizzled."""
    plain, _ = conflict_panel(Swizzle(0, 4, 3), "row-major, no swizzle: each matrix's 8 rows share 4 banks")
    swz, _ = conflict_panel(nvmma(128), "128-byte swizzle (Swizzle<3,4,3>): each matrix covers all 32 banks")
    return Figure([plain, swz], "ldmatrix.x4 row addresses (T<lane>:M<matrix>) over 8 rows of 128 bytes",
                  across=2)


# ---- threadblock swizzle --------------------------------------------------------------------------

class GemmIdentityThreadblockSwizzle:
    """CUTLASS's ``GemmIdentityThreadblockSwizzle<N>``: CTAs launched along x are grouped 2^log_tile
    at a time onto neighbouring output columns, so a wave of CTAs shares rows of A and columns of B."""

    def __init__(self, N=1):
        if N not in (1, 2, 4, 8):
            raise LayoutError(f"GemmIdentityThreadblockSwizzle<{N}>: N is 1, 2, 4 or 8")
        self.N = N

    @staticmethod
    def get_tiled_shape(problem_mnk, tile_mn, split_k_slices=1):
        """Output tiles along m and n (rounded up), and the split-K slices."""
        m, n, _ = problem_mnk
        return (-(-m // tile_mn[0]), -(-n // tile_mn[1]), split_k_slices)

    def get_log_tile(self, tiled_shape):
        n = tiled_shape[1]
        if self.N >= 8 and n >= 6:
            return 3
        if self.N >= 4 and n >= 3:
            return 2
        if self.N >= 2 and n >= 2:
            return 1
        return 0

    def get_grid_shape(self, tiled_shape):
        tile = 1 << self.get_log_tile(tiled_shape)
        return (tiled_shape[0] * tile, -(-tiled_shape[1] // tile), tiled_shape[2])

    @staticmethod
    def get_tile_offset(log_tile, block_idx):
        """(m, n, k) output tile of CTA ``block_idx`` = (x, y, z)."""
        x, y, z = block_idx
        return (x >> log_tile, (y << log_tile) + (x & ((1 << log_tile) - 1)), z)

    def tile_map(self, tiled_shape):
        """order[m, n]: the launch rank (x fastest, then y) of the CTA computing output tile (m, n);
        -1 where no CTA lands. CTAs that fall outside the tiled shape do no work and are not drawn."""
        log_tile = self.get_log_tile(tiled_shape)
        gx, gy, _ = self.get_grid_shape(tiled_shape)
        order = np.full(tiled_shape[:2], -1, np.int64)
        for y in range(gy):
            for x in range(gx):
                m, n, _ = self.get_tile_offset(log_tile, (x, y, 0))
                if m < tiled_shape[0] and n < tiled_shape[1]:
                    order[m, n] = x + gx * y
        return order


def threadblock_view(N, tiled_mn):
    """Output tiles (m down, n across) labelled with the launch rank of the CTA that computes them."""
    sw = GemmIdentityThreadblockSwizzle(N)
    shape = (tiled_mn[0], tiled_mn[1], 1)
    order = sw.tile_map(shape)
    grid = sw.get_grid_shape(shape)
    labels = [[f"#{v}" if v >= 0 else "-" for v in row] for row in order]
    return Grid(f"GemmIdentityThreadblockSwizzle<{N}>: {tiled_mn[0]} x {tiled_mn[1]} output tiles, grid "
                f"{grid[0]} x {grid[1]}, log_tile {sw.get_log_tile(shape)}",
                labels, np.where(order >= 0, order % 32, -1), [f"m{i}" for i in range(tiled_mn[0])],
                [f"n{j}" for j in range(tiled_mn[1])],
                note="#k: the k-th CTA launched (blockIdx.x fastest) computes this tile")


# ---- the `show` command's non-mma forms -----------------------------------------------------------

_SW = re.compile(r"^(?:Sw|Swizzle)<\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*>$")


def view_from_text(what, args):
    """``Swizzle<B,M,S>`` (on byte offsets of --rows rows of --cols elements of --elem-bytes), ``nvmma:N``,
    ``threadblock:N`` (with --tiles M,N) or ``conflicts``."""
    m = _SW.match(what)
    row_bytes = args.cols * args.elem_bytes
    if m:
        return tile_view(Swizzle(*map(int, m.groups())), args.rows, row_bytes)
    if what.startswith("nvmma:"):
        return tile_view(nvmma(int(what.split(":")[1])), args.rows, row_bytes)
    if what.startswith("threadblock:"):
        tm, tn = (int(x) for x in args.tiles.split(","))
        return threadblock_view(int(what.split(":")[1]), (tm, tn))
    if what == "conflicts":
        return conflict_figure()
    if ":" in what and what[0] in "(_0123456789":
        L = Layout.parse(what)
        if args.swizzle:
            from .cute import composition
            L = composition(Swizzle(*(int(x) for x in args.swizzle.split(","))), L)
        return layout_view(L, args.elem_bytes)
    from ..errors import UnsupportedError, fail
    fail(UnsupportedError, what, "show takes an mma.sync / ldmatrix / stmatrix spelling, 'Swizzle<B,M,S>', "
                                 "'nvmma:32|64|128', 'threadblock:N', 'conflicts' or a rank-2 layout "
                                 "'shape:stride' (with --swizzle B,M,S)")


# ---- Jupyter: a rank-2 CuTe layout renders as its offset picture --------------------------------------

def _repr_svg_(layout):
    try:
        return layout_view(layout).svg()
    except Exception:            # noqa: BLE001 (not rank 2, or not drawable: the text repr)
        return None


Layout._repr_svg_ = _repr_svg_
ComposedLayout._repr_svg_ = _repr_svg_
