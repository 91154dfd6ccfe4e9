"""Gluon's layouts, with Gluon's names and constructor arguments, and no Triton underneath.

Distributed layouts (a tensor spread over the registers of the threads of a CTA) answer:

* ``to_linear(shape)``: Triton's linear layout, ``{"register": [...], "lane": [...], "warp": [...],
  "block": [...]}``, each a list of basis vectors ``[c_dim0, c_dim1, ...]`` in the order Triton's
  ``LinearLayout`` lists them (what ``gl.to_linear_layout(layout, shape)`` prints);
* ``owner(shape)``: for every element, the (register, lane, warp, block) of every thread that holds it.

Shared layouts (``NVMMASharedLayout``, ``SwizzledSharedLayout``) answer ``to_linear(shape)`` (``{"offset":
[...], "block": [...]}``: element offset bit -> coordinate) and ``byte_offset(shape)`` (row, col) -> byte.

``cga_layout`` (several CTAs of a cluster sharing a tensor) is accepted as in Gluon: bases in units of one
CTA's share (``[[1, 0]]``: CTA 1 holds the second half along dim 0); it fills the ``block`` bases.
``TensorMemoryLayout`` (Blackwell's tensor memory) is in :mod:`emulator.gluon.tmem`.
"""
import ast
import math

import numpy as np

from .linear import (ByRepr, GluonLayoutError, LinearLayout, apply, as_int, as_ints, as_list, cga_split, check_shape, fail,
                     fit_to_shape, identity1d, identity_nd, log2, product)

WARP = 32


def _ints(x, what, layout):
    return as_ints(x, what, layout)


def _cga(layout, cga_layout, rank):
    """Check ``cga_layout``: a list of bases of ``rank`` entries, each 0 or a power of two."""
    name = type(layout).__name__
    out = []
    if isinstance(cga_layout, (str, bytes)) or not hasattr(cga_layout or [], "__iter__"):
        fail(name, f"cga_layout {cga_layout!r} is not a list of lists of integers")
    bases = [as_ints(b, f"cga_layout[{i}]", name)
             for i, b in enumerate(as_list(cga_layout or [], "cga_layout", name, of="lists of integers"))]
    for b in bases:
        if len(b) != rank or any(x < 0 or x & (x - 1) for x in b):
            fail(name, f"cga_layout basis {b} must have {rank} entries, each 0 or a power of two")
        out.append(b)
    return out


# ---- ownership --------------------------------------------------------------------------------------

class Owners:
    """Who holds each element: ``register``, ``lane``, ``warp``, ``block`` are int arrays of shape
    ``shape + (replication,)``; ``[..., i]`` is the i-th copy, copies sorted by (block, warp, lane,
    register). ``replication`` is how many threads/registers hold each element (the same for every element:
    a linear layout's kernel has one size)."""

    def __init__(self, layout, shape, register, lane, warp, block):
        self.layout, self.shape = layout, tuple(shape)
        self.register, self.lane, self.warp, self.block = register, lane, warp, block

    @property
    def replication(self):
        return self.register.shape[-1]

    @property
    def thread(self):
        """Thread index inside the CTA: ``32 * warp + lane``."""
        return self.warp * WARP + self.lane

    def first(self):
        """(register, thread) of the first copy of every element, arrays of ``shape``."""
        return self.register[..., 0], self.thread[..., 0]

    def holders(self, *idx):
        """[(register, lane, warp, block), ...] for one element."""
        return [(int(self.register[idx + (i,)]), int(self.lane[idx + (i,)]), int(self.warp[idx + (i,)]),
                 int(self.block[idx + (i,)])) for i in range(self.replication)]


