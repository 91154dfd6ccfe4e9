"""Tensor maps: the 128-byte ``CUtensorMap`` that ``cuTensorMapEncodeTiled`` writes and TMA copies read.

:class:`TensorMap` takes the driver's parameters (same names, same validation) and produces the same 128
bytes as the driver of an H100 (CUDA 13.0 driver; checked byte for byte against its encodings, see
``tests/data/tma/tensormap_encode.npz``); :meth:`TensorMap.decode` reads such bytes back, whether the driver
wrote them on the host or a kernel built them with ``tensormap.replace``.

The layout (little-endian; measured, not published; docs/tma.md has the table)::

    bytes  0..7    global address
    bytes  8..11   bits 4..6 rank-1, 7..10 element type code, 11..12 interleave, 13..14 swizzle,
                   15 OOB fill NaN, 16 tf32 rounding, 17..19 L2 promotion
    bytes 12..27   global strides 0..3 (bytes >> 4), low 32 bits each
    bytes 28..31   bits 4k..4k+3: bits 32..35 of stride k >> 4
    bytes 32..51   global dimensions - 1, 32 bits each
    bytes 52..53   element strides - 1, 3 bits each
    bytes 55..59   box dimensions - 1, 8 bits each
    bytes 64..67   prod(floor(box / element stride)) * element size
    bytes 72..75   swizzle atom bytes: 16 (none), 256 (32B), 512 (64B), 1024 (128B)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import TensorMapError

# CUtensorMapDataType -> (name, bytes, code in the descriptor, tf32 flag, numpy dtype name)
DTYPES = {
    0: ("UINT8", 1, 0, 0, "u1"), 1: ("UINT16", 2, 1, 0, "u2"), 2: ("UINT32", 4, 2, 0, "u4"),
    3: ("INT32", 4, 3, 0, "i4"), 4: ("UINT64", 8, 4, 0, "u8"), 5: ("INT64", 8, 5, 0, "i8"),
    6: ("FLOAT16", 2, 6, 0, "f2"), 7: ("FLOAT32", 4, 7, 0, "f4"), 8: ("FLOAT64", 8, 9, 0, "f8"),
    9: ("BFLOAT16", 2, 10, 0, "bf16"), 10: ("FLOAT32_FTZ", 4, 8, 0, "f4"), 11: ("TFLOAT32", 4, 7, 1, "f4"),
    12: ("TFLOAT32_FTZ", 4, 8, 1, "f4"),
}
_FROM_CODE = {(v[2], v[3]): k for k, v in DTYPES.items()}
DTYPE_NAMES = {v[0]: k for k, v in DTYPES.items()}
FLOAT_TYPES = {6, 7, 8, 9, 10, 11, 12}
SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}          # CU_TENSOR_MAP_SWIZZLE_NONE/32B/64B/128B
_ATOM = {0: 16, 1: 256, 2: 512, 3: 1024}
INTERLEAVE = {0: "NONE", 1: "16B", 2: "32B"}
L2_PROMOTION = {0: "NONE", 1: "64B", 2: "128B", 3: "256B"}


def _enum(value, table, what):
    if isinstance(value, str):
        key = value.upper().removeprefix("CU_TENSOR_MAP_").split("_", 1)[-1] if "_" in value else value.upper()
        for k, v in table.items():
            if v == key or (isinstance(v, tuple) and v[0] == key):
                return k
        raise TensorMapError(f"TensorMap: unknown {what} {value!r}")
    if int(value) not in table:
        raise TensorMapError(f"TensorMap: {what} {value} is not one of {sorted(table)}")
    return int(value)


@dataclass(frozen=True)
class TensorMap:
    """The parameters of ``cuTensorMapEncodeTiled`` (tiled mode). Sizes in elements, strides in bytes; index 0
    is the innermost (contiguous) dimension, as in the driver API."""
    dtype: int
    rank: int
    global_address: int
    global_dim: tuple
    global_strides: tuple          # rank - 1 byte strides of dimensions 1..rank-1
    box_dim: tuple
    element_strides: tuple
    interleave: int = 0
    swizzle: int = 0
    l2_promotion: int = 0
    oob_fill: int = 0              # 0: zeros, 1: NaN (float types)

    @classmethod
    def encode_tiled(cls, dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides=None,
                     interleave=0, swizzle=0, l2_promotion=0, oob_fill=0) -> "TensorMap":
        """Validate like ``cuTensorMapEncodeTiled`` and return the map (``bytes(tm)`` are the 128 bytes)."""
        dtype = _enum(dtype, {k: v for k, v in DTYPES.items()}, "data type")
        rank = int(rank)
        if element_strides is None:
            element_strides = [1] * rank
        tm = cls(dtype, rank, int(global_address), tuple(int(x) for x in list(global_dim)[:rank]),
                 tuple(int(x) for x in list(global_strides)[:max(rank - 1, 0)]),
                 tuple(int(x) for x in list(box_dim)[:rank]), tuple(int(x) for x in list(element_strides)[:rank]),
                 _enum(interleave, INTERLEAVE, "interleave"), _enum(swizzle, {0: "NONE", 1: "32B", 2: "64B",
                                                                             3: "128B"}, "swizzle"),
                 _enum(l2_promotion, {**L2_PROMOTION, 4: "L2_256B"}, "L2 promotion"), int(oob_fill))
        tm.validate()
        return tm

    # -- the driver's rules -------------------------------------------------------------------------
    def validate(self):
        es = self.element_size
        r = self.rank

        def bad(rule):
            raise TensorMapError(f"cuTensorMapEncodeTiled: {rule}")
        if not 1 <= r <= 5:
            bad(f"tensorRank {r} must be 1..5")
        if self.interleave and r < 3:
            bad(f"tensorRank {r} must be at least 3 with interleave")
        if len(self.global_dim) != r or len(self.box_dim) != r or len(self.element_strides) != r or \
                len(self.global_strides) != r - 1:
            bad(f"globalDim, boxDim, elementStrides need {r} entries and globalStrides {r - 1}")
        align = 32 if self.interleave == 2 else 16
        if self.global_address % align:
            bad(f"globalAddress {self.global_address:#x} must be {align}-byte aligned")
        for i, d in enumerate(self.global_dim):
            if not 1 <= d <= 1 << 32:
                bad(f"globalDim[{i}] = {d} must be 1..2^32")
        for i, s in enumerate(self.global_strides):
            if s % align or not 0 < s < 1 << 40:
                bad(f"globalStrides[{i}] = {s} must be a multiple of {align} below 2^40")
        for i, b in enumerate(self.box_dim):
            if not 1 <= b <= 256:
                bad(f"boxDim[{i}] = {b} must be 1..256")
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                bad(f"elementStrides[{i}] = {e} must be 1..8")
        if self.oob_fill not in (0, 1):
            bad(f"oobFill {self.oob_fill} must be 0 (zeros) or 1 (NaN)")
        if self.oob_fill and self.dtype not in FLOAT_TYPES:
            bad(f"NaN OOB fill needs a floating-point type, not {DTYPES[self.dtype][0]}")
        if self.l2_promotion > 3:
            bad(f"l2Promotion {self.l2_promotion} must be 0..3 (L2_256B is refused on this GPU)")
        if self.interleave == 0:
            inner = self.box_dim[0] * es
            if inner % 16:
                bad(f"boxDim[0] * elementSize = {inner} bytes must be a multiple of 16")
            span = SWIZZLE_BYTES[self.swizzle]
            if span and inner > span:
                bad(f"boxDim[0] * elementSize = {inner} bytes exceeds the {span}-byte swizzle span")

    # -- bytes ---------------------------------------------------------------------------------------
    @property
    def element_size(self):
        return DTYPES[self.dtype][1]

    @property
    def dtype_name(self):
        return DTYPES[self.dtype][0]

    @property
    def box_elements(self):
        """Elements the box holds along each dimension: ceil(boxDim / elementStrides)."""
        return tuple(-(-b // e) for b, e in zip(self.box_dim, self.element_strides))

    @property
    def box_bytes(self):
        return math.prod(self.box_elements) * self.element_size

    def __bytes__(self):
        b = bytearray(128)
        _, es, code, tf32, _ = DTYPES[self.dtype]
        r = self.rank
        b[0:8] = (self.global_address & (1 << 64) - 1).to_bytes(8, "little")
        w = (r - 1) << 4 | code << 7 | self.interleave << 11 | self.swizzle << 13 | self.oob_fill << 15 | \
            tf32 << 16 | self.l2_promotion << 17
        b[8:12] = w.to_bytes(4, "little")
        hi = 0
        for k, s in enumerate(self.global_strides):
            s >>= 4
            b[12 + 4 * k:16 + 4 * k] = (s & 0xFFFFFFFF).to_bytes(4, "little")
            hi |= (s >> 32 & 0xF) << 4 * k
        b[28:32] = hi.to_bytes(4, "little")
        est = 0
        for k in range(r):
            b[32 + 4 * k:36 + 4 * k] = (self.global_dim[k] - 1).to_bytes(4, "little")
            b[55 + k] = self.box_dim[k] - 1
            est |= (self.element_strides[k] - 1) << 3 * k
        b[52:54] = est.to_bytes(2, "little")
        tx = math.prod(bd // e for bd, e in zip(self.box_dim, self.element_strides)) * es
        b[64:68] = (tx & 0xFFFFFFFF).to_bytes(4, "little")
        b[72:76] = _ATOM[self.swizzle].to_bytes(4, "little")
        return bytes(b)

    def to_numpy(self):
        return np.frombuffer(bytes(self), np.uint8).copy()

    @classmethod
    def decode(cls, raw) -> "TensorMap":
        """The map that 128 bytes describe (no validation: device-built maps are taken as they are)."""
        b = bytes(np.asarray(raw, np.uint8).reshape(-1)[:128]) if not isinstance(raw, (bytes, bytearray)) else \
            bytes(raw[:128])
        if len(b) != 128:
            raise TensorMapError(f"a tensor map is 128 bytes, got {len(b)}")
        q = int.from_bytes(b[8:12], "little")
        r = (q >> 4 & 7) + 1
        key = (q >> 7 & 0xF, q >> 16 & 1)
        if key not in _FROM_CODE:
            raise TensorMapError(f"tensor map: unknown element type code {key[0]}")
        hi = int.from_bytes(b[28:32], "little")
        strides = tuple(((hi >> 4 * k & 0xF) << 32 | int.from_bytes(b[12 + 4 * k:16 + 4 * k], "little")) << 4
                        for k in range(r - 1))
        est = int.from_bytes(b[52:54], "little")
        return cls(_FROM_CODE[key], r, int.from_bytes(b[0:8], "little"),
                   tuple(int.from_bytes(b[32 + 4 * k:36 + 4 * k], "little") + 1 for k in range(r)), strides,
                   tuple(b[55 + k] + 1 for k in range(r)), tuple((est >> 3 * k & 7) + 1 for k in range(r)),
                   q >> 11 & 3, q >> 13 & 3, q >> 17 & 7, q >> 15 & 1)

    def __str__(self):
        return (f"TensorMap({self.dtype_name}, rank {self.rank}, address {self.global_address:#x}, dims "
                f"{list(self.global_dim)}, strides {list(self.global_strides)}, box {list(self.box_dim)}, element "
                f"strides {list(self.element_strides)}, swizzle {SWIZZLE_BYTES[self.swizzle] or 'none'}, "
                f"OOB fill {'NaN' if self.oob_fill else 'zero'})")


# tensormap.replace field -> (byte offset, bit offset, bit width) writers, for the device-side path
def replace_field(raw: np.ndarray, field: str, ordinal: int | None, value: int):
    """Write one field of a 128-byte tensor map in place, as ``tensormap.replace.tile.<field>`` does."""
    def put_bits(byte, bit, width, v):
        word = int.from_bytes(bytes(raw[byte:byte + 8]), "little")
        mask = ((1 << width) - 1) << bit
        word = (word & ~mask) | ((int(v) << bit) & mask)
        raw[byte:byte + 8] = np.frombuffer(word.to_bytes(8, "little"), np.uint8)
    k = ordinal
    if field == "global_address":
        put_bits(0, 0, 64, value)
    elif field == "rank":                   # the operand is rank - 1
        put_bits(8, 4, 3, value)
    elif field == "elemtype":               # the operand is the CUtensorMapDataType enum
        if int(value) not in DTYPES:
            raise TensorMapError(f"tensormap.replace.elemtype: {value} is not a CUtensorMapDataType")
        _, _, code, tf32, _ = DTYPES[int(value)]
        put_bits(8, 7, 4, code)
        put_bits(8, 16, 1, tf32)
    elif field == "interleave_layout":
        put_bits(8, 11, 2, value)
    elif field == "swizzle_mode":          # only the mode bits: the H100 leaves the atom word (72..75) alone
        put_bits(8, 13, 2, value)
    elif field == "fill_mode":
        put_bits(8, 15, 1, value)
    elif field == "global_dim":
        put_bits(32 + 4 * k, 0, 32, int(value) - 1)
    elif field == "global_stride":
        s = int(value) >> 4
        put_bits(12 + 4 * k, 0, 32, s & 0xFFFFFFFF)
        put_bits(28, 4 * k, 4, s >> 32)
    elif field == "element_stride":
        put_bits(52, 3 * k, 3, int(value) - 1)
    elif field == "box_dim":
        put_bits(55 + k, 0, 8, int(value) - 1)
    else:
        raise TensorMapError(f"tensormap.replace: unknown field .{field}")
