"""Whole-GEMM fast path for the tensor-core forms: operands decoded once, rows in parallel, each step
vectorised across the N columns.  Bit-identical to issuing the instructions one by one: every output
element runs the same chain of T-FDPA steps (ascending k, ``L`` products per step, rounded to the D format
in between), which is all an instruction sequence with D fed back as C does to it.

Elements whose row or column holds an inf or NaN, whose C is one, or whose accumulator overflows to inf,
are recomputed by the scalar per-element chain ``chain_element``.
"""
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic, overload

from . import fast, tile_numpy
from .jitcache import INNER, compiling
from .tc_simd import vencode, vload_f32
from .fast import NUM, PRE, ZQ, _special_step, bitcast, decode, encode, f2i as _f2i, i2f as _i2f, stack_i64

_i2f32 = bitcast(types.int32, types.float32)     # binary32 from its bits

_BR, _BC = 32, 256      # rows x columns of one parallel task (its B slices stay in cache)


def build_lut(fmt):
    """(2**width, 4) table of decode results (S, q, t, kind) for an 8- or 16-bit format; (1, 4) dummy
    for the others (they are decoded arithmetically)."""
    from .params import FORMATS
    f = FORMATS[fmt]
    if f.width > 16:
        return np.zeros((1, 4), np.int64)
    # fast.decode over every code, in numpy (the table is built at a translation, before anything is compiled;
    # tests/test_gemm_fast.py checks it against decode)
    eb, mb, _ = fast.fmt_info.py_func(f.code)
    x = np.arange(1 << f.width, dtype=np.int64)
    sign = (x >> (f.width - 1)) & 1
    e = (x >> mb) & ((1 << eb) - 1)
    frac = x & ((1 << mb) - 1)
    emaxf, bias = (1 << eb) - 1, (1 << (eb - 1)) - 1
    if f.code == 4:                     # e4m3: no infinities, S.1111.111 is NaN
        kind = np.where((e == emaxf) & (frac == (1 << mb) - 1), fast.NAN, fast.NUM)
    else:
        kind = np.where(e == emaxf, np.where(frac != 0, fast.NAN, fast.INF), fast.NUM)
    M = np.where(e == 0, frac, (1 << mb) | frac)
    q = np.where(e == 0, 1 - bias - mb, e - bias - mb)
    t = np.where(e == 0, 1 - bias, e - bias)
    if f.code in (4, 5):                # the 8-bit formats: the nominal exponent of the leading bit
        bl = np.zeros_like(M)
        for k in range(16):
            bl = np.where(M >> k != 0, k + 1, bl)
        t = np.where(M != 0, np.maximum(q + bl - 1, -14), t)
    zero = (kind != fast.NUM) | (M == 0)
    M = np.where(kind != fast.NUM, 0, M)
    S = np.where(sign == 1, -M, M)
    q = np.where(zero, fast.ZQ, q)
    t = np.where(zero, fast.ZQ, t)
    return np.ascontiguousarray(np.stack([S, q, t, kind], axis=1).astype(np.int64))


@njit(cache=True)
def _decode_matrix(bits, fmt, S, q, t, special, by_row, lut):
    if lut.shape[0] == 1:
        _decode_matrix_arith(bits, fmt, S, q, t, special, by_row)
        return
    R, C = bits.shape
    flat = lut.reshape(lut.shape[0] * 4)
    for r in range(R):
        Sr, qr, tr, br = S[r], q[r], t[r], bits[r]
        for c in range(C):
            base = np.int64(br[c]) * 4
            Sr[c] = flat[base]
            qr[c] = flat[base + 1]
            tr[c] = flat[base + 2]
            if flat[base + 3] != NUM:
                special[r if by_row else c] = True


@njit(cache=True)
def _decode_matrix_arith(bits, fmt, S, q, t, special, by_row):
    R, C = bits.shape
    for r in range(R):
        for c in range(C):
            kk, ss, mm, qq, tt = decode(np.int64(bits[r, c]), fmt)
            if (fmt == 4 or fmt == 5) and mm != 0:
                tt = max(qq + fast.bit_length(mm) - 1, -14)
            S[r, c] = -mm if ss else mm
            if kk != NUM:
                qq = ZQ
                tt = ZQ
                special[r if by_row else c] = True
            q[r, c] = qq
            t[r, c] = tt


@njit(cache=True)
def chain_element(arow, bcol, cbits, L, fa, fb, fc, fd, F, e_zero, mode):
    """One output element through all K steps, special values included (scalar, exact)."""
    K = arow.shape[0]
    dbits = np.int64(cbits)
    dfmt = fc
    aS = np.empty(L, np.int64); aq = np.empty(L, np.int64); at = np.empty(L, np.int64)
    bS = np.empty(L, np.int64); bq = np.empty(L, np.int64); bt = np.empty(L, np.int64)
    ar = np.empty(L, np.int64); br = np.empty(L, np.int64)
    emax = np.empty(1, np.int64); acc = np.empty(1, np.int64)
    cS = np.empty(1, np.int64); cq = np.empty(1, np.int64); ct = np.empty(1, np.int64)
    for k0 in range(0, K, L):
        special = False
        for j in range(L):
            ka, sa, Ma, qa, ta = decode(np.int64(arow[k0 + j]), fa)
            kb, sb, Mb, qb, tb = decode(np.int64(bcol[k0 + j]), fb)
            special |= ka != NUM or kb != NUM
            ar[j] = arow[k0 + j]
            br[j] = bcol[k0 + j]
            aS[j] = -Ma if sa else Ma; aq[j] = qa if ka == NUM else ZQ; at[j] = ta if ka == NUM else ZQ
            bS[j] = -Mb if sb else Mb; bq[j] = qb if kb == NUM else ZQ; bt[j] = tb if kb == NUM else ZQ
        ck, cs, cM, cqq, ctt = decode(dbits, dfmt)
        if special or ck != NUM:
            dbits = _special_step(ar, br, 0, 1, 0, 1, L, fa, fb, ck, cs, fd)
        else:
            cS[0] = -cM if cs else cM
            cq[0] = cqq
            ct[0] = ctt
            fast.tc_row_step(aS, aq, at, 0, bS, bq, bt, 0, 1, L, cS, cq, ct, F, e_zero, emax, acc)
            s = acc[0]
            dbits = encode(1 if s < 0 else np.int64(0), -s if s < 0 else s, emax[0] - F, fd, mode, np.int64(0))
        dfmt = fd
    return dbits


@njit(cache=True)
def _emax_init(emax, ct, e_zero):
    for n in range(emax.shape[0]):
        emax[n] = ct[n] if ct[n] > e_zero else e_zero


