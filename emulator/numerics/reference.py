"""The readable definition of every mma.sync arithmetic, in plain Python integers (slow; it is the spec).

A decoded value is ``Val(kind, sign, M, q)`` meaning ``(-1)**sign * M * 2**q`` with an integer
significand ``M``; ``kind`` is ``"num"`` (zero included: ``M == 0``), ``"inf"`` or ``"nan"``.  The
*nominal exponent* of a non-zero value is ``q + P`` (``P`` the fraction bits), also for products, which
are not renormalised: a product's significand may be >= 2.

The jitted code in ``fast.py`` implements the same functions over int64 and is tested equal, bit for bit.
"""
from dataclasses import dataclass

from .params import FORMATS, RNE

F32_NAN, F16_NAN = 0x7FFFFFFF, 0x7FFF          # canonical NaNs of the tensor core and FADD/FFMA/HADD2


@dataclass(frozen=True)
class Val:
    kind: str
    sign: int
    M: int
    q: int
    P: int = 0           # fraction bits: nominal exponent = q + P

    @property
    def top(self):
        return self.q + self.P


def decode(bits, fmt):
    """Exact value of raw bits. Subnormals are kept (never flushed); tf32 ignores the low 13 bits."""
    f = FORMATS[fmt]
    bits = int(bits)
    if fmt == "tf32":
        bits = (bits >> 13) & 0x7FFFF                   # truncation, not rounding
    nb = 1 + f.ebits + f.mbits
    sign = (bits >> (nb - 1)) & 1
    e = (bits >> f.mbits) & ((1 << f.ebits) - 1)
    frac = bits & ((1 << f.mbits) - 1)
    emax_field = (1 << f.ebits) - 1
    if f.ieee_inf and e == emax_field:
        return Val("nan" if frac else "inf", sign, 0, 0, f.mbits)
    if not f.ieee_inf and e == emax_field and frac == (1 << f.mbits) - 1:
        return Val("nan", sign, 0, 0, f.mbits)         # e4m3: S.1111.111
    if e == 0:
        return Val("num", sign, frac, f.emin - f.mbits, f.mbits)
    return Val("num", sign, (1 << f.mbits) | frac, e - f.bias - f.mbits, f.mbits)


def encode(sign, mag, q, fmt, mode, zero_sign=0):
    """Round ``(-1)**sign * mag * 2**q`` (exact, mag >= 0) to fmt.  RZ or RNE on the format's precision,
    subnormals on the fixed grid ``2**(emin - mbits)``; overflow gives +-inf in both modes.
    An exact or rounded zero gets sign ``zero_sign``."""
    f = FORMATS[fmt]
    p, qmin = f.precision, f.emin - f.mbits
    if mag == 0:
        return zero_sign << (f.width - 1)
    top = q + mag.bit_length() - 1
    qq = max(top - (p - 1), qmin)                      # exponent of the result's last place
    if qq <= q:
        r = mag << (q - qq)                            # exact
    else:
        sh = qq - q
        r, rem = mag >> sh, mag & ((1 << sh) - 1)
        if mode == RNE and (2 * rem > (1 << sh) or (2 * rem == (1 << sh) and r & 1)):
            r += 1                                     # RNE
    if r == 0:
        return zero_sign << (f.width - 1)
    if r >> p:                                         # rounding carried into a new binade
        r, qq = r >> 1, qq + 1
    if r >> (p - 1):
        e = qq + f.mbits + f.bias
        if e >= (1 << f.ebits) - 1:
            return (sign << (f.width - 1)) | (((1 << f.ebits) - 1) << f.mbits)   # +-inf
        return (sign << (f.width - 1)) | (e << f.mbits) | (r - (1 << f.mbits))
    return (sign << (f.width - 1)) | r                 # subnormal


def nan_bits(fmt):
    return {"f32": F32_NAN, "f16": F16_NAN}[fmt]


def inf_bits(sign, fmt):
    f = FORMATS[fmt]
    return (sign << (f.width - 1)) | (((1 << f.ebits) - 1) << f.mbits)


