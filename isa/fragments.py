"""Packing whole tiles into lane registers and back, driven by the fragment tables of ``isa.mma``.

``pack(variant, op, tile_bits)`` takes raw element bits, shape ``(..., rows, cols)`` (any unsigned or signed
integer dtype; only the low ``w`` bits of each element are used), and returns register bits of shape
``(..., n_regs, 32)`` (uint32, or uint64 for 64-bit registers).  ``unpack`` is its inverse.
"""
import numpy as np


def _index(variant, op):
    f = variant.fragment(op)
    rows, cols = variant.tile_shape(op)
    return f[..., 0] * cols + f[..., 1], rows, cols        # (n_regs, 32, epr) flat tile index


def _mask(w):
    return np.uint64((1 << w) - 1)


def reg_dtype(variant, op):
    return np.uint64 if variant.reg_bits(op) == 64 else np.uint32


def pack(variant, op, tile_bits):
    idx, rows, cols = _index(variant, op)
    w = variant.elem_bits(op)
    t = np.asarray(tile_bits)
    assert t.shape[-2:] == (rows, cols), \
        f"{variant.spelling}: operand {op} must be {rows}x{cols}, got {t.shape[-2:]}"
    flat = t.reshape(t.shape[:-2] + (rows * cols,)).astype(np.uint64) & _mask(w)
    elems = flat[..., idx]                                  # (..., n_regs, 32, epr)
    shifts = (np.arange(idx.shape[-1], dtype=np.uint64) * np.uint64(w))
    regs = np.bitwise_or.reduce(elems << shifts, axis=-1)
    return regs.astype(reg_dtype(variant, op))


def unpack(variant, op, regs):
    """Register bits (..., n_regs, 32) -> raw element bits (..., rows, cols) as uint64."""
    idx, rows, cols = _index(variant, op)
    w = variant.elem_bits(op)
    r = np.asarray(regs).astype(np.uint64)
    assert r.shape[-2:] == idx.shape[:2], \
        f"{variant.spelling}: operand {op} needs {idx.shape[0]} registers x 32 lanes, got {r.shape[-2:]}"
    epr = idx.shape[-1]
    mask = _mask(w)
    shifts = np.arange(epr, dtype=np.uint64) * np.uint64(w)
    elems = (r[..., None] >> shifts) & mask                 # (..., n_regs, 32, epr)
    out = np.zeros(r.shape[:-2] + (rows * cols,), np.uint64)
    out[..., idx.reshape(-1)] = elems.reshape(r.shape[:-2] + (-1,))
    return out.reshape(r.shape[:-2] + (rows, cols))
