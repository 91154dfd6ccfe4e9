"""The fast engine's MUFU forms and its other float rows (f32 min/max/neg/abs/copysign, the .ftz and contracted
f32 arithmetic, the common float conversions): the same arithmetic as ``numerics.mufu``, ``ops.falu`` and
``ops.cvt``, lane by lane in numba.

The readable executors are the definition (for MUFU, ``numerics.mufu``: an array model proven equal to the
H100 on every input); the functions here transcribe them one lane at a time, step for step (the same integer
rounding of binary64 bits, the same table reads, the same special cases), and ``tests/test_fastcore.py`` checks
them against the executors on special values and random bits, and against the committed H100 sample.

All of it is compiled apart from the loops (six families of ``families.py``, each one C-callable function the
loop calls through its address: "mufu" (ex2, rcp, the divisions), ``fcall.entry_mufu`` with ``mufu_rows``; "mufu_r"
(lg2, rsqrt, sqrt), ``fcall.entry_mufu_r`` with ``mufu_r_rows``; "mufu_x" (sin, cos, tanh), ``fcall.entry_mufu_x``
with ``mufu_x_rows``; "fcvt", ``fcall.entry_cvt`` with ``cvt_rows``; "float" (min, max, neg, abs), ``fcall.entry``
with ``misc_rows``; "farith" (the .ftz arithmetic, a product or a division contracted with an add),
``fcall.entry_farith`` with ``farith_rows``),
so it adds nothing to the loops' compile time, and each
is compiled (or loaded from numba's cache) only when a translated kernel has one of its rows.

Values are raw f32 bits held in int64 (mixed int64/uint64 arithmetic would turn into float64 in numba).
The measured tables are read through raw pointers (``mptr``: one per name of ``TABLES``, filled by the
translation with the tables its MUFU rows need; ``msz``: their lengths), as the loop reads global memory.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import table as T
from ...numerics.fast import f2i as _bits64, i2f as _f64_bits
from ...numerics.mufu import TANH_SHIFT as _TANH_SHIFT
from ...numerics.jitcache import INNER

# booleans passed as arguments as np.bool_, not literals: numba compiles a function once per literal argument
_TRUE, _FALSE = np.bool_(True), np.bool_(False)

LANES = 32
CANON = 0x7FFFFFFF
TWO_PI_RECIP = 0x3E22F983

# the measured tables the f32 forms read, by the index mptr/msz use
TABLES = ("rcp", "rsq_even", "rsq_odd", "sqrt_even", "sqrt_odd", "ex2", "ex2_neg", "lg2_e0", "lg2_em1",
          "sin_q0", "cos_q0") + tuple(f"tanh_{e}" for e in range(119, 130))
(T_RCP, T_RSQ_EVEN, T_RSQ_ODD, T_SQRT_EVEN, T_SQRT_ODD, T_EX2, T_EX2_NEG, T_LG2_E0, T_LG2_EM1, T_SIN,
 T_COS) = range(11)
T_TANH = 11                                   # tanh_119 .. tanh_129
TANH_SHIFT = tuple(_TANH_SHIFT[e] for e in range(119, 130))   # mantissa bits dropped, binade 119 on

# the forms (row field X of MUFU rows; Y: 1 = .ftz)
EX2, LG2, RCP, RSQRT, SQRT, SIN, COS, TANH = range(8)
UNARY = {"ex2": EX2, "lg2": LG2, "rcp": RCP, "rsqrt": RSQRT, "sqrt": SQRT, "sin": SIN, "cos": COS, "tanh": TANH}
UNARY_X = (SIN, COS, TANH)      # the forms of MUFU_X rows (the "mufu_x" family: unary_x)
UNARY_R = (LG2, RSQRT, SQRT)    # the forms of MUFU_R rows (the "mufu_r" family: unary_r); ex2 and rcp: MUFU rows
NEEDS = {EX2: (T_EX2, T_EX2_NEG), LG2: (T_LG2_E0, T_LG2_EM1), RCP: (T_RCP,), RSQRT: (T_RSQ_EVEN, T_RSQ_ODD),
         SQRT: (T_SQRT_EVEN, T_SQRT_ODD), SIN: (T_SIN, T_COS), COS: (T_SIN, T_COS),
         TANH: tuple(range(T_TANH, T_TANH + 11))}
DIV_APPROX, DIV_FULL = 0, 1                   # MUFU_DIV rows: X
F_ADD, F_SUB, F_MUL, F_FMA = range(4)         # FARITH rows: X
# FCVT rows: X (Y: the integer rounding of CV_FRNDI, rni/rzi/rmi/rpi; Z: 1 = .ftz)
CV_S32_F32, CV_U32_F32, CV_FRNDI, CV_F16_F32, CV_BF16_F32, CV_F32_F16, CV_F32_BF16, CV_PACK_F16, CV_PACK_BF16 = range(9)


@intrinsic
def _f64_of(typingctx, bits):
    """The binary32 whose bits are the low 32 of ``bits``, widened exactly to binary64."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        f = builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())
        return builder.fpext(f, ir.DoubleType())
    return sig, codegen


