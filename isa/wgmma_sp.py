"""Every sparse ``wgmma.mma_async.sp`` variant (sm_90a), as data: spellings, selectors, metadata layout.

Keyed by ``wgmma.mma_async.sp.sync.aligned.m64n<N>k<K>[.satfinite].<dtype>.<atype>.<btype>``: the dense
variants of ``isa.wgmma`` (all but ``.b1``) with K doubled (f16/bf16 k32, tf32 k16, e4m3/e5m2/s8/u8 k64).
Operands: ``d, a, b-desc, sp-meta, sp-sel, scale-d`` then the dense immediates.

* A is the compressed 64 x K/2 tile: from registers in the dense ``m64nNk(K/2)`` A fragment, or from shared
  memory through a descriptor of K/2 columns.  B is the whole K x N tile (its descriptor reads K rows).
* Chunks of A's rows: 2:4 (four columns, two kept) for 16- and 8-bit types, 1:2 for tf32.  A metadata nibble
  per chunk: two 2-bit indices (tf32: ``0b0100`` keeps the first, ``0b1110`` the second).
* ``meta_owner(sel)``: which thread and nibble of its ``sp-meta`` register hold each row's chunk.  Warp ``w`` of
  the warpgroup holds rows ``16w..16w+15`` exactly as one ``mma.sp`` m16n8k(K) holds its 16 rows
  (``isa.mma_sp``): row ``m`` (of the warp's 16) is in lane ``4 * (m % 8) + meta_owner[m, c, 0]``, nibble
  ``meta_owner[m, c, 1]``.  16/32-bit types: lanes ``2 sel`` and ``2 sel + 1`` of each group of four, rows
  ``g`` in nibbles 0-3 and ``g + 8`` in nibbles 4-7; 8-bit types (selector 0): lanes ``h`` and ``2 + h`` for
  row half ``h`` and the low / high eight chunks.  Measured on the H100 (tests/test_wgmma_sp.py).
"""
from dataclasses import dataclass, field

import numpy as np

from .wgmma import VARIANTS as DENSE, WgmmaVariant

K_SP = {"f16": 32, "bf16": 32, "tf32": 16, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}
TF32_NIBBLES = (0x4, 0xE)


@dataclass(frozen=True)
class WgmmaSpVariant:
    dense: WgmmaVariant
    _frags: dict = field(default_factory=dict, compare=False, repr=False)

    def __getattr__(self, name):
        """Fragments, tile shapes and types of A (compressed), C and D: those of the dense m64nNk(K/2) form."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.dense, name)

    @property
    def atype(self):
        return self.dense.atype

    @property
    def k(self):
        return K_SP[self.atype]

    @property
    def spelling(self):
        v = self.dense
        sat = ".satfinite" if v.satfinite else ""
        return f"wgmma.mma_async.sp.sync.aligned.m64n{v.n}k{self.k}{sat}.{v.dtype}.{v.atype}.{v.btype}"

    @property
    def selectors(self):
        """The sp-sel values ptxas 13 accepts: 0 and 1 for 16/32-bit types, 0 for 8-bit types."""
        return (0, 1) if self.dense.elem_bits("A") >= 16 else (0,)

    @property
    def chunk(self):
        """(elements per metadata chunk, kept elements)."""
        return (2, 1) if self.atype == "tf32" else (4, 2)

    @property
    def n_chunks(self):
        return self.k // self.chunk[0]

    def meta_owner(self, sel):
        """int (16, n_chunks, 2): (lane offset in the row's group of four, nibble) of each row's chunks."""
        key = ("meta", sel)
        if key not in self._frags:
            wide = self.dense.elem_bits("A") >= 16
            t = np.zeros((16, self.n_chunks, 2), np.int64)
            for m in range(16):
                h = m // 8
                for c in range(self.n_chunks):
                    t[m, c] = (2 * sel + c // 4, c % 4 + 4 * h) if wide else (2 * (c // 8) + h, c % 8)
            self._frags[key] = t
        return self._frags[key]

    def meta_lanes(self, sel):
        """int (16, n_chunks): the lane (of the warp) that holds each row's chunk."""
        return 4 * (np.arange(16) % 8)[:, None] + self.meta_owner(sel)[..., 0]

    def check(self):
        for sel in self.selectors:
            lanes, nib = self.meta_lanes(sel), self.meta_owner(sel)[..., 1]
            assert len(set(zip(lanes.ravel().tolist(), nib.ravel().tolist()))) == lanes.size, self.spelling


def metadata_nibbles(variant, sel, e):
    """One warp's sp-meta registers (32,) -> (nibbles, lanes): int (16, n_chunks) each."""
    e = np.asarray(e).astype(np.int64)
    lanes = variant.meta_lanes(sel)
    return (e[lanes] >> (4 * variant.meta_owner(sel)[..., 1])) & 0xF, lanes


def positions(variant, nib):
    """Logical k of every compressed column, int (16, K/2), from the nibbles (16, n_chunks).  The indices
    are taken as they come: the H100 gives the same result for equal and decreasing pairs (captured)."""
    base = np.arange(variant.n_chunks) * variant.chunk[0]
    if variant.atype == "tf32":
        return base + (nib == 0xE)
    return np.stack([base + (nib & 3), base + (nib >> 2)], -1).reshape(nib.shape[:-1] + (-1,))


def _variants():
    out = {}
    for v in DENSE.values():
        if v.atype != "b1":
            sv = WgmmaSpVariant(v)
            sv.check()
            out[sv.spelling] = sv
    return out


def __getattr__(name):
    """``VARIANTS`` (spelling -> WgmmaSpVariant) is built on first use: a launch without sparse wgmma never pays for
    it."""
    if name == "VARIANTS":
        globals()["VARIANTS"] = table = _variants()
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
