"""Pictures of Gluon layouts: who owns each element, and where a shared layout puts it (banks).

* :func:`owner_view`: one cell per element, ``T<thread>:r<register>`` of its first holder (``T`` = 32 * warp
  + lane) and ``xK`` when K threads/registers hold it; coloured by lane (same colours as the mma views).
* :func:`warp_view`: the same tensor coloured by warp, each cell ``w<warp>``: the coarse picture.
* :func:`shared_view`: an NVMMA or swizzled shared layout: for each row, which logical 16-byte chunk is
  stored in each physical 16-byte slot, coloured by bank group, with the bank-conflict count of reading
  the 8 rows of one chunk column (the access of an ldmatrix / wgmma / TMA phase).
"""
import numpy as np

from ..layouts.draw import Figure, Grid, bank_colour, warp_colour, warp_legend
from ..memory.banks import SmemAccess, analyze
from .layouts import DistributedLayout, SharedLayout
from .linear import fail


def _grid_shape(shape):
    return (1, shape[0]) if len(shape) == 1 else tuple(shape)


def owner_view(layout, shape, title=None):
    """``T<thread>:r<register>`` of the first holder of every element (rank 1 or 2)."""
    if not isinstance(layout, DistributedLayout):
        fail(layout, "owner_view draws distributed (register) layouts; use shared_view for shared ones")
    if len(shape) > 2:
        fail(layout, "owner_view draws rank-1 and rank-2 tensors")
    o = layout.owner(shape)
    reg, thr = o.first()
    lane = o.lane[..., 0]
    gs = _grid_shape(shape)
    reg, thr, lane = reg.reshape(gs), thr.reshape(gs), lane.reshape(gs)
    rep = o.replication
    blk = o.block[..., 0].reshape(gs)
    pre = (lambda i, j: f"B{blk[i, j]}:") if o.block.max() > 0 else (lambda i, j: "")
    labels = [[f"{pre(i, j)}T{thr[i, j]}:r{reg[i, j]}" for j in range(gs[1])] for i in range(gs[0])]
    t = title or f"{layout!r} on {list(shape)}"
    note = (f"T<thread = 32*warp + lane>:r<register>; {layout.registers(shape)} registers per thread, "
            f"{layout.num_warps()} warps" + (f"; every element is held by {rep} threads/registers (the first "
                                              f"shown)" if rep > 1 else ""))
    rn = [str(i) for i in range(gs[0])]
    nw = layout.num_warps()
    if nw > 1:                      # each warp its own hue, named in the legend
        return Grid(t, labels, thr, rn, [str(j) for j in range(gs[1])], note=note, colour=warp_colour,
                    legend=warp_legend(nw))
    return Grid(t, labels, lane, rn, [str(j) for j in range(gs[1])], note=note)


def warp_view(layout, shape, title=None):
    """Each element coloured by the warp of its first holder."""
    o = layout.owner(shape)
    gs = _grid_shape(shape)
    w = o.warp[..., 0].reshape(gs)
    labels = [[f"w{w[i, j]}" for j in range(gs[1])] for i in range(gs[0])]
    return Grid(title or f"{layout!r} on {list(shape)}: warps", labels, w * 32 + 19,
                [str(i) for i in range(gs[0])], [str(j) for j in range(gs[1])], colour=warp_colour,
                legend=warp_legend(int(w.max()) + 1))


def chunk_read_conflicts(layout, shape, elem_bits=None):
    """Bank conflicts of reading the tile 16 bytes per lane, 8 consecutive rows of one 16-byte column chunk
    per quarter-warp (the phases of ldmatrix, of a wgmma/tcgen05 core-matrix read, of TMA): a list of
    (chunk, BankRecord) for every chunk of the first 8 rows, grouped 4 chunks per warp-wide load."""
    bits = elem_bits or layout.element_bitwidth or 16
    off = layout.byte_offset(shape, bits)
    if len(shape) != 2:
        fail(layout, "chunk_read_conflicts needs a 2-D tile")
    contig = 0 if getattr(layout, "transposed", False) or getattr(layout, "order", [1])[0] == 0 else 1
    per_chunk = 128 // bits
    rows = min(shape[1 - contig], 8)
    nch = shape[contig] // per_chunk
    out = []
    for g in range(0, nch, 4):
        addrs = np.zeros(32, np.int64)
        mask = np.zeros(32, bool)
        for q in range(4):
            c = g + q
            if c >= nch:
                continue
            for r in range(rows):
                idx = (r, c * per_chunk) if contig == 1 else (c * per_chunk, r)
                addrs[8 * q + r] = off[idx]
                mask[8 * q + r] = True
        rec = analyze(SmemAccess(f"ld.shared.v4 rows 0-{rows - 1}, chunks {g}-{min(g + 3, nch - 1)}", "ld",
                                 addrs, 16, mask))
        out.append((g, rec))
    return out


