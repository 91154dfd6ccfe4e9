"""Floating-point arithmetic: add, sub, mul, fma, mad, div, rcp, sqrt, min, max, neg, abs, copysign, testp
on .f32, .f64, .f16, .f16x2, .bf16 and .bf16x2 (PTX ISA "Floating-Point Instructions" and "Half Precision
Floating-Point Instructions").

Each instruction is its own IEEE operation rounded once (``.rn``/``.rz``/``.rm``/``.rp``); ``add.f32``
and ``mul.f32`` are never fused here (ptxas may contract them into FFMA in SASS, the PTX semantics are
per instruction; nvcc marks uncontractable ones ``.rn``). ``.ftz`` flushes subnormal inputs and results
of .f32 to zero of the same sign; ``.sat`` clamps to [0, 1] (NaN -> +0). NaN results are the canonical
NaN (``0x7FFFFFFF`` for .f32). The ``.approx`` forms (and ``div.full``) run on the MUFU unit: they are
compiled by ``ops/mufu.py``.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..errors import OperandError, UnsupportedError
from ..frontend.ptx import Imm
from .registry import executor
from .common import dst, split_mods, src
from .mufu import compile_mufu, is_mufu
from ..numerics.fround import (FORMATS, MODES, canon_nan, exact, exact_zero, flush, round_exact, round_to, two_sum,
                     zero_sum_sign)

FLOAT_TYPES = {"f32", "f64", "f16", "f16x2", "bf16", "bf16x2"}
_ELEM = {"f32": "f32", "f64": "f64", "f16": "f16", "f16x2": "f16", "bf16": "bf16", "bf16x2": "bf16"}
_BITS = {"f32": "b32", "f64": "b64", "f16": "b16", "f16x2": "b32", "bf16": "b16", "bf16x2": "b32"}
_APPROX_NOTE = "the .approx forms (and div.full) are compiled by ops/mufu.py"


def _mods(instr, extra=None):
    groups = {"type": FLOAT_TYPES, "rnd": set(MODES), "ftz": {"ftz"}, "sat": {"sat"}, "relu": {"relu"}}
    if extra:
        groups.update(extra)
    if any(m in ("approx", "full") for m in instr.mods):
        raise UnsupportedError(f"{instr.opcode}: {_APPROX_NOTE}; supported: the IEEE-rounded forms "
                               f"(.rn, .rz, .rm, .rp)")
    q = split_mods(instr, groups)
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type; supported: "
                           f"{', '.join('.' + t for t in sorted(FLOAT_TYPES))}")
    return q


class _Operands:
    """Readers/writer of float operands as float64 arrays of shape (32,) or (32, 2) for the x2 types."""

    def __init__(self, instr, env, ptype, ftz, n_src):
        if len(instr.operands) != n_src + 1:
            raise OperandError(f"{instr.opcode}: takes {n_src + 1} operands, found {len(instr.operands)}")
        # .ftz has no effect on .f64 (rcp.rn.ftz.f64 is accepted; the H100 keeps f64 subnormals)
        self.ptype, self.fmt, self.ftz = ptype, _ELEM[ptype], ftz and ptype != "f64"
        self.dt, self.ut = FORMATS[self.fmt][0], FORMATS[self.fmt][1]
        raw = _BITS[ptype]
        self.readers = [src(env, op, raw, instr) for op in instr.operands[1:]]
        self.writer = dst(env, instr.operands[0], raw, instr)
        self.pair = ptype.endswith("x2")

    def values(self, warp, i):
        """Operand i in its own format (flushed under .ftz)."""
        v = self.readers[i](warp)
        v = v.view(self.ut).reshape(32, 2) if self.pair else v.view(self.ut)
        v = v.view(self.dt)
        return flush(v, self.fmt) if self.ftz else v

    def f64(self, warp, i):
        return self.values(warp, i).astype(np.float64)

    def f64_nan(self, warp, r, order):
        """.f64: where an operand is a NaN, the result is the first NaN operand in ``order`` (operand indices),
        quieted, with its own sign and payload (measured on the H100); NaNs made from numbers stay as they are."""
        if self.ptype != "f64":
            return r
        raw = [self.readers[i](warp).view(np.uint64) for i in order]
        out = r.view(np.uint64).copy()
        taken = ~np.isnan(r)                # only NaN results take an operand's NaN
        for v in raw:
            nan = ((v & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)) & ~taken
            out = np.where(nan, v | np.uint64(1 << 51), out)
            taken |= nan
        return out.view(np.float64)

    def write(self, warp, r, mask):
        bits = np.ascontiguousarray(r.astype(self.dt, copy=False)).view(self.ut)
        if self.pair:
            bits = bits.reshape(32, 2).view(np.uint32).reshape(32)
        self.writer(warp, bits, mask)


def _mode(instr, q, default="rn"):
    return q.get("rnd", default)


def _finish(ops, r, mode, e=None, sat=False, relu=False, overflow=None):
    out = round_to(r, ops.fmt, mode, e=e, ftz=ops.ftz, sat=sat, overflow=overflow)
    if relu:
        out = np.where(np.isnan(out.astype(np.float64)) | (out.astype(np.float64) > 0), out,
                       np.zeros_like(out))
    return out


def _exact_lanes(fn, *cols):
    """Apply an exact rational function lane by lane (NaN/inf handled by ``fn``'s float fallback)."""
    flat = [np.ravel(c) for c in cols]
    return [fn(*vals) for vals in zip(*flat)]


_SIGN64 = np.uint64(1 << 63)


def _f64_slots(instr, ops):
    """Where ptxas puts an ``.f64`` immediate (measured on the H100, and in the SASS of ptxas 13.0).

    DADD/DMUL/DSETP/DFMA take a constant only as their *second* source, so for a and b (the operands of
    add/sub/mul/min/max, the factors of fma/mad):

    * an immediate ``a`` with a register ``b`` is swapped into the second slot (``sub`` becomes
      ``-b + a``, the register negated by an operand modifier, which leaves a NaN's sign alone);
    * ``sub`` with an immediate ``b`` becomes an add of the negated constant: ptxas flips the
      immediate's sign bit, so a NaN immediate comes back with the opposite sign.

    The register-form NaN rules then apply to the slots: of two NaNs, the second slot's wins. Returns
    (operand index in the first slot, operand index in the second slot, whether ``sub`` negates the
    second slot); ``ops.readers`` is updated for a negated immediate.
    """
    a_op, b_op = instr.operands[1], instr.operands[2]
    if ops.ptype != "f64":
        return 0, 1, True
    if instr.base == "sub" and isinstance(b_op, Imm):
        read = ops.readers[1]
        ops.readers[1] = lambda warp: read(warp).view(np.uint64) ^ _SIGN64
        return 0, 1, False
    if isinstance(a_op, Imm) and not isinstance(b_op, Imm):
        return 1, 0, True
    return 0, 1, True


# ----------------------------------------------------------------------------------------------
# add / sub / mul / fma / mad

def compile_float(instr, env):
    """Entry point for the integer executors' float dispatch (add, sub, mul, mad, min, max, neg, abs)."""
    return _FLOAT_FACTORIES[instr.base](instr, env)


# ``add``/``sub``/``mul`` ``.rn.f32`` without ``.ftz``/``.sat`` also have a short path (``_addmul_f32``): numpy's float32
# arithmetic, which rounds each operation once to nearest even with subnormals kept (IEEE 754, as FADD and FMUL do),
# and the canonical NaN. The general ``run`` below stays the readable rule; tests/test_ops_float.py compares both
# (FAST_F32 = False compiles the general one).
FAST_F32 = True
_NAN32 = np.uint32(0x7FFFFFFF)
_ABS32 = np.uint32(0x7FFFFFFF)
_INF32 = np.uint32(0x7F800000)
_TINY32 = np.float32(1e-45)          # the smallest subnormal: 0 times two under a flush-to-zero FPU mode
_TWO32 = np.float32(2.0)


def _addmul_f32(instr, ops, run):
    """The short path of add/sub/mul.rn.f32 (``run``, the general rule, whenever the FPU flushes subnormals: a
    library that set the processor's flush-to-zero or denormals-are-zero modes)."""
    ra, rb = ops.readers
    writer = ops.writer
    op = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[instr.base]

    def run_f32(warp, mask):
        if _TINY32 * _TWO32 == 0:
            return run(warp, mask)
        with np.errstate(all="ignore"):
            r = op(ra(warp).view(np.float32), rb(warp).view(np.float32)).view(np.uint32)
        writer(warp, np.where((r & _ABS32) > _INF32, _NAN32, r), mask)
    return run_f32


def _compile_addmul(instr, env):
    if getattr(instr, "contract", None) is not None:
        return _compile_contracted(instr, env, instr.contract)
    q = _mods(instr)
    ptype = q["type"]
    ops = _Operands(instr, env, ptype, "ftz" in q, 2)
    mode, sat = _mode(instr, q), "sat" in q
    base = instr.base
    f64 = ptype == "f64"
    short = FAST_F32 and ptype == "f32" and mode == "rn" and not sat and not ops.ftz
    ia, ib, negate = _f64_slots(instr, ops)     # the DADD/DMUL slots of a and b (f64 immediates)
    order = (ib, ia)                            # f64: of two NaNs, the second slot's

    def run(warp, mask):
        a, b = ops.f64(warp, ia), ops.f64(warp, ib)
        if base == "sub" and negate:        # a - b, or -b + a with the immediate a in the second slot
            a, b = (-a, b) if ia == 1 else (a, -b)
        ovf = None
        if base == "mul":
            if f64 and mode != "rn":
                qs = _exact_lanes(_mul_exact, a, b)
                r = round_exact(qs, "f64", mode).reshape(a.shape)
                with np.errstate(all="ignore"):
                    r = np.where(exact_zero(qs), a * b, r)   # exact zeros: the sign of the product
                ops.write(warp, ops.f64_nan(warp, r, order), mask)
                return
            with np.errstate(invalid="ignore", over="ignore"):
                s, e = a * b, None          # exact in float64 for 16/32-bit formats
        else:
            s, e = two_sum(a, b)
            s = zero_sum_sign(s, a, b, mode)
            if f64:
                ovf = np.isinf(s) & np.isfinite(a) & np.isfinite(b)
        r = _finish(ops, s, mode, e, sat, overflow=ovf)
        ops.write(warp, ops.f64_nan(warp, r, order), mask)
    return _addmul_f32(instr, ops, run) if short else run


def _compile_contracted(instr, env, info):
    """An add/sub that ptxas fused with the multiply producing one of its sources (frontend/contract.py):
    one rounding of a*b + c, as FFMA/DFMA/HFMA2 compute it."""
    q = _mods(instr)
    ptype = q["type"]
    prod = info.producer
    ops = _Operands(instr, env, ptype, "ftz" in q, 2)
    fac = _Operands(prod, env, ptype, "ftz" in q, 2)
    div = prod.base == "div"
    form = ".".join(("div",) + prod.mods)

    def run(warp, mask):
        if div:                         # the last FMUL of the division: rcp(b') * a'
            from ..numerics import mufu as MU
            ra, rb = (fac.readers[i](warp).view(np.uint32) for i in (0, 1))
            with np.errstate(all="ignore"):
                r_, a_ = MU.div_factors(np, form, ra, rb)
            a = MU.f32_to_f64(np, r_)
            b = MU.f32_to_f64(np, a_)
        else:
            a, b = fac.f64(warp, 0), fac.f64(warp, 1)
        c = ops.values(warp, 1 - info.index).astype(np.float64)
        if info.negate_product:
            a = -a
        if info.negate_other:
            c = -c
        with np.errstate(invalid="ignore", over="ignore"):
            p = a * b
        if ptype == "f64":
            qs = _exact_lanes(_fma_exact, a, b, c)
            r = round_exact(qs, "f64", "rn").reshape(a.shape)
            with np.errstate(all="ignore"):
                r = np.where(exact_zero(qs), zero_sum_sign(p + c, p, c, "rn"), r)
            ops.write(warp, canon_nan(r, "f64"), mask)
            return
        s, e = two_sum(p, c)
        s = zero_sum_sign(s, p, c, "rn")
        ops.write(warp, canon_nan(_finish(ops, s, "rn", e), ops.fmt), mask)
    return run


def _mul_exact(a, b):
    a, b = exact(a), exact(b)
    if isinstance(a, float) or isinstance(b, float):
        return float(a) * float(b)
    return a * b


def _fma_exact(a, b, c):
    if not all(np.isfinite([a, b, c])):
        a, b, c = float(a), float(b), float(c)
        if np.isfinite(a) and np.isfinite(b) and not np.isnan(c):
            return c                         # finite product (not rounded: it cannot overflow) + inf
        return a * b + c
    return Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))