@njit(cache=True)
def _emax_update(ea, btr, emax):
    for n in range(emax.shape[0]):
        e = ea + btr[n]
        emax[n] = e if e > emax[n] else emax[n]


@njit(cache=True)
def _acc_init(acc, cS, cq, emax, F):
    """The accumulator, truncated toward zero F bits below the alignment point."""
    for n in range(acc.shape[0]):
        sh = cq[n] + F - emax[n]
        mg = -cS[n] if cS[n] < 0 else cS[n]
        mg = mg << sh if sh >= 0 else mg >> min(-sh, 63)
        acc[n] = -mg if cS[n] < 0 else mg


@njit(cache=True)
def _acc_update(sa, qa, bSr, bqr, emax, acc):
    """Add the products of one k: each truncated toward zero the same way (RZ per term)."""
    for n in range(acc.shape[0]):
        p = sa * bSr[n]
        r = min(emax[n] - qa - bqr[n], 63)
        msk = p >> 63
        mag = ((p ^ msk) - msk) << PRE >> r
        acc[n] += (mag ^ msk) - msk


@njit(cache=True)
def _round_row(acc, emax, F, fd, mode, cS, cq, ct, redo_row):
    """One rounding per step to the D format, kept decoded (significand, last place, nominal exponent)."""
    eb, mb, w = fast.fmt_info(fd)
    p = mb + 1
    bias = (1 << (eb - 1)) - 1
    qmin = 1 - bias - mb
    qmax = (1 << eb) - 2 - bias - mb           # last-place exponent of the largest binade
    for n in range(acc.shape[0]):
        s = acc[n]
        mag = -s if s < 0 else s
        lsb = emax[n] - F
        top = lsb + 63 - fast.clz64(mag)
        qq = max(top - (p - 1), qmin)
        sh = qq - lsb
        if sh <= 0:
            r = mag << -sh
        else:
            sh2 = min(sh, 63)
            r = mag >> sh2
            if mode == fast.RNE:
                rem = mag - (r << sh2)
                half = np.int64(1) << (sh2 - 1)
                r += 1 if (rem > half or (rem == half and (r & 1) == 1)) else 0
        if r >> p:
            r >>= 1
            qq += 1
        if r == 0:
            cS[n] = 0
            cq[n] = ZQ
            ct[n] = ZQ
        else:
            cS[n] = -r if s < 0 else r
            cq[n] = qq
            ct[n] = qq + mb if r >> mb else 1 - bias
            if qq > qmax:
                redo_row[n] = True


@njit(cache=True)
def _block(m0, m1, n0, n1, aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo):
    """Rows m0..m1, columns n0..n1, all K steps.  The block's accumulators stay decoded between steps
    and each step's slice of B is reused by every row of the block while it is in cache."""
    K = bS.shape[0]
    R = m1 - m0
    W = n1 - n0
    cS = np.empty((R, W), np.int64); cq = np.empty((R, W), np.int64); ct = np.empty((R, W), np.int64)
    emax = np.empty(W, np.int64); acc = np.empty(W, np.int64)
    for i in range(R):
        for n in range(W):
            kk, ss, mm, qq, tt = decode(np.int64(cbits[m0 + i, n0 + n]), fc)
            cS[i, n] = -mm if ss else mm
            cq[i, n] = qq if kk == NUM else ZQ
            ct[i, n] = tt if kk == NUM else ZQ
            if kk != NUM:
                redo[m0 + i, n0 + n] = True
    for k0 in range(0, K, L):
        for i in range(R):
            m = m0 + i
            _emax_init(emax, ct[i], e_zero)
            for j in range(L):
                _emax_update(at[m, k0 + j], bt[k0 + j, n0:n1], emax)
            _acc_init(acc, cS[i], cq[i], emax, F)
            for j in range(L):
                _acc_update(aS[m, k0 + j], aq[m, k0 + j] - PRE + F, bS[k0 + j, n0:n1], bq[k0 + j, n0:n1],
                            emax, acc)
            _round_row(acc, emax, F, fd, mode, cS[i], cq[i], ct[i], redo[m, n0:n1])
    for i in range(R):
        for n in range(W):
            s = cS[i, n]
            if s == 0:
                out[m0 + i, n0 + n] = 0
            else:
                out[m0 + i, n0 + n] = encode(1 if s < 0 else np.int64(0), -s if s < 0 else s, cq[i, n], fd, fast.RZ,
                                             np.int64(0))