def shared_view(layout, shape, elem_bits=None, rows=None, title=None):
    """Rows x physical 16-byte slots of a shared tile: each cell names the logical chunk ``c<k>`` stored
    there (and the row it belongs to when the layout moves chunks across rows), coloured by that chunk's
    bank group. The note gives the bank conflicts of reading 8 rows of a chunk column."""
    if not isinstance(layout, SharedLayout):
        fail(layout, "shared_view draws shared layouts")
    bits = elem_bits or layout.element_bitwidth or 16
    off = layout.byte_offset(shape, bits)
    contig = 0 if getattr(layout, "transposed", False) or getattr(layout, "order", [1])[0] == 0 else 1
    per_chunk = 128 // bits
    if shape[contig] % per_chunk:
        fail(layout, f"shape {list(shape)}: the contiguous dimension is not a whole number of 16-byte chunks")
    nrow = shape[1 - contig] if rows is None else min(rows, shape[1 - contig])
    nch = shape[contig] // per_chunk
    row_bytes = nch * 16
    slots = {}
    for r in range(nrow):
        for c in range(nch):
            idx = (r, c * per_chunk) if contig == 1 else (c * per_chunk, r)
            slots[int(off[idx]) // 16] = (r, c)
    first = min(slots)
    width = max(row_bytes, 128) // 16
    n_lines = (max(slots) - first) // width + 1
    labels = [[""] * width for _ in range(n_lines)]
    keys = np.full((n_lines, width), -1, np.int64)
    for s, (r, c) in slots.items():
        ln, p = divmod(s - first, width)
        labels[ln][p] = f"r{r}c{c}"
        keys[ln, p] = (s * 4) % 32
    recs = chunk_read_conflicts(layout, shape, bits)
    w = sum(r.wavefronts for _, r in recs)
    cf = sum(r.conflicts for _, r in recs)
    note = (f"cell r<row>c<chunk>: logical 16-byte chunk stored in this slot; colour: its banks. Reading 8 "
            f"rows of each chunk column (quarter-warp ld.shared.v4): {w} wavefronts, {cf} bank conflicts")
    cols = [f"b{(4 * p) % 32}-{(4 * p + 3) % 32}" for p in range(width)]
    t = title or f"{layout!r} on {list(shape)} ({bits}-bit elements)"
    return Grid(t, labels, keys, [f"{(first + i * width) * 16:#x}" for i in range(n_lines)], cols,
                colour=bank_colour, note=note)


def tmem_view(layout, shape, title=None):
    """Tensor memory (modelled, not measured): one row per TMEM lane, one column per column slot, each cell
    the (row, col) of the tensor element stored there (``-`` where nothing of its own is)."""
    from .linear import apply
    b = layout.to_linear(shape)
    nr, nc = len(b["row"]), len(b["col"])
    row, col = np.meshgrid(np.arange(1 << nr), np.arange(1 << nc), indexing="ij")
    c = apply(b, 2, ("row", "col"), {"row": row, "col": col})
    labels, keys = [], np.zeros(row.shape, np.int64)
    seen = set()
    for i in range(row.shape[0]):
        line = []
        for j in range(row.shape[1]):
            e = (int(c[0][i, j]), int(c[1][i, j]))
            line.append("-" if e in seen else f"{e[0]},{e[1]}")
            keys[i, j] = -1 if e in seen else i % 32
            seen.add(e)
        labels.append(line)
    t = title or f"{layout!r} on {list(shape)}: tensor memory lanes x columns (modelled, not measured)"
    return Grid(t, labels, keys, [f"lane {i}" for i in range(row.shape[0])],
                [f"col {j}" for j in range(row.shape[1])],
                note="cell: the tensor element (row,col) in this TMEM lane and column slot; '-': a copy or empty; "
                     "warp w reaches lanes 32*(w%4) .. 32*(w%4)+31")


def figure(layout, shape, **kw):
    """owner_view (distributed) or shared_view (shared) of a layout: what ``python -m emulator show --gluon``
    draws."""
    if isinstance(layout, SharedLayout):
        return shared_view(layout, shape, **kw)
    from .tmem import TensorMemoryLayout
    if isinstance(layout, TensorMemoryLayout):
        return tmem_view(layout, shape)
    return Figure([owner_view(layout, shape)])


# ---- Jupyter: a layout renders as its picture ---------------------------------------------------------

def _default_shape(layout):
    if isinstance(layout, SharedLayout):
        return [64, 64] if layout.rank in (None, 2) else [64] * layout.rank
    return [128] if layout.rank == 1 else [32, 32] if layout.rank == 2 else None


def _repr_svg_(layout):
    """The layout's picture on a small default shape (32 x 32 for register layouts, 64 x 64 for shared
    ones); None (the text repr) when the layout cannot take that shape."""
    shape = _default_shape(layout)
    if shape is None:
        return None
    try:
        return figure(layout, shape).svg()
    except Exception:            # noqa: BLE001 (a picture is optional: fall back to the text repr)
        return None


DistributedLayout._repr_svg_ = _repr_svg_
SharedLayout._repr_svg_ = _repr_svg_