def _compile_fma(instr, env):
    q = _mods(instr)
    ptype = q["type"]
    if instr.base == "mad" and "rnd" not in q and ptype in ("f32", "f64"):
        raise OperandError(f"{instr.opcode}: mad.{ptype} needs a rounding modifier (.rn, .rz, .rm, .rp); "
                           f"mad.rnd.{ptype} is fma.rnd.{ptype}")
    ops = _Operands(instr, env, ptype, "ftz" in q, 3)
    mode, sat, relu = _mode(instr, q), "sat" in q, "relu" in q
    if ptype == "bf16x2" and mode != "rn":
        mode = "rn"         # ptxas 13 (sm_90) emits the round-to-nearest HFMA2.BF16 for every rounding mode
    if ptype == "bf16" and mode != "rn":
        return _fma_bf16_directed(ops, mode)
    ia, ib, _ = _f64_slots(instr, ops)          # f64: an immediate factor goes to the DFMA's second slot
    order = (ib, 2, ia)                         # f64: the first NaN of the second slot, c, the first slot

    def run(warp, mask):
        a, b, c = ops.f64(warp, ia), ops.f64(warp, ib), ops.f64(warp, 2)
        with np.errstate(invalid="ignore", over="ignore"):
            p = a * b                       # exact for 16/32-bit formats; its sign is right for f64 too
        if ptype == "f64":
            qs = _exact_lanes(_fma_exact, a, b, c)
            r = round_exact(qs, "f64", mode).reshape(a.shape)
            with np.errstate(all="ignore"):
                r = np.where(exact_zero(qs), zero_sum_sign(p + c, p, c, mode), r)
            ops.write(warp, ops.f64_nan(warp, r, order), mask)
            return
        s, e = two_sum(p, c)
        s = zero_sum_sign(s, p, c, mode)
        ops.write(warp, _finish(ops, s, mode, e, sat, relu), mask)
    return run


