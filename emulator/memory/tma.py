"""What the Tensor Memory Accelerator moves: the elements of a tensor-map box, where each lands in shared
memory (dense, innermost dimension fastest, then swizzled) and how out-of-bounds elements are filled.

Nothing here executes instructions; ``emulator.ops.bulk`` issues the copies and the CTA completes them.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import MemoryAccessError, TensorMapError
from .tensormap import DTYPES, FLOAT_TYPES, SWIZZLE_BYTES, TensorMap

# the bits an out-of-bounds element reads as with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA:
# 0x7FF7 in every 16-bit half (measured on the H100 for f32 and f64)
NAN_FILL = {2: 0x7FF7, 4: 0x7FF77FF7, 8: 0x7FF77FF77FF77FF7}
TF32_NAN = 0x7FFFE000


def to_tf32(bits):
    """The TMA's f32 -> tf32 conversion on load (TFLOAT32 maps): round to nearest even at bit 13, every NaN
    becomes 0x7FFFE000 (measured)."""
    b = bits.astype(np.uint64)
    r = ((b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)).astype(np.uint32)
    nan = ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x7FFFFF) != 0)
    return np.where(nan, np.uint32(TF32_NAN), r)


def swizzle(offsets, mode):
    """The shared-memory byte offsets after the TMA swizzle: 16-byte chunk bits [4, 4+B) are XORed with
    bits [7, 7+B), B = 1, 2, 3 for the 32/64/128-byte modes (CuTe's Swizzle<B,4,3>)."""
    if not mode:
        return offsets
    mask = (1 << mode) - 1
    return offsets ^ (((offsets >> 7) & mask) << 4)


def store_extent(dim0, es):
    """The elements of the innermost dimension a tiled store writes: whole 16-byte chunks, so a row whose bytes end
    inside a chunk is written to the chunk's end, past the tensor's last element (measured on the H100:
    tests/data/tma_edge.npz, f32 x 119, f16 x 117, u8 x 113 in rows of 128; loads fill exactly the elements past
    the tensor)."""
    return (dim0 * es + 15) // 16 * 16 // es


def box_geometry(tm: TensorMap, coords, whole_chunks=False):
    """For every element of the box in shared-memory order: its global byte address, whether it lies inside
    the tensor (``whole_chunks``: inside the store's extent of the innermost dimension, ``store_extent``), and its
    byte offset in the (unswizzled) shared-memory box."""
    n = tm.box_elements
    es = tm.element_size
    axes = [np.int64(c) + np.arange(k, dtype=np.int64) * e for c, k, e in zip(coords, n, tm.element_strides)]
    grids = np.meshgrid(*axes[::-1], indexing="ij")[::-1]           # dimension 0 fastest
    strides = [es] + list(tm.global_strides)
    addr = np.full(grids[0].shape, tm.global_address, np.int64)
    inside = np.ones(grids[0].shape, np.bool_)
    dims = list(tm.global_dim)
    if whole_chunks:
        dims[0] = store_extent(dims[0], es)
    for g, s, d in zip(grids, strides, dims):
        addr = addr + g * np.int64(s)
        inside &= (g >= 0) & (g < d)
    # rows of the innermost dimension are packed, except that a swizzled box pads each row to the swizzle
    # span (measured: a 32-byte row under the 64-byte swizzle occupies 64 bytes)
    inner = n[0] * es
    pitch = max(inner, SWIZZLE_BYTES[tm.swizzle])
    idx = np.arange(addr.size, dtype=np.int64)
    return addr.reshape(-1), inside.reshape(-1), (idx // n[0]) * pitch + (idx % n[0]) * es


def check_box(tm: TensorMap, instr, coords=None, store=False):
    """The rules the H100 enforces at copy time; it stops the kernel with an illegal-instruction fault
    otherwise (measured: tests/data/tma/tma_*.npz, every faulting case breaks one of these)."""
    if coords is not None:
        first = tm.global_address + coords[0] * tm.element_size + sum(
            c * s for c, s in zip(coords[1:], tm.global_strides))
        if first % 16:
            raise TensorMapError(f"{instr}: the box starts at global address {first:#x} (coordinate {coords[0]} of "
                                 f"the innermost dimension x {tm.element_size} bytes), not 16-byte aligned; the "
                                 f"H100 faults on this copy")
        if store and any(c < 0 for c in coords):
            raise TensorMapError(f"{instr}: a tensor store or reduction with a negative coordinate {list(coords)}; "
                                 f"the H100 faults on this copy (loads fill such elements instead)")
    if tm.element_strides[0] != 1:
        raise TensorMapError(f"{instr}: elementStrides[0] = {tm.element_strides[0]}: an element stride in the "
                             f"innermost dimension is not modelled (the H100 moves more bytes than the box "
                             f"holds there)")
    if tm.interleave:
        raise TensorMapError(f"{instr}: interleaved tensor maps are not supported")


def _global_bytes(gmem, instr, addr, inside, es):
    """(n, es) bytes of the inside elements (outside rows stay zero)."""
    out = np.zeros((addr.size, es), np.uint8)
    idx = np.flatnonzero(inside)
    if not idx.size:
        return out
    a = addr[idx]
    lo, hi = int(a.min()), int(a.max()) + es
    hit = gmem._find(lo, hi - lo)
    if hit is not None:
        buf, off = hit
        out[idx] = buf[(a - lo + off)[:, None] + np.arange(es)]
        return out
    for i in idx:
        buf, off = gmem._locate(int(addr[i]), es, instr)
        out[i] = buf[off:off + es]
    return out


def tile_load(tm: TensorMap, coords, gmem, instr):
    """The bytes the TMA writes for a tiled load: (offsets into the box after swizzle, bytes (n, es))."""
    check_box(tm, instr, coords)
    addr, inside, off = box_geometry(tm, coords)
    es = tm.element_size
    data = _global_bytes(gmem, instr, addr, inside, es)
    if DTYPES[tm.dtype][3]:                       # TFLOAT32 / TFLOAT32_FTZ: rounded as they load
        data = to_tf32(data.view(np.uint32).reshape(-1)).view(np.uint8).reshape(-1, 4)
    if tm.oob_fill and tm.dtype in FLOAT_TYPES and (~inside).any():
        fill = np.frombuffer(NAN_FILL[es].to_bytes(es, "little"), np.uint8)
        data[~inside] = fill
    return off, data


def tile_store_targets(tm: TensorMap, coords, instr, reduce=False):
    """(global addresses, written mask, unswizzled box offsets) of a tiled store (whole 16-byte chunks of the
    innermost dimension, ``store_extent``) or reduction (the elements inside the tensor: not measured past it)."""
    check_box(tm, instr, coords, store=True)
    return box_geometry(tm, coords, whole_chunks=not reduce)


def smem_addresses(base, off, es, mode):
    """Byte addresses (n, es) in the shared window of box elements at ``off`` from ``base``."""
    a = base + off
    chunks = swizzle(a, mode)
    return chunks[:, None] + np.arange(es)


# -- reductions (cp.reduce.async.bulk) ---------------------------------------------------------------

def _np_type(dtype):
    name = DTYPES[dtype][4]
    return ml_dtypes.bfloat16 if name == "bf16" else np.dtype(name)


def reduce_values(op, dtype, old, new, instr):
    """old (op) new for raw bytes (n, es) of a tensor-map type; returns bytes (n, es)."""
    t = _np_type(dtype)
    es = DTYPES[dtype][1]
    a = old.copy().view(t).reshape(-1)
    b = new.copy().view(t).reshape(-1)
    kind = np.dtype(t).kind if t is not ml_dtypes.bfloat16 else "f"
    if op == "add":
        if kind == "f":
            r = (a.astype(np.float64) + b.astype(np.float64)).astype(t)
        else:
            r = (a.astype(np.uint64) + b.astype(np.uint64)).astype(t)
    elif op in ("min", "max"):
        if kind == "f":
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            r = (np.fmin if op == "min" else np.fmax)(fa, fb).astype(t)
        else:
            r = np.minimum(a, b) if op == "min" else np.maximum(a, b)
    elif op in ("and", "or", "xor"):
        if kind == "f":
            raise TensorMapError(f"{instr}: .{op} needs an integer tensor type, not {DTYPES[dtype][0]}")
        r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](a, b)
    elif op in ("inc", "dec"):
        if DTYPES[dtype][0] != "UINT32":
            raise TensorMapError(f"{instr}: .{op} needs a UINT32 tensor, not {DTYPES[dtype][0]}")
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        if op == "inc":
            r = np.where(a64 >= b64, 0, a64 + 1).astype(np.uint32)
        else:
            r = np.where((a64 == 0) | (a64 > b64), b64, a64 - 1).astype(np.uint32)
    else:
        raise TensorMapError(f"{instr}: unknown reduction .{op}")
    return np.ascontiguousarray(r).view(np.uint8).reshape(-1, es)


def global_write(gmem, instr, addr, data):
    """Write rows of bytes (n, es) to global addresses (n,)."""
    if not addr.size:
        return
    es = data.shape[1]
    if getattr(gmem, "_uninit", None):          # a bulk or TMA store initialises what it writes
        gmem._mark_written(addr, es)
    lo, hi = int(addr.min()), int(addr.max()) + es
    hit = gmem._find(lo, hi - lo)
    if hit is not None:
        buf, off = hit
        buf[(addr - lo + off)[:, None] + np.arange(es)] = data
        return
    for a, row in zip(addr, data):
        buf, off = gmem._locate(int(a), es, instr)
        buf[off:off + es] = row


def global_read(gmem, instr, addr, es):
    if not addr.size:
        return np.zeros((0, es), np.uint8)
    return _global_bytes(gmem, instr, addr, np.ones(addr.size, np.bool_), es)


__all__ = ["swizzle", "box_geometry", "store_extent", "tile_load", "tile_store_targets", "smem_addresses", "reduce_values",
           "global_write", "global_read", "MemoryAccessError"]
