"""IEEE rounding primitives for the scalar floating-point instructions (add, mul, fma, div, sqrt, cvt).

Every operation is computed as an exact or faithfully tracked float64 value and then rounded once to
the destination format with the instruction's rounding mode:

* ``x`` (float64) plus an error term ``e`` with ``x + e`` the exact result (``e`` = 0 when ``x`` is exact;
  TwoSum gives it for additions). :func:`round_to` first folds ``e`` into ``x`` by *round to odd*
  (53 bits >= 24 + 2, so a second rounding to f32/f16/bf16 is then correct in every mode).
* Products of two f32 (or f16/bf16) values are exact in float64; quotients and square roots of f32 values
  computed in float64 cannot fall on or across an f32 rounding boundary unless exact (53 >= 2*24 + 2),
  so rounding the float64 result is correct there too.
* float64 results in a directed mode, and ``fma.f64``, go through exact rationals (:func:`round_exact`).

Modes use the PTX spellings: ``rn`` (nearest even), ``rz`` (toward zero), ``rm`` (toward -inf),
``rp`` (toward +inf). NaN results are the canonical NaN the GPU produces (all fraction bits set, sign 0).
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

# format -> (numpy storage dtype, unsigned bits dtype, canonical NaN bits, smallest normal)
FORMATS = {
    "f16": (np.float16, np.uint16, 0x7FFF, 2.0 ** -14),
    "bf16": (ml_dtypes.bfloat16, np.uint16, 0x7FFF, 2.0 ** -126),
    "f32": (np.float32, np.uint32, 0x7FFFFFFF, 2.0 ** -126),
    "f64": (np.float64, np.uint64, 0x7FF8000000000000, 2.0 ** -1022),   # f64 NaNs propagate; this one is
                                                                        # what min/max of two NaNs give
}
MODES = ("rn", "rz", "rm", "rp")


def two_sum(a, b):
    """s, e with s = fl(a + b) and a + b == s + e exactly (float64 arrays)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    e = np.where(np.isfinite(s), e, 0.0)
    return s, e


def round_odd(x, e):
    """Fold the error term into x: the float64 neighbour of x + e whose last bit is odd (round to odd)."""
    adj = (e != 0) & ((x.view(np.uint64) & np.uint64(1)) == 0) & np.isfinite(x)
    if not adj.any():
        return x
    return np.where(adj, np.nextafter(x, np.where(e > 0, np.inf, -np.inf)), x)


def _bits_step(bits, up, nbits):
    """Raw bits of the next representable value toward +inf (up) or -inf, for sign-magnitude formats."""
    sign = np.uint64(1) << np.uint64(nbits - 1)
    b = bits.astype(np.uint64)
    neg = (b & sign) != 0
    mag = b & ~sign
    # toward +inf: positive grows, negative shrinks; -0 -> +smallest
    grow = np.where(up, ~neg, neg)
    out = np.where(grow, b + np.uint64(1), b - np.uint64(1))
    zero = mag == 0
    out = np.where(zero, np.where(up, np.uint64(1), sign | np.uint64(1)), out)
    return out.astype(FORMATS_BITS[nbits])


FORMATS_BITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _f64_to_bf16_bits(y):
    """float64 -> bf16 raw bits, round to nearest even, via an f32 rounded to odd."""
    r = y.astype(np.float32)
    back = r.astype(np.float64)
    rb = r.view(np.uint32)
    fix = (back != y) & ((rb & np.uint32(1)) == 0) & np.isfinite(y) & np.isfinite(back)
    if fix.any():
        rb = np.where(fix, _bits_step(rb, y > back, 32), rb)
    nan = np.isnan(y)
    lsb = (rb >> np.uint32(16)) & np.uint32(1)
    with np.errstate(over="ignore"):
        out = ((rb.astype(np.uint64) + np.uint64(0x7FFF) + lsb) >> np.uint64(16)).astype(np.uint16)
    return np.where(nan, np.uint16(0x7FFF), out)


