"""One tensor-core instruction's tile (every m16n8 shape of the float forms) in binary64, for the fast engine's
mma rows: the same T-FDPA chain as ``reference.t_fdpa`` and ``gemm_fast._tile_n8``, bit for bit, with each
piece of it exact in binary64 (as the f32 GEMM kernels of ``gemm_fast`` carry it):

* an operand (at most 24 significant bits) is a binary64 value, a product of two is exact;
* multiplying by ``s = 2**(F - emax)`` only moves the exponent (nothing here comes near binary64's range), so
  ``trunc(a * b * s)`` is the reference's term: the product aligned ``F`` bits below ``2**emax`` and cut toward
  zero; the same for the accumulator;
* a step's sum of ``L + 1`` such whole numbers, each below ``2**(F + 2)``, is exact in any order;
* ``sum * 2**(emax - F)`` is exact, and the rounding to the D format (toward zero for f32, to nearest even for
  f16) is one ``trunc`` or ``rint`` of it scaled to the last place of its binade (never below the format's
  smallest subnormal's).

The eight columns of a row are a loop of constant length over arrays in the stack frame, which the compiler
unrolls and vectorises. Operands holding an inf or NaN and accumulators that overflow are not handled here:
``decode`` and ``tile`` say so, and the caller runs the reference executor instead.

Operand codes are decoded arithmetically (no table): ``decode`` runs over a whole fragment at once, one test
for a special value in all of it.
"""
import numpy as np
from numba import njit, types

from .fast import bitcast, fmt_info, f2i, i2f, ieee_add_bits, stack_f64, stack_i64
from .jitcache import INNER, lean

NOEXP = -10000          # nominal exponent of zeros: a sum with it stays below every e_zero
LEAN = lean()           # numba's pipeline without SSA (jitcache.lean): a name holds one type throughout
_f32 = bitcast(types.uint32, types.float32)
_f32_bits = bitcast(types.float32, types.uint32)




@njit(cache=True, pipeline_class=LEAN, **INNER)
def _pow2(e):
    """2.0**e for a whole e in binary64's normal range."""
    return i2f((e + 1023) << 52)


@njit(cache=True, pipeline_class=LEAN, **INNER)
def _exp(v):
    """The unbiased binary64 exponent of v (-1023 for zero)."""
    return ((f2i(v) >> 52) & 0x7FF) - 1023


@njit(cache=True, pipeline_class=LEAN, **INNER)
def decode(codes, o, n, fmt, vals, exps):
    """codes[o:o + n] (one element each, the register's bits shifted down) of format ``fmt`` into their values
    (binary64, exact) and nominal exponents (the exponent of the leading bit's binade, never below the format's
    smallest normal's; for the 8-bit formats, which the tensor core widens to f16, never below f16's; NOEXP for
    zeros), into vals[o:o + n] and exps[o:o + n]. Returns True when one of them is an inf or NaN (vals and exps
    are then partly written)."""
    eb, mb, w = fmt_info(fmt)
    low = 13 if fmt == 2 else 0             # tf32: the low 13 bits of the register are ignored
    bias = (1 << (eb - 1)) - 1
    emaxf = (1 << eb) - 1
    fmask = (1 << mb) - 1
    nanor = 0 if fmt == 4 else fmask        # e4m3: no infinities, only S.1111.111 is NaN
    tmin = -14 if fmt == 4 or fmt == 5 else 1 - bias
    sbit = eb + mb
    bad = 0
    for i in range(o, o + n):
        x = np.int64(codes[i]) >> low
        e = (x >> mb) & emaxf
        f = x & fmask
        bad |= np.int64(e == emaxf) & np.int64((f | nanor) == fmask)
        mant = f | (np.int64(e != 0) << mb)
        v = np.float64(mant) * _pow2(max(e, 1) - bias - mb)
        vals[i] = -v if (x >> sbit) & 1 else v
        exps[i] = max(_exp(v), tmin) if mant != 0 else NOEXP
    return bad != 0


