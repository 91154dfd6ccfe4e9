"""Integer arithmetic and logic: add, sub, mul, mad, shl, shr, and, or, xor, not, neg, min, max.

Semantics per PTX ISA "Integer Arithmetic Instructions": results wrap modulo 2^width; .hi/.wide
return the upper half / the full double-width product; shifts clamp amounts above the width.
"""
from __future__ import annotations

import numpy as np

from isa.types import TYPES
from ..errors import OperandError, UnsupportedError
from .registry import executor
from .carry import compile_carry
from .common import NP, SINT, UINT, dst, split_mods, src, width

INT_TYPES = {"u16", "u32", "u64", "s16", "s32", "s64"}
BIT_TYPES = {"b16", "b32", "b64", "pred"}


def _wide(ptype):
    return TYPES[ptype][1] + str(2 * width(ptype))


def _as_int(v):
    """Exact Python-int-free arithmetic domain: int64 for <= 32-bit, object for 64-bit products."""
    return v.astype(np.int64)


def _mul_full(a, b, ptype):
    """Exact double-width product of two lane vectors (object ints for 64-bit operands)."""
    if width(ptype) <= 32:
        return a.astype(np.int64) * b.astype(np.int64)
    return np.array([int(x) * int(y) for x, y in zip(a, b)], dtype=object)


def _to_type(v, ptype):
    """Wrap exact integer results into ``ptype`` (two's complement)."""
    w = width(ptype)
    if v.dtype == object:
        m = (1 << w) - 1
        return np.array([int(x) & m for x in v], dtype=np.uint64).astype(UINT[w]).view(NP[ptype])
    return v.astype(np.int64).astype(UINT[w]).view(NP[ptype]) if w < 64 else v.view(np.uint64).view(NP[ptype])


def _hi(v, ptype):
    w = width(ptype)
    if v.dtype == object:
        return _to_type(np.array([int(x) >> w for x in v], dtype=object), ptype)
    return _to_type(v >> w, ptype)


def _binary(instr, env, types, fn):
    q = split_mods(instr, {"type": types, "mode": {"lo", "hi", "wide", "sat", "cc", "relu"}})
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type; supported: {', '.join('.' + t for t in sorted(types))}")
    if len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: takes 3 operands, found {len(instr.operands)}")
    ptype = q["type"]
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    d = dst(env, instr.operands[0], ptype, instr)
    return lambda warp, mask: d(warp, fn(a(warp), b(warp), ptype), mask)


def _sat_s32(op):
    """add.sat.s32 / sub.sat.s32: the exact result clamped to [-2^31, 2^31 - 1]."""
    def f(a, b, ptype):
        r = op(a.astype(np.int64), b.astype(np.int64))
        return np.clip(r, -(1 << 31), (1 << 31) - 1).astype(np.int32)
    return f


def _halves(op):
    """.u16x2 / .s16x2: the operation on each 16-bit half."""
    def f(a, b, ptype):
        dt = np.int16 if ptype == "s16x2" else np.uint16
        x, y = a.view(np.uint32).view(dt).reshape(32, 2), b.view(np.uint32).view(dt).reshape(32, 2)
        with np.errstate(over="ignore"):
            r = op(x, y).astype(dt)
        return np.ascontiguousarray(r).view(np.uint32).reshape(32)
    return f


X2_TYPES = {"u16x2", "s16x2"}


def _int_binary(instr, env, op):
    """add/sub (wrapping; .sat for .s32; .cc sets the carry) and add on 16-bit pairs."""
    t = next((m for m in instr.mods if m in INT_TYPES | X2_TYPES), None)
    if t in X2_TYPES:
        if instr.base != "add" or len(instr.mods) != 1:
            raise UnsupportedError(f"{instr.opcode}: the .u16x2/.s16x2 forms are add, min, max (and min/max.relu.s16x2)")
        return _binary(instr, env, X2_TYPES, _halves(op))
    if "cc" in instr.mods:
        return compile_carry(instr, env)
    if "sat" in instr.mods:
        if t != "s32":
            raise UnsupportedError(f"{instr.opcode}: .sat is defined for .s32 only")
        return _binary(instr, env, {"s32"}, _sat_s32(op))
    return _binary(instr, env, INT_TYPES, _wrap(op))


def _wrap(op):
    def f(a, b, ptype):
        with np.errstate(over="ignore"):
            return op(a.view(UINT[width(ptype)]), b.view(UINT[width(ptype)])).view(NP[ptype])
    return f


