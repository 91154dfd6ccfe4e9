"""Every warp-level sparse ``mma.sp`` / ``mma.sp::ordered_metadata`` variant (sm_90a), as data.

Keyed by the canonical PTX spelling
``mma.<sp>.sync.aligned.m16n8k<K>.row.col[.satfinite].<dtype>.<atype>.<btype>.<ctype>`` with ``<sp>`` one of
``sp`` and ``sp::ordered_metadata`` (PTX ISA, "Multiply-and-Accumulate Instruction: mma.sp").  The list is what
ptxas 13.0 accepts for sm_90a (``tools/hwcapture/sparse/sp_gen.py`` holds the same forms; ptxas also accepts them
for sm_80+), each with the sparsity selectors ptxas accepts.

A is M x K structured-sparse: every chunk of ``width`` consecutive elements of a row keeps ``kept`` of them
(2:4; tf32 1:2; s4/u4 4:8 in pairs); A's registers hold the compressed 16 x K/2 tile, laid out exactly like the
A fragment of the dense ``m16n8k(K/2)`` form (PTX figures "Sparse MMA .m16n8kK fragment layout for matrix A").
B, C and D are the dense ``m16n8kK`` layouts.

Metadata: one 4-bit field ("nibble") per chunk and row.  For a 2:4 chunk its bits [1:0] give the position of the
first kept element and [3:2] that of the second; 4:8 pairs (s4/u4) count in pairs; tf32 uses 0x4 (element 0)
and 0xE (element 1).  ``variant.meta_owner(sel)`` is an int array (16 rows, chunks per row, 2): the lane within
the row's group of four (lanes ``4*(row % 8) + j``) and the nibble of that lane's metadata register that holds
the chunk, for sparsity selector ``sel``.  The H100 captures (tests/data/sparse) fixed these tables:

* 16-bit types, 4 chunks per row (f16/bf16 k16, tf32 k8): lane ``sel``; nibble ``chunk`` (row g), ``4 + chunk``
  (row g + 8);
* 16-bit types, 8 chunks (f16/bf16 k32, tf32 k16): lane ``2*sel + chunk // 4``; nibble ``chunk % 4`` (+4 for
  row g + 8);
* 8-bit types, 8 chunks (s8/u8 k32, s4/u4 k64): lane ``2*sel`` (row g) or ``2*sel + 1`` (row g + 8); nibble
  ``chunk``;
* 8-bit types, 16 chunks (s8/u8/e4m3/e5m2 k64, s4/u4 k128): lane ``2*(chunk // 8)`` (row g) or
  ``2*(chunk // 8) + 1`` (row g + 8); nibble ``chunk % 8``.

The product is the dense ``m16n8k(K/2)`` arithmetic of the same types (``dense_spelling``) applied, row by row,
to the compressed A and the rows of B its metadata picks (the H100's sparse tensor core gathers B; the zeros of
A never take part).
"""
from dataclasses import dataclass, field

import numpy as np

from .mma import ELEM, _m16n8_a, _m16n8_b, _m16n8_c

SP_KINDS = ("sp", "sp::ordered_metadata")
TF32_CODES = {0x4: 0, 0xE: 1}               # tf32 metadata nibble -> kept element of the 2-wide chunk