@intrinsic
def _bits32(typingctx, x):
    """The bits of a binary32, zero-extended to int64."""
    sig = types.int64(types.float32)

    def codegen(context, builder, signature, args):
        return builder.zext(builder.bitcast(args[0], ir.IntType(32)), ir.IntType(64))
    return sig, codegen


@intrinsic
def _tab(typingctx, ptr, idx):
    """Entry ``idx`` of the uint32 table at the raw address ``ptr``, as int64."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        p = builder.inttoptr(builder.add(args[0], builder.shl(args[1], ir.Constant(ir.IntType(64), 2))),
                             ir.IntType(32).as_pointer())
        return builder.zext(builder.load(p, align=4), ir.IntType(64))
    return sig, codegen


@njit(cache=True, _nrt=False, **INNER)
def round_f32(v, rz, ftz):
    """numerics.mufu.round_to_f32 of one binary64 value: RNE (or RZ), subnormals kept, or .ftz's rule."""
    b = _bits64(v)
    s = (b >> 63) & 1
    E = (b >> 52) & 0x7FF
    frac = b & ((1 << 52) - 1)
    if E == 0x7FF:
        return CANON if frac != 0 else (s << 31) | 0x7F800000
    if E == 0:
        return s << 31
    sig = frac | (1 << 52)
    e = E - 1023
    if ftz:
        shift = 29
    else:
        shift = min(max(29 + max(-126 - e, 0), 29), 60)
    mant = sig >> shift
    rem = sig & ((1 << shift) - 1)
    if not rz:
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (mant & 1) == 1):
            mant += 1
    normal = e >= -126
    if ftz:
        mag = 0 if e + (mant >> 24) < -126 else ((e + 127) << 23) + (mant - (1 << 23))
        normal = True
    elif normal:
        mag = ((e + 127) << 23) + (mant - (1 << 23))
    else:
        mag = mant
    top = 0x7F7FFFFF if rz else 0x7F800000
    if normal and e + 127 >= 255:
        mag = top
    else:
        mag = min(mag, top)
    return (s << 31) | (mag & 0xFFFFFFFF)


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _flush(x):
    return x & 0x80000000 if (x & 0x7F800000) == 0 else x


@njit(cache=True, _nrt=False, **INNER)
def fmul(a, b, ftz):
    """numerics.mufu.fmul: the exact product rounded once (.ftz: inputs and result flushed)."""
    if ftz:
        a, b = _flush(a), _flush(b)
    return round_f32(_f64_of(a) * _f64_of(b), _FALSE, ftz)


@njit(cache=True, _nrt=False, **INNER)
def _rz32_sum(a, v):
    s = a + v
    bb = s - a
    err = (a - (s - bb)) + (v - bb)
    r = round_f32(s, _TRUE, _FALSE)
    if _f64_of(r) == s and ((s > 0 and err < 0) or (s < 0 and err > 0)) and (r & 0x7FFFFFFF) != 0:
        r -= 1
    return r


