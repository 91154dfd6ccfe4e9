"""``gl.convert_layout(x, dst)`` explained: which elements move, how far, and what the shared-memory round
trip costs in bank conflicts.

For every register slot of the destination layout (a thread and one of its registers) the element it must
receive is looked up in the source layout:

* **in thread**: the same thread already holds it (a register rename or move, free);
* **across lanes**: only other lanes of the same warp hold it (warp shuffles can bring it);
* **across warps**: only other warps hold it: the data has to go through shared memory.

When anything crosses warps, the conversion is a shared-memory round trip: every source thread stores its
elements (one copy of each) into a scratch buffer, a barrier, every destination thread loads its own. The
cost of each store and load instruction is counted with the H100 bank model of ``emulator.memory.banks``
(measured with Nsight Compute, docs/layouts.md), with stores vectorised as far as the registers are
contiguous in the scratch layout (up to 16 bytes). The scratch layout is a parameter (default: row-major,
no swizzle, no padding), so the effect of a swizzled scratch can be compared. Triton itself may choose a
different scratch (padded or swizzled) and may route intra-warp conversions through shuffles; this is the
cost model of a given scratch layout, not a prediction of Triton's choice.
"""
from dataclasses import dataclass, field

import numpy as np

from ..layouts.draw import Grid
from ..memory.banks import SmemAccess, analyze
from .layouts import DistributedLayout, SharedLayout, SwizzledSharedLayout
from .linear import apply, check_shape, fail

KINDS = ("in thread", "across lanes", "across warps")


def _slots(layout, shape):
    """(warp, lane, register) -> element flat index, as an int array [warps, 32, regs]."""
    b = layout.to_linear(shape)
    nw, nr = 1 << len(b["warp"]), 1 << len(b["register"])
    w, l, r = np.meshgrid(np.arange(nw), np.arange(32), np.arange(nr), indexing="ij")
    coords = apply(b, len(shape), ("register", "lane", "warp"), {"register": r, "lane": l, "warp": w})
    flat = np.zeros_like(w)
    for d in range(len(shape)):
        flat = flat * shape[d] + coords[d]
    return flat


@dataclass
class ConvertReport:
    src: object
    dst: object
    shape: list
    counts: dict                       # kind -> destination register slots
    route: str
    kind_of: np.ndarray = field(repr=False)       # per element: 0 in thread, 1 across lanes, 2 across warps
    scratch: object = None
    stores: list = field(default_factory=list, repr=False)    # BankRecords of the round trip
    loads: list = field(default_factory=list, repr=False)

    @property
    def store_wavefronts(self):
        return sum(r.wavefronts for r in self.stores)

    @property
    def load_wavefronts(self):
        return sum(r.wavefronts for r in self.loads)

    @property
    def conflicts(self):
        return sum(r.conflicts for r in self.stores + self.loads)

    def __str__(self):
        total = sum(self.counts.values())
        lines = [f"convert_layout {list(self.shape)}: {self.src!r} -> {self.dst!r}",
                 "  destination register slots: " + ", ".join(f"{self.counts[k]} {k}" for k in KINDS) +
                 f" (of {total})",
                 f"  route: {self.route}"]
        if self.stores:
            sw = self.stores[0].width if self.stores else 0
            lw = self.loads[0].width if self.loads else 0
            lines.append(f"  through shared memory ({self.scratch!r}): {len(self.stores)} stores of {sw} B/lane, "
                         f"{self.store_wavefronts} wavefronts, {sum(r.conflicts for r in self.stores)} conflicts; "
                         f"{len(self.loads)} loads of {lw} B/lane, {self.load_wavefronts} wavefronts, "
                         f"{sum(r.conflicts for r in self.loads)} conflicts")
        return "\n".join(lines)

    def view(self):
        """Each element marked by the farthest its destination holders must fetch it: ``=`` in thread,
        ``L`` across lanes, ``W`` across warps."""
        gs = (1, self.shape[0]) if len(self.shape) == 1 else tuple(self.shape)
        k = self.kind_of.reshape(gs)
        sym = "=LW"
        labels = [[sym[k[i, j]] for j in range(gs[1])] for i in range(gs[0])]
        colours = {0: "#e8f5e9", 1: "#fff3c4", 2: "#ffcdd2"}
        return Grid(f"convert_layout {list(self.shape)}: {self.src!r} -> {self.dst!r}", labels, k,
                    [str(i) for i in range(gs[0])], [str(j) for j in range(gs[1])],
                    colour=lambda c: colours.get(int(c), "#ffffff"),
                    note="= the destination thread already holds it; L another lane of its warp does; "
                         "W only another warp does (shared memory)")