# ------------------------------------------------------------------------------------------------
# Tensor-core step
def t_fdpa(a, b, c, F, e_zero, out, mode):
    """One truncated fused dot-product-add: sum of a[k]*b[k] plus c, all Val, rounded once to ``out``."""
    prods = [(x, y) for x, y in zip(a, b)]
    if c.kind == "nan" or any(x.kind == "nan" or y.kind == "nan" for x, y in prods):
        return nan_bits(out)
    infs = []
    for x, y in prods:
        if x.kind == "inf" or y.kind == "inf":
            if (x.kind == "num" and x.M == 0) or (y.kind == "num" and y.M == 0):
                return nan_bits(out)                   # inf * 0
            infs.append(x.sign ^ y.sign)
    if c.kind == "inf":
        infs.append(c.sign)
    if infs:
        return nan_bits(out) if len(set(infs)) == 2 else inf_bits(infs[0], out)
    # exact products, not renormalised: significand Ma*Mb, nominal exponent top_a + top_b
    terms = [(x.sign ^ y.sign, x.M * y.M, x.q + y.q, x.top + y.top) for x, y in prods if x.M and y.M]
    if c.M:
        terms.append((c.sign, c.M, c.q, c.top))
    emax = max([e_zero] + [t[3] for t in terms])
    S = 0
    for s, M, q, _ in terms:
        sh = q - emax + F
        mag = M << sh if sh >= 0 else M >> -sh        # truncate toward zero (sign-magnitude)
        S += -mag if s else mag
    return encode(int(S < 0), abs(S), emax - F, out, mode, zero_sign=0)   # a zero is always +0


def tc_dot(a_bits, b_bits, c_bits, afmt, bfmt, cfmt, out, p):
    """D element of a tensor-core mma: steps of ``p.L`` products in ascending k."""
    a = [decode(x, afmt) for x in a_bits]
    b = [decode(x, bfmt) for x in b_bits]
    d = c_bits
    dfmt = cfmt
    for k0 in range(0, len(a), p.L):
        d = t_fdpa(a[k0:k0 + p.L], b[k0:k0 + p.L], decode(d, dfmt), p.F, p.e_zero, out, p.rounding)
        dfmt = out
    return d


def as_f16(v):
    """The same value as the f16 that F2FP.F16.E4M3/E5M2.UNPACK_B produces (exact).  Only the nominal
    exponent can change: an e4m3 subnormal is an f16 normal, so it aligns by its leading bit."""
    if v.kind != "num" or v.M == 0:
        return v
    top = max(v.q + v.M.bit_length() - 1, FORMATS["f16"].emin)
    return Val(v.kind, v.sign, v.M, v.q, top - v.q)


def fp8_dot(a_bits, b_bits, c_bits, afmt, bfmt, out, p):
    """sm_90 FP8 mma.sync, a software sequence (ptxas): the bytes are unpacked to f16 (exact), the
    products with k % 4 in {0, 1} go through one f16 HMMA with C = +0, those with k % 4 in {2, 3} through a
    second HMMA accumulating onto the first, and the real C is added last by FADD / HADD2 (IEEE RNE)."""
    a = [as_f16(decode(x, afmt)) for x in a_bits]
    b = [as_f16(decode(x, bfmt)) for x in b_bits]
    g0 = [k for k in range(len(a)) if k % 4 < 2]
    g1 = [k for k in range(len(a)) if k % 4 >= 2]
    zero = Val("num", 0, 0, 0, 0)
    s = t_fdpa([a[k] for k in g0], [b[k] for k in g0], zero, p.F, p.e_zero, out, p.rounding)
    s = t_fdpa([a[k] for k in g1], [b[k] for k in g1], decode(s, out), p.F, p.e_zero, out, p.rounding)
    return ieee_add(c_bits, s, out)


# ------------------------------------------------------------------------------------------------
# IEEE binary32 / binary16 operations of the CUDA cores (RNE, subnormals kept, canonical NaN)
def _ieee_sum(terms, out):
    """Round the exact sum of ``terms`` [(sign, M, q)] (finite) with IEEE zero-sign rules (RNE)."""
    if not terms:
        return 0
    qmin = min(q for _, M, q in terms)
    S = sum((-M if s else M) << (q - qmin) for s, M, q in terms)
    if S == 0:
        all_neg = all(s for s, _, _ in terms)          # -0 only when every addend is -0
        return encode(0, 0, 0, out, RNE, zero_sign=int(all_neg))
    return encode(int(S < 0), abs(S), qmin, out, RNE, zero_sign=int(S < 0))