@njit(cache=True, _nrt=False, **INNER)
def _rcp(x, mptr):
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    if e == 255:
        return s << 31 if m == 0 else CANON
    if e == 0:
        return (s << 31) | 0x7F800000
    t = _tab(mptr[T_RCP], m)
    re = ((t >> 23) & 0xFF) - (e - 127)
    return (s << 31) | (((re << 23) | (t & 0x7FFFFF)) if re >= 1 else 0)


@njit(cache=True, _nrt=False, **INNER)
def _rsq_sqrt(x, mptr, sq):
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    if e == 255:
        if m == 0 and s == 0:
            return 0x7F800000 if sq else 0
        return CANON
    if e == 0:
        return s << 31 if sq else (s << 31) | 0x7F800000
    if s == 1:
        return CANON
    E = e - 127
    odd = (E & 1) == 1
    if sq:
        t = _tab(mptr[T_SQRT_ODD if odd else T_SQRT_EVEN], m)
    else:
        t = _tab(mptr[T_RSQ_ODD if odd else T_RSQ_EVEN], m)
    half = (E - (E & 1)) >> 1
    return ((((t >> 23) & 0xFF) + (half if sq else -half)) << 23 | (t & 0x7FFFFF)) & 0xFFFFFFFF


@njit(cache=True, _nrt=False, **INNER)
def _ex2(x, mptr):
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    if e == 255:
        if m != 0:
            return CANON
        return 0 if s == 1 else 0x7F800000
    if e >= 134:                                  # |x| >= 128
        return 0 if s == 1 else 0x7F800000
    full = m | 0x800000
    sh = e - 127
    q = 0 if e == 0 else (full << sh if sh >= 0 else full >> min(-sh, 63))
    i = q >> 23
    f = q & 0x7FFFFF
    if s == 1:
        t = _tab(mptr[T_EX2_NEG], f)
        i = -i
    else:
        t = _tab(mptr[T_EX2], f)
    re = ((t >> 23) & 0xFF) + i
    if re >= 255:
        return 0x7F800000
    return (re << 23) | (t & 0x7FFFFF) if re >= 1 else 0


@njit(cache=True, _nrt=False, **INNER)
def _lg2(x, mptr):
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    if e == 255:
        return 0x7F800000 if (m == 0 and s == 0) else CANON
    if e == 0:
        return 0xFF800000
    if s == 1:
        return CANON
    E = e - 127
    if E == 0:
        return _tab(mptr[T_LG2_E0], m)
    if E == -1:
        return _tab(mptr[T_LG2_EM1], m)
    if E >= 1:
        return _rz32_sum(np.float64(E), _f64_of(_tab(mptr[T_LG2_E0], m)))
    return _rz32_sum(np.float64(E + 1), _f64_of(_tab(mptr[T_LG2_EM1], m)))


@njit(cache=True, _nrt=False, **INNER)
def _tanh(x, mptr, msz):
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    if e == 255 and m != 0:
        return CANON
    r = x & 0x7FFFFFFF
    if e >= 130:
        r = 0x3F800000
    elif e >= 119:
        k = e - 119
        r = _tab(mptr[T_TANH + k], min(m >> TANH_SHIFT[k], msz[T_TANH + k] - 1))
    return (s << 31) | r


@njit(cache=True, _nrt=False, **INNER)
def _sincos(r, mptr, cos):
    """MUFU.SIN / MUFU.COS of an angle in revolutions (numerics.mufu.mufu_sin, mufu_cos)."""
    if (r & 0x7F800000) == 0x7F800000:
        return CANON
    s, e, m = r >> 31, (r >> 23) & 0xFF, r & 0x7FFFFF
    full = m | 0x800000
    sh = e - 125
    q = full << min(sh, 40) if sh >= 0 else full >> min(-sh, 63)
    q = 0 if e == 0 else q & ((1 << 25) - 1)
    quad = q >> 23
    t = q & 0x7FFFFF
    if cos:
        quad = (quad + 1) & 3
    v = _tab(mptr[T_SIN if (quad & 1) == 0 else T_COS], t)
    if quad >= 2:
        v ^= 0x80000000
    if not cos:
        v ^= s << 31
    return v


