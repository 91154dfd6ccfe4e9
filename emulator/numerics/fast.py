"""The jitted mma.sync arithmetic: the functions of ``reference.py`` over int64 (numba, cache=True).

Entry points work on batches of register files: ``a`` (batch, n_a, 32), ``b``, ``c`` as uint32/uint64
raw bits, plus each operand's fragment as a flat index map (register, lane, element) -> tile index.
Tests check them equal to the reference bit for bit.  binary64 uses the machine's IEEE fused
multiply-add (``llvm.fma.f64``) with NaNs resolved on the bits first, as the GPU does.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import jitcache

jitcache.prepare()          # before any cached function of the package loads

RZ, RNE = 0, 1
ZQ = -(1 << 20)            # exponent given to zeros, far below every e_zero (their products vanish)
NUM, INF, NAN = 0, 1, 2
F32_NAN, F16_NAN = 0x7FFFFFFF, 0x7FFF
F64_DEFAULT_NAN = np.uint64(0xFFF8000000000000)


@intrinsic
def _fma64(typingctx, a, b, c):
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        dbl = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fma", [dbl], ir.FunctionType(dbl, [dbl, dbl, dbl]))
        return builder.call(fn, args)
    return sig, codegen


def bitcast(src, dst):
    """An intrinsic reinterpreting a value of numba type ``src`` as ``dst`` (same width): no conversion."""
    @intrinsic
    def cast(typingctx, x):
        sig = dst(src)

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return sig, codegen
    return cast


_u2f = bitcast(types.uint64, types.float64)
_f2u = bitcast(types.float64, types.uint64)
i2f = bitcast(types.int64, types.float64)       # binary64 <-> its bits as int64
f2i = bitcast(types.float64, types.int64)


@intrinsic
def _ctlz64(typingctx, x):
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = args[0].type
        fn = builder.module.declare_intrinsic("llvm.ctlz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])
    return sig, codegen


@njit(cache=True, inline="always")
def clz64(x):
    """Leading zero bits of a non-negative int64 (64 for 0)."""
    return _ctlz64(x)


# ------------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def fmt_info(fmt):
    """(ebits, mbits, width) of a format code (params.FORMATS)."""
    if fmt == 0:
        return 5, 10, 16
    if fmt == 1:
        return 8, 7, 16
    if fmt == 2:
        return 8, 10, 19
    if fmt == 3:
        return 8, 23, 32
    if fmt == 4:
        return 4, 3, 8
    if fmt == 5:
        return 5, 2, 8
    return 11, 52, 64


@njit(cache=True, inline="always")
def bit_length(x):
    n = 0
    if x >> 32:
        x >>= 32
        n += 32
    if x >> 16:
        x >>= 16
        n += 16
    if x >> 8:
        x >>= 8
        n += 8
    if x >> 4:
        x >>= 4
        n += 4
    if x >> 2:
        x >>= 2
        n += 2
    if x >> 1:
        x >>= 1
        n += 1
    return n + x


@njit(cache=True)
def decode(bits, fmt):
    """-> (kind, sign, M, q, top): value (-1)**sign * M * 2**q, nominal exponent top (ZQ for zeros)."""
    eb, mb, w = fmt_info(fmt)
    x = np.int64(bits)
    if fmt == 2:
        x = (x >> 13) & 0x7FFFF                       # tf32: low 13 bits ignored
    sign = (x >> (w - 1)) & 1
    e = (x >> mb) & ((1 << eb) - 1)
    frac = x & ((1 << mb) - 1)
    emaxf = (1 << eb) - 1
    bias = (1 << (eb - 1)) - 1
    if fmt == 4:
        if e == emaxf and frac == (1 << mb) - 1:
            return NAN, sign, 0, 0, 0
    elif e == emaxf:
        return (NAN if frac else INF), sign, 0, 0, 0
    if e == 0:
        if frac == 0:
            return NUM, sign, 0, ZQ, ZQ
        return NUM, sign, frac, 1 - bias - mb, 1 - bias
    return NUM, sign, (1 << mb) | frac, e - bias - mb, e - bias


@njit(cache=True)
def encode(sign, mag, q, fmt, mode, zero_sign):
    """Round (-1)**sign * mag * 2**q to fmt (f32, f16); overflow -> inf in both modes."""
    eb, mb, w = fmt_info(fmt)
    p = mb + 1
    bias = (1 << (eb - 1)) - 1
    qmin = 1 - bias - mb
    if mag == 0:
        return zero_sign << (w - 1)
    top = q + bit_length(mag) - 1
    qq = max(top - (p - 1), qmin)
    if qq <= q:
        r = mag << (q - qq)
    else:
        sh = qq - q
        if sh > 62:
            r = 0
        else:
            r = mag >> sh
            if mode == RNE:
                rem = mag & ((np.int64(1) << sh) - 1)
                half = np.int64(1) << (sh - 1)
                if rem > half or (rem == half and (r & 1)):
                    r += 1
    if r == 0:
        return zero_sign << (w - 1)
    if r >> p:
        r >>= 1
        qq += 1
    if r >> (p - 1):
        e = qq + mb + bias
        if e >= (1 << eb) - 1:
            return (sign << (w - 1)) | (((1 << eb) - 1) << mb)
        return (sign << (w - 1)) | (e << mb) | (r - (np.int64(1) << mb))
    return (sign << (w - 1)) | r


@njit(cache=True)
def inf_bits(sign, fmt):
    eb, mb, w = fmt_info(fmt)
    return (sign << (w - 1)) | (((1 << eb) - 1) << mb)


@njit(cache=True)
def nan_bits(fmt):
    return F16_NAN if fmt == 0 else F32_NAN


# ------------------------------------------------------------------------------------------------
# IEEE f32 / f16 add and fma on decoded finite values (integer; RNE; IEEE signs of zero)
@njit(cache=True)
def exact_add(s1, M1, q1, s2, M2, q2):
    """Sum of two finite terms as (S, q) with S*2**q within the last place needed for <= 24-bit
    rounding: the larger term sits in a 61-bit window, lower bits of the smaller one become a sticky 1."""
    if M2 == 0:
        return (-M1 if s1 else M1), q1
    if M1 == 0:
        return (-M2 if s2 else M2), q2
    b1 = bit_length(M1)
    b2 = bit_length(M2)
    if q2 + b2 > q1 + b1:
        s1, M1, q1, b1, s2, M2, q2, b2 = s2, M2, q2, b2, s1, M1, q1, b1
    sh = 61 - b1
    M1 <<= sh
    q1 -= sh
    d = q2 - q1
    if d >= 0:
        M2 <<= d
    else:
        if -d > 62:
            M2 = 1
        else:
            lost = M2 & ((np.int64(1) << -d) - 1)
            M2 >>= -d
            if lost:
                M2 |= 1
    S = (-M1 if s1 else M1) + (-M2 if s2 else M2)
    return S, q1


@njit(cache=True)
def ieee_fma(ka, sa, Ma, qa, kb, sb, Mb, qb, kc, sc, Mc, qc, out):
    """round(a*b + c) RNE in out (f32 or f16) from decoded operands; canonical NaN."""
    if ka == NAN or kb == NAN or kc == NAN:
        return nan_bits(out)
    pinf = ka == INF or kb == INF
    if pinf and ((ka == NUM and Ma == 0) or (kb == NUM and Mb == 0)):
        return nan_bits(out)
    sp = sa ^ sb
    if pinf or kc == INF:
        if pinf and kc == INF and sp != sc:
            return nan_bits(out)
        return inf_bits(sp if pinf else sc, out)
    Mp = Ma * Mb
    if Mp == 0 and Mc == 0:
        return encode(np.int64(0), np.int64(0), np.int64(0), out, RNE, sp & sc)
    S, q = exact_add(sp, Mp, qa + qb, sc, Mc, qc)
    if S == 0:
        return encode(np.int64(0), np.int64(0), np.int64(0), out, RNE, np.int64(0))
    neg = 1 if S < 0 else 0
    return encode(neg, -S if neg else S, q, out, RNE, neg)


@njit(cache=True)
def ieee_add_bits(x, y, fmt):
    kx, sx, Mx, qx, tx = decode(x, fmt)
    ky, sy, My, qy, ty = decode(y, fmt)
    return ieee_fma(kx, sx, Mx, qx, NUM, 0, 1, 0, ky, sy, My, qy, fmt)


@njit(cache=True)
def f32_to_f16(x):
    k, s, M, q, t = decode(x, 3)
    if k == NAN:
        return F16_NAN
    if k == INF:
        return inf_bits(s, 0)
    return encode(s, M, q, np.int64(0), RNE, s)


# ------------------------------------------------------------------------------------------------
# tensor-core step over decoded operand arrays
PRE = 32                   # products are pre-shifted left by PRE bits, so truncation is one right shift


@njit(cache=True)
def _special_step(araw, braw, ia, astride, ib, bstride, n, fa, fb, ck, cs, out):
    """Result of one step in which some operand is inf or NaN (exactly the reference's rules)."""
    nan = ck == NAN
    pos = ck == INF and cs == 0
    neg = ck == INF and cs == 1
    for j in range(n):
        ka, sa, Ma, qa, ta = decode(araw[ia + j * astride], fa)
        kb, sb, Mb, qb, tb = decode(braw[ib + j * bstride], fb)
        if ka == NAN or kb == NAN:
            nan = True
        elif ka == INF or kb == INF:
            if (ka == NUM and Ma == 0) or (kb == NUM and Mb == 0):
                nan = True
            elif sa ^ sb:
                neg = True
            else:
                pos = True
    if nan or (pos and neg):
        return nan_bits(out)
    return inf_bits(1 if neg else 0, out)


@njit(cache=True, inline="always")
def _gather(regs, i, maps, off, epr, w, out):
    nreg = regs.shape[1]
    mask = (np.uint64(1) << np.uint64(w)) - np.uint64(1) if w < 64 else ~np.uint64(0)
    j = off
    for r in range(nreg):
        for lane in range(32):
            word = np.uint64(regs[i, r, lane])
            for e in range(epr):
                out[maps[j]] = (word >> np.uint64(e * w)) & mask
                j += 1


@njit(cache=True, inline="always")
def _scatter(d, i, maps, off, epr, w, tile):
    nreg = d.shape[1]
    j = off
    for r in range(nreg):
        for lane in range(32):
            word = np.uint64(0)
            for e in range(epr):
                word |= np.uint64(tile[maps[j]]) << np.uint64(e * w)
                j += 1
            d[i, r, lane] = word


@njit(cache=True)
def tc_row_step(aS, aq, at, ia, bS, bq, bt, ib, N, L, cS, cq, ct, F, e_zero, emax, acc):
    """One finite T-FDPA step for one row of A against N columns of B at once (see reference.t_fdpa):
    align to the largest nominal exponent (at least e_zero), truncate each term toward zero F bits below
    it, sum exactly.  Leaves the integer sums in acc and the alignment exponents in emax."""
    for n in range(N):
        emax[n] = ct[n] if ct[n] > e_zero else e_zero
    for j in range(L):
        ea = at[ia + j]
        for n in range(N):
            e = ea + bt[ib + j * N + n]
            emax[n] = e if e > emax[n] else emax[n]
    for n in range(N):
        s = np.int64(0)
        if cS[n] != 0:
            sh = cq[n] + F - emax[n]
            m = -cS[n] if cS[n] < 0 else cS[n]
            m = m << sh if sh >= 0 else m >> min(-sh, 63)
            s = -m if cS[n] < 0 else m
        acc[n] = s
    for j in range(L):
        sa = aS[ia + j]
        qa = aq[ia + j] - PRE + F
        for n in range(N):
            p = sa * bS[ib + j * N + n]
            r = min(emax[n] - qa - bq[ib + j * N + n], 63)    # RZ per term: (|p| << PRE) >> (PRE - shift)
            msk = p >> 63
            mag = ((p ^ msk) - msk) << PRE >> r
            acc[n] += (mag ^ msk) - msk


# ------------------------------------------------------------------------------------------------
# integers
@njit(cache=True, inline="always")
def _int_tile(regs, i, amap, epr, w, signed, out):
    nreg = regs.shape[1]
    mask = (np.int64(1) << w) - 1
    for r in range(nreg):
        for lane in range(32):
            word = np.int64(regs[i, r, lane])
            for e in range(epr):
                v = (word >> (e * w)) & mask
                if signed and (v >> (w - 1)):
                    v -= np.int64(1) << w
                out[amap[(r * 32 + lane) * epr + e]] = v


@njit(cache=True)
def _int_one(a, b, c, d, i, amap, bmap, cmap, dmap, M, N, K, epra, eprb, wa, wb, sa, sb, sat):
    A = np.empty(M * K, np.int64)
    B = np.empty(K * N, np.int64)
    C = np.empty(M * N, np.int64)
    _int_tile(a, i, amap, epra, wa, sa, A)
    _int_tile(b, i, bmap, eprb, wb, sb, B)
    _int_tile(c, i, cmap, 1, 32, True, C)
    D = np.empty(M * N, np.uint64)
    for m in range(M):
        for n in range(N):
            s = C[m * N + n]
            for kk in range(K):
                s += A[m * K + kk] * B[kk * N + n]
            if sat:
                s = min(max(s, -2147483648), 2147483647)
            D[m * N + n] = np.uint64(s & 0xFFFFFFFF)
    _scatter(d, i, dmap, 0, 1, 32, D)


@njit(cache=True)
def int_batch(a, b, c, d, maps, prm):
    """prm: M N K epra eprb wa wb signed_a signed_b satfinite offA offB offC offD."""
    amap, bmap, cmap, dmap = maps[prm[10]:], maps[prm[11]:], maps[prm[12]:], maps[prm[13]:]
    for i in range(a.shape[0]):
        _int_one(a, b, c, d, i, amap, bmap, cmap, dmap, prm[0], prm[1], prm[2], prm[3], prm[4], prm[5],
                 prm[6], prm[7] != 0, prm[8] != 0, prm[9] != 0)


# ------------------------------------------------------------------------------------------------
# binary64: chain of fma; a NaN operand is passed on quieted, B's before the accumulator's before A's
@njit(cache=True, inline="always")
def _is_nan64(x):
    return (x & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)


@njit(cache=True, inline="always")
def fma64_bits(x, y, z):
    if _is_nan64(y):
        return y | np.uint64(1 << 51)
    if _is_nan64(z):
        return z | np.uint64(1 << 51)
    if _is_nan64(x):
        return x | np.uint64(1 << 51)
    r = _fma64(_u2f(x), _u2f(y), _u2f(z))
    if r != r:
        return F64_DEFAULT_NAN
    return _f2u(r)


@njit(cache=True)
def _f64_one(a, b, c, d, i, amap, bmap, cmap, dmap, M, N, K):
    A = np.empty(M * K, np.uint64)
    B = np.empty(K * N, np.uint64)
    C = np.empty(M * N, np.uint64)
    _gather(a, i, amap, 0, 1, 64, A)
    _gather(b, i, bmap, 0, 1, 64, B)
    _gather(c, i, cmap, 0, 1, 64, C)
    D = np.empty(M * N, np.uint64)
    for m in range(M):
        for n in range(N):
            acc = C[m * N + n]
            for kk in range(K):
                acc = fma64_bits(A[m * K + kk], B[kk * N + n], acc)
            D[m * N + n] = acc
    _scatter(d, i, dmap, 0, 1, 64, D)


@njit(cache=True)
def f64_batch(a, b, c, d, maps, prm):
    """prm: M N K offA offB offC offD."""
    amap, bmap, cmap, dmap = maps[prm[3]:], maps[prm[4]:], maps[prm[5]:], maps[prm[6]:]
    for i in range(a.shape[0]):
        _f64_one(a, b, c, d, i, amap, bmap, cmap, dmap, prm[0], prm[1], prm[2])


# ------------------------------------------------------------------------------------------------
# m8n8k4 .f16 on sm_90: CUDA-core f32 fma chain (tiles stacked by quad pair)
@njit(cache=True)
def _fma32(x, y, acc, fx, fy):
    """fma32(x, y, acc) with x in format fx, y in fy, acc f32 bits."""
    ka, sa, Ma, qa, ta = decode(x, fx)
    kb, sb, Mb, qb, tb = decode(y, fy)
    kc, sc, Mc, qc, tc = decode(acc, 3)
    return ieee_fma(ka, sa, Ma, qa, kb, sb, Mb, qb, kc, sc, Mc, qc, 3)


@njit(cache=True)
def _m8n8k4_one(a, b, c, d, i, amap, bmap, cmap, dmap, fc, fd, eprc, eprd, wc, wd):
    A = np.empty(32 * 4, np.uint64)
    B = np.empty(4 * 32, np.uint64)
    C = np.empty(32 * 8, np.uint64)
    _gather(a, i, amap, 0, 2, 16, A)
    _gather(b, i, bmap, 0, 2, 16, B)
    _gather(c, i, cmap, 0, eprc, wc, C)
    D = np.empty(32 * 8, np.uint64)
    ONE_F16 = np.int64(0x3C00)
    NEG_ZERO = np.int64(0x80000000)
    for m in range(32):
        q = m // 8
        for n in range(8):
            col = 8 * q + n
            cb = np.int64(C[m * 8 + n])
            if fd == 3:
                s = np.int64(0)
                for kk in range(4):
                    s = _fma32(np.int64(A[m * 4 + kk]), np.int64(B[kk * 32 + col]), s, 0, 0)
                # D = C + s: C (format fc) * 1.0 + s
                D[m * 8 + n] = np.uint64(_fma32(cb, ONE_F16, s, fc, 0))
            else:
                p0 = _fma32(np.int64(A[m * 4]), np.int64(B[col]), NEG_ZERO, 0, 0)
                s01 = _fma32(np.int64(A[m * 4 + 1]), np.int64(B[32 + col]), p0, 0, 0)
                p2 = _fma32(np.int64(A[m * 4 + 2]), np.int64(B[64 + col]), NEG_ZERO, 0, 0)
                s23 = _fma32(np.int64(A[m * 4 + 3]), np.int64(B[96 + col]), p2, 0, 0)
                t = _fma32(cb, ONE_F16, s01, fc, 0)
                t = _fma32(t, ONE_F16, s23, 3, 0)
                D[m * 8 + n] = np.uint64(f32_to_f16(t))
    _scatter(d, i, dmap, 0, eprd, wd, D)


@njit(cache=True)
def m8n8k4_batch(a, b, c, d, maps, prm):
    """prm: fc fd eprc eprd wc wd offA offB offC offD."""
    amap, bmap, cmap, dmap = maps[prm[6]:], maps[prm[7]:], maps[prm[8]:], maps[prm[9]:]
    for i in range(a.shape[0]):
        _m8n8k4_one(a, b, c, d, i, amap, bmap, cmap, dmap, prm[0], prm[1], prm[2], prm[3], prm[4], prm[5])


def _stack(nbty):
    """An intrinsic making arrays of ``nbty`` in the caller's stack frame (the tensor-core tiles of
    ``gemm_fast`` and ``tc_row`` keep their per-column state there)."""
    @intrinsic
    def stack(typingctx, n):
        """``n`` (a literal) elements in the calling function's stack frame, as an array without a memory owner
        (no allocation: the callers run without numba's reference-counting runtime)."""
        if not isinstance(n, types.IntegerLiteral):
            return None
        size = n.literal_value
        arrty = types.Array(nbty, 1, "C")

        def codegen(context, builder, signature, args):
            from numba.core import cgutils
            from numba.np.arrayobj import populate_array
            ary = context.make_array(arrty)(context, builder)
            ptr = cgutils.alloca_once(builder, context.get_data_type(nbty),
                                      size=context.get_constant(types.intp, size))
            item = context.get_constant(types.intp, 8)
            populate_array(ary, data=ptr, shape=[context.get_constant(types.intp, size)], strides=[item],
                           itemsize=item, meminfo=None)
            return ary._getvalue()
        return arrty(n), codegen
    return stack


stack_f64 = _stack(types.float64)
stack_i64 = _stack(types.int64)
