"""Shared-memory matrix descriptors of ``wgmma.mma_async``, decoded as the H100 decodes them.

A descriptor is 64 bits (PTX ISA, "Matrix Descriptor Format"):

======  =============================================================================
bits    field
======  =============================================================================
0-13    start address >> 4
16-29   leading-dimension byte offset (LBO) >> 4
32-45   stride-dimension byte offset (SBO) >> 4
49-51   base offset
62-63   swizzle: 0 none (interleave), 1 128-byte, 2 64-byte, 3 32-byte
======  =============================================================================

An operand is read as *core matrices*: 8 rows of 16 bytes.  For a K-major operand (A not transposed, B not
transposed) a row is 16 bytes of K of one M/N index; one instruction reads 32 bytes of K (two core matrices
side by side) for each of its rows.  For an MN-major operand (``imm-trans`` = 1, 16-bit types only) a row is
16 bytes (8 elements) of M/N at one k.

Byte address of (row ``r``, K byte ``b``) of a K-major operand, ``W`` the swizzle width:

* no swizzle:  ``start + (r // 8) * SBO + (r % 8) * 16 + (b // 16) * LBO + b % 16``
* swizzled:    ``start + (r // 8) * SBO + (r % 8) * W + (b // W) * LBO + b % W``, then the swizzle (LBO only
  matters where a row is wider than the swizzle: the 64 bytes of K of a ``wgmma.mma_async.sp`` B under the
  32-byte swizzle, whose second 32 bytes the H100 reads LBO further on)

Byte address of element (m/n index ``x``, k) of an MN-major operand of ``e``-byte elements, ``xb = x * e``:

* no swizzle:  ``start + (xb // 16) * SBO + (k // 8) * LBO + (k % 8) * 16 + xb % 16``
* swizzled:    ``start + (xb // W) * LBO + (k // 8) * SBO + (k % 8) * W + xb % W``, then the swizzle

The swizzle XORs address bits [4, 4+s) with bits [7, 7+s) minus the base offset, s = log2(W / 16) (CuTe's
``Swizzle<s,4,3>`` when the base offset is 0), on the shared-memory address itself: the pattern repeats every
``8 * W`` bytes of address space, and any 16-byte aligned start works.  The H100 capture
(``tools/hwcapture/wgmma``) pinned these rules: random LBO/SBO, every swizzle, both major-nesses, starts off
the pattern and every base offset.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import AlignmentError, MemoryAccessError, OperandError, fail

SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}
SWIZZLE_CODE = {v: k for k, v in SWIZZLE_BYTES.items()}
SWIZZLE_NAMES = {0: "none", 128: "128B", 64: "64B", 32: "32B"}


@dataclass(frozen=True)
class Descriptor:
    """A decoded matrix descriptor (byte quantities)."""
    start: int
    lbo: int
    sbo: int
    base_offset: int
    swizzle: int        # width in bytes: 0 (none), 32, 64, 128

    @classmethod
    def decode(cls, bits: int) -> "Descriptor":
        bits = int(bits)
        return cls(start=(bits & 0x3FFF) << 4, lbo=((bits >> 16) & 0x3FFF) << 4, sbo=((bits >> 32) & 0x3FFF) << 4,
                   base_offset=(bits >> 49) & 7, swizzle=SWIZZLE_BYTES[(bits >> 62) & 3])

    def encode(self) -> int:
        return make_descriptor(self.start, lbo=self.lbo, sbo=self.sbo, swizzle=self.swizzle,
                               base_offset=self.base_offset)

    def __str__(self):
        return (f"start=0x{self.start:x} LBO={self.lbo} SBO={self.sbo} base_offset={self.base_offset} "
                f"swizzle={SWIZZLE_NAMES[self.swizzle]}")


def make_descriptor(start: int, lbo: int = 16, sbo: int = 1024, swizzle: int | str = 128,
                    base_offset: int = 0) -> int:
    """The 64-bit descriptor of an operand at shared address ``start``.  ``swizzle`` in bytes (0/None/'none',
    32, 64, 128, or '32B' ...).  Byte offsets must be multiples of 16 below 2**18."""
    if isinstance(swizzle, str):
        swizzle = 0 if swizzle.lower() in ("none", "interleave", "") else int(swizzle.rstrip("Bb"))
    swizzle = int(swizzle or 0)
    if swizzle not in SWIZZLE_CODE:
        raise OperandError(f"make_descriptor: swizzle must be one of 0, 32, 64, 128 bytes, not {swizzle}")
    for name, v in (("start", start), ("lbo", lbo), ("sbo", sbo)):
        if v % 16 or not 0 <= v < 1 << 18:
            raise OperandError(f"make_descriptor: {name} = {v} must be a multiple of 16 in [0, 2**18)")
    if not 0 <= base_offset < 8:
        raise OperandError(f"make_descriptor: base_offset = {base_offset} must be 0..7")
    return ((start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (base_offset << 49)
            | (SWIZZLE_CODE[swizzle] << 62))


def canonical_descriptor(start: int, rows: int, mn_major: bool = False, swizzle: int = 128,
                         elem_bytes: int = 2, k_bytes: int = 32) -> int:
    """The descriptor of a dense canonical layout (CuTe's ``Layout_K_SW128_Atom`` family tiled over the
    operand) of ``rows`` M/N indices x ``k_bytes`` bytes of K: the layout Triton and CUTLASS build."""
    W = int(swizzle or 0)
    if not mn_major:
        if W == 0:
            return make_descriptor(start, lbo=128 * (rows // 8), sbo=128, swizzle=0)
        return make_descriptor(start, lbo=16, sbo=8 * W, swizzle=W)
    krows = k_bytes // elem_bytes
    if W == 0:
        return make_descriptor(start, lbo=128 * max(1, rows * elem_bytes // 16), sbo=128, swizzle=0)
    return make_descriptor(start, lbo=8 * W * (krows // 8), sbo=8 * W, swizzle=W)


def swizzle(addr, width: int, base_offset: int = 0):
    """The address after the swizzle of ``width`` bytes: bits [4, 4+s) ^= (bits [7, 7+s) - base_offset).
    The base offset shifts the pattern's row phase back by that many 128-byte rows (measured: of the
    rules tried -- ignored, added, subtracted, xor-ed, relative to the start -- only subtraction matches
    every capture)."""
    if not width:
        return addr
    mask = width // 16 - 1
    return addr ^ ((((addr >> 7) - base_offset) & mask) << 4)


def k_major_addresses(d: Descriptor, rows: int, k_bytes: int = 32) -> np.ndarray:
    """(rows, k_bytes) shared byte addresses of a K-major operand."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    b = np.arange(k_bytes, dtype=np.int64)[None, :]
    if d.swizzle == 0:
        a = d.start + (r // 8) * d.sbo + (r % 8) * 16 + (b // 16) * d.lbo + b % 16
    else:
        W = d.swizzle
        a = d.start + (r // 8) * d.sbo + (r % 8) * W + (b // W) * d.lbo + b % W
    return swizzle(a, d.swizzle, d.base_offset)


def mn_major_addresses(d: Descriptor, mn: int, k: int, elem_bytes: int) -> np.ndarray:
    """(mn, k) shared byte addresses of the first byte of each element of an MN-major operand."""
    x = np.arange(mn, dtype=np.int64)[:, None] * elem_bytes
    kk = np.arange(k, dtype=np.int64)[None, :]
    if d.swizzle == 0:
        a = d.start + (x // 16) * d.sbo + (kk // 8) * d.lbo + (kk % 8) * 16 + x % 16
    else:
        W = d.swizzle
        a = d.start + (x // W) * d.lbo + (kk // 8) * d.sbo + (kk % 8) * W + x % W
    return swizzle(a, d.swizzle, d.base_offset)


def element_addresses(d: Descriptor, mn: int, k: int, elem_bits: int, mn_major: bool) -> np.ndarray:
    """(mn, k) byte address of each element (for sub-byte elements: of the byte that holds it)."""
    if mn_major:
        return mn_major_addresses(d, mn, k, elem_bits // 8)
    kb = k * elem_bits // 8
    byte = k_major_addresses(d, mn, kb)
    if elem_bits >= 8:
        return byte[:, ::elem_bits // 8]
    return np.repeat(byte, 8 // elem_bits, axis=1)


def read_operand(smem: np.ndarray, d: Descriptor, mn: int, k: int, elem_bits: int, mn_major: bool,
                 instr: str = "wgmma", what: str = "B", base: int = 0) -> np.ndarray:
    """The (mn, k) raw element bits (uint64) an operand descriptor selects from shared memory (whose
    byte 0 has shared address ``base``).  Errors name the descriptor and the rule."""
    addr = element_addresses(d, mn, k, elem_bits, mn_major) - base
    eb = max(1, elem_bits // 8)
    lo, hi = int(addr.min()), int(addr.max()) + eb
    if lo < 0 or hi > smem.size:
        fail(MemoryAccessError, instr, f"{what} descriptor ({d}) reads shared bytes [0x{lo + base:x}, "
             f"0x{hi + base:x}) outside shared memory [0x{base:x}, 0x{base + smem.size:x})")
    return gather_operand(smem, addr, k, elem_bits)


def gather_operand(smem: np.ndarray, addr: np.ndarray, k: int, elem_bits: int) -> np.ndarray:
    """The raw element bits at byte addresses ``addr`` (from ``element_addresses``, checked to lie inside
    ``smem``)."""
    if elem_bits >= 8:
        eb = elem_bits // 8
        if eb in (1, 2, 4, 8) and smem.size % eb == 0 and addr.size and (addr % eb == 0).all():
            dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[eb]
            return smem.view(dt)[addr // eb].astype(np.uint64)       # aligned elements: one gather
        v = np.zeros(addr.shape, np.uint64)
        for j in range(eb):
            v |= smem[addr + j].astype(np.uint64) << np.uint64(8 * j)
        return v
    sub = (np.arange(k) % (8 // elem_bits)) * elem_bits
    return (smem[addr].astype(np.uint64) >> sub.astype(np.uint64)) & np.uint64((1 << elem_bits) - 1)


def check_alignment(d: Descriptor, instr: str, what: str):
    """The rules the hardware needs: a 16-byte aligned start (encoded) and, for a swizzled layout, a start
    inside the swizzle pattern that base offset 0 can describe... checked in ``read_operand``'s caller."""
    if d.swizzle and (d.sbo == 0):
        fail(AlignmentError, instr, f"{what} descriptor ({d}): a swizzled layout needs a non-zero SBO")


def core_matrix_map(desc: int, rows: int, k_bytes: int = 32, mn_major: bool = False, elem_bytes: int = 2):
    """Which shared-memory bytes each core matrix (8 rows x 16 bytes) is read from.

    Returns a dict ``{(i, j): [(row addresses...)]}``: core matrix ``i`` along M/N (K-major) or K
    (MN-major), ``j`` along K (K-major) or M/N (MN-major); each entry lists the 8 row start addresses
    (16 contiguous bytes each)."""
    d = Descriptor.decode(desc)
    out = {}
    if not mn_major:
        a = k_major_addresses(d, rows, k_bytes)
        for i in range(rows // 8):
            for j in range(k_bytes // 16):
                out[(i, j)] = [int(a[8 * i + r, 16 * j]) for r in range(8)]
        return out
    k = k_bytes // elem_bytes
    a = mn_major_addresses(d, rows, k, elem_bytes)
    per = 16 // elem_bytes
    for i in range(k // 8):
        for j in range(rows // per):
            out[(i, j)] = [int(a[per * j, 8 * i + r]) for r in range(8)]
    return out