def ieee_fma(a, b, c, out):
    """round(a*b + c) for decoded a, b, c (Val), output bits of ``out`` ('f32' or 'f16')."""
    if "nan" in (a.kind, b.kind, c.kind):
        return nan_bits(out)
    pinf = a.kind == "inf" or b.kind == "inf"
    if pinf and ((a.kind == "num" and a.M == 0) or (b.kind == "num" and b.M == 0)):
        return nan_bits(out)
    if pinf or c.kind == "inf":
        sp = a.sign ^ b.sign
        if pinf and c.kind == "inf" and sp != c.sign:
            return nan_bits(out)
        return inf_bits(sp if pinf else c.sign, out)
    return _ieee_sum([(a.sign ^ b.sign, a.M * b.M, a.q + b.q), (c.sign, c.M, c.q)], out)


ONE = Val("num", 0, 1, 0, 0)
PZERO = Val("num", 0, 0, 0, 0)


def ieee_add(x_bits, y_bits, fmt):
    """x + y in fmt (FADD / HADD2)."""
    return ieee_fma(decode(x_bits, fmt), ONE, decode(y_bits, fmt), fmt)


def ieee_mul(a, b, out):
    z = Val("num", 1, 0, 0, 0)                         # a*b + (-0) == a*b, including the sign of zero
    return ieee_fma(a, b, z, out)


def m8n8k4_f16_dot(a_bits, b_bits, c_bits, ctype, dtype):
    """sm_90 m8n8k4 .f16 (CUDA cores).  f32 D: s = +0; s = fma32(a_k, b_k, s) for k = 0..3; D = C + s.
    f16 D: s01 = fma32(a1, b1, a0*b0), s23 likewise, D = f16(C + s01 + s23) (f32 adds, then RNE to f16)."""
    a = [decode(x, "f16") for x in a_bits]
    b = [decode(x, "f16") for x in b_bits]
    c = decode(c_bits, ctype)
    if dtype == "f32":
        s = 0
        for k in range(4):
            s = ieee_fma(a[k], b[k], decode(s, "f32"), "f32")
        return ieee_fma(c, ONE, decode(s, "f32"), "f32")
    s01 = ieee_fma(a[1], b[1], decode(ieee_mul(a[0], b[0], "f32"), "f32"), "f32")
    s23 = ieee_fma(a[3], b[3], decode(ieee_mul(a[2], b[2], "f32"), "f32"), "f32")
    t = ieee_fma(c, ONE, decode(s01, "f32"), "f32")
    t = ieee_fma(decode(t, "f32"), ONE, decode(s23, "f32"), "f32")
    return f32_to_f16(t)


def f32_to_f16(bits):
    v = decode(bits, "f32")
    if v.kind == "nan":
        return F16_NAN
    if v.kind == "inf":
        return inf_bits(v.sign, "f16")
    return encode(v.sign, v.M, v.q, "f16", RNE, zero_sign=v.sign)


# ------------------------------------------------------------------------------------------------
# binary64 (DMMA): a chain of IEEE fma in ascending k, starting from C
F64_QNAN_BIT = 1 << 51
F64_DEFAULT_NAN = 0xFFF8000000000000                # what inf*0 and inf-inf give (H100)


def fma64_special(a, b, c, a_bits, b_bits, c_bits):
    """The result bits of a binary64 fma (decoded a, b, c) when an operand is a NaN or an infinity, else None.
    A NaN operand is passed on quieted; with several, B's wins over the accumulator's, which wins over A's
    (measured on H100: not the IEEE-suggested operand order)."""
    for v, raw in ((b, b_bits), (c, c_bits), (a, a_bits)):
        if v.kind == "nan":
            return int(raw) | F64_QNAN_BIT
    pinf = a.kind == "inf" or b.kind == "inf"
    if pinf and ((a.kind == "num" and a.M == 0) or (b.kind == "num" and b.M == 0)):
        return F64_DEFAULT_NAN
    if pinf or c.kind == "inf":
        sp = a.sign ^ b.sign
        if pinf and c.kind == "inf" and sp != c.sign:
            return F64_DEFAULT_NAN
        return inf_bits(sp if pinf else c.sign, "f64")
    return None


