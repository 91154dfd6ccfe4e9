"""Integer instructions beyond add/mul: div, rem, popc, clz, brev, bfind, bfe, bfi, prmt, shf, sad, mul24,
mad24, and the comparisons setp, selp, set, slct (PTX ISA "Integer Arithmetic", "Logic and Shift",
"Comparison and Selection").
"""
from __future__ import annotations

import numpy as np

from isa.types import TYPES
from ..errors import OperandError, UnsupportedError
from ..frontend.ptx import Imm, Pair
from .registry import executor
from .common import NP, UINT, dst, reg_name, split_mods, src, width
from ..numerics.fround import flush

INT_TYPES = {"u16", "u32", "u64", "s16", "s32", "s64"}


def _need(instr, n):
    if len(instr.operands) != n:
        raise OperandError(f"{instr.opcode}: takes {n} operands, found {len(instr.operands)}")


def _typed(instr, types, n, extra=None):
    groups = {"type": types}
    if extra:
        groups.update(extra)
    q = split_mods(instr, groups)
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type; supported: "
                           f"{', '.join('.' + t for t in sorted(types))}")
    _need(instr, n)
    return q


def _as_i(v):
    """Lane values as Python-exact integers in an object array (64-bit safe)."""
    return np.array([int(x) for x in v], dtype=object)


def _wrap(vals, ptype):
    w = width(ptype)
    m = (1 << w) - 1
    return np.array([int(x) & m for x in vals], dtype=np.uint64).astype(UINT[w]).view(NP[ptype])


# ----------------------------------------------------------------------------------------------
# div / rem. Division by zero gives all ones for div and rem alike (measured on the H100: the standalone
# instruction, every integer type); ptxas may fold rem by zero differently where the divisor is known.