def _accesses(layout, shape, offs, elem_bytes, op, first_only):
    """Vectorised st/ld.shared of every register of ``layout`` at element offsets ``offs`` (flat)."""
    slots = _slots(layout, shape)                     # [W, 32, R] element
    o = offs.reshape(-1)[slots]                       # element offset in scratch
    nw, _, nr = slots.shape
    v = 1
    while v * 2 <= nr and v * 2 * elem_bytes <= 16:
        v2 = v * 2
        g = o.reshape(nw, 32, nr // v2, v2)
        if (g == g[..., :1] + np.arange(v2)).all() and (g[..., 0] % v2 == 0).all():
            v = v2
        else:
            break
    keep = np.ones(slots.shape, bool)
    if first_only:                                    # one copy of each element is stored
        seen = set()
        for w in range(nw):
            for r in range(nr):
                for l in range(32):
                    e = int(slots[w, l, r])
                    keep[w, l, r] = e not in seen
                    seen.add(e)
    recs = []
    for w in range(nw):
        for r0 in range(0, nr, v):
            mask = keep[w, :, r0]
            if not mask.any():
                continue
            addrs = (o[w, :, r0] * elem_bytes).astype(np.int64)
            name = f"{'st' if op == 'st' else 'ld'}.shared{'.v%d' % v if v > 1 else ''}.b{8 * elem_bytes} " \
                   f"(warp {w}, registers {r0}..{r0 + v - 1})"
            recs.append(analyze(SmemAccess(name, op, addrs, v * elem_bytes, mask.copy())))
    return recs


def explain_convert(src, dst, shape, elem_bits=16, scratch=None):
    """How ``convert_layout`` from ``src`` to ``dst`` moves a ``shape`` tensor of ``elem_bits``-bit elements
    (see the module docstring). Returns a :class:`ConvertReport` (``str()`` it for the summary)."""
    for L in (src, dst):
        if not isinstance(L, DistributedLayout):
            fail(L, "convert_layout converts between distributed (register) layouts")
    shape = check_shape(src, shape, src.rank)
    for L in (src, dst):
        if any(any(b) for b in L.to_linear(shape)["block"]):
            fail(L, "the explainer covers one CTA; this layout splits the tensor between CTAs (cga_layout)")
    if dst.rank != src.rank:
        fail(dst, f"rank {dst.rank} differs from the source layout's {src.rank}")
    if src.num_warps() != dst.num_warps():
        fail(dst, f"{dst.num_warps()} warps; the source layout has {src.num_warps()}")
    s, d = _slots(src, shape), _slots(dst, shape)
    n = int(np.prod(shape))
    nw = s.shape[0]
    thread_has = np.zeros((nw, 32, n), bool)
    w_idx, l_idx = np.meshgrid(np.arange(nw), np.arange(32), indexing="ij")
    for r in range(s.shape[2]):
        thread_has[w_idx, l_idx, s[:, :, r]] = True
    warp_has = thread_has.any(axis=1)                 # [W, n]
    kind = np.zeros(d.shape, np.int64)
    for r in range(d.shape[2]):
        e = d[:, :, r]
        in_thread = thread_has[w_idx, l_idx, e]
        in_warp = warp_has[w_idx, e]
        kind[:, :, r] = np.where(in_thread, 0, np.where(in_warp, 1, 2))
    counts = {k: int((kind == i).sum()) for i, k in enumerate(KINDS)}
    per_elem = np.zeros(n, np.int64)
    np.maximum.at(per_elem, d.reshape(-1), kind.reshape(-1))
    same = src.to_linear(shape) == dst.to_linear(shape)
    if same:
        route = "nothing to do: the two layouts are the same linear layout"
    elif counts["across warps"]:
        route = "shared memory round trip (elements cross warps)"
    elif counts["across lanes"]:
        route = "within each warp (warp shuffles, or shared memory)"
    else:
        route = "registers only: each thread already holds what it needs"
    rep = ConvertReport(src, dst, list(shape), counts, route, per_elem.reshape(shape))
    if counts["across warps"] or scratch is not None:
        if scratch is None:
            order = list(getattr(src, "order", None) or range(len(shape) - 1, -1, -1))
            scratch = SwizzledSharedLayout(1, 1, 1, order)
        if not isinstance(scratch, SharedLayout):
            fail(scratch, "scratch must be a shared layout")
        offs = scratch.offsets(shape)
        eb = elem_bits // 8
        rep.scratch = scratch
        rep.stores = _accesses(src, shape, offs, eb, "st", True)
        rep.loads = _accesses(dst, shape, offs, eb, "ld", False)
    return rep
