"""Register access of the fast engine's loops and of the instruction families compiled apart from them: a
register operand (``table``: class << CLASS_SHIFT | arena index, or an immediate) read or written for one lane or
for all 32, with the truncation and extension rules of ``ops.common.src``/``dst``."""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from . import table as T
from .raw import _mask, _sext
from ...numerics.jitcache import INNER, lean

LEAN = lean()       # the loops' pipeline (jitcache.lean: no SSA; tests/test_lean_pipeline.py checks the types)

U0 = np.uint64(0)
U1 = np.uint64(1)
IDX = T.INDEX_MASK
LANES = 32
FULL = 0xFFFFFFFF           # a lane mask of all 32 lanes
M32 = np.uint64(0xFFFFFFFF)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
# widths and signedness passed to _gather/_scatter as int64, never as literals: numba compiles a function once
# per literal argument value it is called with
I0, I1, I16, I32, I64 = np.int64(0), np.int64(1), np.int64(16), np.int64(32), np.int64(64)


@njit(cache=True, inline="always")
def _cwidth(c):
    if c == T.R32:
        return 32
    if c == T.R64:
        return 64
    if c == T.R16:
        return 16
    return 1


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _rd(e, lane, a8, a16, a32, a64, im):
    if e < -1:
        return im[-2 - e]
    c = e >> T.CLASS_SHIFT
    i = (e & IDX) + lane
    if c == T.R32:
        return np.uint64(a32[i])
    if c == T.R64:
        return a64[i]
    if c == T.R16:
        return np.uint64(a16[i])
    return np.uint64(a8[i])


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _rdf(e, lane, tw, sgn, a8, a16, a32, a64, im):
    """A source read as a tw-bit typed value (``ops.common.src``: truncate, or extend a narrower register)."""
    raw = _rd(e, lane, a8, a16, a32, a64, im)
    if e < -1:
        return raw
    rw = _cwidth(e >> T.CLASS_SHIFT)
    if tw == 1:
        return U1 if raw != U0 else U0
    if sgn and tw > rw and rw > 1:
        raw = _sext(raw, rw)
    return raw & _mask(tw)


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _wrf(e, lane, v, tw, sgn, a8, a16, a32, a64):
    """Write a tw-bit value into a register (``ops.common.dst``: truncate, or extend by signedness)."""
    if e < 0:
        return
    c = e >> T.CLASS_SHIFT
    i = (e & IDX) + lane
    if c == T.PRED:
        a8[i] = 1 if v != U0 else 0
        return
    rw = _cwidth(c)
    if sgn and rw > tw:
        v = _sext(v, tw)
    if c == T.R32:
        a32[i] = np.uint32(v & np.uint64(0xFFFFFFFF))
    elif c == T.R64:
        a64[i] = v
    else:
        a16[i] = np.uint16(v & np.uint64(0xFFFF))


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _gather(e, tw, sgn, out, a8, a16, a32, a64, im):
    """All 32 lanes of a source read as tw-bit typed values (``ops.common.src``)."""
    if e < -1:
        v = im[-2 - e]
        for lane in range(LANES):
            out[lane] = v
        return
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    if c == T.R32:
        for lane in range(LANES):
            out[lane] = np.uint64(a32[i + lane])
        rw = 32
    elif c == T.R64:
        for lane in range(LANES):
            out[lane] = a64[i + lane]
        rw = 64
    elif c == T.R16:
        for lane in range(LANES):
            out[lane] = np.uint64(a16[i + lane])
        rw = 16
    else:
        for lane in range(LANES):
            out[lane] = np.uint64(a8[i + lane] != 0)
        rw = 1
    if tw == 1:
        for lane in range(LANES):
            out[lane] = U1 if out[lane] != U0 else U0
    elif sgn and tw > rw and rw > 1:
        for lane in range(LANES):
            out[lane] = _sext(out[lane], rw) & _mask(tw)
    elif tw < rw:
        mk = _mask(tw)
        for lane in range(LANES):
            out[lane] &= mk


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _scatter(e, vals, em, tw, sgn, a8, a16, a32, a64):
    """Write tw-bit values to the lanes in ``em`` of a register (``ops.common.dst``)."""
    if e < 0:
        return
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    pred = c == T.PRED
    ext = sgn and _cwidth(c) > tw and not pred
    if em == FULL and not ext and not pred:     # every lane, no extension: one plain copy (the common case)
        if c == T.R32:
            for lane in range(LANES):
                a32[i + lane] = np.uint32(vals[lane] & M32)
        elif c == T.R64:
            for lane in range(LANES):
                a64[i + lane] = vals[lane]
        else:
            for lane in range(LANES):
                a16[i + lane] = np.uint16(vals[lane] & np.uint64(0xFFFF))
        return
    # the lanes of em one after the other, lowest first: a loop over the mask's bits, which LLVM does not unroll
    # into 32 copies (the function is linked into every family that writes registers)
    sm = (U1 << np.uint64(tw - 1)) if ext else U0       # ((v & mk) ^ sm) - sm: v's tw bits sign-extended
    mk = _mask(tw) if ext else ALL
    m = np.uint64(em)
    while m != U0:
        b = trailing_zeros(m)       # (not ``lane``: the loops above type that int64)
        m &= m - U1
        v = vals[b]
        if pred:
            a8[i + b] = 1 if v != U0 else 0
            continue
        v = ((v & mk) ^ sm) - sm
        if c == T.R32:
            a32[i + b] = np.uint32(v & M32)
        elif c == T.R64:
            a64[i + b] = v
        else:
            a16[i + b] = np.uint16(v & np.uint64(0xFFFF))