def round_to(x, fmt, mode="rn", e=None, ftz=False, sat=False, overflow=None):
    """Round float64 values ``x`` (+ exact error ``e``) to ``fmt``; returns numpy values of that format.

    ``overflow`` (float64 targets): lanes whose exact result is finite although ``x`` overflowed to inf
    (directed modes then give the largest finite value where IEEE says so)."""
    x = np.asarray(x, np.float64)
    dt, ut, cnan, tiny = FORMATS[fmt]
    nbits = np.dtype(ut).itemsize * 8
    if ftz and fmt != "f64":
        x, e = _ftz_tiny(x, e, fmt, mode)
    if fmt == "f64":
        r = x.copy()                     # x is already the nearest float64 of x + e
        if e is not None and mode != "rn":
            r = _directed_f64(r, e, mode)
        if overflow is not None and mode != "rn" and overflow.any():
            big = np.finfo(np.float64).max
            keep_inf = (mode == "rm") & (r < 0) | (mode == "rp") & (r > 0)
            r = np.where(overflow & ~keep_inf, np.copysign(big, r), r)
        if sat:                          # [0, 1]; NaN and -0 give +0 (H100)
            r = np.where(np.isnan(r) | (r == 0), 0.0, np.clip(r, 0, 1))
        if ftz:
            r = flush(r, fmt)
        return canon_nan(r, fmt)
    if e is not None:
        x = round_odd(x, e)
    if fmt == "bf16":
        r = _f64_to_bf16_bits(x).view(dt)
    else:
        with np.errstate(over="ignore"):
            r = x.astype(dt)
    if mode != "rn" and fmt != "f64":
        back = r.astype(np.float64)
        fin = np.isfinite(x)
        if mode == "rz":
            step = fin & (np.abs(back) > np.abs(x))
            up = back < 0
        elif mode == "rm":
            step = fin & (back > x)
            up = np.zeros_like(step)
        else:
            step = fin & (back < x)
            up = np.ones_like(step)
        if step.any():
            r = np.where(step, _bits_step(r.view(ut), up, nbits).view(dt), r)
    if sat:                              # [0, 1]; NaN and -0 give +0 (H100)
        rf = r.astype(np.float64)
        r = np.where(np.isnan(rf) | (rf == 0), np.zeros_like(r), np.clip(r, 0, 1).astype(dt))
    if ftz:
        r = flush(r, fmt)
    return canon_nan(r, fmt)


def _ftz_tiny(x, e, fmt, mode):
    """.ftz: a result that is tiny after rounding *with an unbounded exponent* becomes a zero of its sign
    (H100: 2047 * 2^-25 in f16 flushes although rounding to the subnormal grid reaches the smallest normal;
    -2^-14 + 1.5 * 2^-28 does not flush because it rounds to -2^-14)."""
    tiny = FORMATS[fmt][3]
    with np.errstate(invalid="ignore"):
        small = (np.abs(x) < 2 * tiny) & (x != 0)
    if not small.any():
        return x, e
    scale = 2.0 ** 20 if fmt == "f16" else 2.0 ** 100       # moves the subnormal range into the normal one
    xs = np.where(small, x * scale, 0.0)
    es = None if e is None else np.where(small, e * scale, 0.0)
    r = round_to(xs, fmt, mode, es).astype(np.float64)
    flushed = small & (np.abs(r) < tiny * scale)
    x = np.where(flushed, np.copysign(0.0, x), x)
    if e is not None:
        e = np.where(flushed, 0.0, e)
    return x, e


def _directed_f64(x, e, mode):
    fin = np.isfinite(x)
    if mode == "rz":
        step = fin & (e != 0) & (np.sign(e) != np.sign(x))
        return np.where(step, np.nextafter(x, 0.0), x)
    if mode == "rm":
        return np.where(fin & (e < 0), np.nextafter(x, -np.inf), x)
    return np.where(fin & (e > 0), np.nextafter(x, np.inf), x)