def owners_from_bases(layout, bases, shape):
    rank = len(shape)
    nb = {k: len(bases.get(k, [])) for k in ("register", "lane", "warp", "block")}
    total = sum(nb.values())
    if total > 24:
        fail(layout, f"shape {list(shape)}: {1 << total} (register, lane, warp) slots is too many to list")
    flat = np.arange(1 << total, dtype=np.int64)      # block, warp, lane, register: register fastest
    parts, sh = {}, 0
    for k in ("register", "lane", "warp", "block"):
        parts[k] = (flat >> sh) & ((1 << nb[k]) - 1)
        sh += nb[k]
    coords = apply(bases, rank, ("register", "lane", "warp", "block"), parts)
    elem = np.zeros_like(flat)
    for d in range(rank):
        if coords[d].max(initial=0) >= shape[d]:
            fail(layout, f"shape {list(shape)}: the layout reaches index {int(coords[d].max())} of dim {d}")
        elem = elem * shape[d] + coords[d]
    n = int(np.prod(shape))
    counts = np.bincount(elem, minlength=n)
    if counts.min() != counts.max() or counts.min() == 0:
        fail(layout, f"shape {list(shape)}: the layout does not cover every element the same number of times "
                     f"(min {counts.min()}, max {counts.max()})")
    order = np.argsort(elem, kind="stable")
    rep = int(counts[0])
    out = [parts[k][order].reshape(tuple(shape) + (rep,)) for k in ("register", "lane", "warp", "block")]
    return Owners(layout, shape, *out)


class DistributedLayout:
    """Base of the register layouts."""

    def _linear(self, shape):          # -> LinearLayout fitted to shape
        raise NotImplementedError

    @property
    def rank(self):
        raise NotImplementedError

    def linear_layout(self, shape):
        shape = check_shape(self, shape, self.rank)
        return self._linear(shape)

    def to_linear(self, shape):
        """Triton's linear layout for ``shape``: ``{"register", "lane", "warp", "block"}`` -> bases."""
        return self.linear_layout(shape).as_dict()

    def owner(self, shape):
        shape = check_shape(self, shape, self.rank)
        return owners_from_bases(self, self.to_linear(shape), shape)

    def num_warps(self, shape=None):
        raise NotImplementedError

    def registers(self, shape):
        """Registers (elements) each thread holds for ``shape``."""
        return 1 << len(self.to_linear(shape)["register"])


# ---- blocked ----------------------------------------------------------------------------------------

class BlockedLayout(ByRepr, DistributedLayout):
    """``gl.BlockedLayout(size_per_thread, threads_per_warp, warps_per_cta, order)``: each thread holds a
    ``size_per_thread`` block, 32 threads of a warp tile ``threads_per_warp`` such blocks, the warps tile
    ``warps_per_cta`` warp tiles; ``order`` lists the dimensions from fastest to slowest (``[1, 0]``:
    row-major). A tensor bigger than the CTA tile repeats it over registers (``order[0]`` first), a smaller
    one is held more than once (replication)."""

    def __init__(self, size_per_thread, threads_per_warp, warps_per_cta, order, cga_layout=()):
        self.size_per_thread = _ints(size_per_thread, "size_per_thread", self._name())
        self.threads_per_warp = _ints(threads_per_warp, "threads_per_warp", self._name())
        self.warps_per_cta = _ints(warps_per_cta, "warps_per_cta", self._name())
        self.order = _ints(order, "order", self._name())
        r = len(self.order)
        self.cga_layout = _cga(self, cga_layout, r)
        if not (len(self.size_per_thread) == len(self.threads_per_warp) == len(self.warps_per_cta) == r):
            fail(self, "size_per_thread, threads_per_warp, warps_per_cta and order must have the same length")
        if sorted(self.order) != list(range(r)):
            fail(self, f"order {self.order} is not a permutation of 0..{r - 1}")
        if math.prod(self.threads_per_warp) != WARP:
            fail(self, f"threads_per_warp {self.threads_per_warp} multiplies to {math.prod(self.threads_per_warp)}, "
                       f"not 32")
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta"):
            for v in getattr(self, name):
                if v < 1 or v & (v - 1):
                    fail(self, f"{name} entries must be powers of two, got {getattr(self, name)}")

    def _name(self):
        return "BlockedLayout"

    def __repr__(self):
        cga = f", cga_layout={self.cga_layout}" if self.cga_layout else ""
        return (f"BlockedLayout({self.size_per_thread}, {self.threads_per_warp}, {self.warps_per_cta}, "
                f"{self.order}{cga})")

    @property
    def rank(self):
        return len(self.order)

    def num_warps(self, shape=None):
        return math.prod(self.warps_per_cta)

    def cta_tile(self):
        """The shape one pass of the CTA covers: size_per_thread * threads_per_warp * warps_per_cta."""
        return [a * b * c for a, b, c in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta)]

    def _linear(self, shape):
        r = self.rank
        ll = identity_nd(r, "register", self.size_per_thread, self.order)
        ll = product(ll, identity_nd(r, "lane", self.threads_per_warp, self.order))
        ll = product(ll, identity_nd(r, "warp", self.warps_per_cta, self.order))
        return fit_to_shape(ll, shape, drop_registers=True, cga=self.cga_layout)