@njit(cache=True, parallel=True)
def _gemm_par(aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo):
    M = aS.shape[0]
    N = bS.shape[1]
    nrb = (M + _BR - 1) // _BR
    ncb = (N + _BC - 1) // _BC
    for blk in prange(nrb * ncb):
        m0 = (blk // ncb) * _BR
        n0 = (blk % ncb) * _BC
        _block(m0, min(M, m0 + _BR), n0, min(N, n0 + _BC), aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero,
               mode, out, redo)


@njit(cache=True)
def _fixups(abits, bbits, cbits, spa, spb, redo, fa, fb, fc, fd, L, F, e_zero, mode, out):
    M, N = out.shape
    for m in range(M):
        for n in range(N):
            if spa[m] or spb[n] or redo[m, n]:
                out[m, n] = chain_element(abits[m], bbits[:, n], cbits[m, n], L, fa, fb, fc, fd, F, e_zero,
                                          mode)


# ------------------------------------------------------------------------------------------------
# f32-accumulator GEMMs (D rounded toward zero to binary32 after every step, as every sm_80/sm_90 form with
# an f32 D does): the same arithmetic carried in binary64, where each piece of it is exact.
#   * an operand of at most 24 significant bits is a binary64 value; a product of two is exact (<= 48 bits);
#   * multiplying by s = 2**(F - emax) only moves the exponent, so trunc(p * s) is the reference's term
#     (|p| aligned F bits below 2**emax, truncated toward zero, sign restored), an integer below 2**(F+2);
#   * the step's sum of L + 1 such integers stays far below 2**53: exact in any order;
#   * acc * 2**(emax - F) is exact, and clearing the fraction bits below binary32's last place (the
#     subnormal grid 2**-149 below 2**-126) is the reference's rounding toward zero.
#   * a nonzero sum is at least 2**(emax - F): in a row step where every emax is at least F - 126, every
#     result is normal and the rounding is a fixed mask (29 of binary64's 52 fraction bits); otherwise the
#     masked results are cut again to the subnormal grid (truncations toward zero compose).
# Layout: B in panels of _W columns, element (k, n) at [n // _W, k * _W + n % _W], so that the L rows of a
# step lie at fixed distances; nominal exponents in int16, biased by 1023 for B and C (zeros, and the inf/NaN
# the scalar chain redoes, get _NOEXP: a sum with it stays below every e_zero).  A task is a block of _FBR
# rows of one panel; for each step and row two loops run over the panel's columns with the L products
# unrolled (L is a compile-time constant, one kernel per L, so the compiler vectorises across the columns
# and keeps each sum in a register): the exponent maxima (int16, 32 to a 512-bit vector), then the terms,
# their sum and its rounding (8 columns to a vector: two multiplications, a conversion and an addition per
# product, about 0.32 CPU cycles per product with AVX-512), over the panel's used columns rounded up to 16.
# C is decoded and D encoded eight columns at a time (tc_simd.vload_f32, vencode): with one step per call (a
# wgmma tile) they weighed as much as the step.
_W = 128                # columns of one panel
_FBR = 32               # rows of one parallel task: a step's slice of the panel stays in cache for all of them
_NOEXP = -10000


def _f32_table(fmt):
    """(values, nominal exponents) of every code of an 8- or 16-bit format, from its decode table: the value
    exact in binary64, the exponent int16 (_NOEXP for zeros, _NOEXP - 1 for infs and NaNs); one-element
    dummies for the wider formats (decoded arithmetically)."""
    key = ("f32 values", fmt)
    if key not in _LUTS:
        t = lut(fmt)
        if t.shape[0] == 1:
            _LUTS[key] = np.zeros(1), np.zeros(1, np.int16)
        else:
            S, q, top, kind = t.T
            finite = kind == NUM
            vals = np.where(finite & (S != 0), np.ldexp(S.astype(np.float64), np.where(S != 0, q, 0)), 0.0)
            exps = np.where(finite & (S != 0), top, np.where(finite, _NOEXP, _NOEXP - 1)).astype(np.int16)
            _LUTS[key] = vals, exps
    return _LUTS[key]


def _f16_table(t, scale):
    """An _f32_table's values times 2**scale in binary32 (exact for f16's codes), for the narrow kernels."""
    key = ("f16 values", id(t[0]), scale)
    if key not in _LUTS:
        _LUTS[key] = np.ldexp(t[0], scale).astype(np.float32), t[1]
    return _LUTS[key]


@njit(cache=True, inline="always")
def _value64(x, fmt, vals, exps):
    """(value, nominal exponent) of one operand element, the value exact in binary64 (0 and _NOEXP for zeros,
    0 and _NOEXP - 1 for infs and NaNs)."""
    if vals.shape[0] > 1:
        return vals[x], np.int64(exps[x])
    kk, ss, mm, q, t = decode(x, fmt)
    if kk != NUM:
        return 0.0, np.int64(_NOEXP - 1)
    if mm == 0:
        return 0.0, np.int64(_NOEXP)
    return np.float64(-mm if ss else mm) * _i2f((q + 1023) << 52), t


@njit(cache=True)
def _f32_a(bits, fmt, vals, exps, v, e, special):
    """A (M, K): values and nominal exponents; rows holding an inf or NaN flagged."""
    for r in range(bits.shape[0]):
        for c in range(bits.shape[1]):
            val, t = _value64(np.int64(bits[r, c]), fmt, vals, exps)
            v[r, c] = val
            e[r, c] = max(t, _NOEXP)
            if t < _NOEXP:
                special[r] = True


@njit(cache=True)
def _f32_b(bits, fmt, vals, exps, v, e, special):
    """B (K, N) into panels (P, K * _W): values and nominal exponents (biased by 1023 but for _NOEXP); columns
    holding an inf or NaN flagged, the columns past N zero."""
    K, N = bits.shape
    v[:, :] = 0.0
    e[:, :] = _NOEXP
    for k in range(K):
        for n in range(N):
            val, t = _value64(np.int64(bits[k, n]), fmt, vals, exps)
            i = k * _W + n % _W
            v[n // _W, i] = val
            e[n // _W, i] = t + 1023 if t > _NOEXP else _NOEXP
            if t < _NOEXP:
                special[n] = True


def _packed_f64_to_i64():
    """Whether the CPU numba compiles for converts binary64 to int64 a vector at a time (AVX-512DQ); without
    it the conversion runs one element at a time, and truncating in binary64 (a vector at a time on AVX and
    NEON) is three times faster (the sum of whole numbers below 2**53 is exact in binary64 too)."""
    try:
        from numba.core import codegen, config
        feats = config.CPU_FEATURES if config.CPU_FEATURES is not None else codegen.get_host_cpu_features()
    except Exception:
        return False
    return "+avx512dq" in feats.split(",")


_CVT64 = _packed_f64_to_i64()


@intrinsic
def _wide_vectors(typingctx):
    """Lets the compiler use 512-bit vectors in the calling function where the CPU has them (LLVM's x86
    default is 256): the f32 kernels run about a fifth faster."""
    def codegen(context, builder, signature, args):
        try:
            set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        except Exception:               # an llvmlite without plain-set attributes: the default width
            pass
        return context.get_dummy_value()
    return types.none(), codegen


@njit(cache=True, inline="always")
def _f32_emax(atr, bts, ctr, em, ez, LC, nc):
    """emax of one row's step across the panel: max(C's exponent, e_zero, top_a + top_b), all biased by 1023
    (B's exponents carry the bias).  Returns the smallest."""
    lo = np.int16(32767)
    for n in range(nc):
        x = max(ctr[n], ez)
        for j in range(LC):
            x = max(x, np.int16(atr[j] + bts[j * _W + n]))
        em[n] = x
        lo = min(lo, x)
    return lo


@njit(cache=True, inline="always")
def _f32_terms(avr, bvs, em, cvr, ctr, F, LC, nc):
    """One row's step across the panel: the truncated terms and their sum, cut to binary32's 24 significant
    bits (the rounding toward zero of every result of 2**-126 or more).  C's exponent becomes the result's
    biased binary64 exponent (0 for zeros).  Returns the largest (above 1023 + 127: an overflow)."""
    hi = np.int64(0)
    for n in range(nc):
        e = np.int64(em[n])
        s = _i2f((F + 2046 - e) << 52)
        if _CVT64:                                   # the terms as int64 (one conversion each)
            acc = np.int64(cvr[n] * s)
            for j in range(LC):
                acc += np.int64(avr[j] * bvs[j * _W + n] * s)
            v = np.float64(acc)
        else:                                        # as whole binary64 values (one rounding each)
            v = np.trunc(cvr[n] * s)
            for j in range(LC):
                v += np.trunc(avr[j] * bvs[j * _W + n] * s)
        bits = _f2i(v * _i2f((e - F) << 52))
        E = (bits >> 52) & 0x7FF
        cvr[n] = _i2f(bits & ~np.int64((1 << 29) - 1))
        ctr[n] = E
        hi = max(hi, E)
    return hi


_ASCALE = 64           # the narrow kernels hold A's values times 2**_ASCALE (see _f16_terms)


@njit(cache=True, inline="always")
def _f16_terms(avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac):
    """_f32_terms for operands whose products are exact in binary32 (f16: 11 x 11 significant bits), in three
    passes so that the products' pass holds only binary32 and int32 (8 columns to a 256-bit vector, 16 to a
    512-bit one): A's values are held times 2**_ASCALE (f16's 2**-24 .. 65504 become 2**40 .. 2**80, so every
    nonzero product lies in 2**16 .. 2**96), the product times 2**(F - emax - _ASCALE) is exact wherever it is
    1 or more (a power of two in binary32's normal range; where that exponent would be below -126 the term is
    below 1 either way and truncates to 0), and its truncation converts to int32: each term is below
    2**(F + 2) in magnitude, so the L terms' sum fits (_narrow checks L * 2**(F + 2) <= 2**31).  C's term and
    the total are formed in binary64 (exact below 2**53), then the same cut as _f32_terms.  sc (binary32) and
    ac (int32) are scratch rows."""
    for n in range(nc):                              # the scales
        x = max(np.int64(F + 1023 - _ASCALE) - np.int64(em[n]), np.int64(-126))
        sc[n] = _i2f32(np.int32((x + 127) << 23))
    for n in range(nc):                              # the products' terms and their sum
        s32 = sc[n]
        acc = np.int32(0)
        for j in range(LC):
            acc = np.int32(acc + np.int32(avr[j] * bvs[j * _W + n] * s32))
        ac[n] = acc
    hi = np.int64(0)
    for n in range(nc):                              # C's term, the cut
        e = np.int64(em[n])
        v = np.float64(ac[n]) + np.trunc(cvr[n] * _i2f((F + 2046 - e) << 52))
        bits = _f2i(v * _i2f((e - F) << 52))
        E = (bits >> 52) & 0x7FF
        cvr[n] = _i2f(bits & ~np.int64((1 << 29) - 1))
        ctr[n] = E
        hi = max(hi, E)
    return hi


def _step_terms(avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac):
    """_f16_terms for binary32 operand values, _f32_terms for binary64 (chosen when the caller is typed, so that
    each kernel compiles only one of them)."""
    raise NotImplementedError("jitted code only")


@overload(_step_terms, inline="always")
def _step_terms_impl(avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac):
    if avr.dtype == types.float32:
        return lambda avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac: _f16_terms(avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac)
    return lambda avr, bvs, em, cvr, ctr, F, LC, nc, sc, ac: _f32_terms(avr, bvs, em, cvr, ctr, F, LC, nc)


@njit(cache=True, inline="always")
def _f32_tiny(cvr, ctr, nc):
    """The results below 2**-126 rounded toward zero to the subnormal grid 2**-149 (0 below it); a result
    already cut to 24 bits can be cut again: truncations toward zero compose."""
    for n in range(nc):
        bits = _f2i(cvr[n])
        E = (bits >> 52) & 0x7FF
        zero = E < 1023 - 149
        drop = min(max(29, 1023 - 97 - E), 63)
        cvr[n] = 0.0 if zero else _i2f(bits & (np.int64(-1) << drop))
        ctr[n] = 0 if zero else max(E, 1023 - 126)


@njit(cache=True, inline="always")
def _f32_panel(m0, m1, p, av, at, bvp, btp, cbits, F, e_zero, out, redo, LC):
    """Rows m0..m1 of panel p: C decoded, every K step, D encoded.  Between steps the state of each element
    is its value (binary64) and its nominal exponent (biased by 1023, 0 for zeros).  A nonzero sum is at
    least 2**(emax - F): where no emax of the row is below F - 126 no result of the step is subnormal."""
    _wide_vectors()
    K = av.shape[1]
    n0 = p * _W
    nw = min(_W, out.shape[1] - n0)
    cv = np.zeros((m1 - m0, _W), np.float64)
    ct = np.zeros((m1 - m0, _W), np.int16)
    nv = nw & ~7                                     # columns decoded eight at a time
    nc = min(_W, (nw + 15) & ~15)                    # columns the steps run over (the rest: padding)
    for i in range(m1 - m0):
        crow = cbits[m0 + i]
        lo = nv
        if nv and vload_f32(crow, n0, nv, cv[i], ct[i], 0):
            lo = 0                                   # an inf or NaN in the row: all of it decoded one by one
        for n in range(lo, nw):
            cv[i, n] = 0.0
            ct[i, n] = 0
            kk, ss, mm, qq, tt = decode(np.int64(crow[n0 + n]), 3)
            if kk != NUM:
                redo[m0 + i, n0 + n] = True
            elif mm:
                cv[i, n] = np.float64(-mm if ss else mm) * _i2f((qq + 1023) << 52)
                ct[i, n] = tt + 1023
    em = np.empty(_W, np.int16)
    sc = np.empty(_W, np.float32)
    ac = np.empty(_W, np.int32)
    ez = np.int16(e_zero + 1023)
    for k0 in range(0, K, LC):
        bvs = bvp[p, k0 * _W:(k0 + LC) * _W]
        bts = btp[p, k0 * _W:(k0 + LC) * _W]
        for i in range(m1 - m0):
            m = m0 + i
            cvr = cv[i]
            ctr = ct[i]
            lo = _f32_emax(at[m, k0:k0 + LC], bts, ctr, em, ez, LC, nc)
            hi = _step_terms(av[m, k0:k0 + LC], bvs, em, cvr, ctr, F, LC, nc, sc, ac)
            if lo < F - 126 + 1023:
                _f32_tiny(cvr, ctr, nc)
            if hi > 1023 + 127:                      # overflowed: the scalar chain redoes the element
                for n in range(nw):
                    if ctr[n] > 1023 + 127:
                        redo[m, n0 + n] = True
                        cvr[n] = 0.0
                        ctr[n] = 0
    f = np.empty(1, np.float32)
    fu = f.view(np.uint32)
    for i in range(m1 - m0):
        orow = out[m0 + i]
        if nv:
            vencode(cv[i], 0, nv, orow, n0, 32, 23, 127)     # eight at a time (+0 for zeros)
        for n in range(nv, nw):
            f[0] = np.float32(cv[i, n])                # exact: already on binary32's grid
            orow[n0 + n] = np.uint64(fu[0]) if cv[i, n] != 0 else np.uint64(0)


@njit(cache=True, nogil=True)
def _gemm_f32_32(t0, t1, av, at, bvp, btp, cbits, F, e_zero, out, redo):
    """Tasks t0..t1 (row block, panel) of an L = 32 GEMM (wgmma's fp8)."""
    P = bvp.shape[0]
    for t in range(t0, t1):
        m0 = (t // P) * _FBR
        _f32_panel(m0, min(av.shape[0], m0 + _FBR), t % P, av, at, bvp, btp, cbits, F, e_zero, out, redo, 32)


@njit(cache=True, nogil=True)
def _gemm_f32_16(t0, t1, av, at, bvp, btp, cbits, F, e_zero, out, redo):
    """Tasks t0..t1 (row block, panel) of an L = 16 GEMM (f16, bf16)."""
    P = bvp.shape[0]
    for t in range(t0, t1):
        m0 = (t // P) * _FBR
        _f32_panel(m0, min(av.shape[0], m0 + _FBR), t % P, av, at, bvp, btp, cbits, F, e_zero, out, redo, 16)


@njit(cache=True, nogil=True)
def _gemm_f32_8(t0, t1, av, at, bvp, btp, cbits, F, e_zero, out, redo):
    """Tasks t0..t1 of an L = 8 GEMM (sm_80's f16 and bf16, tf32 on sm_90)."""
    P = bvp.shape[0]
    for t in range(t0, t1):
        m0 = (t // P) * _FBR
        _f32_panel(m0, min(av.shape[0], m0 + _FBR), t % P, av, at, bvp, btp, cbits, F, e_zero, out, redo, 8)


@njit(cache=True, nogil=True)
def _gemm_f32_4(t0, t1, av, at, bvp, btp, cbits, F, e_zero, out, redo):
    """Tasks t0..t1 of an L = 4 GEMM (sm_80's tf32)."""
    P = bvp.shape[0]
    for t in range(t0, t1):
        m0 = (t // P) * _FBR
        _f32_panel(m0, min(av.shape[0], m0 + _FBR), t % P, av, at, bvp, btp, cbits, F, e_zero, out, redo, 4)


# by L, each compiled on first use; threads of this process run them on disjoint tasks (they release the
# GIL), which compiles in half the time numba's parallel loops take
_GEMM_F32 = {32: _gemm_f32_32, 16: _gemm_f32_16, 8: _gemm_f32_8, 4: _gemm_f32_4}


def _in_threads(kern, ntasks, work, *args):
    """kern(t0, t1, *args) over tasks 0..ntasks, in as many threads as numba would use (in this one where
    the work, in products, is too small to pay for starting them)."""
    nthr = min(numba.get_num_threads(), ntasks) if work >= 1 << 22 else 1
    if nthr <= 1:
        kern(0, ntasks, *args)
        return
    cuts = np.linspace(0, ntasks, 4 * nthr + 1).astype(np.int64)
    with ThreadPoolExecutor(nthr) as pool:
        for f in [pool.submit(kern, int(t0), int(t1), *args) for t0, t1 in zip(cuts[:-1], cuts[1:]) if t1 > t0]:
            f.result()


def _tc_gemm_f32(abits, bbits, cbits, op, L, F, e_zero):
    """D bits of an f32-accumulator GEMM by the binary64 kernels; (out, spa, spb, redo) for the fix-ups.
    Each step's arithmetic is symmetric in A and B (the products, and emax from top_a + top_b), so where
    panels of columns would mostly pad a narrow N the transposed GEMM D^T = B^T A^T + C^T runs instead."""
    fa, fb = int(op._prm[3]), int(op._prm[4])
    la, lb = _f32_table(op.variant.atype), _f32_table(op.variant.btype)
    M, N = cbits.shape
    if N * -(-M // _W) < M * -(-N // _W):
        out, spb, spa, redo = _f32_run(np.ascontiguousarray(bbits.T), np.ascontiguousarray(abits.T),
                                       np.ascontiguousarray(cbits.T), fb, fa, lb, la, L, F, e_zero)
        return np.ascontiguousarray(out.T), spa, spb, np.ascontiguousarray(redo.T)
    return _f32_run(abits, bbits, cbits, fa, fb, la, lb, L, F, e_zero)


def _narrow(fa, fb, L, F):
    """Whether _f16_terms computes the steps: f16 operands, and L terms below 2**(F + 2) sum within int32."""
    return fa == 0 and fb == 0 and L << (F + 2) <= 1 << 31


def _f32_run(abits, bbits, cbits, fa, fb, la, lb, L, F, e_zero):
    M, K = abits.shape
    N = bbits.shape[1]
    P = (N + _W - 1) // _W
    vt = np.float64
    if _narrow(fa, fb, L, F):
        la, lb, vt = _f16_table(la, _ASCALE), _f16_table(lb, 0), np.float32
    av = np.empty((M, K), vt)
    at = np.empty((M, K), np.int16)
    bvp = np.empty((P, K * _W), vt)
    btp = np.empty((P, K * _W), np.int16)
    spa = np.zeros(M, np.bool_)
    spb = np.zeros(N, np.bool_)
    redo = np.zeros((M, N), np.bool_)
    out = np.empty((M, N), np.uint64)
    _f32_a(abits, fa, la[0], la[1], av, at, spa)
    _f32_b(bbits, fb, lb[0], lb[1], bvp, btp, spb)
    _in_threads(_GEMM_F32[L], ((M + _FBR - 1) // _FBR) * P, M * N * K, av, at, bvp, btp, cbits, F, e_zero, out,
                redo)
    return out, spa, spb, redo


_LUTS = {}
BUILDERS = {}           # table name -> function building it, for tables other than build_lut's


def lut(fmt):
    if fmt not in _LUTS:
        _LUTS[fmt] = BUILDERS[fmt]() if fmt in BUILDERS else build_lut(fmt)
    return _LUTS[fmt]


NUMPY_MAX = 1 << 21     # tiles up to this many products run in numpy while the jitted code compiles
SERIAL_MAX = 1 << 22    # ... and up to this many on one thread (a wgmma tile: 64 x 256 x 16 = 2**18)


def tc_gemm(abits, bbits, cbits, op, fast_f32=True):
    """D bits (M, N) of the GEMM built from the tensor-core instruction ``op`` (an MmaOp). ``fast_f32``:
    f32-accumulator forms take the binary64 path (``_tc_gemm_f32``); False runs the integer path (the
    tests compare the two)."""
    prm = op._prm
    fa, fb, fc, fd = (int(x) for x in prm[3:7])
    L, F, e_zero, mode = (int(x) for x in prm[15:19])
    M, K = abits.shape
    N = bbits.shape[1]
    if fast_f32 and M * N * K <= NUMPY_MAX and tile_numpy.eligible(prm) and compiling():
        return _tc_gemm_numpy(abits, bbits, cbits, op)
    abits = np.ascontiguousarray(abits, np.uint64)
    bbits = np.ascontiguousarray(bbits, np.uint64)
    cbits = np.ascontiguousarray(cbits, np.uint64)
    f32 = fc == 3 and fd == 3 and mode == fast.RZ and (len(prm) < 20 or int(prm[19]) == 0)
    if fast_f32 and f32 and L in _GEMM_F32:
        out, spa, spb, redo = _tc_gemm_f32(abits, bbits, cbits, op, L, F, e_zero)
    else:
        aS = np.empty((M, K), np.int64); aq = np.empty((M, K), np.int64); at = np.empty((M, K), np.int64)
        bS = np.empty((K, N), np.int64); bq = np.empty((K, N), np.int64); bt = np.empty((K, N), np.int64)
        spa = np.zeros(M, np.bool_)
        spb = np.zeros(N, np.bool_)
        _decode_matrix(abits, fa, aS, aq, at, spa, True, lut(op.variant.atype))
        _decode_matrix(bbits, fb, bS, bq, bt, spb, False, lut(op.variant.btype))
        out = np.empty((M, N), np.uint64)
        redo = np.zeros((M, N), np.bool_)
        if M * N * K <= SERIAL_MAX:             # one instruction's tile: threads would cost more than they save
            _block(0, M, 0, N, aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo)
        else:
            _gemm_par(aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo)
    if spa.any() or spb.any() or redo.any():
        _fixups(abits, bbits, cbits, spa, spb, redo, fa, fb, fc, fd, L, F, e_zero, mode, out)
    return out


def _tc_gemm_numpy(abits, bbits, cbits, op):
    """tc_gemm by numerics.tile_numpy; elements with an inf/NaN or an overflow by the jitted fix-up."""
    prm = op._prm
    fa, fb, fc, fd = (int(x) for x in prm[3:7])
    L, F, e_zero, mode = (int(x) for x in prm[15:19])
    abits = np.ascontiguousarray(abits, np.uint64)
    bbits = np.ascontiguousarray(bbits, np.uint64)
    cbits = np.ascontiguousarray(cbits, np.uint64)
    out, redo = tile_numpy.steps(abits[None], bbits[None], cbits[None], fa, fb, fc, fd, L, F, e_zero)
    out, redo = out[0], redo[0]
    if redo.any():
        _fixups(abits, bbits, cbits, np.zeros(abits.shape[0], np.bool_), np.zeros(bbits.shape[1], np.bool_),
                redo, fa, fb, fc, fd, L, F, e_zero, mode, out)
    return out


# ------------------------------------------------------------------------------------------------
# register-level batches of tensor-core instructions (MmaOp.execute_batch): the same block code on
# one instruction's tile
@njit(cache=True, **INNER)
def _trunc_c(cS, cq, F, emax):
    """The accumulator truncated toward zero F bits below 2**emax."""
    sh = cq + F - emax
    mg = -cS if cS < 0 else cS
    mg = mg << sh if sh >= 0 else mg >> min(-sh, 63)
    return -mg if cS < 0 else mg


@njit(cache=True, **INNER)
def _term(pr, r):
    """One product truncated toward zero: (|pr| << PRE) >> r, with pr's sign."""
    msk = pr >> 63
    mag = ((pr ^ msk) - msk) << PRE >> min(r, 63)
    return (mag ^ msk) - msk


@njit(cache=True, **INNER)
def _round_dec(s, lsb, fd, mode):
    """Round s * 2**lsb to fd (RZ/RNE) and return it decoded: (S, q, t, overflowed)."""
    eb, mb, w = fast.fmt_info(fd)
    p = mb + 1
    bias = (1 << (eb - 1)) - 1
    qmin = 1 - bias - mb
    qmax = (1 << eb) - 2 - bias - mb
    mag = -s if s < 0 else s
    top = lsb + 63 - fast.clz64(mag)
    qq = max(top - (p - 1), qmin)
    sh = qq - lsb
    if sh <= 0:
        r = mag << -sh
    else:
        sh2 = min(sh, 63)
        r = mag >> sh2
        if mode == fast.RNE:
            rem = mag - (r << sh2)
            half = np.int64(1) << (sh2 - 1)
            r += 1 if (rem > half or (rem == half and (r & 1) == 1)) else 0
    if r >> p:
        r >>= 1
        qq += 1
    if r == 0:
        return np.int64(0), np.int64(ZQ), np.int64(ZQ), False
    return (-r if s < 0 else r), qq, (qq + mb if r >> mb else np.int64(1 - bias)), qq > qmax


@njit(cache=True, **INNER)
def _enc_dec(cS, cq, fd):
    return _enc_acc(cS, cq, fd)


@njit(cache=True, **INNER)
def _tile_n8(M, N, K, aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo):
    """One instruction's tile (N == 8: every m16n8 shape): the arithmetic of _block with the eight columns'
    state in arrays of the stack frame, each step a loop of constant length 8 over the columns, which the
    compiler unrolls, keeps in registers and turns into vector operations across the columns (as it did for
    the unrolled code this replaces, which numba took more than twice as long to compile)."""
    cS = stack_i64(8)
    cq = stack_i64(8)
    ct = stack_i64(8)
    e = stack_i64(8)
    acc = stack_i64(8)
    for m in range(M):
        k = m * 8
        for n in range(8):
            s, q, t, fin = _dec_acc(cbits[k + n], fc)
            cS[n] = s
            cq[n] = q
            ct[n] = t
            if not fin:
                redo[k + n] = True
        for k0 in range(0, K, L):
            for n in range(8):
                e[n] = ct[n] if ct[n] > e_zero else e_zero
            for j in range(L):
                ea = at[m * K + k0 + j]
                o = (k0 + j) * 8
                for n in range(8):
                    x = ea + bt[o + n]
                    e[n] = x if x > e[n] else e[n]
            for n in range(8):
                acc[n] = _trunc_c(cS[n], cq[n], F, e[n])
            for j in range(L):
                sa = aS[m * K + k0 + j]
                qa = aq[m * K + k0 + j] - PRE + F
                o = (k0 + j) * 8
                for n in range(8):
                    acc[n] += _term(sa * bS[o + n], e[n] - qa - bq[o + n])
            for n in range(8):
                s, q, t, ov = _round_dec(acc[n], e[n] - F, fd, mode)
                cS[n] = s
                cq[n] = q
                ct[n] = t
                if ov:
                    redo[k + n] = True
        for n in range(8):
            out[k + n] = _enc_dec(cS[n], cq[n], fd)


@njit(cache=True)
def _tc_one(a, b, c, d, i, maps, prm, luta, lutb, araw, braw, craw, zeros, aS, aq, at, bS, bq, bt, spa, spb, out, redo):
    M, N, K = prm[0], prm[1], prm[2]
    fa, fb, fc, fd = prm[3], prm[4], prm[5], prm[6]
    L, F, e_zero, mode, groups = prm[15], prm[16], prm[17], prm[18], prm[19]
    fast._gather(a, i, maps, prm[20], prm[7], prm[11], araw.reshape(M * K))
    fast._gather(b, i, maps, prm[21], prm[8], prm[12], braw.reshape(K * N))
    fast._gather(c, i, maps, prm[22], prm[9], prm[13], craw.reshape(M * N))
    spa[:] = False
    spb[:] = False
    redo[:, :] = False
    _decode_matrix(araw, fa, aS, aq, at, spa, True, luta)
    _decode_matrix(braw, fb, bS, bq, bt, spb, False, lutb)
    # sm_90 fp8 (groups == 1): the two HMMA steps start from +0 and C is added last
    c0 = zeros if groups == 1 else craw
    _tile_n8(M, N, K, aS.reshape(M * K), aq.reshape(M * K), at.reshape(M * K), bS.reshape(K * N),
            bq.reshape(K * N), bt.reshape(K * N), c0.reshape(M * N), fd if groups == 1 else fc, fd, L, F, e_zero,
            mode, out.reshape(M * N), redo.reshape(M * N))
    for m in range(M):
        for n in range(N):
            if spa[m] or spb[n] or redo[m, n]:
                out[m, n] = chain_element(araw[m], braw[:, n], c0[m, n], L, fa, fb,
                                          fd if groups == 1 else fc, fd, F, e_zero, mode)
            if groups == 1:
                out[m, n] = fast.ieee_add_bits(np.int64(craw[m, n]), np.int64(out[m, n]), fd)
    # D registers
    nreg = d.shape[1]
    epr, w = prm[10], prm[14]
    flat = out.reshape(M * N)
    j = prm[23]
    for r in range(nreg):
        for lane in range(32):
            word = np.uint64(0)
            for e in range(epr):
                word |= flat[maps[j]] << np.uint64(e * w)
                j += 1
            d[i, r, lane] = word


@njit(cache=True, inline="always")
def _tc_scratch(prm):
    M, N, K = prm[0], prm[1], prm[2]
    return (np.empty((M, K), np.uint64), np.empty((K, N), np.uint64), np.empty((M, N), np.uint64),
            np.zeros((M, N), np.uint64),
            np.empty((M, K), np.int64), np.empty((M, K), np.int64), np.empty((M, K), np.int64),
            np.empty((K, N), np.int64), np.empty((K, N), np.int64), np.empty((K, N), np.int64),
            np.empty(M, np.bool_), np.empty(N, np.bool_), np.empty((M, N), np.uint64),
            np.empty((M, N), np.bool_))


@njit(cache=True)
def tc_batch(a, b, c, d, maps, prm, luta, lutb):
    """prm: M N K fa fb fc fd epra eprb eprc eprd wa wb wc wd L F e_zero mode groups offA offB offC offD.
    maps: the four flat fragment maps, concatenated (tile indexes A: m*K + k, B: k*N + n, C/D: m*N + n)."""
    s = _tc_scratch(prm)
    for i in range(a.shape[0]):
        _tc_one(a, b, c, d, i, maps, prm, luta, lutb, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10],
                s[11], s[12], s[13])


# ------------------------------------------------------------------------------------------------
# large batches: the same arithmetic vectorised across instructions (each inner loop runs over a chunk of
# independent instructions, for one output element); instructions with an inf/NaN operand, or whose
# accumulator overflows, are redone by _tc_one
CH = 64


@njit(cache=True, **INNER)
def _dec_acc(bits, fmt):
    """Decode an f32/f16 accumulator: (S, q, t, finite) with S signed; zeros get ZQ."""
    eb, mb, w = fast.fmt_info(fmt)
    bias = (1 << (eb - 1)) - 1
    x = np.int64(bits)
    e = (x >> mb) & ((1 << eb) - 1)
    frac = x & ((np.int64(1) << mb) - 1)
    neg = (x >> (w - 1)) & 1
    if e == (1 << eb) - 1:
        return np.int64(0), np.int64(ZQ), np.int64(ZQ), False
    if e == 0:
        if frac == 0:
            return np.int64(0), np.int64(ZQ), np.int64(ZQ), True
        return (-frac if neg else frac), np.int64(1 - bias - mb), np.int64(1 - bias), True
    m = frac | (np.int64(1) << mb)
    return (-m if neg else m), e - bias - mb, e - bias, True


@njit(cache=True, **INNER)
def _enc_acc(S, q, fmt):
    """Encode an already rounded finite accumulator (|S| < 2**(mbits+1), on the format's grid)."""
    if S == 0:
        return np.uint64(0)
    eb, mb, w = fast.fmt_info(fmt)
    bias = (1 << (eb - 1)) - 1
    neg = S < 0
    mag = -S if neg else S
    sign = np.int64(1) << (w - 1) if neg else np.int64(0)
    if mag >> mb:
        return np.uint64(sign | ((q + mb + bias) << mb) | (mag - (np.int64(1) << mb)))
    return np.uint64(sign | mag)


@njit(cache=True)
def _chunk_decode(regs, i0, n_i, maps, off, epr, w, fmt, lut, S, q, t, bad):
    """Decode one operand of instructions i0..i0+n_i into S/q/t[tile index, instruction]."""
    nreg = regs.shape[1]
    mask = (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    use_lut = lut.shape[0] > 1
    flat = lut.reshape(lut.shape[0] * 4)
    j = off
    for r in range(nreg):
        for lane in range(32):
            for e in range(epr):
                idx = maps[j]
                j += 1
                sh = np.uint64(e * w)
                Sr = S[idx]
                qr = q[idx]
                tr = t[idx]
                for ii in range(n_i):
                    bits = (np.uint64(regs[i0 + ii, r, lane]) >> sh) & mask
                    if use_lut:
                        base = np.int64(bits) * 4
                        Sr[ii] = flat[base]
                        qr[ii] = flat[base + 1]
                        tr[ii] = flat[base + 2]
                        if flat[base + 3] != NUM:
                            bad[ii] = True
                    else:
                        kk, ss, mm, qq, tt = decode(np.int64(bits), fmt)
                        Sr[ii] = -mm if ss else mm
                        qr[ii] = qq if kk == NUM else ZQ
                        tr[ii] = tt if kk == NUM else ZQ
                        if kk != NUM:
                            bad[ii] = True


@njit(cache=True)
def _wide_chunks(c0, c1, a, b, c, d, maps, prm, luta, lutb):
    """Chunks c0..c1 of CH instructions each."""
    M, N, K = prm[0], prm[1], prm[2]
    fa, fb, fc, fd = prm[3], prm[4], prm[5], prm[6]
    L, F, e_zero, mode, groups = prm[15], prm[16], prm[17], prm[18], prm[19]
    eb, mb, w = fast.fmt_info(fd)
    p = mb + 1
    bias = (1 << (eb - 1)) - 1
    qmin = 1 - bias - mb
    qmax = (1 << eb) - 2 - bias - mb
    aS = np.empty((M * K, CH), np.int64); aq = np.empty((M * K, CH), np.int64); at = np.empty((M * K, CH), np.int64)
    bS = np.empty((K * N, CH), np.int64); bq = np.empty((K * N, CH), np.int64); bt = np.empty((K * N, CH), np.int64)
    cw = np.empty((M * N, CH), np.uint64)
    out = np.empty((M * N, CH), np.uint64)
    cS = np.empty(CH, np.int64); cq = np.empty(CH, np.int64); ct = np.empty(CH, np.int64)
    emax = np.empty(CH, np.int64); acc = np.empty(CH, np.int64)
    bad = np.empty(CH, np.bool_)
    s = _tc_scratch(prm)
    for ch in range(c0, c1):
        i0 = ch * CH
        n_i = min(CH, a.shape[0] - i0)
        bad[:] = False
        _chunk_decode(a, i0, n_i, maps, prm[20], prm[7], prm[11], fa, luta, aS, aq, at, bad)
        _chunk_decode(b, i0, n_i, maps, prm[21], prm[8], prm[12], fb, lutb, bS, bq, bt, bad)
        j = prm[22]
        mask = (np.uint64(1) << np.uint64(prm[13])) - np.uint64(1)
        for r in range(c.shape[1]):
            for lane in range(32):
                for e in range(prm[9]):
                    row = cw[maps[j]]
                    j += 1
                    sh = np.uint64(e * prm[13])
                    for ii in range(n_i):
                        row[ii] = (np.uint64(c[i0 + ii, r, lane]) >> sh) & mask
        for o in range(M * N):
            m = o // N
            n = o % N
            cwo = cw[o]
            cfmt = fd if groups == 1 else fc
            for ii in range(n_i):
                x = np.int64(0) if groups == 1 else np.int64(cwo[ii])
                S0, q0, t0, fin = _dec_acc(x, cfmt)
                cS[ii] = S0
                cq[ii] = q0
                ct[ii] = t0
                if not fin:
                    bad[ii] = True
            for k0 in range(0, K, L):
                for ii in range(n_i):
                    emax[ii] = ct[ii] if ct[ii] > e_zero else e_zero
                for jj in range(L):
                    ar = at[m * K + k0 + jj]
                    br = bt[(k0 + jj) * N + n]
                    for ii in range(n_i):
                        e = ar[ii] + br[ii]
                        emax[ii] = e if e > emax[ii] else emax[ii]
                for ii in range(n_i):
                    sh = cq[ii] + F - emax[ii]
                    mg = -cS[ii] if cS[ii] < 0 else cS[ii]
                    mg = mg << sh if sh >= 0 else mg >> min(-sh, 63)
                    acc[ii] = -mg if cS[ii] < 0 else mg
                for jj in range(L):
                    sar = aS[m * K + k0 + jj]
                    qar = aq[m * K + k0 + jj]
                    sbr = bS[(k0 + jj) * N + n]
                    qbr = bq[(k0 + jj) * N + n]
                    for ii in range(n_i):
                        pr = sar[ii] * sbr[ii]
                        rr = min(emax[ii] + PRE - F - qar[ii] - qbr[ii], 63)
                        msk = pr >> 63
                        mag = ((pr ^ msk) - msk) << PRE >> rr
                        acc[ii] += (mag ^ msk) - msk
                for ii in range(n_i):
                    sv = acc[ii]
                    mag = -sv if sv < 0 else sv
                    lsb = emax[ii] - F
                    top = lsb + 63 - fast.clz64(mag)
                    qq = max(top - (p - 1), qmin)
                    sh = qq - lsb
                    if sh <= 0:
                        r = mag << -sh
                    else:
                        sh2 = min(sh, 63)
                        r = mag >> sh2
                        if mode == fast.RNE:
                            rem = mag - (r << sh2)
                            half = np.int64(1) << (sh2 - 1)
                            r += 1 if (rem > half or (rem == half and (r & 1) == 1)) else 0
                    if r >> p:
                        r >>= 1
                        qq += 1
                    if r == 0:
                        cS[ii] = 0
                        cq[ii] = ZQ
                        ct[ii] = ZQ
                    else:
                        cS[ii] = -r if sv < 0 else r
                        cq[ii] = qq
                        ct[ii] = qq + mb if r >> mb else 1 - bias
                        if qq > qmax:
                            bad[ii] = True
            for ii in range(n_i):
                v = cS[ii]
                res = _enc_acc(v, cq[ii], fd)
                if groups == 1:
                    res = fast.ieee_add_bits(np.int64(cw[o, ii]), np.int64(res), fd)
                out[o, ii] = res
        nreg = d.shape[1]
        j = prm[23]
        for r in range(nreg):
            for lane in range(32):
                row0 = out[maps[j]]
                if prm[10] == 1:
                    for ii in range(n_i):
                        d[i0 + ii, r, lane] = row0[ii]
                else:
                    row1 = out[maps[j + 1]]
                    sh = np.uint64(prm[14])
                    for ii in range(n_i):
                        d[i0 + ii, r, lane] = row0[ii] | (row1[ii] << sh)
                j += prm[10]
        for ii in range(n_i):
            if bad[ii]:
                _tc_one(a, b, c, d, i0 + ii, maps, prm, luta, lutb, s[0], s[1], s[2], s[3], s[4], s[5], s[6],
                        s[7], s[8], s[9], s[10], s[11], s[12], s[13])


@njit(cache=True)
def tc_batch_wide(a, b, c, d, maps, prm, luta, lutb):
    """Same result as tc_batch, faster for large batches."""
    _wide_chunks(0, (a.shape[0] + CH - 1) // CH, a, b, c, d, maps, prm, luta, lutb)




@njit(cache=True, parallel=True)
def tc_batch_wide_par(a, b, c, d, maps, prm, luta, lutb):
    """tc_batch_wide with the chunks spread over the cores."""
    nch = (a.shape[0] + CH - 1) // CH
    parts = min(nch, 16)
    for p in prange(parts):
        _wide_chunks(p * nch // parts, (p + 1) * nch // parts, a, b, c, d, maps, prm, luta, lutb)