def _fma_bf16_directed(ops, mode):
    """fma.{rz,rm,rp}{.relu}.bf16 as ptxas 13 compiles it for sm_90: the three operands are read as *f16*
    (HADD2.F32), fused in f32 with the rounding mode (FFMA.RZ/RM/RP), and the sum is rounded to *f16* to
    nearest (F2FP.F16.F32); .relu is dropped. The H100 runs exactly that, so the emulator does too."""
    def run(warp, mask):
        a, b, c = (ops.readers[i](warp).view(np.uint16).view(np.float16).astype(np.float64) for i in range(3))
        with np.errstate(invalid="ignore", over="ignore"):
            p = a * b                           # exact in float64 (and in f32: 11 + 11 bits)
        s, e = two_sum(p, c)
        s = zero_sum_sign(s, p, c, mode)
        f32 = round_to(s, "f32", mode, e)
        ops.writer(warp, round_to(f32.astype(np.float64), "f16", "rn").view(np.uint16), mask)
    return run


# ----------------------------------------------------------------------------------------------
# div / rcp / sqrt

def _div_exact(a, b):
    if not (np.isfinite(a) and np.isfinite(b)) or b == 0:
        with np.errstate(all="ignore"):
            return float(np.float64(a) / np.float64(b))
    return Fraction(float(a)) / Fraction(float(b))