def compile_intdiv(instr, env):
    q = _typed(instr, INT_TYPES, 3)
    ptype = q["type"]
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    d = dst(env, instr.operands[0], ptype, instr)
    is_rem = instr.base == "rem"
    ones = (1 << width(ptype)) - 1

    def run(warp, mask):
        x, y = a(warp), b(warp)
        zero = y == 0
        xi, yi = _as_i(x), _as_i(np.where(zero, 1, y))
        q_ = np.array([abs(p) // abs(r) * (1 if (p >= 0) == (r >= 0) else -1) for p, r in zip(xi, yi)],
                      dtype=object)       # truncating division, as in C
        r = xi - q_ * yi if is_rem else q_
        d(warp, _wrap(np.where(zero, ones, r), ptype), mask)
    return run


@executor("rem")
def compile_rem(instr, env):
    return compile_intdiv(instr, env)


# ----------------------------------------------------------------------------------------------
# bit counting and reversal

@executor("popc", "clz", "brev", "bfind")
def compile_bits(instr, env):
    types = {"b32", "b64"} if instr.base != "bfind" else {"u32", "u64", "s32", "s64"}
    q = _typed(instr, types, 2, {"shiftamt": {"shiftamt"}} if instr.base == "bfind" else None)
    ptype = q["type"]
    w = width(ptype)
    a = src(env, instr.operands[1], ptype, instr)
    base = instr.base
    d = dst(env, instr.operands[0], ptype if base == "brev" else "u32", instr)
    shiftamt = "shiftamt" in q
    signed = TYPES[ptype][1] == "s"

    def run(warp, mask):
        v = [int(x) for x in a(warp).view(UINT[w])]
        if base == "popc":
            r = [bin(x).count("1") for x in v]
        elif base == "clz":
            r = [w - x.bit_length() for x in v]
        elif base == "brev":
            r = [int(f"{x:0{w}b}"[::-1], 2) for x in v]
            d(warp, np.array(r, np.uint64).astype(UINT[w]), mask)
            return
        else:
            r = []
            for x in v:
                if signed and x >> (w - 1):
                    x = ~x & ((1 << w) - 1)      # most significant non-sign bit
                pos = x.bit_length() - 1
                r.append(0xFFFFFFFF if pos < 0 else (w - 1 - pos if shiftamt else pos))
        d(warp, np.array(r, np.uint64).astype(np.uint32), mask)
    return run


def _field(v, w):
    """A bit-field position or length: the 32-bit forms use its low 8 bits (the hardware BFE/BFI fields);
    the 64-bit forms, which ptxas expands into shifts, clamp it to 255 (measured on the H100)."""
    v = int(v)
    return v & 0xFF if w == 32 else min(v, 0xFF)


def bfe_folds_to_ones(instr, ptype):
    """ptxas 13.0 folds ``bfe.s32 d, a, pos, len`` with a register ``a`` and immediate ``pos`` >= 32 and
    ``len`` >= 1 into ``MOV d, 0xffffffff``, whatever ``a`` holds (the PTX ISA gives the replicated sign
    bit of a, and so does the form with a register position or length). Measured on the H100."""
    _, a, pos, ln = instr.operands
    if ptype != "s32" or isinstance(a, Imm) or not (isinstance(pos, Imm) and isinstance(ln, Imm)):
        return False
    if pos.kind != "int" or ln.kind != "int":
        return False
    return _field(pos.value & 0xFFFFFFFF, 32) >= 32 and _field(ln.value & 0xFFFFFFFF, 32) >= 1


@executor("bfe")
def compile_bfe(instr, env):
    q = _typed(instr, {"u32", "u64", "s32", "s64"}, 4)
    ptype = q["type"]
    w = width(ptype)
    signed = TYPES[ptype][1] == "s"
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], "u32", instr)
    c = src(env, instr.operands[3], "u32", instr)
    d = dst(env, instr.operands[0], ptype, instr)
    if bfe_folds_to_ones(instr, ptype):
        ones = np.full(32, -1, np.int32)
        return lambda warp, mask: d(warp, ones, mask)

    def run(warp, mask):
        out = []
        for x, pos, ln in zip(a(warp).view(UINT[w]), b(warp), c(warp)):
            x, pos, ln = int(x), _field(pos, w), _field(ln, w)
            msb = min(pos + ln - 1, w - 1)
            sbit = (x >> msb) & 1 if (signed and ln) else 0
            r = 0
            for i in range(w):
                bit = (x >> (pos + i)) & 1 if (i < ln and pos + i <= w - 1) else sbit
                r |= bit << i
            out.append(r)
        d(warp, np.array(out, np.uint64).astype(UINT[w]), mask)
    return run


@executor("bfi")
def compile_bfi(instr, env):
    q = _typed(instr, {"b32", "b64"}, 5)
    ptype = q["type"]
    w = width(ptype)
    f = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    c = src(env, instr.operands[3], "u32", instr)
    l_ = src(env, instr.operands[4], "u32", instr)
    d = dst(env, instr.operands[0], ptype, instr)

    def run(warp, mask):
        out = []
        for x, base, pos, ln in zip(f(warp), b(warp), c(warp), l_(warp)):
            x, r, pos, ln = int(x), int(base), _field(pos, w), _field(ln, w)
            for i in range(ln):
                if pos + i >= w:
                    break
                r = (r & ~(1 << (pos + i))) | (((x >> i) & 1) << (pos + i))
            out.append(r)
        d(warp, np.array(out, np.uint64).astype(UINT[w]), mask)
    return run


