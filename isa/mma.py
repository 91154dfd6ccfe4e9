"""Every warp-level ``mma.sync`` variant the emulator runs, as data.

Keyed by the canonical PTX spelling
``mma.sync.aligned.<shape>.<alayout>.<blayout>[.satfinite].<dtype>.<atype>.<btype>.<ctype>``
(PTX ISA, "Warp-level matrix multiply-accumulate instructions: mma"; ``.satfinite`` sits after the
layouts and before the types).  Each entry gives the shape, the operand types, the register counts and
widths, the architectures whose ptxas accepts it (``tools/hwcapture/ptx_probe.py`` re-derives this column
from ptxas), the numeric family (which arithmetic ``emulator.numerics`` applies) and the register
fragments.

Fragment format: ``variant.fragment(op)`` for ``op`` in ``"A" "B" "C" "D"`` is an int array of shape
``(n_regs, 32, elems_per_reg, 2)``; entry ``[r, lane, e]`` is the ``(row, col)`` of the element held by
register ``r`` of lane ``lane`` at bits ``[e*w, (e+1)*w)`` (``w`` the element width).  A is M x K
(row m, col k), B is K x N (row k, col n), C and D are M x N.  Every fragment is checked at import to be a
bijection onto its tile.

The m8n8k4 ``.f16`` forms are four independent 8x8x4 products, one per quad pair (lanes 4q..4q+3 and
16+4q..16+4q+3).  Their fragments address the four tiles stacked: A is 32 x 4 (rows 8q..8q+7 belong to quad
pair q), B is 4 x 32 (columns 8q..8q+7), C/D are 32 x 8.
"""
from dataclasses import dataclass, field
from itertools import product

import numpy as np

ARCHS = ("sm_80", "sm_86", "sm_90")

# element type -> (bits, kind)
ELEM = {
    "f16": (16, "f"), "bf16": (16, "f"), "tf32": (32, "f"), "f32": (32, "f"), "f64": (64, "f"),
    "e4m3": (8, "f"), "e5m2": (8, "f"), "s8": (8, "s"), "u8": (8, "u"), "s4": (4, "s"), "u4": (4, "u"),
    "b1": (1, "u"), "s32": (32, "s"),
}

# numpy dtype a user hands to emulator.mma for each element type (4-bit ints travel as int8/uint8)
NUMPY_DTYPE = {
    "f16": "float16", "bf16": "bfloat16", "tf32": "float32", "f32": "float32", "f64": "float64",
    "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "s8": "int8", "u8": "uint8", "s4": "int8",
    "u4": "uint8", "b1": "uint8", "s32": "int32",
}


def _lanes():
    lane = np.arange(32)
    return lane, lane >> 2, lane & 3