def _compile_div(instr, env):
    q = _mods(instr)
    ptype = q["type"]
    if ptype not in ("f32", "f64"):
        raise UnsupportedError(f"{instr.opcode}: div is defined for .f32 and .f64")
    if "rnd" not in q:
        raise OperandError(f"{instr.opcode}: div.{ptype} needs .rn/.rz/.rm/.rp ({_APPROX_NOTE})")
    n = 1 if instr.base == "rcp" else 2
    ops = _Operands(instr, env, ptype, "ftz" in q, n)
    mode = q["rnd"]

    def run(warp, mask):
        a = ops.f64(warp, 0) if n == 2 else np.ones(32)
        b = ops.f64(warp, n - 1)
        if ptype == "f64" and mode != "rn":
            qs = _exact_lanes(_div_exact, a, b)
            r = round_exact(qs, "f64", mode)
            with np.errstate(all="ignore"):
                r = np.where(exact_zero(qs), a / b, r)    # exact zeros: the sign of the quotient
            ops.write(warp, r, mask)
            return
        with np.errstate(all="ignore"):
            r = a / b                       # correct sticky for f32 (53 >= 2*24+2)
        ops.write(warp, _finish(ops, r, mode), mask)
    return run


def _sqrt_exact(x):
    if not np.isfinite(x) or x <= 0:
        with np.errstate(invalid="ignore"):
            return float(np.sqrt(np.float64(x)))
    r = float(np.sqrt(x))
    fr, fx = Fraction(r), Fraction(float(x))
    if fr * fr == fx:
        return fr
    # an exact value strictly between r and its neighbour on the side of the true root
    other = float(np.nextafter(r, np.inf if fr * fr < fx else 0.0))
    return (fr * 3 + Fraction(other)) / 4


