"""cvt: conversions between integer and floating-point types (PTX ISA "cvt").

* integer -> integer: sign/zero extension or truncation; ``.sat`` clamps to the destination range.
* float -> integer: needs ``.rni``/``.rzi``/``.rmi``/``.rpi``; saturates to the destination range, NaN -> 0.
* integer -> float and narrowing float -> float: need ``.rn``/``.rz``/``.rm``/``.rp``; rounded once.
* float -> same float type with an integer rounding (``cvt.rni.f32.f32``): round to an integral value.
* ``cvt.frnd{.relu}{.satfinite}.f16x2.f32 d, a, b`` (and ``.bf16x2``): d = cvt(a) << 16 | cvt(b).
* ``cvt.pack.sat.{u16,s16}.s32 d, a, b``: d = sat(a) << 16 | sat(b), each clamped to the 16-bit range;
  ``cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c``: d = c << 2n | sat(a) << n | sat(b) for n-bit
  fields, truncated to 32 bits (c fills the bits above the two fields).
"""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

from isa.types import TYPES
from ..errors import OperandError, UnsupportedError
from .registry import executor
from .cvt_narrow import compile_narrow
from .common import NP, UINT, dst, split_mods, src, width
from ..numerics.fround import FORMATS, canon_nan, flush, round_exact, round_to

FRND = {"rn", "rz", "rm", "rp"}
IRND = {"rni", "rzi", "rmi", "rpi"}
INT_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
FLOATS = {"f16", "bf16", "f32", "f64"}
NARROW = {"tf32", "e4m3x2", "e5m2x2"}
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


@executor("cvt")
def compile_cvt(instr, env):
    if "pack" in instr.mods:
        return _cvt_pack_sat(instr, env)
    types = [m for m in instr.mods if m in CVT_TYPES or m in NARROW]
    others = [m for m in instr.mods if m not in CVT_TYPES and m not in NARROW]
    q = split_mods(type(instr)(".".join(["cvt"] + others), ()), {
        "rnd": FRND | IRND | {"rna"}, "ftz": {"ftz"}, "sat": {"sat"}, "relu": {"relu"}, "satfinite": {"satfinite"}})
    if len(types) != 2:
        raise OperandError(f"{instr.opcode}: cvt needs a destination and a source type (cvt.dtype.atype)")
    dtype, atype = types
    if dtype in NARROW or atype in NARROW:
        return compile_narrow(instr, env, dtype, atype, q)
    if q.get("rnd") == "rna":
        raise OperandError(f"{instr.opcode}: .rna is defined for cvt.rna.tf32.f32 only")
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
                r = np.where(r == 0, 0.0, r)                # an integer zero converts to +0 in every mode
                r = round_to(r.astype(np.float64), dtype, "rn", ftz=ftz, sat=sat)
            write(warp, r, mask)
        return run

    # float -> float
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
    # ptxas accepts a narrowing conversion without a rounding modifier (it rounds to nearest) and a widening
    # one with a modifier (which changes nothing: the conversion is exact)
    mode = rnd or "rn"
    relu, satfinite = "relu" in q, "satfinite" in q
    if (relu or satfinite) and dtype not in ("f16", "bf16"):
        raise UnsupportedError(f"{text}: .relu and .satfinite are defined for .f16/.bf16 destinations")
    big = float(np.finfo(np.float16).max) if dtype == "f16" else float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)

    def run(warp, mask):
        v = read(warp)
        if ftz and atype == "f32" and dtype != "f16":
            v = canon_nan(flush(v, "f32"), "f32")   # H100: the .ftz path also canonicalises a NaN operand
        r = round_to(v.astype(np.float64), dtype, mode, ftz=ftz and dtype == "f32", sat=sat)
        if satfinite:                               # infinities and overflows clamp to the largest finite value
            rf = r.astype(np.float64)
            r = np.where(np.isinf(rf), np.copysign(big, rf).astype(r.dtype), r)
        if relu:                                    # negative values and -0 give +0; a NaN stays canonical
            rf = r.astype(np.float64)
            r = np.where(np.isnan(rf) | (rf > 0), r, np.zeros_like(r))
        nan = np.isnan(v.astype(np.float64))
        if nan.any() and not sat:
            r = np.where(nan, nan_convert(v, atype, dtype, ftz, rnd).view(NP[dtype]), r)
        write(warp, r, mask)
    return run