# _copy_src and _copy_dst are compiled once and inlined by LLVM where they are called (forceinline: the plain copies
# run without a call, whose arguments would be every register view); numba's own inline="always" would type and
# lower their code again at every use. They call nothing, so that no other function's code comes with them into
# each function that uses them (LLVM would optimise it again there): the caller falls back to _gather/_scatter.


@njit(cache=True, _nrt=False, forceinline=True, pipeline_class=LEAN, **INNER)
def _copy_src(e, tw, out, a8, a32, a64, im):
    """``_gather(e, tw, ...)`` where it is a plain copy: an immediate, or a register of width tw (32 or 64), into
    ``out``; a predicate register read at 1 bit as 0/1. False (nothing read) otherwise: the caller ``_gather``s."""
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    if e < -1:
        v = im[-2 - e]
        for lane in range(LANES):
            out[lane] = v
    elif tw == 32 and c == T.R32:
        for lane in range(LANES):
            out[lane] = np.uint64(a32[i + lane])
    elif tw == 64 and c == T.R64:
        for lane in range(LANES):
            out[lane] = a64[i + lane]
    elif tw == 1 and c == T.PRED:
        for lane in range(LANES):
            out[lane] = U1 if a8[i + lane] != 0 else U0
    else:
        return False
    return True


@njit(cache=True, _nrt=False, forceinline=True, pipeline_class=LEAN, **INNER)
def _copy_dst(e, vals, em, tw, a8, a32, a64):
    """``_scatter(e, vals, em, tw, ...)`` where it is a plain copy: by the whole warp into a register of width tw
    (32 or 64), or into a predicate register; nothing for no register (e < 0). False (nothing written) otherwise:
    the caller ``_scatter``s."""
    if e < 0:
        return True
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    if c == T.R32 and tw == 32 and em == FULL:
        for lane in range(LANES):
            a32[i + lane] = np.uint32(vals[lane] & M32)
    elif c == T.R64 and tw == 64 and em == FULL:
        for lane in range(LANES):
            a64[i + lane] = vals[lane]
    elif c == T.PRED:
        for lane in range(LANES):
            if (em >> lane) & 1:
                a8[i + lane] = 1 if vals[lane] != U0 else 0
    else:
        return False
    return True