@dataclass(frozen=True)
class SpVariant:
    sp: str               # "sp" or "sp::ordered_metadata"
    k: int                # logical K
    dtype: str
    atype: str
    btype: str
    ctype: str
    satfinite: bool
    selectors: tuple      # the sparsity selectors ptxas accepts
    _frags: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def shape(self):
        return (16, 8, self.k)

    @property
    def spelling(self):
        sat = ".satfinite" if self.satfinite else ""
        return (f"mma.{self.sp}.sync.aligned.m16n8k{self.k}.row.col{sat}."
                f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}")

    @property
    def dense_spelling(self):
        """The dense mma.sync form whose arithmetic runs each row (K/2 products)."""
        sat = ".satfinite" if self.satfinite else ""
        return (f"mma.sync.aligned.m16n8k{self.k // 2}.row.col{sat}."
                f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}")

    @property
    def chunk(self):
        """(elements per chunk, elements kept per chunk)."""
        return {"tf32": (2, 1), "s4": (8, 4), "u4": (8, 4)}.get(self.atype, (4, 2))

    @property
    def n_chunks(self):
        return self.k // self.chunk[0]

    @property
    def defined_selectors(self):
        """The selectors PTX defines (ptxas also accepts 2 and 3 for m16n8k32 .f16 -> .f32)."""
        wide = ELEM[self.atype][0] >= 16
        if self.n_chunks == 4:
            return (0, 1, 2, 3)
        if self.n_chunks == 8:
            return (0, 1)
        return (0,) if not wide else (0, 1)

    def elem_bits(self, op):
        return ELEM[{"A": self.atype, "B": self.btype, "C": self.ctype, "D": self.dtype}[op]][0]

    def tile_shape(self, op):
        return {"A": (16, self.k // 2), "B": (self.k, 8), "C": (16, 8), "D": (16, 8)}[op]

    def fragment(self, op):
        """(n_regs, 32, elems_per_reg, 2) (row, col) table; A's columns index the compressed tile."""
        if op not in self._frags:
            epr = 32 // self.elem_bits(op)
            rows, cols = self.tile_shape(op)
            n = rows * cols // (32 * epr)
            self._frags[op] = (_m16n8_a(n, epr) if op == "A" else _m16n8_b(n, epr) if op == "B"
                               else _m16n8_c(epr))
        return self._frags[op]

    def n_regs(self, op):
        return self.fragment(op).shape[0]

    def meta_owner(self, sel):
        """int (16, n_chunks, 2): (lane offset in the row's group of four, nibble) of each row's chunks."""
        key = ("meta", sel)
        if key not in self._frags:
            nch = self.n_chunks
            wide = ELEM[self.atype][0] >= 16
            t = np.zeros((16, nch, 2), np.int64)
            for m in range(16):
                h = m // 8
                for c in range(nch):
                    if wide and nch == 4:
                        lane, nib = sel, c + 4 * h
                    elif wide:
                        lane, nib = 2 * sel + c // 4, c % 4 + 4 * h
                    elif nch == 8:
                        lane, nib = 2 * sel + h, c
                    else:
                        lane, nib = 2 * (c // 8) + h, c % 8
                    t[m, c] = (lane, nib)
            self._frags[key] = t
        return self._frags[key]

    def check(self):
        for op in "ABCD":
            f = self.fragment(op)
            rows, cols = self.tile_shape(op)
            idx = f[..., 0] * cols + f[..., 1]
            assert np.unique(idx).size == rows * cols == idx.size, f"{self.spelling}: fragment {op}"
        for sel in self.selectors:       # rows g and g + 8 never share a (lane, nibble)
            mo = self.meta_owner(sel)
            pairs = {tuple(x) for x in np.concatenate([mo[0], mo[8]])}
            assert len(pairs) == 2 * self.n_chunks, f"{self.spelling}: metadata owners overlap"


def _variants():
    out = []
    for sp in SP_KINDS:
        for k, d, a, c, sels in ((16, "f16", "f16", "f16", 4), (16, "f32", "f16", "f32", 4),
                                 (32, "f16", "f16", "f16", 2), (32, "f32", "f16", "f32", 4),
                                 (16, "f32", "bf16", "f32", 4), (32, "f32", "bf16", "f32", 2),
                                 (8, "f32", "tf32", "f32", 4), (16, "f32", "tf32", "f32", 2)):
            out.append(SpVariant(sp, k, d, a, a, c, False, tuple(range(sels))))
        for a in ("e4m3", "e5m2"):
            for b in ("e4m3", "e5m2"):
                out.append(SpVariant(sp, 64, "f32", a, b, "f32", False, (0,)))
        for types, ks in ((("s8", "u8"), (32, 64)), (("s4", "u4"), (64, 128))):
            for a in types:
                for b in types:
                    for sat in (False, True):
                        for k in ks:
                            out.append(SpVariant(sp, k, "s32", a, b, "s32", sat, (0, 1) if k == ks[0] else (0,)))
    return out


def _table():
    out = {}
    for v in _variants():
        v.check()
        out[v.spelling] = v
    return out


def __getattr__(name):
    """``VARIANTS`` (spelling -> SpVariant) is built on first use: a launch without sparse mma never pays for it."""
    if name == "VARIANTS":
        globals()["VARIANTS"] = table = _table()
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def metadata_nibbles(variant, sel, e_regs):
    """Metadata registers of the 32 lanes (uint32 (32,) or (batch, 32)) -> (nibbles, lanes): int arrays
    (..., 16, n_chunks), the 4-bit field of each row's chunks and the lane it came from."""
    e = np.asarray(e_regs).astype(np.int64)
    mo = variant.meta_owner(sel)
    lanes = 4 * (np.arange(16) % 8)[:, None] + mo[..., 0]                  # (16, nch)
    nib = (e[..., lanes] >> (4 * mo[..., 1])) & 0xF
    return nib, np.broadcast_to(lanes, nib.shape)


def valid_nibble(variant, nib):
    """Which nibbles the emulator runs: tf32 0x4/0xE; any other type every pair of indices (equal and
    decreasing pairs, undefined in PTX, give on the H100 exactly the rows they name: captured)."""
    if variant.atype == "tf32":
        return (nib == 0x4) | (nib == 0xE)
    return np.ones(np.shape(nib), bool)


def positions(variant, nib):
    """Logical k of every compressed column: int (..., 16, K/2) from valid nibbles (..., 16, n_chunks)."""
    width, kept = variant.chunk
    nch = variant.n_chunks
    base = (np.arange(nch) * width)
    if variant.atype == "tf32":
        return base + (nib == 0xE)
    i0, i1 = nib & 3, nib >> 2
    if kept == 2:
        pos = np.stack([base + i0, base + i1], -1)                          # (..., 16, nch, 2)
    else:                                                                    # 4:8 in pairs
        pos = np.stack([base + 2 * i0, base + 2 * i0 + 1, base + 2 * i1, base + 2 * i1 + 1], -1)
    return pos.reshape(pos.shape[:-2] + (nch * kept,))