@njit(cache=True, _nrt=False)
def unary(form, ftz, x, mptr):
    """numerics.mufu.ptx_f32_unary: the PTX form on f32 bits ``x`` (int64), as ptxas's SASS runs it (ex2 and rcp:
    ``unary_e``, the "mufu" family's; lg2, rsqrt, sqrt: ``unary_r``, "mufu_r"; sin, cos and tanh: ``unary_x``)."""
    if form == EX2 or form == RCP:
        return unary_e(form, ftz, x, mptr)
    return unary_r(form, ftz, x, mptr)


@njit(cache=True, _nrt=False, **INNER)
def unary_e(form, ftz, x, mptr):
    """``unary`` of ex2 and rcp (MUFU rows)."""
    if form == EX2:
        if ftz or _f64_of(x) >= -126.0 or (x & 0x7FFFFFFF) > 0x7F800000:
            return _ex2(x, mptr)
        r = _ex2(fmul(x, np.int64(0x3F000000), _FALSE), mptr)
        return fmul(r, r, _FALSE)
    if ftz:
        return _rcp(x, mptr)
    sc = 0x4B800000 if (x & 0x7FFFFFFF) < 0x00800000 else 0x3F800000
    if (x & 0x7FFFFFFF) > 0x7E800000 and not (x & 0x7FFFFFFF) > 0x7F800000:
        sc = 0x3E800000
    return fmul(sc, _rcp(fmul(x, sc, _FALSE), mptr), _FALSE)


@njit(cache=True, _nrt=False)
def unary_r(form, ftz, x, mptr):
    """``unary`` of lg2, rsqrt and sqrt (MUFU_R rows: the "mufu_r" family)."""
    if ftz or (x & 0x7FFFFFFF) >= 0x00800000:
        return _prim_r(form, x, mptr)
    r = _prim_r(form, fmul(x, np.int64(0x4B800000), _FALSE), mptr)
    if form == LG2:
        return round_f32(_f64_of(r) + _f64_of(np.int64(0xC1C00000)), _FALSE, _FALSE)          # FADD r, -24
    return fmul(r, 0x45800000 if form == RSQRT else np.int64(0x39800000), _FALSE)           # 4096 / 2^-12


@njit(cache=True, _nrt=False)
def unary_x(form, x, mptr, msz):
    """numerics.mufu.ptx_f32_unary for sin, cos (.ftz or not: the same) and tanh (the "mufu_x" family)."""
    if form == SIN or form == COS:
        if (x & 0x7FFFFFFF) > 0x7F800000:
            r = CANON
        else:
            r = round_f32(_f64_of(x) * _f64_of(TWO_PI_RECIP), _TRUE, _FALSE)       # FMUL.RZ x, 1/(2 pi)
        return _sincos(r, mptr, form == COS)
    return _tanh(x, mptr, msz)


@njit(cache=True, _nrt=False, **INNER)
def _prim_r(form, x, mptr):
    if form == LG2:
        return _lg2(x, mptr)
    return _rsq_sqrt(x, mptr, form == SQRT)