def canon_nan(r, fmt):
    if fmt == "f64":
        return r     # the float64 unit propagates NaN operands, quieted (measured on H100), like numpy
    dt, ut, cnan, _ = FORMATS[fmt]
    nan = np.isnan(r.astype(np.float64)) if fmt == "bf16" else np.isnan(r)
    if nan.any():
        r = np.where(nan, np.full(r.shape, cnan, ut).view(dt), r)
    return r


def flush(v, fmt):
    """Flush subnormal values to zero of the same sign (.ftz)."""
    dt, ut, _, tiny = FORMATS[fmt]
    a = np.abs(v.astype(np.float64))
    sub = (a < tiny) & (a > 0)
    if not sub.any():
        return v
    nbits = np.dtype(ut).itemsize * 8
    sign = v.view(ut) & ut(1 << (nbits - 1))
    return np.where(sub, sign.view(dt), v)


# ----------------------------------------------------------------------------------------------
# Exact rational path (float64 in directed modes, fma.f64, 64-bit integer -> float)

def exact_zero(values):
    """Lanes whose exact rational result is exactly zero (their sign follows the IEEE rules of the caller)."""
    return np.array([not isinstance(q, float) and q == 0 for q in values], np.bool_)


def round_exact(values, fmt, mode="rn"):
    """Round exact rationals (a list of Fraction / int, or float('nan') / +-inf) to ``fmt``."""
    out = np.empty(len(values), np.float64)
    for i, q in enumerate(values):
        out[i] = _round_fraction_f64(q, mode) if fmt == "f64" else _round_fraction_f64(q, "rz_odd")
    if fmt == "f64":
        return canon_nan(out, "f64")
    return round_to(out, fmt, mode)


def _round_fraction_f64(q, mode):
    if isinstance(q, float):
        return q                          # NaN, infinities and signed zeros are decided by the caller
    if q == 0:
        return -0.0 if mode == "rm" else 0.0
    try:
        r = q.numerator / q.denominator          # correctly rounded (nearest even)
    except OverflowError:
        r = math.inf if q > 0 else -math.inf
    if math.isinf(r):
        exact_cmp = 1 if q > 0 else -1           # |q| is beyond the largest float
        if mode in ("rz", "rz_odd") or (mode == "rm" and q > 0) or (mode == "rp" and q < 0):
            return math.copysign(np.finfo(np.float64).max, r)
        return r
    if r == 0:
        r = math.copysign(0.0, q)         # a nonzero result that rounds to zero keeps its sign
    fr = Fraction(r)
    if fr == q or mode == "rn":
        return r
    if mode == "rz_odd":                         # round to odd: keep sticky information for a second rounding
        lo = r if abs(fr) < abs(q) else math.nextafter(r, 0.0)
        hi = math.nextafter(lo, math.copysign(math.inf, r))
        return lo if (struct_bits(lo) & 1) else hi
    if mode == "rz":
        out = r if abs(fr) < abs(q) else math.nextafter(r, 0.0)
    elif mode == "rm":
        out = r if fr < q else math.nextafter(r, -math.inf)
    else:
        out = r if fr > q else math.nextafter(r, math.inf)
    return math.copysign(0.0, q) if out == 0 else out


def struct_bits(x):
    return int(np.float64(x).view(np.uint64))


def zero_sum_sign(s, a, b, mode):
    """IEEE 754 sign of an exactly-zero sum a + b: -0 only when both addends are -0, or in round-down mode
    unless both are +0. ``s`` is the computed sum; returns s with the rule applied."""
    if mode != "rm":
        return s
    z = s == 0
    if not z.any():
        return s
    both_pos = (a == 0) & (b == 0) & ~np.signbit(a) & ~np.signbit(b)
    return np.where(z & ~both_pos, -0.0, s)


def exact(v):
    """A float as an exact Fraction (NaN and infinities stay floats)."""
    v = float(v)
    return Fraction(v) if math.isfinite(v) else v