@executor("prmt")
def compile_prmt(instr, env):
    q = _typed(instr, {"b32"}, 4, {"mode": {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}})
    mode = q.get("mode")
    a = src(env, instr.operands[1], "b32", instr)
    b = src(env, instr.operands[2], "b32", instr)
    c = src(env, instr.operands[3], "b32", instr)
    d = dst(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        av, bv, cv = a(warp), b(warp), c(warp)
        both = (av.astype(np.uint64) | (bv.astype(np.uint64) << np.uint64(32)))   # bytes b3..b0 a3..a0
        src_bytes = both.view(np.uint8).reshape(32, 8) if both.dtype.byteorder in "=<|" else None
        out = np.zeros(32, np.uint32)
        for k in range(4):
            if mode is None:
                sel = (cv >> np.uint32(4 * k)) & np.uint32(0xF)
                idx = (sel & np.uint32(7)).astype(np.int64)
                byte = src_bytes[np.arange(32), idx].astype(np.uint32)
                rep = (sel & np.uint32(8)) != 0
                byte = np.where(rep, np.where(byte & np.uint32(0x80), np.uint32(0xFF), np.uint32(0)), byte)
            else:
                idx = _prmt_mode_index(mode, cv & np.uint32(3), k)
                byte = src_bytes[np.arange(32), idx].astype(np.uint32)
            out |= byte << np.uint32(8 * k)
        d(warp, out, mask)
    return run


_PRMT_MODES = {   # selector (c & 3) -> source byte per result byte 0..3 (PTX ISA, prmt)
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def _prmt_mode_index(mode, sel, k):
    table = np.array(_PRMT_MODES[mode], np.int64)
    return table[sel.astype(np.int64), k]


@executor("shf")
def compile_shf(instr, env):
    q = _typed(instr, {"b32"}, 4, {"dir": {"l", "r"}, "mode": {"wrap", "clamp"}})
    if "dir" not in q or "mode" not in q:
        raise OperandError(f"{instr.opcode}: shf needs .l/.r and .wrap/.clamp")
    left, clamp = q["dir"] == "l", q["mode"] == "clamp"
    a = src(env, instr.operands[1], "b32", instr)
    b = src(env, instr.operands[2], "b32", instr)
    c = src(env, instr.operands[3], "u32", instr)
    d = dst(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        n = c(warp).astype(np.uint64)
        n = np.minimum(n, np.uint64(32)) if clamp else n & np.uint64(31)
        both = a(warp).astype(np.uint64) | (b(warp).astype(np.uint64) << np.uint64(32))
        if left:
            r = ((both << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
        else:
            r = (both >> n) & np.uint64(0xFFFFFFFF)
        d(warp, r.astype(np.uint32), mask)
    return run


@executor("sad")
def compile_sad(instr, env):
    q = _typed(instr, INT_TYPES, 4)
    ptype = q["type"]
    a, b, c = (src(env, op, ptype, instr) for op in instr.operands[1:])
    d = dst(env, instr.operands[0], ptype, instr)

    def run(warp, mask):
        x, y, z = _as_i(a(warp)), _as_i(b(warp)), _as_i(c(warp))
        d(warp, _wrap([int(zz) + abs(int(xx) - int(yy)) for xx, yy, zz in zip(x, y, z)], ptype), mask)
    return run


@executor("mul24", "mad24")
def compile_mul24(instr, env):
    n = 3 if instr.base == "mul24" else 4
    q = _typed(instr, {"u32", "s32"}, n, {"half": {"lo", "hi"}, "sat": {"sat"}})
    ptype, hi = q["type"], q.get("half", "lo") == "hi"
    sat = "sat" in q
    if sat and (n != 4 or ptype != "s32" or not hi):
        raise UnsupportedError(f"{instr.opcode}: .sat is defined for mad24.hi.sat.s32 only")
    signed = ptype == "s32"
    rd = [src(env, op, ptype, instr) for op in instr.operands[1:]]
    d = dst(env, instr.operands[0], ptype, instr)

    def r24(v):
        v = v.view(np.uint32).astype(np.int64) & 0xFFFFFF
        return np.where(v & 0x800000, v - (1 << 24), v) if signed else v

    def run(warp, mask):
        p = r24(rd[0](warp)) * r24(rd[1](warp))         # 48-bit product
        r = (p >> 16) if hi else p                      # .hi: bits 47..16
        if n == 4:
            r = r + rd[2](warp).astype(np.int64)
        if sat:
            r = np.clip(r, -(1 << 31), (1 << 31) - 1)
        d(warp, (r & 0xFFFFFFFF).astype(np.uint32).view(NP[ptype]), mask)
    return run


# ----------------------------------------------------------------------------------------------
# fns, bmsk, szext

def _u32_operands(instr, env, n, types=None, imm=0):
    _need(instr, n + 1 + imm)
    types = types or ["b32"] * n
    return [src(env, op, t, instr) for op, t in zip(instr.operands[1:n + 1], types)], \
        dst(env, instr.operands[0], "b32", instr)


@executor("fns")
def compile_fns(instr, env):
    """fns.b32 d, mask, base, offset: the position of the offset-th set bit of mask counted from bit base,
    upward for offset > 0, downward for offset < 0 (offset 0: base itself if set); 0xFFFFFFFF if there is none.
    The edge cases (base >= 32, offset = -2^31) follow the sequence ptxas emits for sm_90, step by step."""
    split_mods(instr, {"type": {"b32"}})
    (m_, b_, o_), d = _u32_operands(instr, env, 3, ["b32", "u32", "s32"])

    def run(warp, mask):
        r = [_fns(int(m), int(b), int(o)) for m, b, o in zip(m_(warp), b_(warp), o_(warp))]
        d(warp, np.array(r, np.uint32), mask)
    return run


def _shl32(x, n):
    """Funnel shift left without wrap: amounts of 32 or more give 0."""
    return (x << n) & 0xFFFFFFFF if n < 32 else 0


def _fns(mask, base, off):
    down = False
    if off == 0:
        mask, off = mask & _shl32(1, base), 1
    elif off < 0:
        mask, down = int(f"{mask:032b}"[::-1], 2), True
        off = -off if off != -(1 << 31) else off        # the negation wraps
        base = (31 - base) & 0xFFFFFFFF
    x = mask & _shl32(0xFFFFFFFF, base)
    total = bin(x).count("1")
    left, pos = off & 0xFFFFFFFF, 0
    for step in (16, 8, 4, 2, 1):                       # binary search, unsigned comparisons
        c = bin(x & ((1 << step) - 1)).count("1")
        if c < left:
            left, x, pos = left - c, x >> step, pos + step
    if down:
        pos = 31 - pos
    return 0xFFFFFFFF if total < off else pos


def _amount(v, mode):
    """A bit position or count of bmsk/szext: .clamp limits it to 32, .wrap takes it modulo 32."""
    return np.minimum(v, 32).astype(np.int64) if mode == "clamp" else (v & np.uint32(31)).astype(np.int64)


@executor("bmsk")
def compile_bmsk(instr, env):
    """bmsk.{clamp,wrap}.b32 d, a, b: b one-bits starting at bit a, truncated to 32 bits."""
    q = split_mods(instr, {"mode": {"clamp", "wrap"}, "type": {"b32"}})
    if "mode" not in q:
        raise OperandError(f"{instr.opcode}: needs .clamp or .wrap")
    (a, b), d = _u32_operands(instr, env, 2, ["u32", "u32"])
    mode = q["mode"]

    def run(warp, mask):
        pos, n = _amount(a(warp), mode), _amount(b(warp), mode)
        r = (((np.int64(1) << n) - 1) << pos) & 0xFFFFFFFF
        d(warp, r.astype(np.uint32), mask)
    return run


@executor("szext")
def compile_szext(instr, env):
    """szext.{clamp,wrap}.{u32,s32} d, a, b: the low b bits of a, zero- (.u32) or sign-extended (.s32)."""
    q = split_mods(instr, {"mode": {"clamp", "wrap"}, "type": {"u32", "s32"}})
    if "mode" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: szext.{{clamp,wrap}}.{{u32,s32}}")
    (a, b), d = _u32_operands(instr, env, 2, ["b32", "u32"])
    mode, signed = q["mode"], q["type"] == "s32"

    def run(warp, mask):
        x, n = a(warp).view(np.uint32).astype(np.int64), _amount(b(warp), mode)
        low = x & ((np.int64(1) << n) - 1)
        if signed:
            sign = np.where(n > 0, (x >> np.maximum(n - 1, 0)) & 1, 0)
            low = np.where(sign == 1, low - (np.int64(1) << n), low)
        d(warp, (low & 0xFFFFFFFF).astype(np.uint32), mask)
    return run


# ----------------------------------------------------------------------------------------------
# comparisons

INT_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"}
FLOAT_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
BOOL_OPS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
PAIRS = {"f16x2": "f16", "bf16x2": "bf16"}
CMP_TYPES = INT_TYPES | {"b16", "b32", "b64", "f32", "f64", "f16", "bf16", "u8", "s8", "b8"} | set(PAIRS)
# set.dtype: the value written for "true" (false is 0); x2 types per 16-bit half
SET_TRUE = {"u32": 0xFFFFFFFF, "s32": 0xFFFFFFFF, "f32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80,
            "f16x2": 0x3C00, "bf16x2": 0x3F80, "u16x2": 0xFFFF, "s16x2": 0xFFFF}


def _compare(op, a, b, kind):
    if kind == "f":
        a, b = a.astype(np.float64), b.astype(np.float64)
        unordered = np.isnan(a) | np.isnan(b)
        if op == "num":
            return ~unordered
        if op == "nan":
            return unordered
        base = op[:-1] if op.endswith("u") else op
        with np.errstate(invalid="ignore"):
            r = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[base]
        if op.endswith("u"):
            return r | unordered
        return r & ~unordered
    m = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(op, op)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[m]


def _cmp_mods(instr, type_group):
    q = split_mods(instr, {"cmp": INT_CMP | FLOAT_CMP, "bool": set(BOOL_OPS), "ftz": {"ftz"}, **type_group})
    if "cmp" not in q:
        raise OperandError(f"{instr.opcode}: missing the comparison; supported: "
                           f"{', '.join('.' + c for c in sorted(INT_CMP | FLOAT_CMP))}")
    return q


def _comparison(instr, env, stype, cmp, ftz):
    """Compile ``warp -> bool[32]`` (bool[32, 2] for the x2 types: column 0 is the low half) of a CmpOp b."""
    kind = TYPES[stype][1]
    if kind == "f" and cmp not in FLOAT_CMP or kind != "f" and cmp not in INT_CMP:
        raise UnsupportedError(f"{instr.opcode}: comparison .{cmp} is not defined for .{stype}")
    if kind == "b" and cmp not in ("eq", "ne"):
        raise UnsupportedError(f"{instr.opcode}: .b types compare with .eq/.ne only")
    elem = PAIRS.get(stype)
    ra = src(env, instr.operands[1], "b32" if elem else stype, instr)
    rb = src(env, instr.operands[2], "b32" if elem else stype, instr)
    unsigned = cmp in ("lo", "ls", "hi", "hs")
    w = width(stype)

    def values(r, warp):
        v = r(warp)
        if elem:
            v = v.view(np.uint16).reshape(32, 2).view(NP[elem])
        elif unsigned:
            v = v.view(UINT[w])
        if ftz and kind == "f":
            v = flush(v, elem or stype)
        return v

    def run(warp):
        return _compare(cmp, values(ra, warp), values(rb, warp), "f" if kind == "f" else "i")
    return run


@executor("setp")
def compile_setp(instr, env):
    q = _cmp_mods(instr, {"type": CMP_TYPES})
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type")
    if len(instr.operands) not in (3, 4):
        raise OperandError(f"{instr.opcode}: takes p[|q], a, b[, {{!}}c], found {len(instr.operands)} operands")
    if ("bool" in q) != (len(instr.operands) == 4):
        raise OperandError(f"{instr.opcode}: a fourth operand goes with a boolean operation (.and/.or/.xor)")
    stype, cmp = q["type"], q["cmp"]
    pair = stype in PAIRS
    cmpf = _comparison(instr, env, stype, cmp, "ftz" in q)
    c = src(env, instr.operands[3], "pred", instr) if "bool" in q else None
    bop = BOOL_OPS.get(q.get("bool"))
    target = instr.operands[0]
    dests = target.items if isinstance(target, Pair) else (target,)
    if pair and len(dests) != 2:
        raise OperandError(f"{instr.opcode}: .{stype} writes two predicates p|q (one per half)")
    writers = [dst(env, t, "pred", instr) for t in dests]
    for t in dests:
        if env.reg_width(reg_name(env, t, instr)) != 1 and reg_name(env, t, instr) != "_":
            raise OperandError(f"{instr.opcode}: destination {t} must be a predicate")

    def run(warp, mask):
        r = cmpf(warp)
        # x2: p from the low half, q from the high half; otherwise q is the complement of the comparison
        rp, rq = (r[:, 0], r[:, 1]) if pair else (r, ~r)
        if bop:
            cv = c(warp).copy()                 # every source is read before a destination is written
            rp, rq = bop(rp, cv), bop(rq, cv)
        writers[0](warp, np.asarray(rp, np.bool_), mask)
        if len(writers) > 1:
            writers[1](warp, np.asarray(rq, np.bool_), mask)
    return run


@executor("set")
def compile_set(instr, env):
    types = [m for m in instr.mods if m in CMP_TYPES or m in SET_TRUE]
    if len(types) != 2 or types[0] not in SET_TRUE:
        raise OperandError(f"{instr.opcode}: set.CmpOp{{.BoolOp}}{{.ftz}}.dtype.stype with dtype one of "
                           f"{', '.join('.' + t for t in SET_TRUE)}")
    dtype, stype = types
    q = _cmp_mods(type(instr)(".".join(["set"] + [m for m in instr.mods if m not in types]), ()), {})
    n = 4 if "bool" in q else 3
    if len(instr.operands) != n:
        raise OperandError(f"{instr.opcode}: takes {n} operands, found {len(instr.operands)}")
    cmpf = _comparison(instr, env, stype, q["cmp"], "ftz" in q)
    c = src(env, instr.operands[3], "pred", instr) if "bool" in q else None
    bop = BOOL_OPS.get(q.get("bool"))
    dw = width(dtype)
    d = dst(env, instr.operands[0], f"b{dw}", instr)
    true = SET_TRUE[dtype]
    halves = dtype.endswith("x2")
    pair = stype in PAIRS

    def run(warp, mask):
        r = cmpf(warp)
        if bop:
            cv = c(warp)
            r = bop(r, cv[:, None]) if pair else bop(r, cv)
        if pair:            # one result per half, each half of the destination
            out = np.where(r, np.uint32(true & 0xFFFF), np.uint32(0))
            out = out[:, 0] | (out[:, 1] << np.uint32(16))
        elif halves:
            out = np.where(r, np.uint32(true | (true << 16)), np.uint32(0))
        else:
            out = np.where(r, true, 0).astype(UINT[dw])
        d(warp, out.astype(UINT[dw]), mask)
    return run


@executor("selp")
def compile_selp(instr, env):
    q = _typed(instr, set(CMP_TYPES) - {"b8", "u8", "s8"}, 4)
    ptype = q["type"]
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], ptype, instr)
    c = src(env, instr.operands[3], "pred", instr)
    d = dst(env, instr.operands[0], ptype, instr)
    return lambda warp, mask: d(warp, np.where(c(warp), a(warp), b(warp)), mask)


@executor("slct")
def compile_slct(instr, env):
    types = [m for m in instr.mods if m in CMP_TYPES]
    q = split_mods(type(instr)(".".join(["slct"] + [m for m in instr.mods if m not in types]), ()), {"ftz": {"ftz"}})
    if len(types) != 2 or types[1] not in ("s32", "f32"):
        raise OperandError(f"{instr.opcode}: slct.dtype.s32 / slct{{.ftz}}.dtype.f32")
    _need(instr, 4)
    dtype, ctype = types
    a = src(env, instr.operands[1], dtype, instr)
    b = src(env, instr.operands[2], dtype, instr)
    c = src(env, instr.operands[3], ctype, instr)
    d = dst(env, instr.operands[0], dtype, instr)
    ftz = "ftz" in q

    def run(warp, mask):
        cv = c(warp)
        if ftz:
            cv = flush(cv, "f32")           # a subnormal c counts as a zero of its sign: -0 >= 0 picks a
        with np.errstate(invalid="ignore"):
            d(warp, np.where(cv >= 0, a(warp), b(warp)), mask)
    return run


__all__ = ["compile_intdiv"]