def _compile_sqrt(instr, env):
    q = _mods(instr)
    ptype = q["type"]
    if ptype not in ("f32", "f64"):
        raise UnsupportedError(f"{instr.opcode}: sqrt is defined for .f32 and .f64")
    if "rnd" not in q:
        raise OperandError(f"{instr.opcode}: sqrt.{ptype} needs .rn/.rz/.rm/.rp ({_APPROX_NOTE})")
    ops = _Operands(instr, env, ptype, "ftz" in q, 1)
    mode = q["rnd"]

    def run(warp, mask):
        x = ops.f64(warp, 0)
        if ptype == "f64" and mode != "rn":
            ops.write(warp, round_exact(_exact_lanes(_sqrt_exact, x), "f64", mode), mask)
            return
        with np.errstate(invalid="ignore"):
            r = np.sqrt(x)
        ops.write(warp, _finish(ops, r, mode), mask)
    return run


# ----------------------------------------------------------------------------------------------
# min / max / neg / abs / copysign / testp

def _compile_minmax(instr, env):
    q = _mods(instr, {"nan": {"NaN"}, "xorsign": {"xorsign"}, "abs": {"abs"}})
    if ("xorsign" in q) != ("abs" in q):
        raise UnsupportedError(f"{instr.opcode}: .xorsign and .abs go together (min/max.xorsign.abs)")
    ptype = q["type"]
    ops = _Operands(instr, env, ptype, "ftz" in q, 2)
    is_min = instr.base == "min"
    propagate = "nan" in q
    xorsign = "xorsign" in q
    nbits = np.dtype(ops.ut).itemsize * 8
    sign = ops.ut(1 << (nbits - 1))
    ia, ib, _ = _f64_slots(instr, ops)          # f64: an immediate goes to the DSETP's second slot

    def run(warp, mask):
        a, b = ops.values(warp, ia), ops.values(warp, ib)
        if xorsign:     # min/max of |a| and |b|; the result's sign is sign(a) XOR sign(b)
            ua, ub = a.view(ops.ut), b.view(ops.ut)
            sgn = (ua ^ ub) & sign
            a, b = (ua & ~sign).view(ops.dt), (ub & ~sign).view(ops.dt)
            r = pick(a, b)
            out = ((r.view(ops.ut) & ~sign) | sgn).view(ops.dt)
            ops.write(warp, np.where(np.isnan(r.astype(np.float64)), r, out), mask)   # a NaN keeps sign 0
            return
        r = pick(a, b)
        ops.write(warp, ops.f64_nan(warp, r, (ib, ia)), mask)    # f64: two NaNs give the second slot, quieted

    def pick(a, b):
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        na, nb = np.isnan(fa), np.isnan(fb)
        sa = np.signbit(fa)                 # -0.0 orders below +0.0
        if is_min:
            pick_a = (fa < fb) | ((fa == fb) & sa)
        else:
            pick_a = (fa > fb) | ((fa == fb) & ~sa)
        r = np.where(pick_a, a, b)
        r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
        nanmask = (na & nb) | ((na | nb) if propagate else False)
        r = np.where(nanmask, np.full(r.shape, FORMATS[ops.fmt][2], ops.ut).view(ops.dt), r)
        return flush(r, ops.fmt) if ops.ftz else r
    return run