@executor("add")
def compile_add(instr, env):
    if any(m in instr.mods for m in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")):
        from .falu import compile_float
        return compile_float(instr, env)
    return _int_binary(instr, env, np.add)


@executor("sub")
def compile_sub(instr, env):
    if any(m in instr.mods for m in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")):
        from .falu import compile_float
        return compile_float(instr, env)
    return _int_binary(instr, env, np.subtract)


def _shift_amount(instr, env, op):
    return src(env, op, "u32", instr)


@executor("shl", "shr")
def compile_shift(instr, env):
    q = split_mods(instr, {"type": INT_TYPES | {"b16", "b32", "b64"}})
    if "type" not in q or len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: needs a type and 3 operands")
    ptype = q["type"]
    w = width(ptype)
    a = src(env, instr.operands[1], ptype, instr)
    s = _shift_amount(instr, env, instr.operands[2])
    d = dst(env, instr.operands[0], ptype, instr)
    arith = instr.base == "shr" and TYPES[ptype][1] == "s"
    left = instr.base == "shl"

    def run(warp, mask):
        v = a(warp)
        amt = np.minimum(s(warp), np.uint32(w)).astype(np.uint64)
        if arith:
            r = v.astype(np.int64) >> np.minimum(amt, np.uint64(63)).astype(np.int64)
            d(warp, r.astype(SINT[w]), mask)
            return
        u = v.view(UINT[w]).astype(np.uint64)
        big = amt >= w
        r = (u << np.minimum(amt, np.uint64(63))) if left else (u >> np.minimum(amt, np.uint64(63)))
        r = np.where(big, np.uint64(0), r)
        d(warp, r.astype(UINT[w]).view(NP[ptype]), mask)
    return run


def _logic(op):
    def f(a, b, ptype):
        if ptype == "pred":
            return op(a, b)
        return op(a.view(UINT[width(ptype)]), b.view(UINT[width(ptype)]))
    return f


@executor("and")
def compile_and(instr, env):
    return _binary(instr, env, BIT_TYPES, _logic(np.bitwise_and))


@executor("or")
def compile_or(instr, env):
    return _binary(instr, env, BIT_TYPES, _logic(np.bitwise_or))


@executor("xor")
def compile_xor(instr, env):
    return _binary(instr, env, BIT_TYPES, _logic(np.bitwise_xor))


@executor("not", "cnot", "neg", "abs")
def compile_unary(instr, env):
    if instr.base in ("neg", "abs") and any(m.startswith(("f", "bf")) for m in instr.mods):
        from .falu import compile_float
        return compile_float(instr, env)
    types = BIT_TYPES if instr.base in ("not", "cnot") else {"s16", "s32", "s64"}
    q = split_mods(instr, {"type": types})
    if "type" not in q or len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: needs a type and 2 operands")
    ptype = q["type"]
    a = src(env, instr.operands[1], ptype, instr)
    d = dst(env, instr.operands[0], ptype, instr)
    base = instr.base

    def run(warp, mask):
        v = a(warp)
        with np.errstate(over="ignore"):
            if base == "not":
                r = ~v
            elif base == "cnot":
                r = (v == 0).astype(v.dtype)
            elif base == "neg":
                r = (np.zeros_like(v) - v)
            else:
                r = np.where(v < 0, np.zeros_like(v) - v, v)
        d(warp, r, mask)
    return run


@executor("min", "max")
def compile_minmax(instr, env):
    if any(m.startswith(("f", "bf")) for m in instr.mods):
        from .falu import compile_float
        return compile_float(instr, env)
    fn = np.minimum if instr.base == "min" else np.maximum
    relu = "relu" in instr.mods
    t = next((m for m in instr.mods if m in INT_TYPES | X2_TYPES), None)
    if relu and t not in ("s32", "s16x2"):
        raise UnsupportedError(f"{instr.opcode}: .relu is defined for .s32 and .s16x2")
    if relu:
        op = (lambda a, b: np.maximum(fn(a, b), 0))      # noqa: E731
    else:
        op = fn
    if t in X2_TYPES:
        return _binary(instr, env, X2_TYPES, _halves(op))
    return _binary(instr, env, INT_TYPES, lambda a, b, t: op(a, b).astype(a.dtype))


@executor("mul")
def compile_mul(instr, env):
    if any(m.startswith(("f", "bf")) for m in instr.mods):
        from .falu import compile_float
        return compile_float(instr, env)
    q = split_mods(instr, {"type": INT_TYPES, "mode": {"lo", "hi", "wide"}})
    if "type" not in q or len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: needs a type (.u32, .s32, ...) and 3 operands")
    ptype, mode = q["type"], q.get("mode", "lo")
    if mode == "wide" and width(ptype) == 64:
        raise UnsupportedError(f"{instr.opcode}: .wide is defined for 16- and 32-bit types only")
    dtype = _wide(ptype) if mode == "wide" else ptype
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    d = dst(env, instr.operands[0], dtype, instr)

    def run(warp, mask):
        p = _mul_full(a(warp), b(warp), ptype)
        d(warp, _hi(p, ptype) if mode == "hi" else _to_type(p, dtype), mask)
    return run


@executor("mad")
def compile_mad(instr, env):
    if any(m.startswith(("f", "bf")) for m in instr.mods):
        from .falu import compile_float
        return compile_float(instr, env)
    if "cc" in instr.mods:
        return compile_carry(instr, env)
    q = split_mods(instr, {"type": INT_TYPES, "mode": {"lo", "hi", "wide"}, "sat": {"sat"}})
    if "type" not in q or len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: needs a type (.u32, .s32, ...) and 4 operands")
    ptype, mode = q["type"], q.get("mode", "lo")
    sat = "sat" in q
    if sat and (ptype != "s32" or mode != "hi"):
        raise UnsupportedError(f"{instr.opcode}: .sat is defined for mad.hi.sat.s32 only")
    dtype = _wide(ptype) if mode == "wide" else ptype
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    c = src(env, instr.operands[3], dtype, instr)
    d = dst(env, instr.operands[0], dtype, instr)

    def run(warp, mask):
        p = _mul_full(a(warp), b(warp), ptype)
        cv = c(warp)
        if mode == "hi":
            r = _hi(p, ptype)
            if sat:                     # the high half plus c, clamped to the s32 range
                r = np.clip(r.astype(np.int64) + cv.astype(np.int64), -(1 << 31), (1 << 31) - 1).astype(np.int32)
            else:
                with np.errstate(over="ignore"):
                    r = (r.view(UINT[width(ptype)]) + cv.view(UINT[width(ptype)])).view(NP[ptype])
        else:
            if p.dtype == object or width(dtype) == 64:
                s = np.array([int(x) + int(y) for x, y in zip(p, cv)], dtype=object)
            else:
                s = p + cv.astype(np.int64)
            r = _to_type(s, dtype)
        d(warp, r, mask)
    return run