def _m16n8_a(n_regs, epr):
    """A of every m16n8kK form (PTX figures "MMA .m16n8kK fragment layout for matrix A"):
    register r holds row g + 8*(r%2) and k = 4*epr*(r//2) + epr*t + e."""
    lane, g, t = _lanes()
    f = np.zeros((n_regs, 32, epr, 2), np.int64)
    for r in range(n_regs):
        for e in range(epr):
            f[r, :, e, 0] = g + 8 * (r % 2)
            f[r, :, e, 1] = 4 * epr * (r // 2) + epr * t + e
    return f


def _m16n8_b(n_regs, epr):
    """B of every m16n8kK form: register r holds k = 4*epr*r + epr*t + e, column n = g."""
    lane, g, t = _lanes()
    f = np.zeros((n_regs, 32, epr, 2), np.int64)
    for r in range(n_regs):
        for e in range(epr):
            f[r, :, e, 0] = 4 * epr * r + epr * t + e
            f[r, :, e, 1] = g
    return f


def _m16n8_c(epr):
    """C/D of every m16n8 form: element i = epr*r + e sits at row g + 8*(i>>1), column 2t + (i&1)."""
    lane, g, t = _lanes()
    n_regs = 4 // epr
    f = np.zeros((n_regs, 32, epr, 2), np.int64)
    for r in range(n_regs):
        for e in range(epr):
            i = epr * r + e
            f[r, :, e, 0] = g + 8 * (i >> 1)
            f[r, :, e, 1] = 2 * t + (i & 1)
    return f


def _m8n8k4_f64(op):
    """m8n8k4 .f64: A (g, t); B (k=t, n=g); C/D element i at (g, 2t+i)."""
    lane, g, t = _lanes()
    if op == "A":
        return np.stack([g, t], -1).reshape(1, 32, 1, 2)
    if op == "B":
        return np.stack([t, g], -1).reshape(1, 32, 1, 2)
    return np.stack([np.stack([g, 2 * t + i], -1) for i in range(2)]).reshape(2, 32, 1, 2)


def _m8n8_int(op, epr):
    """m8n8k16 (s8/u8), m8n8k32 (s4/u4), m8n8k128 (b1): A row g, k = epr*t + e; B k = epr*t + e, column g;
    C/D element i at (g, 2t + i)."""
    lane, g, t = _lanes()
    if op in "AB":
        f = np.zeros((1, 32, epr, 2), np.int64)
        for e in range(epr):
            mn, k = g, epr * t + e
            f[0, :, e, 0], f[0, :, e, 1] = (mn, k) if op == "A" else (k, mn)
        return f
    return np.stack([np.stack([g, 2 * t + i], -1) for i in range(2)]).reshape(2, 32, 1, 2)


def _m8n8k4_f16(op, ctype, layout="row"):
    """m8n8k4 .f16 (quad-pair form, tiles stacked by quad pair q = (lane>>2)&3, hi = 4*(lane>=16)).
    A .row: a_i at (8q + lane%4 + hi, k=i); B .col: b_i at (k=i, 8q + lane%4 + hi);
    A .col: a_i at (8q + hi + i, k=lane%4); B .row: b_i at (k=lane%4, 8q + hi + i);
    C/D .f32: c_i at (8q + (lane&1) + (i&2) + hi, (i&4) + (lane&2) + (i&1));
    C/D .f16: c_i at (8q + lane%4 + hi, i)."""
    lane = np.arange(32)
    q, hi, l4 = (lane >> 2) & 3, 4 * (lane >= 16), lane % 4
    row = 8 * q + l4 + hi
    if op in "AB":
        # A .row / B .col: a lane holds one row of A (column of B), k = i.
        # A .col / B .row: a lane holds k = lane%4 for rows (columns) 8q + hi + i.
        f = np.zeros((2, 32, 2, 2), np.int64)
        for i in range(4):
            if (op == "A") == (layout == "row"):
                mn, k = row, np.full(32, i)
            else:
                mn, k = 8 * q + hi + i, l4
            rc = (mn, k) if op == "A" else (k, mn)
            f[i // 2, :, i % 2, 0], f[i // 2, :, i % 2, 1] = rc
        return f
    if ctype == "f32":
        f = np.zeros((8, 32, 1, 2), np.int64)
        for i in range(8):
            f[i, :, 0, 0] = 8 * q + (lane & 1) + (i & 2) + hi
            f[i, :, 0, 1] = (i & 4) + (lane & 2) + (i & 1)
        return f
    f = np.zeros((4, 32, 2, 2), np.int64)
    for i in range(8):
        f[i // 2, :, i % 2, 0] = row
        f[i // 2, :, i % 2, 1] = i
    return f


@dataclass(frozen=True)
class MmaVariant:
    shape: tuple          # (M, N, K) of one product (per quad pair for m8n8k4 .f16)
    alayout: str
    blayout: str
    satfinite: bool
    dtype: str
    atype: str
    btype: str
    ctype: str
    archs: tuple          # architectures whose ptxas accepts the spelling
    sass: str = ""        # what ptxas 13.0 emits for sm_90 (documentation)
    bop: str = ""         # .b1 forms: "xor" or "and" (then .popc)
    _frags: dict = field(default_factory=dict, compare=False, repr=False)

    # -- naming ----------------------------------------------------------------------------------
    @property
    def shape_name(self):
        m, n, k = self.shape
        return f"m{m}n{n}k{k}"

    @property
    def spelling(self):
        sat = ".satfinite" if self.satfinite else ""
        bop = f".{self.bop}.popc" if self.bop else ""
        return (f"mma.sync.aligned.{self.shape_name}.{self.alayout}.{self.blayout}{sat}."
                f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}{bop}")

    @property
    def family(self):
        """Which arithmetic runs it (see emulator.numerics)."""
        if self.atype == "f64":
            return "f64"
        if self.atype == "b1":
            return "b1"                        # exact: C + popc(a AND b) or popc(a XOR b), wrapping                       # chain of IEEE binary64 fma
        if self.dtype == "s32":
            return "int"                       # exact integer, wrap or clamp
        if self.atype in ("e4m3", "e5m2"):
            return "fp8"                       # sm_90: f16 HMMA x2 + FADD (software sequence)
        if self.shape_name == "m8n8k4":
            return "m8n8k4_f16"                # sm_90: CUDA-core FFMA sequence
        return "tc"                            # T-FDPA on the tensor core

    # -- registers -------------------------------------------------------------------------------
    def elem_bits(self, op):
        return ELEM[{"A": self.atype, "B": self.btype, "C": self.ctype, "D": self.dtype}[op]][0]

    def reg_bits(self, op):
        return 64 if self.elem_bits(op) == 64 else 32

    def tile_shape(self, op):
        m, n, k = self.shape
        if self.family == "m8n8k4_f16":
            return {"A": (32, 4), "B": (4, 32), "C": (32, 8), "D": (32, 8)}[op]
        return {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n)}[op]

    def n_regs(self, op):
        return self.fragment(op).shape[0]

    def fragment(self, op):
        if op not in self._frags:
            self._frags[op] = self._build_fragment(op)
        return self._frags[op]

    def _build_fragment(self, op):
        m, n, k = self.shape
        epr = self.reg_bits(op) // self.elem_bits(op)
        if self.family == "m8n8k4_f16":
            return _m8n8k4_f16(op, self.ctype if op == "C" else self.dtype,
                               self.alayout if op == "A" else self.blayout)
        if self.shape_name == "m8n8k4":
            return _m8n8k4_f64(op)
        if m == 8:
            return _m8n8_int(op, epr)
        if op == "A":
            return _m16n8_a(m * k // (32 * epr), epr)
        if op == "B":
            return _m16n8_b(k * n // (32 * epr), epr)
        return _m16n8_c(epr)

    @property
    def n_a(self):
        return self.n_regs("A")

    @property
    def n_b(self):
        return self.n_regs("B")

    @property
    def n_c(self):
        return self.n_regs("C")

    @property
    def n_d(self):
        return self.n_regs("D")

    def check(self):
        """Each fragment is a bijection onto its tile."""
        for op in "ABCD":
            f = self.fragment(op)
            rows, cols = self.tile_shape(op)
            w = self.reg_bits(op) // self.elem_bits(op)
            assert f.shape[1:] == (32, w, 2), f"{self.spelling}: fragment {op} has shape {f.shape}"
            assert f.shape[0] * 32 * w == rows * cols, \
                f"{self.spelling}: fragment {op} holds {f.shape[0] * 32 * w} elements, tile has {rows * cols}"
            idx = f[..., 0] * cols + f[..., 1]
            ok = (f[..., 0].min() >= 0 and f[..., 0].max() < rows and f[..., 1].min() >= 0
                  and f[..., 1].max() < cols and len(np.unique(idx)) == rows * cols)
            assert ok, f"{self.spelling}: fragment {op} is not a bijection onto its {rows}x{cols} tile"


def _v(shape, d, a, b, c, archs, sat=False, sass="", al="row", bl="col", bop=""):
    return MmaVariant(shape, al, bl, sat, d, a, b, c, tuple(archs), sass, bop)


AMPERE = ("sm_80", "sm_86", "sm_90")
HOPPER = ("sm_90",)


def _variants():
    out = []
    # f16 / bf16 / tf32 on the tensor core (T-FDPA)
    for k, sass in ((8, "HMMA.1688"), (16, "HMMA.16816")):
        for d, c in (("f16", "f16"), ("f32", "f32")):
            out.append(_v((16, 8, k), d, "f16", "f16", c, AMPERE, sass=f"{sass}.{d.upper()}"))
        out.append(_v((16, 8, k), "f32", "bf16", "bf16", "f32", AMPERE, sass=f"{sass}.F32.BF16"))
    out.append(_v((16, 8, 4), "f32", "tf32", "tf32", "f32", AMPERE, sass="HMMA.1684.F32.TF32"))
    out.append(_v((16, 8, 8), "f32", "tf32", "tf32", "f32", AMPERE, sass="HMMA.1688.F32.TF32"))
    # integers (exact, wrap or clamp)
    for k, a_types in ((16, ("s8", "u8")), (32, ("s8", "u8")), (32, ("s4", "u4")), (64, ("s4", "u4"))):
        for a, b, sat in product(a_types, a_types, (False, True)):
            out.append(_v((16, 8, k), "s32", a, b, "s32", AMPERE, sat=sat, sass="IMMA"))
    # the m8n8 integer shapes (Turing's): one 8x8 tile, exact
    for k, a_types in ((16, ("s8", "u8")), (32, ("s4", "u4"))):
        for a, b, sat in product(a_types, a_types, (False, True)):
            out.append(_v((8, 8, k), "s32", a, b, "s32", AMPERE, sat=sat,
                          sass="IMMA.8816" if k == 16 else "2 x IMMA.8816 (s4/u4 unpacked to 8 bits)"))
    # single-bit: C + popc(a AND/XOR b) over k (sm_90: BMMA.AND.POPC; XOR as popc(a & ~b) + popc(~a & b))
    for shape in ((8, 8, 128), (16, 8, 128), (16, 8, 256)):
        for bop in ("xor", "and"):
            out.append(_v(shape, "s32", "b1", "b1", "s32", AMPERE, bop=bop,
                          sass="BMMA.AND.POPC" if bop == "and" else "2 x BMMA.AND.POPC (a & ~b, ~a & b)"))
    # fp8 (sm_89+; on sm_90 a software sequence)
    for k in (16, 32):
        for a, b in product(("e4m3", "e5m2"), repeat=2):
            for d in ("f32", "f16"):
                out.append(_v((16, 8, k), d, a, b, d, HOPPER, sass="F2FP.UNPACK_B + HMMA + FADD/HADD2"))
    # f64 (DMMA); the m16n8 shapes need sm_90
    out.append(_v((8, 8, 4), "f64", "f64", "f64", "f64", AMPERE, sass="DMMA.884"))
    for k in (4, 8, 16):
        out.append(_v((16, 8, k), "f64", "f64", "f64", "f64", HOPPER, sass="DMMA.884 chain"))
    # m8n8k4 .f16 (the Volta quad-pair shape)
    for al, bl in product(("row", "col"), repeat=2):
        for d, c in (("f16", "f16"), ("f32", "f16"), ("f32", "f32")):     # ptxas rejects .f16 D with .f32 C
            out.append(_v((8, 8, 4), d, "f16", "f16", c, AMPERE, sass="CUDA-core sequence", al=al, bl=bl))
    return out


# (each variant's ``check`` runs in the tests, tests/test_coldstart.py, not here: every load_ptx imports this table)
VARIANTS = {_var.spelling: _var for _var in _variants()}