@njit(cache=True, _nrt=False, **INNER)
def div_factors(full, ftz, a, b, mptr):
    """numerics.mufu.div_factors: the two factors (rcp(b'), a') of the final FMUL of ptxas's division."""
    large = (b & 0x7FFFFFFF) > 0x7E800000 and (b & 0x7FFFFFFF) <= 0x7F800000
    if not full:
        if ftz:
            a2, b2 = _flush(a), b
        elif (b & 0x7FFFFFFF) >= 0x00800000:
            a2, b2 = a, b
        else:
            a2, b2 = fmul(a, np.int64(0x4B800000), _FALSE), fmul(b, np.int64(0x4B800000), _FALSE)
    elif ftz:
        if large:
            a2, b2 = fmul(a, np.int64(0x3E800000), _TRUE), fmul(b, np.int64(0x3E800000), _TRUE)
        else:
            a2, b2 = _flush(a), b
    else:
        a2, b2 = a, b
        if large:
            a2, b2 = fmul(a, np.int64(0x3E800000), _FALSE), fmul(b, np.int64(0x3E800000), _FALSE)
        if (b2 & 0x7FFFFFFF) < 0x00800000:
            a2, b2 = fmul(a2, np.int64(0x4B800000), _FALSE), fmul(b2, np.int64(0x4B800000), _FALSE)
    return _rcp(b2, mptr), a2


@njit(cache=True, _nrt=False)
def div(full, ftz, a, b, mptr):
    """numerics.mufu.ptx_f32_div: div.approx / div.full (.ftz) on f32 bits, the final FMUL of div_factors."""
    r, a2 = div_factors(full, ftz, a, b, mptr)
    return fmul(r, a2, ftz)


@njit(cache=True, _nrt=False, **INNER)
def div_fma(full, ftz, neg, a, b, c, mptr):
    """ops.falu._compile_contracted for a division producer: rcp(b') * a' + c rounded once (``neg`` bit 0:
    the quotient negated, bit 1: c negated; .ftz flushes c and the result, not the factors)."""
    r, a2 = div_factors(full, ftz, a, b, mptr)
    fa, fb = _f64_of(r), _f64_of(a2)
    if ftz:
        c = _flush(c)
    fc = _f64_of(c)
    if neg & 1:
        fa = -fa
    if neg & 2:
        fc = -fc
    p = fa * fb
    s = p + fc
    e = 0.0
    if s - s == 0.0:
        bb = s - p
        e = (p - (s - bb)) + (fc - bb)
    return _to_f32(s, e, ftz)


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _minmax1(a, b, is_min, nan_prop, ftz):
    """ops.falu min/max.f32 {.ftz}{.NaN} of one lane (raw bits; -0 orders below +0; NaN: canonical)."""
    if ftz:
        a, b = _flush(a), _flush(b)
    na = (a & 0x7FFFFFFF) > 0x7F800000
    nb = (b & 0x7FFFFFFF) > 0x7F800000
    if na or nb:
        if (na and nb) or nan_prop:
            return CANON
        r = b if na else a
    else:
        fa, fb = _f64_of(a), _f64_of(b)
        sa = (a >> 31) == 1
        if is_min:
            pick_a = fa < fb or (fa == fb and sa)
        else:
            pick_a = fa > fb or (fa == fb and not sa)
        r = a if pick_a else b
    return _flush(r) if ftz else r


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _negabs(x, ftz, a, b):
    """FNEGABS of one lane: abs (x = 0) / neg (x = 1) {.ftz}.f32, NaN -> canonical; copysign.f32 (x = 2)."""
    if x == 2:                                    # copysign.f32 d, a, b: a's sign on b, NaNs untouched
        return (a & 0x80000000) | (b & 0x7FFFFFFF)
    if ftz:
        a = _flush(a)
    r = a ^ 0x80000000 if x == 1 else a & 0x7FFFFFFF
    return CANON if (r & 0x7FFFFFFF) > 0x7F800000 else r

