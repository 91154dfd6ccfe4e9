"""Every warpgroup-level ``wgmma.mma_async`` variant (sm_90a), as data.

Keyed by the canonical PTX spelling
``wgmma.mma_async.sync.aligned.m64n<N>k<K>[.satfinite].<dtype>.<atype>.<btype>[.and.popc]`` (PTX ISA,
"Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions").  A warpgroup is four consecutive
warps of a CTA (warp ids 4g..4g+3); warp ``w`` of the group owns rows ``16w..16w+15`` of the 64 x N tile.

Operand forms (``op_forms``): ``"ss"`` (A and B from shared-memory matrix descriptors) and ``"rs"`` (A from
registers, B from a descriptor).  Immediate operands after ``scale-d``: ``imm-scale-a, imm-scale-b`` (floating
point only, +-1), ``imm-trans-a, imm-trans-b`` (.f16/.bf16 only; ``"rs"`` has no ``imm-trans-a``).

Fragment format: ``variant.fragment(op)`` for ``op`` in ``"A" "D"`` is an int array of shape
``(n_regs, 128, elems_per_reg, 2)``; entry ``[r, t, e]`` is the ``(row, col)`` of the element that register
``r`` of warpgroup thread ``t`` holds at bits ``[e*w, (e+1)*w)``.  A is 64 x K, D (and C, the same registers)
64 x N.  Every fragment is checked at import to be a bijection onto its tile.
"""
from dataclasses import dataclass, field

import numpy as np

ARCHS = ("sm_90a",)

ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s32": 32,
             "b1": 1}
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}

N_FLOAT = tuple(range(8, 257, 8))
N_INT = (8, 16, 24) + tuple(range(32, 257, 16))


@dataclass(frozen=True)
class WgmmaVariant:
    n: int
    dtype: str
    atype: str
    btype: str
    satfinite: bool = False
    _frags: dict = field(default_factory=dict, compare=False, repr=False)

    # -- naming ----------------------------------------------------------------------------------
    @property
    def k(self):
        return K_OF[self.atype]

    @property
    def shape(self):
        return (64, self.n, self.k)

    @property
    def shape_name(self):
        return f"m64n{self.n}k{self.k}"

    @property
    def spelling(self):
        sat = ".satfinite" if self.satfinite else ""
        tail = ".and.popc" if self.atype == "b1" else ""
        return f"wgmma.mma_async.sync.aligned.{self.shape_name}{sat}.{self.dtype}.{self.atype}.{self.btype}{tail}"

    @property
    def ctype(self):
        return self.dtype

    @property
    def family(self):
        """Which arithmetic runs it: 'tc' (T-FDPA, f16/bf16/tf32), 'fp8', 'int' (exact), 'b1' (AND + popc)."""
        if self.atype == "b1":
            return "b1"
        if self.dtype == "s32":
            return "int"
        if self.atype in ("e4m3", "e5m2"):
            return "fp8"
        return "tc"

    @property
    def is_float(self):
        return self.dtype != "s32"

    @property
    def can_transpose(self):
        """imm-trans-a/b exist only for .f16/.bf16 (from descriptors)."""
        return self.atype in ("f16", "bf16")

    def n_imm(self, op_form):
        """Immediates after scale-d: scale-a, scale-b (floats) and trans-a (ss only), trans-b (f16/bf16)."""
        if not self.is_float:
            return 0
        if not self.can_transpose:
            return 2
        return 4 if op_form == "ss" else 3

    # -- registers -------------------------------------------------------------------------------
    def elem_bits(self, op):
        return ELEM_BITS[{"A": self.atype, "B": self.btype, "C": self.dtype, "D": self.dtype}[op]]

    def epr(self, op):
        return 32 // self.elem_bits(op)

    def tile_shape(self, op):
        return {"A": (64, self.k), "B": (self.k, self.n), "C": (64, self.n), "D": (64, self.n)}[op]

    def n_regs(self, op):
        rows, cols = self.tile_shape(op)
        return rows * cols // (128 * self.epr(op))

    @property
    def n_a(self):
        return self.n_regs("A")

    @property
    def n_d(self):
        return self.n_regs("D")

    def fragment(self, op):
        op = "D" if op == "C" else op
        if op not in self._frags:
            self._frags[op] = _fragment_a(self.epr("A")) if op == "A" else _fragment_d(self.n, self.epr("D"))
        return self._frags[op]

    def check(self):
        for op in "AD":
            f = self.fragment(op)
            rows, cols = self.tile_shape(op)
            idx = f[..., 0] * cols + f[..., 1]
            ok = (f[..., 0].min() >= 0 and f[..., 0].max() < rows and f[..., 1].min() >= 0
                  and f[..., 1].max() < cols and np.unique(idx).size == rows * cols == idx.size)
            assert ok, f"{self.spelling}: fragment {op} is not a bijection onto its {rows}x{cols} tile"


def _threads():
    t = np.arange(128)
    lane = t & 31
    return t >> 5, lane >> 2, lane & 3


def _fragment_a(epr):
    """A in registers (PTX figures "WGMMA .m64nNkK register fragment layout for matrix A"): the m16n8kK A
    layout of mma.sync in each warp's 16 rows: register r, element e of thread (warp w, group g, t):
    row 16w + g + 8*(r%2), k = 4*epr*(r//2) + epr*t + e."""
    w, g, t = _threads()
    f = np.zeros((4, 128, epr, 2), np.int64)
    for r in range(4):
        for e in range(epr):
            f[r, :, e, 0] = 16 * w + g + 8 * (r % 2)
            f[r, :, e, 1] = 4 * epr * (r // 2) + epr * t + e
    return f


def _fragment_d(n, epr):
    """Accumulator: element i (register i // epr, slot i % epr) of thread (w, g, t) sits at row
    16w + g + 8*((i >> 1) & 1), column 8*(i >> 2) + 2t + (i & 1): the m16n8 C layout repeated N/8 times."""
    w, g, t = _threads()
    n_el = n // 2
    f = np.zeros((n_el // epr, 128, epr, 2), np.int64)
    for i in range(n_el):
        f[i // epr, :, i % epr, 0] = 16 * w + g + 8 * ((i >> 1) & 1)
        f[i // epr, :, i % epr, 1] = 8 * (i >> 2) + 2 * t + (i & 1)
    return f


def _variants():
    out = []
    for n in N_FLOAT:
        out += [WgmmaVariant(n, d, "f16", "f16") for d in ("f16", "f32")]
        out.append(WgmmaVariant(n, "f32", "bf16", "bf16"))
        out.append(WgmmaVariant(n, "f32", "tf32", "tf32"))
        for a in ("e4m3", "e5m2"):
            for b in ("e4m3", "e5m2"):
                out += [WgmmaVariant(n, d, a, b) for d in ("f16", "f32")]
    for n in N_INT:
        for a in ("s8", "u8"):
            for b in ("s8", "u8"):
                out += [WgmmaVariant(n, "s32", a, b, sat) for sat in (False, True)]
        out.append(WgmmaVariant(n, "s32", "b1", "b1"))
    return out


# (each variant's fragments are built on first use; tests/test_coldstart.py checks every one with check(),
# which at import cost every process about 1.5 s of CPU)
VARIANTS = {_v.spelling: _v for _v in _variants()}

# The spellings whose ptxas acceptance for sm_90a was checked (tools/hwcapture/wgmma/capture.py build).
CONTROL = ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned")
