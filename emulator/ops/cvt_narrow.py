"""Conversions to and from the narrow float formats: .tf32 and the packed fp8 pairs .e4m3x2 / .e5m2x2
(PTX ISA "cvt"; rules measured on the H100, tests/data/scalar/).

* ``cvt.rna{.satfinite}.tf32.f32`` (ptxas expands it into integer steps): finite values get half a tf32 ulp
  added (ties away from zero) and the low 13 bits cleared; infinities and NaNs are only truncated (a signalling
  NaN whose payload lies in the low 13 bits becomes an infinity). ``.satfinite`` then moves a result that is
  an infinity or a NaN down by one tf32 ulp (0x2000): +inf -> 0x7F7FE000, 0x7FFFFFFF -> 0x7FFFC000.
* ``cvt.{rn,rz}{.relu}.tf32.f32`` (the hardware F2FP.TF32): rounded to nearest even / toward zero onto 10
  fraction bits, a NaN gives 0x7FFFE000, .relu gives +0 for negative values and -0.
* ``cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b``: d = fp8(a) << 8 | fp8(b); ``.f16x2`` source: the
  upper half goes to the upper byte. Rounded to nearest even, overflows clamp to the largest finite value
  (448 / 57344), a NaN gives 0x7F, .relu gives +0 for negative values.
* ``cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a``: exact widening of both bytes (upper byte -> upper half).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import OperandError, UnsupportedError
from .common import dst, src

FP8 = {"e4m3x2": ml_dtypes.float8_e4m3fn, "e5m2x2": ml_dtypes.float8_e5m2}
FP8_MAX = {"e4m3x2": 448.0, "e5m2x2": 57344.0}


def _need(instr, n):
    if len(instr.operands) != n:
        raise OperandError(f"{instr.opcode}: takes {n} operands, found {len(instr.operands)}")


def compile_narrow(instr, env, dtype, atype, q):
    """Entry from the cvt executor for conversions that name .tf32 or a packed fp8 type."""
    if dtype == "tf32":
        return _to_tf32(instr, env, atype, q)
    if dtype in FP8:
        return _to_fp8(instr, env, dtype, atype, q)
    if atype in FP8 and dtype == "f16x2":
        return _from_fp8(instr, env, atype, q)
    raise UnsupportedError(f"{instr.opcode}: supported narrow conversions: cvt.{{rna,rn,rz}}.tf32.f32, "
                           f"cvt.rn.satfinite{{.relu}}.{{e4m3x2,e5m2x2}}.{{f32,f16x2}}, "
                           f"cvt.rn{{.relu}}.f16x2.{{e4m3x2,e5m2x2}}")


def _extra(instr, q, allowed):
    bad = [k for k in q if k not in allowed]
    if bad:
        raise UnsupportedError(f"{instr.opcode}: .{q[bad[0]]} is not defined for this conversion")


def _to_tf32(instr, env, atype, q):
    rnd = q.get("rnd")
    if atype != "f32" or rnd not in ("rna", "rn", "rz"):
        raise OperandError(f"{instr.opcode}: cvt.{{rna,rn,rz}}.tf32.f32")
    _extra(instr, q, ("rnd", "relu", "satfinite"))
    _need(instr, 2)
    read = src(env, instr.operands[1], "b32", instr)
    write = dst(env, instr.operands[0], "b32", instr)
    relu, satfinite = "relu" in q, "satfinite" in q

    def run(warp, mask):
        x = read(warp).view(np.uint32).astype(np.uint64)
        mag, sign = x & 0x7FFFFFFF, x & 0x80000000
        special = mag >= 0x7F800000
        if rnd == "rna":
            # ptxas's sequence: add half an ulp to finite values, clear the low 13 bits; .satfinite then
            # steps a result that is inf or NaN down by one tf32 ulp (so NaNs stay NaN-like bit patterns)
            r = np.where(special, x, x + 0x1000) & 0xFFFFE000
            if satfinite:
                r = np.where((r & 0x7FFFFFFF) >= 0x7F800000, r - 0x2000, r)
        else:
            # the hardware conversion (F2FP.TF32): a NaN gives 0x7FFFE000
            m = (mag + 0xFFF + ((mag >> 13) & 1)) if rnd == "rn" else mag
            m = np.where(special, mag, m) & 0xFFFFE000
            r = np.where(mag > 0x7F800000, 0x7FFFE000, sign | m)
            if relu:
                r = np.where((sign != 0) & (mag <= 0x7F800000), 0, r)
        write(warp, r.astype(np.uint32), mask)
    return run


def _fp8(x, dtype, relu):
    """float64 values -> fp8 bytes (uint32), rounded to nearest even, saturating, NaN -> 0x7F."""
    nan = np.isnan(x)
    big = FP8_MAX[dtype]
    c = np.where(nan, 0.0, np.clip(x, -big, big))
    with np.errstate(over="ignore"):
        b = c.astype(np.float32).astype(FP8[dtype]).view(np.uint8).astype(np.uint32)
    if relu:
        b = np.where(np.signbit(c), np.uint32(0), b)
    return np.where(nan, np.uint32(0x7F), b)


def _to_fp8(instr, env, dtype, atype, q):
    if q.get("rnd") != "rn" or "satfinite" not in q:
        raise OperandError(f"{instr.opcode}: cvt.rn.satfinite{{.relu}}.{dtype}.{{f32,f16x2}}")
    _extra(instr, q, ("rnd", "relu", "satfinite"))
    relu = "relu" in q
    write = dst(env, instr.operands[0], "b16", instr)
    if atype == "f32":
        _need(instr, 3)
        ra, rb = (src(env, op, "f32", instr) for op in instr.operands[1:3])

        def run(warp, mask):
            hi = _fp8(ra(warp).astype(np.float64), dtype, relu)
            lo = _fp8(rb(warp).astype(np.float64), dtype, relu)
            write(warp, ((hi << 8) | lo).astype(np.uint16), mask)
        return run
    if atype != "f16x2":
        raise OperandError(f"{instr.opcode}: the source is .f32 (two operands) or .f16x2")
    _need(instr, 2)
    read = src(env, instr.operands[1], "b32", instr)

    def run(warp, mask):
        h = read(warp).view(np.uint32).view(np.uint16).reshape(32, 2).view(np.float16).astype(np.float64)
        lo, hi = _fp8(h[:, 0], dtype, relu), _fp8(h[:, 1], dtype, relu)
        write(warp, ((hi << 8) | lo).astype(np.uint16), mask)
    return run


def _from_fp8(instr, env, atype, q):
    if q.get("rnd") != "rn":
        raise OperandError(f"{instr.opcode}: cvt.rn{{.relu}}.f16x2.{atype}")
    _extra(instr, q, ("rnd", "relu"))
    _need(instr, 2)
    relu = "relu" in q
    read = src(env, instr.operands[1], "b16", instr)
    write = dst(env, instr.operands[0], "b32", instr)
    fp8 = FP8[atype]

    def run(warp, mask):
        b = read(warp).view(np.uint16)
        pair = np.stack([b & 0xFF, b >> 8], axis=1).astype(np.uint8)          # low byte, high byte
        h = pair.view(fp8).astype(np.float32).astype(np.float16)
        if relu:
            hf = h.astype(np.float64)
            h = np.where(np.isnan(hf) | (hf > 0), h, np.float16(0))
        u = h.view(np.uint16)
        u = np.where(np.isnan(h.astype(np.float64)), np.uint16(0x7FFF), u)
        write(warp, (u[:, 0].astype(np.uint32) | (u[:, 1].astype(np.uint32) << 16)), mask)
    return run
