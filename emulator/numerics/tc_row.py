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

The eight columns of a row are one vector (``tc_simd``: numba intrinsics that emit LLVM's ``<8 x double>`` and
``<8 x i64>`` operations, each lane running the scalar rule's operations in its order, no fused multiply-add): one
``tc_simd.vstep`` a step of a row. Operands holding an inf or NaN and accumulators that overflow are not handled
here: ``decode`` and ``tile`` say so, and the caller runs the reference executor instead.

Operand codes are decoded arithmetically (no table), eight at a time: the formats whose bits are f16's or f32's
once shifted (f16, e5m2, bf16, tf32, f32) through the hardware's conversions, e4m3 as an f16 scaled; one test for
a special value in a whole fragment.
"""
import numpy as np
from numba import njit, types

from .fast import bitcast, fmt_info, ieee_add_bits, stack_f64, stack_i64
from .jitcache import INNER, lean
from .tc_simd import vdecode8, vdecode16, vdecode32, vencode, vstep

NOEXP = -10000          # nominal exponent of zeros: a sum with it stays below every e_zero
LEAN = lean()           # numba's pipeline without SSA (jitcache.lean): a name holds one type throughout
_f32 = bitcast(types.uint32, types.float32)
_f32_bits = bitcast(types.float32, types.uint32)




@njit(cache=True, pipeline_class=LEAN, **INNER)
def decode(codes, o, n, fmt, vals, exps):
    """codes[o:o + n] (one element each, the register's bits shifted down; n a multiple of 8) of format ``fmt``
    into their values (binary64, exact) and nominal exponents (the exponent of the leading bit's binade, never
    below the format's smallest normal's; for the 8-bit formats, which the tensor core widens to f16, never below
    f16's; NOEXP for zeros), into vals[o:o + n] and exps[o:o + n], eight at a time (``tc_simd.vdecode8/16/32``).
    Returns True when one of them is an inf or NaN (vals and exps are then partly written), or for a format no
    mma.sync operand has."""
    if n & 7:
        return True
    eb, mb, w = fmt_info(fmt)
    bias = (1 << (eb - 1)) - 1
    low = 13 if fmt == 2 else 0             # tf32: the low 13 bits are ignored
    nanor = 0 if fmt == 4 else (1 << mb) - 1        # e4m3: only S.1111.111 is NaN
    tmin = -14 if fmt == 4 or fmt == 5 else 1 - bias
    if fmt == 0 or fmt == 5:                # f16, e5m2 (f16's top byte)
        return vdecode16(codes, o, n, vals, exps, low, eb, mb, nanor, bias, tmin, 16 - w) != 0
    if fmt == 1 or fmt == 2 or fmt == 3:    # bf16 (f32's top half), tf32, f32
        return vdecode32(codes, o, n, vals, exps, low, eb, mb, nanor, bias, tmin, 16 if fmt == 1 else 0) != 0
    if fmt == 4:                            # e4m3: through f16 too
        return vdecode8(codes, o, n, vals, exps, low, eb, mb, nanor, bias, tmin, 0) != 0
    return True


@njit(cache=True, pipeline_class=LEAN, **INNER)
def encode(vals, o, n, codes, p, fd):
    """vals[o:o + n] (values of format fd, f32 or f16, already rounded to it; n a multiple of 8) into their bits at
    codes[p:p + n]; +0 for zeros (``tc_simd.vencode``)."""
    eb, mb, w = fmt_info(fd)
    vencode(vals, o, n, codes, p, w, mb, (1 << (eb - 1)) - 1)


@njit(cache=True, pipeline_class=LEAN, **INNER)
def tile(M, nc, K, L, vals, exps, oa, ob, oc, F, e_zero, fd, mode):
    """D = A B + C for an M x 8 x K tile in steps of L products (a multiple of 4; ascending k, rounded to fd in
    between, RZ (mode 0) or RNE (1)). vals/exps: the values and nominal exponents of A at oa + m * K + k, of B at
    ob + k * 8 + n, of C at oc + m * 8 + n, C's replaced by D's (values exactly on fd's grid). Each step of a row
    is one ``tc_simd.vstep`` (its eight columns in vector registers). Returns False when an accumulator
    overflowed (vals and exps are then partly written), or for a shape this does not run (nc other than 8)."""
    if nc != 8 or L <= 0 or L & 3 or K % L:
        return False
    eb, mb, w = fmt_info(fd)
    bias = (1 << (eb - 1)) - 1
    over = 0
    for k0 in range(0, K, L):               # the rows' steps one after the other: independent, they overlap
        for m in range(M):
            over |= vstep(vals, exps, oa + m * K + k0, ob + k0 * 8, oc + m * 8, L, F, e_zero, mb, 1 - bias, bias,
                          mode)
    return over == 0


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


@njit(cache=True, pipeline_class=LEAN, **INNER)
def gather(a32, regs, idx, na, nb, nc, maps, prm, codes):
    """A, B, C's codes from the registers into ``codes`` (A: m*K + k, then B: k*N + n, then C: m*N + n), as
    ``fast._gather``; the elements of a word unrolled for the 32-, 16- and 8-bit formats."""
    M, N, K = prm[0], prm[1], prm[2]
    mk, kn = M * K, K * N
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
                    cb[np.uint64(mp[2 * lane])] = word & 0xFFFF       # (unsigned: no wraparound test)
                    cb[np.uint64(mp[2 * lane + 1])] = word >> 16
            elif epr == 1:
                for lane in range(32):
                    cb[np.uint64(mp[lane])] = src[lane]
            elif epr == 4:
                for lane in range(32):
                    word = src[lane]
                    cb[np.uint64(mp[4 * lane])] = word & 0xFF
                    cb[np.uint64(mp[4 * lane + 1])] = (word >> 8) & 0xFF
                    cb[np.uint64(mp[4 * lane + 2])] = (word >> 16) & 0xFF
                    cb[np.uint64(mp[4 * lane + 3])] = word >> 24
            else:
                for lane in range(32):
                    wide = np.int64(src[lane])      # (a name of its own: the lean pipeline types a name once)
                    for e in range(epr):
                        cb[np.uint64(mp[epr * lane + e])] = (wide >> (w * e)) & mask


@njit(cache=True, pipeline_class=LEAN, **INNER)
def compute(a32, regs, idx, na, nb, nc, maps, prm, codes, vals, exps):
    """One mma.sync of the float forms on a register arena, up to D's bits: A, B, C read from ``a32`` at the
    offsets ``regs`` (``& idx``; A at regs[4:8], B at [8:12], C at [12:16]), D's bits left in
    ``codes[M*K + K*N + M*N:][:M*N]`` (m * N + n; for sm_90's fp8 without C, which ``add_c`` adds).
    ``maps``/``prm``: ``ops.mma.MmaOp._maps``/``_prm``; ``codes``: at least M*K + K*N + 2*M*N elements;
    ``vals``/``exps``: at least M*K + K*N + M*N. Returns 1 when an operand (or C, but for sm_90's fp8) is an inf
    or NaN or an accumulator overflows: the reference executor has the rule. A function of its own (link-only,
    ``jitcache.INNER``), called by the families' entries and ``run_regs``: numba inlining it (``inline="always"``)
    copied its IR, and ``gather``'s, block by block into every caller (about 0.4 s of the ``mma`` family's compile,
    with no change to the rows' speed)."""
    M, N, K = prm[0], prm[1], prm[2]
    mk, kn, mn = M * K, K * N, M * N
    if mk + kn + mn > vals.shape[0] or mk + kn + 2 * mn > codes.shape[0]:
        return 1
    gather(a32, regs, idx, na, nb, nc, maps, prm, codes)
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
    encode(vals, o, mn, codes, o + mn, fd)
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
