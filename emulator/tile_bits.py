"""Raw element bits of user arrays and back (shared by the ``mma``/``gemm`` and ``wgmma`` tile APIs)."""
import numpy as np

from isa.mma import NUMPY_DTYPE
from .errors import OperandError, fail


MAX_TILE_ELEMENTS = 1 << 28     # 2 GiB of 64-bit element bits: larger arrays are refused before any copy


def as_tile(x, what, spelling):
    """A user's tile as a numpy array: a numeric array of at most MAX_TILE_ELEMENTS elements, or an
    OperandError naming the operand."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as e:             # ragged lists, objects numpy cannot convert
        fail(OperandError, spelling, f"{what} is not an array of numbers ({str(e)[:80]})")
    if arr.dtype.kind not in "biuf" and arr.dtype.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        fail(OperandError, spelling, f"{what} must be an array of numbers, not of dtype {arr.dtype}")
    if arr.size > MAX_TILE_ELEMENTS:
        fail(OperandError, spelling, f"{what} has {arr.size} elements; at most {MAX_TILE_ELEMENTS} are taken")
    return arr


def _elem_bits_of(x, t, what, spelling):
    """Raw element bits (uint64) of a user array of element type t."""
    import ml_dtypes  # noqa: F401  (registers bfloat16 / float8 dtypes with numpy)
    want = np.dtype(NUMPY_DTYPE[t]) if NUMPY_DTYPE[t] not in ("bfloat16", "float8_e4m3fn", "float8_e5m2") \
        else np.dtype(getattr(ml_dtypes, NUMPY_DTYPE[t]))
    x = as_tile(x, what, spelling)
    if x.dtype != want:
        if t in ("s4", "u4", "s8", "u8", "s32") and x.dtype.kind in "iu":
            pass
        else:
            fail(OperandError, spelling, f"{what} must be {want.name} for .{t}, got {x.dtype}")
    if t == "b1":
        if x.size and x.max() > 1:
            fail(OperandError, spelling, f"{what} holds values other than 0 and 1 for .b1")
        return x.astype(np.uint64)
    if t in ("s4", "u4"):
        lo, hi = (-8, 7) if t == "s4" else (0, 15)
        if x.size and (x.min() < lo or x.max() > hi):
            fail(OperandError, spelling, f"{what} holds values outside the .{t} range [{lo}, {hi}]")
        return (x.astype(np.int64) & 0xF).astype(np.uint64)
    if t in ("s8", "u8", "s32"):
        info = np.iinfo(want)
        if x.dtype != want and x.size and (x.min() < info.min or x.max() > info.max):
            fail(OperandError, spelling, f"{what} holds values outside the .{t} range")
        return (x.astype(np.int64) & ((1 << (8 * want.itemsize)) - 1)).astype(np.uint64)
    return x.view(f"u{want.itemsize}").astype(np.uint64)


def _from_bits(bits, t):
    import ml_dtypes
    name = NUMPY_DTYPE[t]
    dt = np.dtype(getattr(ml_dtypes, name)) if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2") else np.dtype(name)
    return bits.astype(f"u{dt.itemsize}").view(dt)
