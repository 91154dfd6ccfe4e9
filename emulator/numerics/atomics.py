"""The arithmetic of atom / red / red.async on raw bits, one element per lane (numpy arrays of uint).

Which rule a float update follows depends on where the H100 performs it (tools/hwcapture/atomics/, measured):

* ``unit``: the memory system's atomic unit (global memory, and another CTA's shared memory): ``add.f32`` flushes
  subnormal operands and results and gives the canonical NaN; ``add.f64`` keeps subnormals and passes a NaN
  operand through unchanged (b's if b is a NaN, else the old value's; a signalling NaN stays signalling);
* ``loop``: a compare-and-swap loop around an ordinary add (shared memory of this CTA, and every ``.f16``/
  ``.bf16`` scalar add wherever it lands): ``add.f32`` keeps subnormals and gives the canonical NaN,
  ``add.f64`` propagates NaNs quieted (the old value's first), f16/bf16 give the canonical NaN (inf - inf in
  float64 gives 0xFFF8000000000000 in both places);
* the packed and vector half forms (``.f16x2``, ``.bf16x2``, ``.v2/.v4/.v8``) and min/max of halves: see
  ``HALF_RULES``.

Integer updates are exact and the same everywhere.
"""
from __future__ import annotations

import numpy as np

from .fround import FORMATS, flush, round_to, two_sum

UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}
F64_DEFAULT_NAN = 0xFFF8000000000000        # what inf - inf gives in float64 (H100, as add.f64 does)
FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _signed(v, w):
    return v.astype(np.int64) if w == 64 else v.astype(np.int64) - ((v.astype(np.int64) >> (w - 1)) << w)


def int_update(op, ptype, old, b, c=None):
    """One update of an integer or bit type: old, b, c are uint arrays of the type's width."""
    w = old.dtype.itemsize * 8
    if op == "exch":
        return b.copy()
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "and":
        return old & b
    if op == "or":
        return old | b
    if op == "xor":
        return old ^ b
    if op == "inc":
        return np.where(old >= b, old.dtype.type(0), old + old.dtype.type(1))
    if op == "dec":
        return np.where((old == 0) | (old > b), b, old - old.dtype.type(1))
    if op == "add":
        with np.errstate(over="ignore"):
            return old + b
    if ptype[0] == "s":
        so, sb = old.view(np.dtype(f"i{w // 8}")), b.view(np.dtype(f"i{w // 8}"))
        r = np.minimum(so, sb) if op == "min" else np.maximum(so, sb)
        return r.view(old.dtype)
    return np.minimum(old, b) if op == "min" else np.maximum(old, b)


def _isnan(bits, fmt):
    w = FLOAT_BITS[fmt]
    ut = UINT[w]
    exp_mask = {"f16": 0x7C00, "bf16": 0x7F80, "f32": 0x7F800000, "f64": 0x7FF0000000000000}[fmt]
    frac = {"f16": 0x3FF, "bf16": 0x7F, "f32": 0x7FFFFF, "f64": 0xFFFFFFFFFFFFF}[fmt]
    return ((bits & ut(exp_mask)) == ut(exp_mask)) & ((bits & ut(frac)) != 0)


def _quiet(bits, fmt):
    q = {"f16": 0x200, "bf16": 0x40, "f32": 0x400000, "f64": 0x8000000000000}[fmt]
    return bits | UINT[FLOAT_BITS[fmt]](q)


def float_add(fmt, old, b, ftz, nan):
    """old + b rounded to nearest even in ``fmt``; ``ftz``: flush subnormal operands and result;
    ``nan``: "canonical" (the format's canonical NaN), "quiet" (the old value's NaN quieted, else b's) or
    "pass_b" (b's NaN unchanged, else the old value's)."""
    dt, ut, cnan, _ = FORMATS[fmt]
    x = old.view(dt).astype(np.float64)
    y = b.view(dt).astype(np.float64)
    if ftz:
        x = flush(old.view(dt), fmt).astype(np.float64)
        y = flush(b.view(dt), fmt).astype(np.float64)
    s, e = two_sum(x, y)
    r = np.asarray(round_to(s, fmt, "rn", e=e, ftz=ftz)).view(ut).copy()
    na, nb = _isnan(old, fmt), _isnan(b, fmt)
    anynan = na | nb | _isnan(r, fmt)
    if anynan.any():
        fresh = ut(F64_DEFAULT_NAN if fmt == "f64" else cnan)     # inf - inf
        if nan == "canonical":
            pick = np.full(r.shape, cnan, ut)
        elif nan == "quiet":
            pick = np.where(na, _quiet(old, fmt), np.where(nb, _quiet(b, fmt), fresh))
        else:
            pick = np.where(nb, b, np.where(na, old, fresh))
        r = np.where(anynan, pick, r)
    return r


def float_minmax(op, fmt, old, b):
    """min/max of halves as min.f16 / max.f16 do: a NaN operand gives the other one, two NaNs the canonical
    NaN, -0 is below +0."""
    dt, ut, cnan, _ = FORMATS[fmt]
    x = old.view(dt).astype(np.float64)
    y = b.view(dt).astype(np.float64)
    na, nb = np.isnan(x), np.isnan(y)
    sx, sy = np.signbit(x), np.signbit(y)
    if op == "min":
        pick_x = (x < y) | ((x == y) & sx)
    else:
        pick_x = (x > y) | ((x == y) & ~sx)
    r = np.where(pick_x, old, b)
    r = np.where(na & ~nb, b, np.where(nb & ~na, old, r))
    return np.where(na & nb, ut(cnan), r).astype(ut)


def float_update(op, fmt, old, b, where):
    """One float update (add, min, max) of ``fmt`` elements performed ``where`` ("unit" or "loop")."""
    with np.errstate(all="ignore"):
        return _float_update(op, fmt, old, b, where)


def _float_update(op, fmt, old, b, where):
    if op in ("min", "max"):
        return float_minmax(op, fmt, old, b)
    if fmt == "f32":
        return float_add(fmt, old, b, ftz=where == "unit", nan="canonical")
    if fmt == "f64":
        return float_add(fmt, old, b, ftz=False, nan="pass_b" if where == "unit" else "quiet")
    return float_add(fmt, old, b, ftz=False, nan="canonical")