# ------------------------------------------------------------------------- .ftz and contracted f32 arithmetic
@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _round_odd(x, e):
    """numerics.fround.round_odd of one value: the neighbour of x toward x + e whose last bit is odd."""
    if e != 0.0 and x - x == 0.0:
        b = _bits64(x)
        if (b & 1) == 0:
            x = _f64_bits(b + 1 if (e > 0.0) == (x > 0.0) else b - 1)
    return x


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _to_f32(s, e, ftz):
    """numerics.fround.round_to(s, "f32", "rn", e, ftz) of one value (s + e exact): bits. Under .ftz a result
    tiny after rounding with an unbounded exponent is a zero of its sign (fround._ftz_tiny)."""
    if s != s:
        return CANON
    if ftz and s != 0.0 and abs(s) < 2.0 ** -125:
        r = np.float32(_round_odd(s * 2.0 ** 100, e * 2.0 ** 100))
        if abs(r) < np.float32(2.0 ** -26):
            return ((_bits64(s) >> 63) & 1) << 31
    r = _bits32(np.float32(_round_odd(s, e)))
    if ftz and (r & 0x7F800000) == 0:
        r &= 0x80000000
    return r


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def farith(op, ftz, neg, a, b, c):
    """ops.falu add/sub/mul/fma .rn{.ftz}.f32 and the contracted add/sub (fma with ``neg`` bit 0: the product
    negated, bit 1: the addend negated) of one lane: the exact result rounded once."""
    if ftz:
        a, b, c = _flush(a), _flush(b), _flush(c)
    fa, fb = _f64_of(a), _f64_of(b)
    if op == F_MUL:
        return _to_f32(fa * fb, 0.0, ftz)
    if op == F_FMA:
        if neg & 1:
            fa = -fa
        fc = _f64_of(c)
        if neg & 2:
            fc = -fc
        p = fa * fb
    else:
        p = fa
        fc = -fb if op == F_SUB else fb
    s = p + fc
    e = 0.0
    if s - s == 0.0:                              # numerics.fround.two_sum
        bb = s - p
        e = (p - (s - bb)) + (fc - bb)
    return _to_f32(s, e, ftz)


# ------------------------------------------------------------------------------------------- conversions
@njit(cache=True, _nrt=False, **INNER)
def _round_half(v, mb, bias):
    """A binary64 value (an exact f32) rounded to nearest even to a 16-bit format with ``mb`` fraction bits
    and exponent bias ``bias`` (f16: 10, 15; bf16: 7, 127), subnormals kept, overflow to inf: bits."""
    b = _bits64(v)
    eb = 15 - mb
    sbit = ((b >> 63) & 1) << 15
    E = (b >> 52) & 0x7FF
    if E == 0x7FF:
        return 0x7FFF if (b & ((1 << 52) - 1)) != 0 else sbit | (((1 << eb) - 1) << mb)
    if E == 0:
        return sbit
    sig = (b & ((1 << 52) - 1)) | (1 << 52)
    e = E - 1023
    emin = 1 - bias
    shift = min(52 - mb + max(emin - e, 0), 60)
    mant = sig >> shift
    rem = sig & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and (mant & 1) == 1):
        mant += 1
    mag = ((e + bias) << mb) + (mant - (1 << mb)) if e >= emin else mant
    return sbit | min(mag, ((1 << eb) - 1) << mb)


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def half_bits(a, bf):
    """``_round_half`` of the binary32 with bits ``a`` (int64, low 32 bits), on the bits alone: cvt.rn.f16.f32
    (``bf`` 0) or cvt.rn.bf16.f32 (``bf`` 1). A NaN gives 0x7FFF, as there."""
    sign = (a >> 16) & 0x8000
    ax = a & 0x7FFFFFFF
    if ax > 0x7F800000:
        return np.int64(0x7FFF)
    if bf:                                      # the same exponent range: round the low 16 bits away
        return sign | ((ax + 0x7FFF + ((ax >> 16) & 1)) >> 16)
    if ax >= 0x477FF000:                        # 65520 and above round to infinity
        return sign | 0x7C00
    if ax >= 0x38800000:                        # a normal f16: 13 bits away, the exponent rebiased
        return sign | (((ax + 0xFFF + ((ax >> 13) & 1)) >> 13) - (112 << 10))
    if ax <= 0x33000000:                        # at most half the smallest subnormal: a zero
        return sign
    sh = 126 - (ax >> 23)                       # a subnormal f16: the significand in units of 2^-24
    m = (ax & 0x7FFFFF) | 0x800000
    r = m >> sh
    rem = m & ((1 << sh) - 1)
    half = 1 << (sh - 1)
    if rem > half or (rem == half and (r & 1) == 1):
        r += 1
    return sign | r


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def f32_of_half(h):
    """cvt.f32.f16 of the f16 bits ``h`` on the bits alone (``_f16_value`` rounded to f32, exact): a NaN gives
    the canonical NaN."""
    sign = (h & 0x8000) << 16
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 31:
        return np.int64(CANON) if m != 0 else sign | 0x7F800000
    if e != 0:
        return sign | ((e + 112) << 23) | (m << 13)
    if m == 0:
        return sign
    k = 9                                       # a subnormal f16: a normal f32, m * 2^-24
    while (m >> k) == 0:
        k -= 1
    return sign | ((k + 103) << 23) | ((m << (23 - k)) & 0x7FFFFF)