def fma64(a_bits, b_bits, c_bits):
    """IEEE binary64 fma a*b + c, rounded to nearest even (special values: ``fma64_special``)."""
    a, b, c = decode(a_bits, "f64"), decode(b_bits, "f64"), decode(c_bits, "f64")
    special = fma64_special(a, b, c, a_bits, b_bits, c_bits)
    if special is not None:
        return special
    return _ieee_sum([(a.sign ^ b.sign, a.M * b.M, a.q + b.q), (c.sign, c.M, c.q)], "f64")


def f64_dot(a_bits, b_bits, c_bits):
    d = int(c_bits)
    for x, y in zip(a_bits, b_bits):
        d = fma64(x, y, d)
    return d


# ------------------------------------------------------------------------------------------------
# integers
def int_value(bits, t):
    w = {"s8": 8, "u8": 8, "s4": 4, "u4": 4, "s32": 32}[t]
    v = int(bits) & ((1 << w) - 1)
    return v - (1 << w) if t[0] == "s" and v >> (w - 1) else v


def int_dot(a_bits, b_bits, c_bits, atype, btype, satfinite):
    """D = C + sum a*b exactly, then wrap mod 2**32 or clamp to int32 (.satfinite)."""
    s = int_value(c_bits, "s32") + sum(int_value(x, atype) * int_value(y, btype) for x, y in zip(a_bits, b_bits))
    if satfinite:
        s = min(max(s, -2**31), 2**31 - 1)
    return s & 0xFFFFFFFF


def b1_dot(a_bits, b_bits, c_bits, bop):
    """Single-bit mma: D = C + popc(a AND b) or C + popc(a XOR b) over k, wrapping mod 2**32."""
    op = (lambda x, y: x & y) if bop == "and" else (lambda x, y: x ^ y)
    return (int(c_bits) + sum(op(int(x) & 1, int(y) & 1) for x, y in zip(a_bits, b_bits))) & 0xFFFFFFFF


# ------------------------------------------------------------------------------------------------
def _element(v, a, b, c, p):
    fam = v.family
    if fam == "tc":
        return tc_dot(a, b, c, v.atype, v.btype, v.ctype, v.dtype, p)
    if fam == "fp8":
        return fp8_dot(a, b, c, v.atype, v.btype, v.dtype, p)
    if fam == "int":
        return int_dot(a, b, c, v.atype, v.btype, v.satfinite)
    if fam == "b1":
        return b1_dot(a, b, c, v.bop)
    if fam == "f64":
        return f64_dot(a, b, c)
    return m8n8k4_f16_dot(a, b, c, v.ctype, v.dtype)


def _params(v, arch):
    from .params import tc_params
    return tc_params(arch, v.atype, v.dtype) if v.family in ("tc", "fp8") else None


def mma_tiles(variant, A, B, C, arch="sm_90"):
    """Reference D tile (raw bits) from raw-bit tiles A (M,K), B (K,N), C (M,N) of one instruction."""
    v = variant
    M, N = v.tile_shape("D")
    K = v.tile_shape("A")[1]
    p = _params(v, arch)
    D = [[0] * N for _ in range(M)]
    for m in range(M):
        for n in range(N):
            if v.family == "m8n8k4_f16":
                # four independent 8x8x4 products: rows 8q.., columns 8q.. of the stacked tiles
                q = m // 8
                a = [A[m][k] for k in range(4)]
                b = [B[k][8 * q + n] for k in range(4)]
            else:
                a = [A[m][k] for k in range(K)]
                b = [B[k][n] for k in range(K)]
            D[m][n] = _element(v, a, b, C[m][n], p)
    return D


def mma_sp_tiles(dense, A, B, C, pos, arch="sm_90"):
    """Reference D tile of a sparse mma.sp: the compressed A (M, K/2), the whole B (K, N), C (M, N) and
    ``pos[m][q]``, the row of B that compressed element (m, q) multiplies (from the metadata).  Each row is the
    dense form ``dense`` (m16n8k(K/2), same types) over the rows of B its metadata picks: D[m][n] =
    dense(A[m][:], [B[pos[m][q]][n] for q], C[m][n])."""
    M, N = dense.tile_shape("D")
    K = dense.tile_shape("A")[1]
    p = _params(dense, arch)
    return [[_element(dense, [A[m][q] for q in range(K)], [B[pos[m][q]][n] for q in range(K)], C[m][n], p)
             for n in range(N)] for m in range(M)]