@njit(cache=True, pipeline_class=LEAN, **INNER)
def encode(v, fd):
    """The bits of v, a value of format fd (f32 or f16) already rounded to it; +0 for zeros."""
    eb, mb, w = fmt_info(fd)
    bias = (1 << (eb - 1)) - 1
    if v == 0:
        return np.uint64(0)
    sign = np.int64(1) << (w - 1) if v < 0 else np.int64(0)
    a = -v if v < 0 else v
    e = _exp(a)
    if e >= 1 - bias:
        return np.uint64(sign | ((e + bias) << mb) | ((f2i(a) >> (52 - mb)) & ((1 << mb) - 1)))
    return np.uint64(sign | np.int64(a * _pow2(bias - 1 + mb)))


@njit(cache=True, pipeline_class=LEAN, **INNER)
def _round(acc, e, F, mb, tlo, bias, rne, cs, ce, n):
    """The step's sum acc (whole, in units of 2**(e - F)) rounded to the D format (RZ, or RNE), into cs[n] and
    ce[n] (its nominal exponent, NOEXP for zero); 1 when it overflowed."""
    v = acc * _pow2(e - F)
    t = max(_exp(v), tlo)
    x = v * _pow2(mb - t)
    r = (np.rint(x) if rne else np.trunc(x)) * _pow2(t - mb)
    te = _exp(r)
    cs[n] = r
    ce[n] = max(te, tlo) if r != 0 else NOEXP
    return np.int64(te > bias)


@njit(cache=True, pipeline_class=LEAN, **INNER)
def tile(M, nc, K, L, vals, exps, oa, ob, oc, F, e_zero, fd, mode):
    """D = A B + C for an M x nc x K tile (M even, nc <= 8) in steps of L products (a multiple of 4; ascending
    k, rounded to fd in between, RZ (mode 0) or RNE (1)). vals/exps: the values and nominal exponents of A at
    oa + m * K + k, of B at ob + k * nc + n, of C at oc + m * nc + n, C's replaced by D's (values exactly on fd's
    grid). Returns False when an accumulator overflowed (vals and exps are then partly written).

    Every loop over the columns has a length the compiler does not know (nc), so it stays a loop and is
    vectorised, with four products of two rows unrolled in it (two independent chains, B's loads shared); the
    rows' state lives in the stack frame, so that the compiler knows no store of those loops reaches an operand
    (no run-time overlap checks)."""
    if M & 1 or nc > 8 or L & 3 or K % L:
        return False
    eb, mb, w = fmt_info(fd)
    bias = (1 << (eb - 1)) - 1
    tlo = 1 - bias
    rne = mode == 1
    cs = stack_f64(16)
    ce = stack_i64(16)
    e = stack_i64(16)
    s = stack_f64(16)
    acc = stack_f64(16)
    over = stack_i64(8)
    for n in range(nc):
        over[n] = 0
    for m in range(0, M, 2):
        for n in range(2 * nc):
            cs[n] = vals[oc + m * nc + n]
            ce[n] = exps[oc + m * nc + n]
        a0 = oa + m * K
        a1 = a0 + K
        for k0 in range(0, K, L):
            for n in range(nc):
                e[n] = max(ce[n], e_zero)
                e[n + 8] = max(ce[n + nc], e_zero)
            for j in range(k0, k0 + L, 4):
                t0, t1, t2, t3 = exps[a0 + j], exps[a0 + j + 1], exps[a0 + j + 2], exps[a0 + j + 3]
                u0, u1, u2, u3 = exps[a1 + j], exps[a1 + j + 1], exps[a1 + j + 2], exps[a1 + j + 3]
                b0, b1, b2, b3 = ob + j * nc, ob + (j + 1) * nc, ob + (j + 2) * nc, ob + (j + 3) * nc
                for n in range(nc):
                    y0, y1 = exps[np.uint64(b0 + n)], exps[np.uint64(b1 + n)]
                    y2, y3 = exps[np.uint64(b2 + n)], exps[np.uint64(b3 + n)]
                    e[n] = max(e[n], max(max(t0 + y0, t1 + y1), max(t2 + y2, t3 + y3)))
                    e[n + 8] = max(e[n + 8], max(max(u0 + y0, u1 + y1), max(u2 + y2, u3 + y3)))
            for n in range(nc):
                s[n] = _pow2(F - e[n])
                acc[n] = np.trunc(cs[n] * s[n])
                s[n + 8] = _pow2(F - e[n + 8])
                acc[n + 8] = np.trunc(cs[n + nc] * s[n + 8])
            for j in range(k0, k0 + L, 4):
                v0, v1, v2, v3 = vals[a0 + j], vals[a0 + j + 1], vals[a0 + j + 2], vals[a0 + j + 3]
                w0, w1, w2, w3 = vals[a1 + j], vals[a1 + j + 1], vals[a1 + j + 2], vals[a1 + j + 3]
                b0, b1, b2, b3 = ob + j * nc, ob + (j + 1) * nc, ob + (j + 2) * nc, ob + (j + 3) * nc
                for n in range(nc):
                    x0, x1 = vals[np.uint64(b0 + n)], vals[np.uint64(b1 + n)]
                    x2, x3 = vals[np.uint64(b2 + n)], vals[np.uint64(b3 + n)]
                    sn = s[n]
                    acc[n] += (np.trunc(v0 * x0 * sn) + np.trunc(v1 * x1 * sn)) + (
                        np.trunc(v2 * x2 * sn) + np.trunc(v3 * x3 * sn))
                    sn = s[n + 8]
                    acc[n + 8] += (np.trunc(w0 * x0 * sn) + np.trunc(w1 * x1 * sn)) + (
                        np.trunc(w2 * x2 * sn) + np.trunc(w3 * x3 * sn))
            for n in range(nc):
                o0 = _round(acc[n], e[n], F, mb, tlo, bias, rne, cs, ce, n)
                o1 = _round(acc[n + 8], e[n + 8], F, mb, tlo, bias, rne, cs, ce, n + nc)
                over[n] |= o0 | o1
        for n in range(2 * nc):
            vals[oc + m * nc + n] = cs[n]
            exps[oc + m * nc + n] = ce[n]
    bad = 0
    for n in range(nc):
        bad |= over[n]
    return bad == 0