def _compile_negabs(instr, env):
    q = _mods(instr)
    ptype = q["type"]
    ops = _Operands(instr, env, ptype, "ftz" in q, 1)
    nbits = np.dtype(ops.ut).itemsize * 8
    sign = ops.ut(1 << (nbits - 1))
    neg = instr.base == "neg"

    def run(warp, mask):
        v = ops.values(warp, 0).view(ops.ut)
        r = ((v ^ sign) if neg else (v & ~sign)).view(ops.dt)
        if ptype == "f64":                  # H100: a NaN comes back quieted, its sign untouched
            ops.write(warp, ops.f64_nan(warp, r, (0,)), mask)
            return
        # H100: neg/abs of a NaN give the canonical NaN (.f32 0x7FFFFFFF, .f16/.bf16 0x7FFF in each half)
        ops.write(warp, canon_nan(r, ops.fmt), mask)
    return run


@executor("copysign")
def compile_copysign(instr, env):
    q = _mods(instr)
    ptype = q["type"]
    if ptype not in ("f32", "f64"):
        raise UnsupportedError(f"{instr.opcode}: copysign is defined for .f32 and .f64")
    ops = _Operands(instr, env, ptype, False, 2)
    nbits = np.dtype(ops.ut).itemsize * 8
    sign = ops.ut(1 << (nbits - 1))

    def run(warp, mask):
        a, b = ops.values(warp, 0).view(ops.ut), ops.values(warp, 1).view(ops.ut)
        ops.write(warp, ((a & sign) | (b & ~sign)).view(ops.dt), mask)
    return run


_TESTP = {
    "finite": np.isfinite, "infinite": np.isinf, "number": lambda v: ~np.isnan(v), "notanumber": np.isnan,
    "normal": None, "subnormal": None,
}


@executor("testp")
def compile_testp(instr, env):
    q = split_mods(instr, {"op": set(_TESTP), "type": {"f32", "f64"}})
    if "op" not in q or "type" not in q or len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: testp.op.type p, a with op one of "
                           f"{', '.join('.' + k for k in _TESTP)} and .f32/.f64")
    ptype, op = q["type"], q["op"]
    read = src(env, instr.operands[1], ptype, instr)
    write = dst(env, instr.operands[0], "pred", instr)
    tiny = FORMATS[ptype][3]

    def run(warp, mask):
        v = read(warp).astype(np.float64)
        if op == "normal":          # H100: zeros count as normal (finite and not subnormal)
            r = np.isfinite(v) & ((np.abs(v) >= tiny) | (v == 0))
        elif op == "subnormal":
            r = (np.abs(v) < tiny) & (v != 0)
        else:
            r = _TESTP[op](v)
        write(warp, np.asarray(r, np.bool_), mask)
    return run


@executor("fma")
def compile_fma(instr, env):
    return _compile_fma(instr, env)


@executor("div")
def compile_div(instr, env):
    if is_mufu(instr):
        return compile_mufu(instr, env)
    if any(m.startswith(("f", "bf")) for m in instr.mods):
        return _compile_div(instr, env)
    from .intx import compile_intdiv
    return compile_intdiv(instr, env)


@executor("rcp")
def compile_rcp(instr, env):
    if is_mufu(instr):
        return compile_mufu(instr, env)
    return _compile_div(instr, env)


@executor("sqrt")
def compile_sqrt(instr, env):
    if is_mufu(instr):
        return compile_mufu(instr, env)
    return _compile_sqrt(instr, env)


_FLOAT_FACTORIES = {
    "add": _compile_addmul, "sub": _compile_addmul, "mul": _compile_addmul, "mad": _compile_fma,
    "fma": _compile_fma, "min": _compile_minmax, "max": _compile_minmax, "neg": _compile_negabs,
    "abs": _compile_negabs,
}
