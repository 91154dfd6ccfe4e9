"""cvt: conversions between integer and floating-point types (PTX ISA "cvt").

* integer -> integer: sign/zero extension or truncation; ``.sat`` clamps to the destination range.
* float -> integer: needs ``.rni``/``.rzi``/``.rmi``/``.rpi``; saturates to the destination range, NaN -> 0.
* integer -> float and narrowing float -> float: need ``.rn``/``.rz``/``.rm``/``.rp``; rounded once.
* float -> same float type with an integer rounding (``cvt.rni.f32.f32``): round to an integral value.
* ``cvt.frnd{.relu}{.satfinite}.f16x2.f32 d, a, b`` (and ``.bf16x2``): d = cvt(a) << 16 | cvt(b).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from isa.types import TYPES
from ..errors import OperandError, UnsupportedError
from .registry import executor
from .common import NP, UINT, dst, split_mods, src, width
from ..numerics.fround import FORMATS, canon_nan, flush, round_exact, round_to

FRND = {"rn", "rz", "rm", "rp"}
IRND = {"rni", "rzi", "rmi", "rpi"}
INT_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
FLOATS = {"f16", "bf16", "f32", "f64"}
CVT_TYPES = INT_TYPES | FLOATS | {"f16x2", "bf16x2", "b16", "b32", "b64", "b8"}
_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _range(t):
    w = width(t)
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if TYPES[t][1] == "s" else (0, (1 << w) - 1)


def _to_int_bits(vals, t):
    """Python ints (already in range or to wrap) -> lane values of type t."""
    w = width(t)
    m = (1 << w) - 1
    return np.array([int(v) & m for v in vals], np.uint64).astype(UINT[w]).view(NP[t])


def _cvt_rna_tf32(instr, env):
    """cvt.rna.tf32.f32: round to nearest, ties away from zero, onto 10 fraction bits; the low 13 bits of the
    32-bit result are zero (Triton's tf32x3 relies on it: it subtracts the result from the f32 value).
    Infinities pass; a NaN becomes the canonical 0x7FFFFFFF (NaN is not captured on hardware yet)."""
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: takes 2 operands, found {len(instr.operands)}")
    read = src(env, instr.operands[1], "b32", instr)
    write = dst(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        x = read(warp).astype(np.uint64)
        special = (x & 0x7F800000) == 0x7F800000
        r = ((x + 0x1000) & 0xFFFFE000).astype(np.uint32)                   # RNA on the magnitude
        r = np.where(special, np.where(x & 0x7FFFFF, np.uint32(0x7FFFFFFF), x.astype(np.uint32)), r)
        write(warp, r.astype(np.uint32), mask)
    return run


@executor("cvt")
def compile_cvt(instr, env):
    if instr.mods and set(instr.mods) == {"rna", "tf32", "f32"} and instr.mods.index("tf32") < instr.mods.index("f32"):
        return _cvt_rna_tf32(instr, env)
    types = [m for m in instr.mods if m in CVT_TYPES]
    others = [m for m in instr.mods if m not in CVT_TYPES]
    q = split_mods(type(instr)(".".join(["cvt"] + others), ()), {
        "rnd": FRND | IRND, "ftz": {"ftz"}, "sat": {"sat"}, "relu": {"relu"}, "satfinite": {"satfinite"}})
    if len(types) != 2:
        raise OperandError(f"{instr.opcode}: cvt needs a destination and a source type (cvt.dtype.atype)")
    dtype, atype = types
    for t in types:
        if t in ("b8", "b16", "b32", "b64"):
            raise UnsupportedError(f"{instr.opcode}: cvt takes typed operands (.u/.s/.f), not .{t}")
    if dtype in ("f16x2", "bf16x2"):
        return _cvt_pack(instr, env, dtype, atype, q)
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: takes 2 operands, found {len(instr.operands)}")
    rnd = q.get("rnd")
    dk, ak = TYPES[dtype][1], TYPES[atype][1]
    read = src(env, instr.operands[1], atype, instr)
    write = dst(env, instr.operands[0], dtype, instr)
    ftz, sat = "ftz" in q, "sat" in q
    text = instr.opcode

    if dk != "f" and ak != "f":                          # integer -> integer
        if rnd:
            raise OperandError(f"{text}: integer-to-integer cvt takes no rounding modifier")
        lo, hi = _range(dtype)

        def run(warp, mask):
            v = [int(x) for x in read(warp)]
            if sat:
                v = [min(max(x, lo), hi) for x in v]
            write(warp, _to_int_bits(v, dtype), mask)
        return run

    if dk != "f":                                        # float -> integer
        if rnd not in IRND:
            raise OperandError(f"{text}: float-to-integer cvt needs .rni/.rzi/.rmi/.rpi")
        lo, hi = _range(dtype)
        fn = _INT_ROUND[rnd]
        # NaN -> 0, except (measured on H100) conversions from .f64 and to 64-bit integers, which give the
        # "integer indefinite" 0x80...0 (bit pattern of the most negative signed value)
        nan_val = (1 << (width(dtype) - 1)) if (atype == "f64" or width(dtype) == 64) else 0

        def run(warp, mask):
            v = read(warp)
            if ftz and atype == "f32":
                v = flush(v, "f32")
            x = fn(v.astype(np.float64))
            out = []
            for f in x:
                if np.isnan(f):
                    out.append(nan_val)
                elif f >= hi:
                    out.append(hi)
                elif f <= lo:
                    out.append(lo)
                else:
                    out.append(int(f))
            write(warp, _to_int_bits(out, dtype), mask)
        return run

    if ak != "f":                                        # integer -> float
        if rnd not in FRND:
            raise OperandError(f"{text}: integer-to-float cvt needs .rn/.rz/.rm/.rp")

        def run(warp, mask):
            v = [int(x) for x in read(warp)]
            if all(abs(x) < (1 << 53) for x in v):
                r = round_to(np.array(v, np.float64), dtype, rnd, ftz=ftz, sat=sat)
            else:
                r = round_exact([Fraction(x) for x in v], dtype, rnd)
                r = round_to(r.astype(np.float64), dtype, "rn", ftz=ftz, sat=sat)
            write(warp, r, mask)
        return run

    # float -> float
    narrowing = width(dtype) < width(atype) or (dtype == "bf16" and atype == "f16") or \
        (dtype == "f16" and atype == "bf16")
    if rnd in IRND:
        if dtype != atype:
            raise OperandError(f"{text}: an integer rounding (.{rnd}) needs equal float types")
        fn = _INT_ROUND[rnd]

        def run(warp, mask):
            v = read(warp)
            if ftz:
                v = flush(v, dtype)
            r = canon_nan(fn(v).astype(NP[dtype]), dtype)
            if sat:
                r = round_to(r.astype(np.float64), dtype, sat=True)
            write(warp, flush(r, dtype) if ftz else r, mask)
        return run
    if narrowing and rnd not in FRND:
        raise OperandError(f"{text}: a narrowing float conversion needs .rn/.rz/.rm/.rp")
    if not narrowing and rnd and dtype != atype:
        raise OperandError(f"{text}: a widening float conversion is exact and takes no rounding modifier")
    mode = rnd or "rn"

    keep_payload = "f64" in (atype, dtype)   # H100: F2F to/from .f64 keeps the NaN payload (quieted)

    def run(warp, mask):
        v = read(warp)
        if ftz and atype == "f32":
            v = canon_nan(flush(v, "f32"), "f32")   # H100: the .ftz path also canonicalises a NaN operand
        r = round_to(v.astype(np.float64), dtype, mode, ftz=ftz and dtype == "f32", sat=sat)
        if keep_payload:
            nan = np.isnan(v)
            if nan.any():
                r = np.where(nan, v.astype(NP[dtype]), r)
        write(warp, r, mask)
    return run


def _cvt_pack(instr, env, dtype, atype, q):
    if atype != "f32" or len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: cvt.frnd.{dtype}.f32 d, a, b (two .f32 sources)")
    rnd = q.get("rnd")
    if rnd not in FRND:
        raise OperandError(f"{instr.opcode}: needs .rn/.rz/.rm/.rp")
    fmt = dtype[:-2]
    ra = src(env, instr.operands[1], "f32", instr)
    rb = src(env, instr.operands[2], "f32", instr)
    write = dst(env, instr.operands[0], "b32", instr)
    relu, satfinite = "relu" in q, "satfinite" in q
    dt, ut = FORMATS[fmt][0], FORMATS[fmt][1]
    big = float(np.finfo(dt).max) if fmt == "f16" else float(3.3895313892515355e38)

    def one(v):
        x = v.astype(np.float64)
        if satfinite:
            x = np.where(np.isnan(x), x, np.clip(x, -big, big))
        r = round_to(x, fmt, rnd)
        if satfinite:
            r = np.where(np.isinf(r.astype(np.float64)), np.copysign(big, x).astype(dt), r)
        if relu:
            f = r.astype(np.float64)
            r = np.where(np.isnan(f) | (f > 0), r, np.zeros_like(r))
        return r.view(ut).astype(np.uint32)

    def run(warp, mask):
        write(warp, (one(ra(warp)) << np.uint32(16)) | one(rb(warp)), mask)
    return run