@njit(cache=True, pipeline_class=LEAN, **INNER)
def add_c(codes, o, n, fd):
    """sm_90's fp8 forms: C added last, codes[o + n + i] += codes[o + i] in fd (IEEE, round to nearest even).
    For f32 the sum of two finite values is rounded once in binary64 and once to binary32: the result is the
    correctly rounded one (binary64 has more than twice binary32's precision plus two bits); an inf or NaN, and
    the f16 forms, go through ``fast.ieee_add_bits``."""
    for i in range(o, o + n):
        x, y = np.int64(codes[i]), np.int64(codes[i + n])
        if fd == 3 and (x & 0x7F800000) != 0x7F800000 and (y & 0x7F800000) != 0x7F800000:
            codes[i + n] = _f32_bits(np.float32(_f32(np.uint32(x)) + np.float64(_f32(np.uint32(y)))))
        else:
            codes[i + n] = ieee_add_bits(x, y, fd)


@njit(cache=True, inline="always", **INNER)
def compute(a32, regs, idx, na, nb, nc, maps, prm, codes, vals, exps):
    """One mma.sync of the float forms on a register arena, up to D's bits: A, B, C read from ``a32`` at the
    offsets ``regs`` (``& idx``; A at regs[4:8], B at [8:12], C at [12:16]), D's bits left in
    ``codes[M*K + K*N + M*N:][:M*N]`` (m * N + n; for sm_90's fp8 without C, which ``add_c`` adds).
    ``maps``/``prm``: ``ops.mma.MmaOp._maps``/``_prm``; ``codes``: at least M*K + K*N + 2*M*N elements;
    ``vals``/``exps``: at least M*K + K*N + M*N. Returns 1 when an operand (or C, but for sm_90's fp8) is an inf
    or NaN or an accumulator overflows: the reference executor has the rule. Inlined by numba into each caller (the
    families' entries, ``run_regs``): compiled apart, its module would be optimised and emitted once more."""
    M, N, K = prm[0], prm[1], prm[2]
    mk, kn, mn = M * K, K * N, M * N
    if mk + kn + mn > vals.shape[0] or mk + kn + 2 * mn > codes.shape[0]:
        return 1
    # A, B, C from the registers (A: m*K + k, then B: k*N + n, then C: m*N + n), as fast._gather; the 16-bit
    # formats with the two elements of a word unrolled
    for g in range(3):
        epr, j = prm[7 + g], prm[20 + g]
        cb = codes[0 if g == 0 else (mk if g == 1 else mk + kn):]
        w = 32 // epr
        mask = (1 << w) - 1
        for r in range(na if g == 0 else (nb if g == 1 else nc)):
            src = a32[regs[4 + 4 * g + r] & idx:]
            mp = maps[j + 32 * epr * r:]
            if epr == 2:
                for lane in range(32):
                    word = src[lane]
                    cb[mp[2 * lane]] = word & 0xFFFF
                    cb[mp[2 * lane + 1]] = word >> 16
            else:
                for lane in range(32):
                    word = np.int64(src[lane])
                    for e in range(epr):
                        cb[mp[epr * lane + e]] = (word >> (w * e)) & mask
    o = mk + kn
    if decode(codes, o - o, mk, prm[3], vals, exps) or decode(codes, mk, kn, prm[4], vals, exps):
        return 1
    fd = prm[6]
    if prm[19] == 1:                        # sm_90's fp8: the steps start from +0, C is added last
        for x in range(o, o + mn):
            vals[x] = 0.0
            exps[x] = NOEXP
    elif decode(codes, o, mn, prm[5], vals, exps):
        return 1
    if not tile(M, N, K, prm[15], vals, exps, o - o, mk, o, prm[16], prm[17], fd, prm[18]):
        return 1
    for x in range(o, o + mn):
        codes[x + mn] = encode(vals[x], fd)
    return 0