# ---- slice ------------------------------------------------------------------------------------------

class SliceLayout(ByRepr, DistributedLayout):
    """``gl.SliceLayout(dim, parent)``: the parent layout with dimension ``dim`` removed, as after
    ``tensor.sum(dim)`` or to feed ``gl.expand_dims(x, dim)``. Threads that held different entries along
    ``dim`` now hold the same element (replication)."""

    def __init__(self, dim, parent):
        self.dim, self.parent = as_int(dim, "dim", "SliceLayout"), parent
        if not isinstance(parent, DistributedLayout):
            fail(self, f"parent must be a distributed layout, got {parent!r}")
        if not 0 <= self.dim < parent.rank:
            fail(self, f"dim {self.dim} is outside the parent's rank {parent.rank}")

    def __repr__(self):
        return f"SliceLayout({self.dim}, {self.parent!r})"

    @property
    def rank(self):
        return self.parent.rank - 1

    def num_warps(self, shape=None):
        return self.parent.num_warps()

    def _linear(self, shape):
        pshape = list(shape[:self.dim]) + [1] + list(shape[self.dim:])
        p = self.parent.linear_layout(pshape)
        keep = [d for d in range(self.parent.rank) if d != self.dim]
        bases = {}
        for k, vs in p.bases.items():
            nv = [tuple(v[d] for d in keep) for v in vs]
            if k == "register":
                nv = [v for v in nv if any(v)]             # a register that only walked `dim` is gone
            bases[k] = nv
        order = [d - (d > self.dim) for d in p.out_order if d != self.dim]
        return LinearLayout(self.rank, bases, order)


# ---- NVIDIA mma ------------------------------------------------------------------------------------

