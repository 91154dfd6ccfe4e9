"""The WMMA instructions (``wmma.load``, ``wmma.store``, ``wmma.mma``), as data.

Spellings are keyed canonically:

* ``wmma.load.{a,b,c}.sync.aligned.<layout>.<shape>[.<space>].<type>`` with ``<space>`` one of ``global``,
  ``shared``, ``shared::cta`` or absent (generic);
* ``wmma.store.d.sync.aligned.<layout>.<shape>[.<space>].<type>``;
* ``wmma.mma[.<op>.popc].sync.aligned.<alayout>.<blayout>.<shape>[.<rnd>].<types>[.satfinite]`` with
  ``<types>`` ``<dtype>.<ctype>`` for f16 and ``<dtype>.<atype>.<btype>.<ctype>`` for the rest.

The table is what ptxas 13.0 accepts for sm_80 and sm_90 (``tools/hwcapture/wmma/probe.py`` re-derives it and
checks this module against ptxas): the operand types of A and B must be equal, the sub-byte forms (s4/u4, b1)
are ``.row.col`` only, and ``.satfinite`` on floating-point ``wmma.mma`` was removed in PTX ISA 6.5.  Two
things ptxas accepts beyond the PTX ISA: ``.f32`` C/D loads and stores for m8n8k32/m8n8k128 (kept: the same
SASS as ``.s32``), and ``.f64`` ``wmma.mma`` with other shapes than m8n8k4 (left out: ptxas emits no
arithmetic for them, D is undefined; ``F64_SHAPE_QUIRK``).

Fragments.  A WMMA fragment is opaque in PTX; the hardware's layout is what ptxas lowers the instructions to.
``load_map(matrix, layout, shape, type)`` gives, for every (register, lane, element) of a fragment, the
(row, col) of the matrix element a ``wmma.load`` puts there (shape ``(n_regs, 32, elems_per_reg, 2)``).  The
16-bit A/B fragments of the m16n16k16-class shapes hold each element twice (8 registers for 256 elements);
the tf32 and 8-bit ones hold it once.  ``store_map`` is the inverse used by ``wmma.store.d`` (one (register,
lane, element) per element).  The maps were measured on an H100 (``tools/hwcapture/wmma/capture.py``,
``tests/data/wmma/h100.npz``) and are written here as formulas that reproduce the capture exactly.

Arithmetic.  ``lowering(spelling)`` gives the ``mma.sync`` instructions ptxas 13.0 emits for a ``wmma.mma``
(read from its SASS for sm_80 and sm_90: HMMA/IMMA/DMMA/BMMA), each with the fragment registers it reads and
writes; the arithmetic is then exactly that of ``mma.sync`` (``emulator.numerics``).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

ARCHS = ("sm_80", "sm_86", "sm_90")
SPACES = (None, "global", "shared", "shared::cta")
LAYOUTS = ("row", "col")

# shape -> (M, N, K)
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8),
          "m8n8k4": (8, 8, 4), "m8n8k32": (8, 8, 32), "m8n8k128": (8, 8, 128)}
BIG = ("m16n16k16", "m32n8k16", "m8n32k16")

ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4,
             "b1": 1, "s32": 32}

# (matrix, shape, type) -> number of registers of the fragment (PTX ISA, "Matrix fragments for WMMA";
# checked against ptxas, which rejects any other count)
_REGS = {}
for _s in BIG:
    _REGS.update({("a", _s, "f16"): 8, ("b", _s, "f16"): 8, ("c", _s, "f16"): 4, ("c", _s, "f32"): 8,
                  ("c", _s, "s32"): 8})
_REGS.update({("a", "m16n16k16", "bf16"): 4, ("b", "m16n16k16", "bf16"): 4,
              ("a", "m32n8k16", "bf16"): 8, ("b", "m32n8k16", "bf16"): 2,
              ("a", "m8n32k16", "bf16"): 2, ("b", "m8n32k16", "bf16"): 8})
for _t in ("s8", "u8"):
    _REGS.update({("a", "m16n16k16", _t): 2, ("b", "m16n16k16", _t): 2, ("a", "m32n8k16", _t): 4,
                  ("b", "m32n8k16", _t): 1, ("a", "m8n32k16", _t): 1, ("b", "m8n32k16", _t): 4})
_REGS.update({("a", "m16n16k8", "tf32"): 4, ("b", "m16n16k8", "tf32"): 4, ("c", "m16n16k8", "f32"): 8,
              ("a", "m8n8k4", "f64"): 1, ("b", "m8n8k4", "f64"): 1, ("c", "m8n8k4", "f64"): 2,
              ("c", "m8n8k32", "s32"): 2, ("c", "m8n8k128", "s32"): 2, ("a", "m8n8k128", "b1"): 1,
              # not in the PTX ISA, but ptxas 13.0 accepts .f32 C/D for these shapes and emits the same SASS
              # as for .s32 (tools/hwcapture/wmma/probe.py): a 32-bit move with the .s32 fragment
              ("c", "m8n8k32", "f32"): 2, ("c", "m8n8k128", "f32"): 2,
              ("b", "m8n8k128", "b1"): 1})
for _t in ("s4", "u4"):
    _REGS.update({("a", "m8n8k32", _t): 1, ("b", "m8n8k32", _t): 1})
del _s, _t

# which layouts a load of a/b may use (sub-byte A is row-major, B column-major)
_SUBBYTE = ("s4", "u4", "b1")


F64_SHAPE_QUIRK = (".f64 wmma.mma is m8n8k4 only in the PTX ISA; ptxas 13.0 accepts some other shapes but emits "
                   "no arithmetic for them (D is undefined)")


def reg_bits(type_):
    return 64 if type_ == "f64" else 32


def tile_shape(matrix, shape):
    m, n, k = SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[matrix]


@dataclass(frozen=True)
class WmmaMem:
    """One wmma.load / wmma.store spelling."""
    op: str             # "load" or "store"
    matrix: str         # "a", "b", "c" (load) or "d" (store)
    layout: str
    shape: str
    space: str | None
    type: str
    archs: tuple

    @property
    def spelling(self):
        sp = f".{self.space}" if self.space else ""
        return f"wmma.{self.op}.{self.matrix}.sync.aligned.{self.layout}.{self.shape}{sp}.{self.type}"

    @property
    def frag(self):
        """The fragment's matrix letter for the register count ("c" for a stored d)."""
        return "c" if self.matrix == "d" else self.matrix

    @property
    def n_regs(self):
        return _REGS[(self.frag, self.shape, self.type)]

    @property
    def reg_bits(self):
        return reg_bits(self.type)

    @property
    def elem_bits(self):
        return ELEM_BITS[self.type]

    @property
    def tile(self):
        return tile_shape(self.matrix, self.shape)

    @property
    def min_stride(self):
        """The smallest stride (in elements): the extent of the matrix's contiguous dimension."""
        rows, cols = self.tile
        return cols if self.layout == "row" else rows

    @property
    def stride_unit(self):
        """Strides must be a multiple of this many elements: 8 bytes.  (PTX asks for 16 bytes; the GPU runs
        8-byte multiples, e.g. the m32n8k16 .s8 B fragment's default stride of 8 and a stride of 24.)"""
        return max(1, 64 // self.elem_bits)

    @property
    def capture_stride(self):
        """The stride tools/hwcapture/wmma/capture.py used: the minimum plus 16 bytes."""
        return self.min_stride + max(1, 128 // self.elem_bits)

    def fragment(self):
        return load_map(self.frag, self.layout, self.shape, self.type)


@dataclass(frozen=True)
class WmmaMma:
    """One wmma.mma spelling."""
    shape: str
    alayout: str
    blayout: str
    dtype: str
    atype: str
    btype: str
    ctype: str
    satfinite: bool
    rnd: str | None      # f64 only: rn/rz/rm/rp (None = rn)
    bop: str | None      # b1 only: "xor" or "and"
    archs: tuple

    @property
    def spelling(self):
        head = f"wmma.mma.{self.bop}.popc" if self.bop else "wmma.mma"
        rnd = f".{self.rnd}" if self.rnd else ""
        if self.atype == "f16":
            types = f"{self.dtype}.{self.ctype}"
        else:
            types = f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}"
        sat = ".satfinite" if self.satfinite else ""
        return f"{head}.sync.aligned.{self.alayout}.{self.blayout}.{self.shape}{rnd}.{types}{sat}"

    def n_regs(self, op):
        t = {"a": self.atype, "b": self.btype, "c": self.ctype, "d": self.dtype}[op]
        return _REGS[("c" if op == "d" else op, self.shape, t)]

    @property
    def steps(self):
        """The mma.sync instructions ptxas emits (see ``lowering``)."""
        return lowering(self.shape, self.atype, self.dtype, self.ctype, self.satfinite, self.bop)

    @property
    def convert_c(self):
        """C is .f16 but the products accumulate in .f32: C is widened first (HADD2.F32, exact)."""
        return self.atype == "f16" and self.ctype == "f16" and self.dtype == "f32"

    @property
    def convert_d(self):
        """D is .f16 from an .f32 accumulation: rounded to nearest even at the end (F2FP.F16.F32.PACK_AB)."""
        return self.atype == "f16" and self.dtype == "f16" and self.ctype == "f32"

    def reg_bits(self, op):
        return reg_bits({"a": self.atype, "b": self.btype, "c": self.ctype, "d": self.dtype}[op])


def _mem_forms():
    out = []
    for (mat, shape, t), n in _REGS.items():
        for layout, space in product(LAYOUTS, SPACES):
            if t in _SUBBYTE and layout != {"a": "row", "b": "col"}[mat]:
                continue
            out.append(WmmaMem("load", mat, layout, shape, space, t, ARCHS))
            if mat == "c":
                out.append(WmmaMem("store", "d", layout, shape, space, t, ARCHS))
    return out


def _mma_forms():
    out = []
    lay = list(product(LAYOUTS, repeat=2))
    for shape, (al, bl) in product(BIG, lay):
        for d, c in product(("f16", "f32"), repeat=2):
            out.append(WmmaMma(shape, al, bl, d, "f16", "f16", c, False, None, None, ARCHS))
        out.append(WmmaMma(shape, al, bl, "f32", "bf16", "bf16", "f32", False, None, None, ARCHS))
        for t, sat in product(("s8", "u8"), (False, True)):
            out.append(WmmaMma(shape, al, bl, "s32", t, t, "s32", sat, None, None, ARCHS))
    for al, bl in lay:
        out.append(WmmaMma("m16n16k8", al, bl, "f32", "tf32", "tf32", "f32", False, None, None, ARCHS))
        for rnd in (None, "rn", "rz", "rm", "rp"):
            out.append(WmmaMma("m8n8k4", al, bl, "f64", "f64", "f64", "f64", False, rnd, None, ARCHS))
    for t, sat in product(("s4", "u4"), (False, True)):
        out.append(WmmaMma("m8n8k32", "row", "col", "s32", t, t, "s32", sat, None, None, ARCHS))
    for bop in ("xor", "and"):
        out.append(WmmaMma("m8n8k128", "row", "col", "s32", "b1", "b1", "s32", False, None, bop, ARCHS))
    return out


MEM_FORMS = {f.spelling: f for f in _mem_forms()}
MMA_FORMS = {f.spelling: f for f in _mma_forms()}


# ------------------------------------------------------------------------------------------------
# lowering onto mma.sync, and the fragment layouts that follow from it

@dataclass(frozen=True)
class Step:
    """One mma.sync instruction of a lowered wmma.mma.

    ``a``/``b``/``c`` name the wmma fragment registers of A, B and C the mma.sync reads: normally as its A, B
    and C operands; with ``swap`` (the m8n32k16 shape) the wmma B registers are the mma's A operand and the
    wmma A registers its B operand, and the step computes the transposed tile.  ``c`` indexes the accumulator registers (of the .f32 or .s32
    accumulator type: a .f16 C is widened first, see ``WmmaMma.convert_c``); the step writes the same
    registers of D; a step with ``chain`` reads the D registers an earlier step wrote instead of C.
    ``m0, n0, k0`` place the step's tile in the wmma tile."""
    mma: str
    a: tuple
    b: tuple
    c: tuple
    m0: int = 0
    n0: int = 0
    k0: int = 0
    swap: bool = False
    chain: bool = False


def _acc_type(atype, dtype, ctype):
    if atype == "f16":
        return "f16" if dtype == ctype == "f16" else "f32"
    return ctype


def lowering(shape, atype, dtype, ctype, satfinite=False, bop=None):
    """The mma.sync steps of a wmma.mma (ptxas 13.0, sm_80 and sm_90 alike; tools/hwcapture/wmma/sass.py)."""
    acc = _acc_type(atype, dtype, ctype)
    sat = ".satfinite" if satfinite else ""
    if shape in BIG:
        if atype in ("s8", "u8"):
            sp = f"mma.sync.aligned.m16n8k16.row.col{sat}.s32.{atype}.{atype}.s32"
            na, nb, nc = 2, 1, 4
        else:
            sp = f"mma.sync.aligned.m16n8k16.row.col.{acc}.{atype}.{atype}.{acc}"
            na, nb, nc = 4, 2, (2 if acc == "f16" else 4)
        out = []
        for h in range(2):
            c = tuple(range(h * nc, (h + 1) * nc))
            if shape == "m16n16k16":
                out.append(Step(sp, tuple(range(na)), tuple(range(h * nb, (h + 1) * nb)), c, n0=8 * h))
            elif shape == "m32n8k16":
                out.append(Step(sp, tuple(range(h * na, (h + 1) * na)), tuple(range(nb)), c, m0=16 * h))
            else:       # m8n32k16: D^T = B^T A^T, the B fragment feeds the mma's A operand
                out.append(Step(sp, tuple(range(nb)), tuple(range(h * na, (h + 1) * na)), c, n0=16 * h,
                                swap=True))
        return tuple(out)
    if shape == "m16n16k8":
        sp = "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32"
        return tuple(Step(sp, (2 * ks, 2 * ks + 1), (2 * h + ks,), tuple(range(4 * h, 4 * h + 4)), n0=8 * h,
                          k0=4 * ks, chain=ks > 0) for h in range(2) for ks in range(2))
    if shape == "m8n8k4":
        return (Step("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", (0,), (0,), (0, 1)),)
    if shape == "m8n8k32":
        return (Step(f"mma.sync.aligned.m8n8k32.row.col{sat}.s32.{atype}.{atype}.s32", (0,), (0,), (0, 1)),)
    if shape == "m8n8k128":
        return (Step(f"mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.{bop}.popc", (0,), (0,), (0, 1)),)
    raise KeyError(shape)


def _representative(matrix, shape, type_):
    """A wmma.mma form whose lowering fixes the fragment of (matrix, shape, type)."""
    if matrix == "c" and shape in ("m8n8k32", "m8n8k128"):
        return {"m8n8k32": "s4", "m8n8k128": "b1"}[shape], "s32", "s32"
    if matrix in "ab":
        at = type_
        ct = {"f16": "f32", "bf16": "f32", "tf32": "f32", "f64": "f64"}.get(type_, "s32")
        return at, ct, ct
    at = {"f16": "f16", "f32": {"m16n16k8": "tf32"}.get(shape, "f16"), "f64": "f64",
          "s32": {"m8n8k32": "s4", "m8n8k128": "b1"}.get(shape, "s8")}[type_]
    return at, type_, type_


def _mma_fragment(spelling, op):
    from .mma import VARIANTS
    return VARIANTS[spelling].fragment(op)


_MAPS: dict = {}


def load_map(matrix, layout, shape, type_):
    """(n_regs, 32, elems_per_reg, 2) int array: the (row, col) that wmma.load puts in each register slot.
    The layout of the registers does not depend on ``layout`` (the memory order) nor on the state space."""
    key = (matrix, shape, type_)
    if key in _MAPS:
        return _MAPS[key]
    at, dt, ct = _representative(matrix, shape, type_)
    steps = lowering(shape, at, dt, ct, bop="and")
    n = _REGS[(matrix, shape, type_)]
    epr = reg_bits(type_) // ELEM_BITS[type_]
    out = np.full((n, 32, epr, 2), -1, np.int64)
    used = set()
    for st in steps:
        if matrix == "a":
            regs, op = st.a, "B" if st.swap else "A"
        elif matrix == "b":
            regs, op = st.b, "A" if st.swap else "B"
        else:
            if st.chain:
                continue
            regs, op = st.c, "C"
        f = _mma_fragment(st.mma, op)
        for i, r in enumerate(regs):
            rc = f[i]
            if op == "C":
                rr, cc = (rc[..., 1] + st.m0, rc[..., 0] + st.n0) if st.swap else (rc[..., 0] + st.m0,
                                                                                  rc[..., 1] + st.n0)
            elif matrix == "a":       # A (m, k) or, swapped, the mma's B (k, m)
                rr, cc = (rc[..., 1] + st.m0, rc[..., 0] + st.k0) if st.swap else (rc[..., 0] + st.m0,
                                                                                  rc[..., 1] + st.k0)
            else:                     # B (k, n) or, swapped, the mma's A (n, k)
                rr, cc = (rc[..., 1] + st.k0, rc[..., 0] + st.n0) if st.swap else (rc[..., 0] + st.k0,
                                                                                  rc[..., 1] + st.n0)
            out[r, ..., 0], out[r, ..., 1] = rr, cc
            used.add(r)
    nu = len(used)
    assert used == set(range(nu)), (key, used)
    for r in range(nu, n):                   # the registers no mma reads hold copies (period nu)
        out[r] = out[r % nu]
    rows, cols = tile_shape(matrix, shape)
    flat = out[..., 0] * cols + out[..., 1]
    assert out.min() >= 0 and out[..., 0].max() < rows and out[..., 1].max() < cols, key
    assert len(np.unique(flat)) == rows * cols, f"{key}: not onto its {rows}x{cols} tile"
    out.setflags(write=False)
    _MAPS[key] = out
    return out


def store_map(shape, type_):
    """wmma.store.d: the accumulator fragment, one register slot per element."""
    return load_map("c", "row", shape, type_)


class FragmentView:
    """A wmma.mma form seen as an ``isa.mma`` variant by the code that packs whole tiles into registers
    (``isa.fragments.pack``/``unpack``) or draws fragments: operands "A".."D", the wmma fragments.
    ``copies=False`` leaves out the trailing registers that repeat earlier ones (for pictures)."""

    def __init__(self, form, copies=True):
        self.form, self.copies = form, copies
        self.spelling = form.spelling
        self.atype, self.btype, self.ctype, self.dtype = form.atype, form.btype, form.ctype, form.dtype
        self.satfinite = form.satfinite

    def _type(self, op):
        return {"A": self.atype, "B": self.btype, "C": self.ctype, "D": self.dtype}[op]

    def fragment(self, op):
        f = load_map("c" if op in "CD" else op.lower(), "row", self.form.shape, self._type(op))
        if self.copies:
            return f
        n = next((r for r in range(1, f.shape[0]) if np.array_equal(f[r], f[0])), f.shape[0])
        return f[:n]

    def tile_shape(self, op):
        return tile_shape(op.lower(), self.form.shape)

    def elem_bits(self, op):
        return ELEM_BITS[self._type(op)]

    def reg_bits(self, op):
        return reg_bits(self._type(op))

    def n_regs(self, op):
        return self.fragment(op).shape[0]