@njit(cache=True, _nrt=False, **INNER)
def _f16_value(h):
    """f16 bits -> the binary64 of the same value (NaN for NaNs)."""
    e, m = (h >> 10) & 0x1F, h & 0x3FF
    if e == 31:
        v = np.inf if m == 0 else np.nan
    elif e == 0:
        v = m * 2.0 ** -24
    else:
        v = (m | 0x400) * _f64_bits((e - 25 + 1023) << 52)
    return -v if (h >> 15) & 1 else v


@njit(cache=True, _nrt=False, **INNER)
def fcvt(kind, irnd, ftz, a, b):
    """ops.cvt of one lane for the conversions FCVT rows hold (a, b: the source bits; b: the low half of a pack)."""
    if kind == CV_S32_F32 or kind == CV_U32_F32:
        v = np.float64(a - (1 << 32) if kind == CV_S32_F32 and a >= 1 << 31 else a)
        return _bits32(np.float32(v))
    if kind == CV_FRNDI:                          # cvt.{rni,rzi,rmi,rpi}{.ftz}.f32.f32
        if ftz:
            a = _flush(a)
        if (a & 0x7FFFFFFF) > 0x7F800000:
            return CANON
        x = _f64_of(a)
        if irnd == 0:
            x = np.rint(x)
        elif irnd == 1:
            x = np.trunc(x)
        elif irnd == 2:
            x = np.floor(x)
        else:
            x = np.ceil(x)
        return _bits32(np.float32(x))
    if kind == CV_F16_F32:
        v = _f16_value(a)
        return CANON if v != v else _bits32(np.float32(v))
    if kind == CV_BF16_F32:                       # exact; a NaN keeps its bits (H100)
        return (a & 0xFFFF) << 16
    mb, bias = (10, 15) if kind == CV_F32_F16 or kind == CV_PACK_F16 else (7, 127)
    r = _round_half(_f64_of(a), mb, bias)
    if kind == CV_PACK_F16 or kind == CV_PACK_BF16:
        r = (r << 16) | _round_half(_f64_of(b), mb, bias)
    return r


@njit(cache=True, _nrt=False, inline="always")
def mufu_rows(opc, x, y, em, xa, xb, xr, mptr):
    """One row of the MUFU unit's opcodes (table.py: MUFU (ex2, rcp), MUFU_DIV; x, y: the row's fields X, Y) on the
    lanes in ``em``: sources gathered in xa, xb, results into xr. (The float rows are six families, ``fcall.py``,
    so that a kernel compiles only the code of the kinds it has: this one, ``mufu_r_rows``, ``mufu_x_rows``,
    ``cvt_rows``, ``misc_rows`` and ``farith_rows``.)"""
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane] & np.uint64(0xFFFFFFFF))
            if opc == T.MUFU:
                r = unary_e(x, y == 1, a, mptr)
            else:
                r = div(x == DIV_FULL, y == 1, a, np.int64(xb[lane] & np.uint64(0xFFFFFFFF)), mptr)
            xr[lane] = np.uint64(r)