@njit(cache=True, pipeline_class=LEAN, **INNER)
def store(a32, regs, idx, nd, maps, prm, codes):
    """D's bits (``compute``; f32 or f16) into its registers (regs[0:4]; one below 0 is not written)."""
    mn = prm[0] * prm[1]
    out = codes[prm[0] * prm[2] + prm[2] * prm[1] + mn:]
    epr, j = prm[10], prm[23]
    for r in range(nd):
        mp = maps[j + 32 * epr * r:]
        if regs[r] < 0:
            continue
        dst = a32[regs[r] & idx:]
        if epr == 1:
            for lane in range(32):
                dst[lane] = out[mp[lane]]
        else:
            for lane in range(32):
                dst[lane] = out[mp[2 * lane]] | (out[mp[2 * lane + 1]] << 16)


@njit(cache=True)
def run_regs(a32, regs, idx, nd, na, nb, nc, maps, prm, codes):
    """``compute``, ``add_c`` for sm_90's fp8, ``store``: the whole row as the fast engine's ``mma`` and
    ``mma_ext`` families run it (tests call this one). Returns 1, with nothing written, where the reference
    executor has to run the instruction."""
    vals = np.empty(1024, np.float64)
    exps = np.empty(1024, np.int64)
    if compute(a32, regs, idx, na, nb, nc, maps, prm, codes, vals, exps):
        return 1
    if prm[19] == 1:
        add_c(codes, prm[0] * prm[2] + prm[2] * prm[1], prm[0] * prm[1], prm[6])
    store(a32, regs, idx, nd, maps, prm, codes)
    return 0
