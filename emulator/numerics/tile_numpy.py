"""The tensor-core tile in numpy, for the first launches of a fresh install.

numba compiles the jitted tile kernels (``gemm_fast.tc_batch``) the first time they run, about 8 s of CPU;
until they are compiled (in this process or in numba's cache) ``MmaOp`` computes the common forms here
instead: f16, bf16 and tf32 inputs with an f32 or f16 C and D (the T-FDPA steps with truncation, each
rounded to D's format), i.e. what a Triton or CUTLASS ``mma.sync`` GEMM issues.  The arithmetic is that of
``gemm_fast._f32_terms``, written over whole arrays:

* an input's value is exact in binary64, and so is the product of two (at most 11 x 11 significant bits);
* each step aligns C and the ``L`` products to the largest nominal exponent ``emax`` (at least ``e_zero``)
  and truncates each at ``F`` bits below it: ``trunc(x * 2**(F - emax))``, an integer of at most ``F + 1``
  bits, so the step's sum is exact in int64;
* the sum times ``2**(emax - F)`` is exact in binary64, and rounding it toward zero to binary32 (the
  subnormal grid below ``2**-126`` included) clears its low binary64 bits.

Instructions holding an inf or NaN, or whose accumulator overflows, are reported back (``bad``) and computed
by the jitted kernel.  ``tests/test_mma_cold.py`` proves this path equal to the jitted kernels bit for bit.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .fast import ZQ

# format code -> (exponent bits, fraction bits, bit position of the fraction's lowest bit in the element)
_FMT = {0: (5, 10, 0), 1: (8, 7, 0), 2: (8, 10, 13), 3: (8, 23, 0)}
_ROUNDING = {3: 0, 0: 1}        # D format -> its rounding: f32 toward zero, f16 to nearest even


def eligible(prm) -> bool:
    """Whether the numpy tile computes this mma's form (``MmaOp._prm``)."""
    fa, fb, fc, fd, mode = (int(prm[i]) for i in (3, 4, 5, 6, 18))
    groups = int(prm[19]) if len(prm) > 19 else 0
    return (fa in (0, 1, 2) and fb in (0, 1, 2) and fc in (0, 3) and _ROUNDING.get(fd) == mode
            and groups == 0)


def _gather(regs, maps, epr, w, size):
    """(n, nreg, 32) register words -> (n, size) element bits, element ``j`` of the flat order at ``maps[j]``."""
    n = regs.shape[0]
    words = regs.astype(np.uint64)
    mask = np.uint64((1 << w) - 1)
    if epr == 1:
        vals = words.reshape(n, -1) & mask
    else:
        shifts = (np.arange(epr, dtype=np.uint64) * np.uint64(w))
        vals = ((words[..., None] >> shifts) & mask).reshape(n, -1)
    out = np.empty((n, size), np.uint64)
    out[:, maps] = vals
    return out


