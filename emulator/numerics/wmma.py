"""The arithmetic a wmma.mma adds around its mma.sync steps (ptxas 13.0's lowering, isa/wmma.py):

* ``widen_f16``: an .f16 C with an .f32 accumulation is widened first (``HADD2.F32 -RZ, c``): exact; a NaN
  becomes the canonical .f32 NaN (H100 capture, tests/data/wmma).
* ``narrow_f32``: an .f16 D from an .f32 accumulation is rounded at the end (``F2FP.F16.F32.PACK_AB``): round
  to nearest even, overflow to infinity, a NaN becomes the canonical .f16 NaN.
* ``f64_rounded``: ``wmma.mma ... .m8n8k4.{rz,rm,rp}.f64`` runs ``DMMA.8x8x4`` with that rounding: the
  chain of fma in ascending k starting from C (as the .rn form, ``mma.sync`` m8n8k4), each fma rounded in the
  given direction; NaNs and infinities follow the .rn rules (``reference.fma64``).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .fround import _round_fraction_f64, round_to
from .reference import decode, fma64, fma64_special

F32_NAN = np.uint32(0x7FFFFFFF)
F16_NAN = np.uint16(0x7FFF)


def widen_f16(regs):
    """f16x2 registers (n, 32) uint32 -> f32 registers (2n, 32): register 2j + h holds half h of register j."""
    r = np.asarray(regs, np.uint32)
    halves = np.stack([r & np.uint32(0xFFFF), r >> np.uint32(16)], axis=1).astype(np.uint16)   # (n, 2, 32)
    f = halves.view(np.float16).astype(np.float32).view(np.uint32)
    nan = (halves & np.uint16(0x7FFF)) > np.uint16(0x7C00)
    f = np.where(nan, F32_NAN, f)
    return f.reshape(2 * r.shape[0], r.shape[1])


def narrow_f32(regs):
    """f32 registers (2n, 32) -> f16x2 registers (n, 32): register j = (half 0: 2j, half 1: 2j + 1), RN."""
    r = np.asarray(regs, np.uint32)
    x = r.view(np.float32).astype(np.float64)
    h = round_to(x, "f16", "rn").view(np.uint16)
    h = np.where(np.isnan(x), F16_NAN, h).astype(np.uint32)
    h = h.reshape(r.shape[0] // 2, 2, r.shape[1])
    return (h[:, 0] | (h[:, 1] << np.uint32(16))).astype(np.uint32)


def fma64_rounded(a_bits, b_bits, c_bits, mode):
    """binary64 fma a*b + c rounded by ``mode`` (rn, rz, rm, rp) with the DMMA NaN/infinity rules."""
    if mode == "rn":
        return fma64(a_bits, b_bits, c_bits)
    a, b, c = decode(a_bits, "f64"), decode(b_bits, "f64"), decode(c_bits, "f64")
    special = fma64_special(a, b, c, a_bits, b_bits, c_bits)
    if special is not None:
        return special
    sp = a.sign ^ b.sign
    prod = Fraction(a.M * b.M) * Fraction(2) ** (a.q + b.q)
    cv = Fraction(c.M) * Fraction(2) ** c.q
    q = (-prod if sp else prod) + (-cv if c.sign else cv)
    if q == 0:
        if a.M * b.M == 0 and c.M == 0 and sp == c.sign:
            sign = sp                                 # (+-0) + (+-0) of one sign keeps it
        else:
            sign = 1 if mode == "rm" else 0
        return sign << 63
    r = _round_fraction_f64(q, mode)
    return int(np.float64(r).view(np.uint64))


def f64_rounded(A, B, C, mode):
    """Tiles of raw bits A (M, K), B (K, N), C (M, N) -> D (M, N): fma chain in ascending k, rounded by mode."""
    M, K = len(A), len(A[0])
    N = len(B[0])
    D = [[0] * N for _ in range(M)]
    for m in range(M):
        for n in range(N):
            acc = int(C[m][n])
            for k in range(K):
                acc = fma64_rounded(int(A[m][k]), int(B[k][n]), acc, mode)
            D[m][n] = acc
    return D