@njit(cache=True, _nrt=False, inline="always")
def mufu_x_rows(x, em, xa, xr, mptr, msz):
    """One MUFU_X row (sin, cos, tanh; as ``mufu_rows``)."""
    for lane in range(LANES):
        if (em >> lane) & 1:
            xr[lane] = np.uint64(unary_x(x, np.int64(xa[lane] & np.uint64(0xFFFFFFFF)), mptr, msz))


@njit(cache=True, _nrt=False, inline="always")
def mufu_r_rows(x, y, em, xa, xr, mptr):
    """One MUFU_R row (lg2, rsqrt, sqrt; as ``mufu_rows``)."""
    for lane in range(LANES):
        if (em >> lane) & 1:
            xr[lane] = np.uint64(unary_r(x, y == 1, np.int64(xa[lane] & np.uint64(0xFFFFFFFF)), mptr))


@njit(cache=True, _nrt=False, inline="always")
def misc_rows(opc, x, y, z, em, xa, xb, xr):
    """One row of FMINMAX or FNEGABS (as ``mufu_rows``)."""
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane] & np.uint64(0xFFFFFFFF))
            b = np.int64(xb[lane] & np.uint64(0xFFFFFFFF))
            if opc == T.FMINMAX:
                r = _minmax1(a, b, x == 1, z == 1, y == 1)
            else:
                r = _negabs(x, y == 1, a, b)
            xr[lane] = np.uint64(r)


@njit(cache=True, _nrt=False, inline="always")
def farith_rows(opc, x, y, z, em, xa, xb, xc, xr, mptr):
    """One row of FARITH or MUFU_DIVFMA (the .ftz and contracted f32 arithmetic: the "farith" family; as
    ``mufu_rows``)."""
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane] & np.uint64(0xFFFFFFFF))
            b = np.int64(xb[lane] & np.uint64(0xFFFFFFFF))
            c = np.int64(xc[lane] & np.uint64(0xFFFFFFFF))
            if opc == T.FARITH:
                r = farith(x, y == 1, z, a, b, c)
            else:
                r = div_fma(x == DIV_FULL, y == 1, z, a, b, c, mptr)
            xr[lane] = np.uint64(r)


@njit(cache=True, _nrt=False, inline="always")
def cvt_rows(x, y, z, em, xa, xb, xr):
    """One FCVT row (as ``mufu_rows``); f32 to f16 or bf16 (one or a pair, ``half_bits``) and back
    (``f32_of_half``) in loops of their own."""
    if x == CV_F32_F16 or x == CV_F32_BF16 or x == CV_PACK_F16 or x == CV_PACK_BF16:
        bf = np.int64(x == CV_F32_BF16 or x == CV_PACK_BF16)
        pack = x == CV_PACK_F16 or x == CV_PACK_BF16
        for lane in range(LANES):
            if (em >> lane) & 1:
                r = half_bits(np.int64(xa[lane] & np.uint64(0xFFFFFFFF)), bf)
                if pack:
                    r = (r << 16) | half_bits(np.int64(xb[lane] & np.uint64(0xFFFFFFFF)), bf)
                xr[lane] = np.uint64(r)
        return
    if x == CV_F16_F32 or x == CV_BF16_F32:    # f16 or bf16 to f32: exact
        for lane in range(LANES):
            if (em >> lane) & 1:
                a = np.int64(xa[lane] & np.uint64(0xFFFF))
                xr[lane] = np.uint64(f32_of_half(a) if x == CV_F16_F32 else a << 16)
        return
    for lane in range(LANES):
        if (em >> lane) & 1:
            a = np.int64(xa[lane] & np.uint64(0xFFFFFFFF))
            b = np.int64(xb[lane] & np.uint64(0xFFFFFFFF))
            xr[lane] = np.uint64(fcvt(x, y, z == 1, a, b))
