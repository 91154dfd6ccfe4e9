"""Bit-exact ``wgmma.mma_async`` arithmetic on the H100 (sm_90a), measured by tools/hwcapture/wgmma.

The floating-point forms are the tensor-core T-FDPA of ``reference.t_fdpa`` (exact products, one alignment
to the largest exponent, every term cut toward zero ``F`` bits below it, one rounding), with one fused step
over the instruction's whole K:

=================  ====  ===  ======  ==========  ==============================================
A/B -> D            K     L    F       e_zero      rounding
=================  ====  ===  ======  ==========  ==============================================
f16, bf16 -> f32    16    16   25      -133        RZ (as mma.sync)
f16 -> f16          16    16   25      -21         RNE
tf32 -> f32         8     8    25      -133        RZ (low 13 register bits ignored)
fp8 -> f32          32    32   13      -133        RZ, then RZ to 13 fraction bits (e8m13)
fp8 -> f16          32    32   13      -21         RNE
=================  ====  ===  ======  ==========  ==============================================

Unlike ``mma.sync`` fp8 on sm_90 (a software sequence of f16 HMMAs, ``reference.fp8_dot``), wgmma's fp8 is
native and keeps far fewer bits: the accumulator C is one more term cut 13 bits below the largest.
Integers are exact (wrap mod 2**32, or clamp with ``.satfinite``); ``.b1 ... .and.popc`` adds
``popc(a & b)``.  ``imm-scale-a/b = -1`` negates the element (its sign bit), ``scale-d = false`` makes
C = +0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fast, gemm_fast, reference
from .params import FORMATS, RNE, RZ, TcParams

WGMMA_PARAMS = {
    ("f16", "f32"): TcParams(16, 25, -133, RZ),
    ("bf16", "f32"): TcParams(16, 25, -133, RZ),
    ("f16", "f16"): TcParams(16, 25, -21, RNE),
    ("tf32", "f32"): TcParams(8, 25, -133, RZ),
    ("fp8", "f32"): TcParams(32, 13, -133, RZ),
    ("fp8", "f16"): TcParams(32, 13, -21, RNE),
}

FP8 = ("e4m3", "e5m2")
FP8_FRACTION = 13                                       # fraction bits an fp8 -> f32 result keeps
FP8_CUT_MASK = (1 << (23 - FP8_FRACTION)) - 1

SIGN = {"f16": 0x8000, "bf16": 0x8000, "tf32": 0x80000000, "e4m3": 0x80, "e5m2": 0x80}


def _plain_lut(fmt):
    """Decode table of an fp8 format with its own nominal exponents: wgmma's native fp8 aligns a
    subnormal by the format's emin (mma.sync's f16 detour aligns it by its leading bit)."""
    code = FORMATS[fmt].code
    rows = []
    for x in range(256):
        k, s, M, q, t = fast.decode(x, code)
        if k != fast.NUM:
            q = t = fast.ZQ
        rows.append((-M if s else M, q, t, k))
    return np.ascontiguousarray(np.array(rows, np.int64))


for _f in ("e4m3", "e5m2"):
    gemm_fast.BUILDERS[_f + "/native"] = (lambda f: lambda: _plain_lut(f))(_f)
NATIVE = {"e4m3": "e4m3/native", "e5m2": "e5m2/native"}


def wgmma_params(atype: str, dtype: str) -> TcParams:
    return WGMMA_PARAMS[("fp8" if atype in ("e4m3", "e5m2") else atype, dtype)]


@dataclass
class _Op:            # what gemm_fast.tc_gemm reads of an instruction
    _prm: np.ndarray
    variant: object


@dataclass(frozen=True)
class _Types:
    atype: str
    btype: str


def _prm(atype, btype, dtype, p):
    prm = np.zeros(19, np.int64)
    prm[3:7] = [FORMATS[atype].code, FORMATS[btype].code, FORMATS[dtype].code, FORMATS[dtype].code]
    prm[15:19] = [p.L, p.F, p.e_zero, p.rounding]
    return prm


def negate(bits, t, scale):
    """imm-scale = -1: flip every element's sign bit."""
    return bits if scale == 1 else np.asarray(bits, np.uint64) ^ np.uint64(SIGN[t])


def wgmma_tile(atype, btype, dtype, A, B, C, satfinite=False):
    """D (64, N) raw bits from raw-bit tiles A (64, K), B (K, N), C (64, N) (uint64), fast path."""
    A = np.ascontiguousarray(A, np.uint64)
    B = np.ascontiguousarray(B, np.uint64)
    C = np.ascontiguousarray(C, np.uint64)
    if dtype == "s32":
        return int_tile(atype, btype, A, B, C, satfinite)
    p = wgmma_params(atype, dtype)
    types = _Types(NATIVE.get(atype, atype), NATIVE.get(btype, btype))
    D = gemm_fast.tc_gemm(A, B, C, _Op(_prm(atype, btype, dtype, p), types))
    if dtype == "f32" and atype in FP8:
        D = fp8_f32_cut(D)
    return D


def fp8_f32_cut(D):
    """fp8 -> f32: the (RZ) result keeps only 13 fraction bits (finite results; inf and NaN unchanged). # RZ"""
    D = np.asarray(D, np.uint64)
    finite = (D & np.uint64(0x7F800000)) != np.uint64(0x7F800000)
    return np.where(finite, D & np.uint64(~FP8_CUT_MASK & 0xFFFFFFFF), D)


def _signed(x, w):
    x = np.asarray(x, np.int64) & ((1 << w) - 1)
    return np.where(x >> (w - 1), x - (1 << w), x)


def int_tile(atype, btype, A, B, C, satfinite):
    c = _signed(C, 32)
    if atype == "b1":                          # A, B hold 0/1 bits: popc(a AND b) == sum of a*b
        s = c + (A.astype(np.int64) @ B.astype(np.int64))
    else:
        a = _signed(A, 8) if atype == "s8" else A.astype(np.int64)
        b = _signed(B, 8) if btype == "s8" else B.astype(np.int64)
        s = c + a @ b                          # |s| < 2**31 + 64 * 2**16: exact in int64
    if satfinite:
        s = np.clip(s, -2**31, 2**31 - 1)
    return (s & 0xFFFFFFFF).astype(np.uint64)


def reference_element(atype, btype, dtype, a_bits, b_bits, c_bits):
    """One D element by the readable rule (plain Python integers): the spec the fast path is tested on."""
    p = wgmma_params(atype, dtype)
    a = [reference.decode(x, atype) for x in a_bits]
    b = [reference.decode(x, btype) for x in b_bits]
    d = reference.t_fdpa(a, b, reference.decode(c_bits, dtype), p.F, p.e_zero, dtype, p.rounding)
    if dtype == "f32" and atype in FP8 and (d & 0x7F800000) != 0x7F800000:
        d &= ~FP8_CUT_MASK & 0xFFFFFFFF                                              # RZ to 13 fraction bits
    return d


def reference_tile(atype, btype, dtype, A, B, C, satfinite=False):
    if dtype == "s32":
        return int_tile(atype, btype, np.asarray(A, np.uint64), np.asarray(B, np.uint64),
                        np.asarray(C, np.uint64), satfinite)
    M, K = np.shape(A)
    N = np.shape(B)[1]
    D = np.zeros((M, N), np.uint64)
    for m in range(M):
        for n in range(N):
            D[m, n] = reference_element(atype, btype, dtype, [int(x) for x in A[m]], [int(B[k][n]) for k in range(K)],
                                        int(C[m][n]))
    return D