def _values(bits, fmt):
    """Element bits -> (value as binary64, nominal exponent: ZQ for zeros, special flag)."""
    eb, mb, low = _FMT[fmt]
    bias = (1 << (eb - 1)) - 1
    x = (bits.astype(np.int64) >> low)
    e = (x >> mb) & ((1 << eb) - 1)
    frac = x & ((1 << mb) - 1)
    special = e == (1 << eb) - 1
    if fmt == 0:
        v = bits.astype(np.uint16).view(np.float16)
    elif fmt == 1:
        v = bits.astype(np.uint16).view(ml_dtypes.bfloat16)
    elif fmt == 2:                                   # tf32: the low 13 register bits are ignored
        v = (bits.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    else:
        v = bits.astype(np.uint32).view(np.float32)
    v = np.where(special, 0.0, v.astype(np.float64))
    top = np.where(e > 0, e - bias, np.where(frac != 0, 1 - bias, ZQ))
    return v, top, special


def tile_f32(a, b, c, maps, prm):
    """(n, n_a, 32), (n, n_b, 32), (n, n_c, 32) register bits -> D's bits (n, n_d, 32) uint32 and, per
    instruction, whether it must be recomputed by the jitted kernel (an inf/NaN operand, an overflow)."""
    p = [int(x) for x in prm]
    M, N, K = p[0], p[1], p[2]
    epra, eprb, eprc, eprd, wa, wb, wc, wd = p[7:15]
    oa, ob, oc, od = p[20:24]
    n = a.shape[0]
    abits = _gather(a, maps[oa:ob], epra, wa, M * K).reshape(n, M, K)
    bbits = _gather(b, maps[ob:oc], eprb, wb, K * N).reshape(n, K, N)
    cbits = _gather(c, maps[oc:od], eprc, wc, M * N).reshape(n, M, N)
    out, bad = steps(abits, bbits, cbits, p[3], p[4], p[5], p[6], p[15], p[16], p[17])
    return _scatter(out.reshape(n, M * N), maps[od:od + M * N], eprd, wd), bad.any(axis=(1, 2))


def _scatter(out, dmap, epr, w):
    vals = out[:, dmap].reshape(out.shape[0], -1, 32, epr)
    d = np.zeros(vals.shape[:3], np.uint64)
    for e in range(epr):
        d |= vals[..., e] << np.uint64(e * w)
    return d.astype(np.uint32)


def steps(abits, bbits, cbits, fa, fb, fc, fd, L, F, e_zero):
    """Element bits A (n, M, K), B (n, K, N), C (n, M, N) -> D's element bits (n, M, N) uint64, and the
    elements the jitted code must recompute (an inf or NaN in their row of A, column of B or C; overflow).
    Each step's result is rounded to D's format: toward zero to f32 (clearing low binary64 bits), or to
    nearest even to f16 (numpy's binary64 -> binary16 conversion: one correctly rounded step)."""
    with np.errstate(all="ignore"):                  # inf/NaN and overflowing elements are redone anyway
        return _steps(abits, bbits, cbits, fa, fb, fc, fd, L, F, e_zero)


def _steps(abits, bbits, cbits, fa, fb, fc, fd, L, F, e_zero):
    K = abits.shape[2]
    av, at, asp = _values(abits, fa)
    bv, bt, bsp = _values(bbits, fb)
    cv, ct, bad = _values(cbits, fc)
    bad = bad | asp.any(axis=2)[:, :, None] | bsp.any(axis=1)[:, None, :]
    for k0 in range(0, K, L):
        k1 = k0 + L
        tops = at[:, :, k0:k1, None] + bt[:, None, k0:k1, :]             # (n, M, L, N)
        emax = np.maximum(np.maximum(ct, e_zero), tops.max(axis=2))
        up = np.ldexp(1.0, F - emax)                                     # 2**(F - emax), exact
        prods = av[:, :, k0:k1, None] * bv[:, None, k0:k1, :]            # exact
        acc = np.trunc(cv * up).astype(np.int64)
        acc += np.trunc(prods * up[:, :, None, :]).astype(np.int64).sum(axis=2)
        val = acc.astype(np.float64) * np.ldexp(1.0, emax - F)          # exact
        if fd == 3:
            vb = val.view(np.int64)
            E = ((vb >> 52) & 0x7FF) - 1023
            drop = np.where(E >= -126, 29, np.minimum(-97 - E, 63))
            zero = E < -149
            vb = np.where(zero, 0, vb & ~((np.int64(1) << drop) - 1))
            cv = vb.view(np.float64)
            ct = np.where(zero, ZQ, np.maximum(E, -126))
            bad |= E > 127
        else:
            h = val.astype(np.float16)
            hb = h.view(np.uint16).astype(np.int64)
            E = (hb >> 10) & 0x1F
            bad |= E == 0x1F
            zero = (hb & 0x7FFF) == 0
            cv = np.where(zero, 0.0, h.astype(np.float64))
            ct = np.where(E > 0, E - 15, np.where(zero, ZQ, -14))
    if fd == 3:
        return cv.astype(np.float32).view(np.uint32).astype(np.uint64), bad
    return cv.astype(np.float16).view(np.uint16).astype(np.uint64), bad


def int_batch(a, b, c, d, maps, prm):
    """``fast.int_batch`` in numpy (s8/u8/s4/u4/b1 products, exact in int64; wrapping or .satfinite)."""
    M, N, K, epra, eprb, wa, wb, sa, sb, sat, oa, ob, oc, od = (int(x) for x in prm[:14])
    n = a.shape[0]
    A = _gather(a, maps[oa:oa + M * K], epra, wa, M * K).astype(np.int64).reshape(n, M, K)
    B = _gather(b, maps[ob:ob + K * N], eprb, wb, K * N).astype(np.int64).reshape(n, K, N)
    C = _gather(c, maps[oc:oc + M * N], 1, 32, M * N).astype(np.int64).reshape(n, M, N)
    if sa:
        A = np.where(A >> (wa - 1), A - (1 << wa), A)
    if sb:
        B = np.where(B >> (wb - 1), B - (1 << wb), B)
    s = np.where(C >> 31, C - (1 << 32), C) + np.matmul(A, B)
    if sat:
        s = np.clip(s, -2 ** 31, 2 ** 31 - 1)
    d[...] = _scatter((s & 0xFFFFFFFF).astype(np.uint64).reshape(n, M * N), maps[od:od + M * N], 1, 32)