class NVMMADistributedLayout(ByRepr, DistributedLayout):
    """``gl.NVMMADistributedLayout(version, warps_per_cta, instr_shape)``: the accumulator of the tensor
    cores. ``version=[2, 0]``: ``mma.sync.m16n8`` (Ampere and later), ``instr_shape=[16, 8]``, one 16x8
    tile per warp, warps tiled with N fastest. ``version=[3, 0]``: Hopper ``wgmma.m64nNk*``,
    ``instr_shape=[16, N, K]``: each warp of a warpgroup owns 16 rows of the 64 x N tile, warps tiled
    with M fastest. Inside a warp both are PTX's C fragment: lane ``4g + t`` holds rows ``g`` and ``g + 8``,
    columns ``2t`` and ``2t + 1`` of every 8-column block."""

    def __init__(self, version, warps_per_cta, instr_shape, cga_layout=()):
        self.version = _ints(version, "version", "NVMMADistributedLayout")
        self.warps_per_cta = _ints(warps_per_cta, "warps_per_cta", "NVMMADistributedLayout")
        self.instr_shape = _ints(instr_shape, "instr_shape", "NVMMADistributedLayout")
        self.cga_layout = _cga(self, cga_layout, len(self.warps_per_cta))
        if not self.version:
            fail(self, "version must be [major, minor], e.g. [2, 0] (mma.sync) or [3, 0] (wgmma)")
        v = self.version[0]
        if v not in (2, 3):
            fail(self, f"version {self.version}: only mma v2 (mma.sync) and v3 (wgmma) are modelled here; "
                       "Blackwell's tcgen05 accumulator lives in tensor memory (TensorMemoryLayout)")
        if len(self.warps_per_cta) != 2:
            fail(self, "only rank-2 mma layouts are modelled (warps_per_cta of length 2)")
        for w in self.warps_per_cta:
            log2(w, "warps_per_cta entry")
        if v == 2 and self.instr_shape != [16, 8]:
            fail(self, f"mma v2 needs instr_shape [16, 8] (mma.sync.m16n8kK), got {self.instr_shape}")
        if v == 3:
            if len(self.instr_shape) != 3 or self.instr_shape[0] != 16 or self.instr_shape[1] % 8 \
                    or not 8 <= self.instr_shape[1] <= 256:
                fail(self, f"mma v3 needs instr_shape [16, N, K] with N a multiple of 8 up to 256 "
                           f"(wgmma.m64nNkK, per warp 16 rows), got {self.instr_shape}")
            if math.prod(self.warps_per_cta) % 4:
                fail(self, f"mma v3 needs whole warpgroups (a multiple of 4 warps), got {self.warps_per_cta}")

    def __repr__(self):
        cga = f", cga_layout={self.cga_layout}" if self.cga_layout else ""
        return f"NVMMADistributedLayout(version={self.version}, warps_per_cta={self.warps_per_cta}, " \
               f"instr_shape={self.instr_shape}{cga})"

    @property
    def rank(self):
        return 2

    def num_warps(self, shape=None):
        return math.prod(self.warps_per_cta)

    def _warp_tile(self):
        """Bases of one warp's m16n8 C fragment (rows, cols), output order (dim1, dim0)."""
        return LinearLayout(2, {"register": [(0, 1), (8, 0)],
                                "lane": [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]}, [1, 0])

    def _linear(self, shape):
        ll = self._warp_tile()
        if self.version[0] == 2:
            ll = product(ll, identity_nd(2, "warp", self.warps_per_cta, [1, 0]))
        else:
            n = self.instr_shape[1]
            ll = product(ll, identity1d(2, n // 8, "register", 1))
            w = identity_nd(2, "warp", self.warps_per_cta, [0, 1])
            w.out_order = [1, 0]
            ll = product(ll, w)
        return fit_to_shape(ll, shape, cga=self.cga_layout)


class DotOperandLayout(ByRepr, DistributedLayout):
    """``gl.DotOperandLayout(operand_index, parent, k_width)``: the A (``0``, M x K) or B (``1``, K x N)
    operand of the mma whose accumulator layout is ``parent``. ``k_width``: consecutive K elements a thread
    holds together (one 32-bit register: 2 for 16-bit types, 4 for 8-bit, 1 for tf32). Inside a warp this is
    PTX's ``mma.sync.m16n8k(8*k_width)`` A/B fragment; warps that share rows of A (or columns of B) hold
    the same operand elements (replication). With a v3 (wgmma) parent only A can live in registers."""

    def __init__(self, operand_index, parent, k_width):
        self.operand_index = as_int(operand_index, "operand_index", "DotOperandLayout")
        self.parent, self.k_width = parent, as_int(k_width, "k_width", "DotOperandLayout")
        if not isinstance(parent, NVMMADistributedLayout):
            fail(self, f"parent must be an NVMMADistributedLayout here, got {parent!r}")
        if self.operand_index not in (0, 1):
            fail(self, f"operand_index must be 0 (A) or 1 (B), got {self.operand_index}")
        log2(self.k_width, "k_width")
        if parent.version[0] == 3 and self.operand_index != 0:
            fail(self, "with a Hopper (v3) parent only operand 0 can be in registers: wgmma reads B from "
                       "shared memory")

    def __repr__(self):
        return f"DotOperandLayout({self.operand_index}, {self.parent!r}, {self.k_width})"

    @property
    def rank(self):
        return 2

    def num_warps(self, shape=None):
        return self.parent.num_warps()

    def _linear(self, shape):
        kw = self.k_width
        kb = log2(kw)
        wm, wn = self.parent.warps_per_cta
        if self.operand_index == 0:          # A: M x K, tile 16 x 8kw
            reg = [(0, 1 << i) for i in range(kb)] + [(8, 0), (0, 4 * kw)]
            lane = [(0, kw), (0, 2 * kw), (1, 0), (2, 0), (4, 0)]
            ll = LinearLayout(2, {"register": reg, "lane": lane}, [1, 0])
            mw = [(16 << i, 0) for i in range(log2(wm))]
            nw = [(0, 0)] * log2(wn)
        else:                                # B: K x N, tile 8kw x 8
            reg = [(1 << i, 0) for i in range(kb)] + [(4 * kw, 0)]
            lane = [(kw, 0), (2 * kw, 0), (0, 1), (0, 2), (0, 4)]
            ll = LinearLayout(2, {"register": reg, "lane": lane}, [0, 1])
            mw = [(0, 0)] * log2(wm)
            nw = [(0, 8 << i) for i in range(log2(wn))]
        ll.bases["warp"] = (nw + mw) if self.parent.version[0] == 2 else (mw + nw)
        k_dim = 1 if self.operand_index == 0 else 0          # CTAs that split K hold the same operand
        cga = [[0 if d == k_dim else x for d, x in enumerate(b)] for b in self.parent.cga_layout]
        return fit_to_shape(ll, shape, cga=cga)


# ---- explicit linear -------------------------------------------------------------------------------

class DistributedLinearLayout(ByRepr, DistributedLayout):
    """``gl.DistributedLinearLayout(reg_bases, lane_bases, warp_bases, block_bases, shape)``: the bases
    given outright; ``to_linear`` returns them for that shape."""

    def __init__(self, reg_bases, lane_bases, warp_bases, block_bases, shape):
        name = "DistributedLinearLayout"
        self.shape = as_ints(shape, "shape", name)
        self.bases = {k: [as_ints(b, f"{k}_bases[{i}]", name) for i, b in enumerate(as_list(v, f"{k}_bases", name))]
                      for k, v in (("register", reg_bases), ("lane", lane_bases), ("warp", warp_bases),
                                   ("block", block_bases))}
        for k, vs in self.bases.items():
            for b in vs:
                if len(b) != len(self.shape):
                    fail(self, f"{k} basis {b} does not have rank {len(self.shape)}")
        if len(self.bases["lane"]) != 5:
            fail(self, f"lane_bases must have 5 entries (32 lanes), got {len(self.bases['lane'])}")

    def __repr__(self):
        b = self.bases
        return (f"DistributedLinearLayout({b['register']}, {b['lane']}, {b['warp']}, {b['block']}, "
                f"{self.shape})")

    @property
    def rank(self):
        return len(self.shape)

    def num_warps(self, shape=None):
        return 1 << len(self.bases["warp"])

    def _linear(self, shape):
        if list(shape) != self.shape:
            fail(self, f"a DistributedLinearLayout describes shape {self.shape} only, not {list(shape)}")
        return LinearLayout(self.rank, {k: [tuple(b) for b in v] for k, v in self.bases.items()},
                            list(range(self.rank)))


# ---- shared layouts --------------------------------------------------------------------------------

class SharedLayout:
    """Base of the shared-memory layouts: element offset <-> coordinate, swizzle included."""

    element_bitwidth = None

    def _linear(self, shape):
        """(offset bases over one CTA's share, block bases) for ``shape``."""
        cga_ll, cta_shape = cga_split(len(shape), self.cga_layout, shape)
        off = self._offset_bases(cta_shape)
        block = [tuple(int(v[d]) * cta_shape[d] for d in range(len(shape))) for v in cga_ll.bases["block"]]
        return off, block

    def to_linear(self, shape):
        """Triton's shared linear layout: ``{"offset": [...], "block": [...]}``, bit i of the element offset
        (of the CTA id) -> coordinate."""
        shape = self._check(shape)
        off, block = self._linear(shape)
        return {"offset": [list(map(int, b)) for b in off], "block": [list(map(int, b)) for b in block]}

    def _check(self, shape):
        shape = check_shape(self, shape, len(shape) if self.rank is None else self.rank)
        if int(np.prod(shape)) < 2:
            fail(self, f"shape {shape}: a shared buffer of one element has no offset bits (Triton refuses it)")
        return shape

    def offsets(self, shape):
        """Element offset of every element inside its CTA's buffer: an int array of ``shape`` (the inverse of
        ``to_linear``; with a ``cga_layout``, :meth:`blocks` says which CTA)."""
        return self._invert(shape)[0]

    def blocks(self, shape):
        """The CTA (``block``) whose buffer holds each element (all 0 without a ``cga_layout``)."""
        return self._invert(shape)[1]

    def _invert(self, shape):
        shape = self._check(shape)
        bases, block = self._linear(shape)
        nb = len(block)
        n = 1 << (len(bases) + nb)
        if n != int(np.prod(shape)):
            fail(self, f"shape {shape}: {n} (offset, block) pairs for {int(np.prod(shape))} elements: "
                       "some CTAs would hold copies")
        flat_in = np.arange(n, dtype=np.int64)
        off = flat_in & ((1 << len(bases)) - 1)
        blk = flat_in >> len(bases)
        coords = apply({"offset": bases, "block": block}, len(shape), ("offset", "block"),
                       {"offset": off, "block": blk})
        flat = np.zeros(n, np.int64)
        for d in range(len(shape)):
            flat = flat * shape[d] + coords[d]
        out = np.full(n, -1, np.int64)
        out[flat] = off
        bout = np.zeros(n, np.int64)
        bout[flat] = blk
        if (out < 0).any():
            fail(self, f"shape {shape}: the swizzle is not a bijection")
        return out.reshape(shape), bout.reshape(shape)

    def byte_offset(self, shape, elem_bits=None):
        """Byte offset of every element (offset * element bytes); 16-bit elements unless the layout says."""
        bits = elem_bits or self.element_bitwidth or 16
        return self.offsets(shape) * bits // 8


class NVMMASharedLayout(ByRepr, SharedLayout):
    """``gl.NVMMASharedLayout(swizzle_byte_width, element_bitwidth, rank=2, transposed=False,
    fp4_padded=False)``: the shared layout TMA writes and wgmma/tcgen05 read. The contiguous dimension
    (the last one, or the first when ``transposed``) is cut into ``swizzle_byte_width``-byte rows; 8 such rows
    form a swizzle atom in which the 16-byte chunk ``c`` of row ``r`` is stored at chunk
    ``c ^ ((r / (128 / W)) % (W / 16))`` (CuTe's ``Swizzle<log2(W/16), 4, 3>`` on byte addresses). Atoms
    stack along the other dimension first, then along the contiguous one. Width 0: no swizzle, row-major."""

    def __init__(self, swizzle_byte_width, element_bitwidth, rank=2, transposed=False, fp4_padded=False,
                 cga_layout=()):
        self.swizzle_byte_width = as_int(swizzle_byte_width, "swizzle_byte_width", "NVMMASharedLayout")
        self.element_bitwidth = as_int(element_bitwidth, "element_bitwidth", "NVMMASharedLayout")
        self.rank = as_int(rank, "rank", "NVMMASharedLayout")
        self.transposed = bool(transposed)
        self.fp4_padded = bool(fp4_padded)
        self.cga_layout = _cga(self, cga_layout, self.rank)
        if self.swizzle_byte_width not in (0, 32, 64, 128):
            fail(self, f"swizzle_byte_width must be 0, 32, 64 or 128, got {self.swizzle_byte_width}")
        if self.element_bitwidth not in (8, 16, 32, 64):
            fail(self, f"element_bitwidth must be 8, 16, 32 or 64, got {self.element_bitwidth}")
        if self.fp4_padded:
            fail(self, "fp4_padded layouts are not modelled")
        if self.rank != 2:
            fail(self, "only rank-2 NVMMA shared layouts are modelled")

    def __repr__(self):
        cga = f", cga_layout={self.cga_layout}" if self.cga_layout else ""
        return (f"NVMMASharedLayout(swizzle_byte_width={self.swizzle_byte_width}, element_bitwidth="
                f"{self.element_bitwidth}, rank={self.rank}, transposed={self.transposed}{cga})")

    @property
    def vec(self):
        return 128 // self.element_bitwidth            # elements per 16-byte chunk

    @property
    def per_phase(self):
        return 128 // self.swizzle_byte_width if self.swizzle_byte_width else 1

    @property
    def max_phase(self):
        return self.swizzle_byte_width // 16 if self.swizzle_byte_width else 1

    def _offset_bases(self, shape):
        col, row = (0, 1) if self.transposed else (1, 0)
        W = self.swizzle_byte_width
        rows, cols = shape[row], shape[col]

        def vec2(r, c):
            v = [0, 0]
            v[row], v[col] = r, c
            return tuple(v)
        if W == 0:
            return [vec2(0, 1 << i) for i in range(log2(cols))] + [vec2(1 << i, 0) for i in range(log2(rows))]
        tile_cols = 8 * W // self.element_bitwidth
        if cols < tile_cols or rows < 8:
            fail(self, f"shape {shape}: a {W}-byte swizzle needs at least 8 x {tile_cols} elements "
                       f"({W} contiguous bytes in each of 8 rows); the tile has {rows} x {cols} "
                       f"({cols * self.element_bitwidth // 8} contiguous bytes)")
        b = [vec2(0, 1 << i) for i in range(log2(tile_cols))]
        for i in range(3):
            r = 1 << i
            b.append(vec2(r, self.vec * ((r // self.per_phase) % self.max_phase)))
        b += [vec2(1 << i, 0) for i in range(3, log2(rows))]
        b += [vec2(0, tile_cols << i) for i in range(log2(cols // tile_cols))]
        return b


class SwizzledSharedLayout(ByRepr, SharedLayout):
    """``gl.SwizzledSharedLayout(vec, per_phase, max_phase, order)``: rows of the fastest dimension
    (``order[0]``); row ``r`` has its groups of ``vec`` elements XOR-ed with ``(r // per_phase) % max_phase``.
    Used for ``convert_layout`` scratch and ``mma.sync`` operands (``ldmatrix``)."""

    element_bitwidth = None

    def __init__(self, vec, per_phase, max_phase, order, cga_layout=()):
        self.vec, self.per_phase, self.max_phase = (as_int(v, n, "SwizzledSharedLayout") for v, n in
                                                    ((vec, "vec"), (per_phase, "per_phase"), (max_phase, "max_phase")))
        self.order = _ints(order, "order", "SwizzledSharedLayout")
        self.cga_layout = _cga(self, cga_layout, len(self.order))
        for v in (self.vec, self.per_phase, self.max_phase):
            log2(v, "vec/per_phase/max_phase")
        if sorted(self.order) != list(range(len(self.order))) or not self.order:
            fail(self, f"order {self.order} is not a permutation of 0..{len(self.order) - 1}")

    @property
    def rank(self):
        return len(self.order)

    def __repr__(self):
        cga = f", cga_layout={self.cga_layout}" if self.cga_layout else ""
        return f"SwizzledSharedLayout({self.vec}, {self.per_phase}, {self.max_phase}, {self.order}{cga})"

    def _offset_bases(self, shape):
        r = len(shape)
        if r == 1:
            return [(1 << i,) for i in range(log2(shape[0]))]
        col, row = self.order[0], self.order[1]
        cols, rows = shape[col], shape[row]

        def v(rr, cc):
            x = [0] * r
            x[row], x[col] = rr, cc
            return tuple(x)
        b = [v(0, 1 << i) for i in range(log2(cols))]
        for i in range(log2(rows)):
            rr = 1 << i
            b.append(v(rr, (self.vec * ((rr // self.per_phase) % self.max_phase)) % cols))
        for d in self.order[2:]:
            for i in range(log2(shape[d])):
                x = [0] * r
                x[d] = 1 << i
                b.append(tuple(x))
        return b


# ---- text -> layout ----------------------------------------------------------------------------------

def _names():
    from . import tmem
    return {c.__name__: c for c in (BlockedLayout, SliceLayout, NVMMADistributedLayout, DotOperandLayout,
                                      DistributedLinearLayout, NVMMASharedLayout, SwizzledSharedLayout,
                                      tmem.TensorMemoryLayout)}


def parse_layout(text):
    """A layout from its Python spelling, e.g. ``"BlockedLayout([1,4],[4,8],[4,1],[1,0])"`` (an optional
    ``gl.``/``ttgl.`` prefix is ignored). Only layout constructors and literals are accepted."""
    names = _names()
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise GluonLayoutError(f"gluon layout {text!r}: does not parse ({e.msg})") from None

    def ev(node):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name not in names:
                raise GluonLayoutError(f"gluon layout {text!r}: unknown constructor {name!r}; known: "
                                       f"{', '.join(names)}")
            return names[name](*[ev(a) for a in node.args], **{k.arg: ev(k.value) for k in node.keywords})
        if isinstance(node, (ast.List, ast.Tuple)):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise GluonLayoutError(f"gluon layout {text!r}: only layout constructors, lists and integers are "
                               f"allowed, not {ast.dump(node)[:40]}")
    try:
        return ev(tree.body)
    except TypeError as e:
        raise GluonLayoutError(f"gluon layout {text!r}: {e}") from None