_FBITS = {"f16": (16, 10), "bf16": (16, 7), "f32": (32, 23), "f64": (64, 52)}


def nan_convert(v, atype, dtype, ftz=False, rnd=None):
    """Raw bits of the NaN that cvt.dtype.atype makes of the NaN lanes of ``v`` (measured on the H100):

    * to or from .f64: the sign and the leading payload bits are kept and the NaN is quieted;
    * .f32 -> .f32 and .f64 -> .f64 without modifiers, and .bf16 -> .f32 without .ftz: the bits unchanged
      (a signalling NaN stays signalling);
    * every other conversion (and the .ftz forms, which canonicalise first): the canonical NaN of ``dtype``.
    """
    aw, af = _FBITS[atype]
    dw, df = _FBITS[dtype]
    u = v.view(UINT[aw]).astype(np.uint64)
    if atype == dtype and atype in ("f32", "f64") and not ftz and rnd is None:
        return u.astype(UINT[dw])
    if atype == "bf16" and dtype == "f32" and not ftz:
        return (u << np.uint64(16)).astype(np.uint32)
    if "f64" in (atype, dtype) and not (ftz and atype == "f32" and dtype == "f32"):
        if ftz and atype == "f32":
            u = np.full_like(u, 0x7FFFFFFF)
        sign = (u >> np.uint64(aw - 1)) << np.uint64(dw - 1)
        pay = u & np.uint64((1 << af) - 1)
        pay = pay << np.uint64(df - af) if df > af else pay >> np.uint64(af - df)
        exp = np.uint64(((1 << (dw - 1 - df)) - 1) << df)
        return (sign | exp | pay | np.uint64(1 << (df - 1))).astype(UINT[dw])
    return np.full(u.shape, FORMATS[dtype][2], UINT[dw])


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


_PACK_FIELDS = {"u16": (16, False), "s16": (16, True), "u8": (8, False), "s8": (8, True), "u4": (4, False),
                "s4": (4, True), "u2": (2, False), "s2": (2, True)}


def _cvt_pack_sat(instr, env):
    """cvt.pack.sat.convertType.s32{.b32}: two s32 values clamped to n-bit fields, a's above b's; the
    forms below 16 bits put c's low bits above them (PTX ISA "cvt.pack"; the H100 agrees on every u16, s16,
    u8 and s8 input of the capture, I2IP.*.S32.SAT in SASS)."""
    mods = list(instr.mods)
    fields = [m for m in mods if m in _PACK_FIELDS]
    n = _PACK_FIELDS[fields[0]][0] if len(fields) == 1 else None
    want = ["pack", "sat"] + fields + ["s32"] + (["b32"] if n is not None and n < 16 else [])
    if n is None or mods != want:
        raise UnsupportedError(f"{instr.opcode}: supported: cvt.pack.sat.{{u16,s16}}.s32 d, a, b and "
                               f"cvt.pack.sat.{{u8,s8,u4,s4,u2,s2}}.s32.b32 d, a, b, c")
    n_src = 2 if n == 16 else 3
    if len(instr.operands) != n_src + 1:
        raise OperandError(f"{instr.opcode}: takes {n_src + 1} operands, found {len(instr.operands)}")
    signed = _PACK_FIELDS[fields[0]][1]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    ra, rb = (src(env, op, "s32", instr) for op in instr.operands[1:3])
    rc = src(env, instr.operands[3], "b32", instr) if n_src == 3 else None
    write = dst(env, instr.operands[0], "b32", instr)
    field = (1 << n) - 1

    def run(warp, mask):
        ta = np.clip(ra(warp).astype(np.int64), lo, hi) & field
        tb = np.clip(rb(warp).astype(np.int64), lo, hi) & field
        d = (ta << n) | tb
        if rc is not None:
            d |= rc(warp).astype(np.int64) << (2 * n)
        write(warp, (d & 0xFFFFFFFF).astype(np.uint32), mask)
    return run
