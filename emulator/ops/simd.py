"""Packed integer dot products, the SIMD video instructions and three-input logic: ``dp4a``, ``dp2a``,
``vadd2/4``, ``vsub2/4``, ``vavrg2/4``, ``vabsdiff2/4``, ``vmin2/4``, ``vmax2/4``, ``vset2/4``, ``lop3``
(PTX ISA "Integer Arithmetic Instructions: dp4a, dp2a", "SIMD Video Instructions", "Logic and Shift
Instructions: lop3").

``lop3.b32 d, a, b, c, immLut``: bit i of d is bit ((a_i << 2) | (b_i << 1) | c_i) of the 8-bit immLut, so
that immLut = f(0xF0, 0xCC, 0xAA) for the boolean function f (every one of the 256 functions).

``dp4a.atype.btype d, a, b, c``: d = c + the sum of the four byte products of a and b (each byte signed or
unsigned as its type says), modulo 2^32. ``dp2a.lo/.hi``: the two 16-bit halves of a times bytes 0-1
(``.lo``) or 2-3 (``.hi``) of b. The video instructions work on two halves or four bytes at once
(``__vabsdiffu4`` compiles to ``vabsdiff4.u32.u32.u32``); see :func:`compile_video`.
"""
from __future__ import annotations

import numpy as np

from ..errors import OperandError, UnsupportedError
from .common import dst, src
from .registry import executor

_T = {"u32": False, "s32": True}


def _parts(v, n, signed):
    """32 lanes of u32 -> (32, n) int64 of n equal signed/unsigned parts."""
    dt = {4: (np.int8, np.uint8), 2: (np.int16, np.uint16)}[n][0 if signed else 1]
    return v.view(np.uint32).reshape(32, 1).view(dt).astype(np.int64)


def _types(instr, skip=()):
    mods = [m for m in instr.mods if m not in skip]
    types = [m for m in mods if m in _T]
    if len(types) != 2 or len(mods) != 2:
        form = f"{instr.base}{''.join('.' + e for e in skip[:1])}.atype.btype"
        raise UnsupportedError(f"{instr.opcode}: expected {form} with atype, btype in .u32, .s32")
    if len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: takes 4 operands (d, a, b, c), found {len(instr.operands)}")
    return _T[types[0]], _T[types[1]]


@executor("dp4a")
def compile_dp4a(instr, env):
    sa, sb = _types(instr)
    a, b = (src(env, op, "u32", instr) for op in instr.operands[1:3])
    c = src(env, instr.operands[3], "u32", instr)
    d = dst(env, instr.operands[0], "u32", instr)

    def run(warp, mask):
        s = (_parts(a(warp), 4, sa) * _parts(b(warp), 4, sb)).sum(axis=1) + c(warp).astype(np.int64)
        d(warp, s.astype(np.uint32), mask)
    return run


@executor("dp2a")
def compile_dp2a(instr, env):
    half = [m for m in instr.mods if m in ("lo", "hi")]
    if len(half) != 1:
        raise UnsupportedError(f"{instr.opcode}: dp2a needs .lo or .hi")
    sa, sb = _types(instr, (half[0],))
    a, b = (src(env, op, "u32", instr) for op in instr.operands[1:3])
    c = src(env, instr.operands[3], "u32", instr)
    d = dst(env, instr.operands[0], "u32", instr)
    sel = slice(0, 2) if half[0] == "lo" else slice(2, 4)

    def run(warp, mask):
        s = (_parts(a(warp), 2, sa) * _parts(b(warp), 4, sb)[:, sel]).sum(axis=1) + c(warp).astype(np.int64)
        d(warp, s.astype(np.uint32), mask)
    return run


# ----------------------------------------------------------------------------------------------
# SIMD video instructions: vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4, vset2/4

_VOP = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    # the average rounds half away from zero: (x + y + 1) >> 1 for a non-negative sum, (x + y) >> 1 below
    "avrg": lambda x, y: np.where(x + y >= 0, (x + y + 1) >> 1, (x + y) >> 1),
    "absdiff": lambda x, y: np.abs(x - y),
    "min": np.minimum,
    "max": np.maximum,
}
_VCMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
         "ge": np.greater_equal}


def _video_operand(env, op, instr, n, what, default):
    """(register reader, selector digits) of a video operand ``%r{.sel}``: the selector names, from element
    n-1 down to 0, the halves (``.hxy``, digits 0-3) or bytes (``.bxyzw``, digits 0-7) of the pair {b, a};
    a destination's ``.mask`` (``.h10``, ``.b320``, ...) names the elements it writes."""
    from ..frontend.ptx import Reg, Sym
    if isinstance(op, Sym) and env.is_register(op.name):
        op = Reg(op.name)                   # a register declared without the % sigil
    if not isinstance(op, Reg):
        raise OperandError(f"{instr.opcode}: {what} must be a register (with an optional video selector), "
                           f"found {op}")
    name, _, sel = op.name.partition(".")
    letter, top = ("h", 3) if n == 2 else ("b", 7)
    sel = sel or default
    digits = sel[1:]
    ok = sel[:1] == letter and digits.isdigit() and all(int(x) <= top for x in digits)
    if what == "d":
        ok = ok and 1 <= len(digits) <= n and all(int(x) < n for x in digits) and \
            list(digits) == sorted(set(digits), reverse=True)
    else:
        ok = ok and len(digits) == n
    if not ok:
        form = ("a mask .h0, .h1, .h10" if n == 2 else "a mask of bytes .b0 ... .b3210") if what == "d" else \
            (".hxy with x, y in 0-3" if n == 2 else ".bxyzw with x, y, z, w in 0-7")
        raise OperandError(f"{instr.opcode}: {what}.{sel} is not a video selector; {what} takes {form}")
    return Reg(name), [int(x) for x in digits]


def _elements(pair, n, sel, signed):
    """(32, n) int64: element i is part ``sel[n-1-i]`` of the 64-bit {b, a}, sign- or zero-extended."""
    w = 32 // n
    out = []
    for i in range(n):
        k = sel[n - 1 - i]
        x = ((pair >> np.uint64(w * k)) & np.uint64((1 << w) - 1)).astype(np.int64)
        out.append(np.where(x >= 1 << (w - 1), x - (1 << w), x) if signed else x)
    return np.stack(out, axis=1)


@executor("vadd2", "vadd4", "vsub2", "vsub4", "vavrg2", "vavrg4", "vabsdiff2", "vabsdiff4", "vmin2", "vmin4",
          "vmax2", "vmax4", "vset2", "vset4")
def compile_video(instr, env):
    """``vop2/vop4.dtype.atype.btype{.sat} d{.mask}, a{.asel}, b{.bsel}, c`` (merge) and ``....add`` (accumulate);
    ``vset2/vset4.atype.btype.cmp{.add}``. Each element of a and b is an n-bit part (sign- or zero-extended
    by its type) chosen by the selector; t_i = op(a_i, b_i) exactly (vset: 1 or 0). Merge: d's element i is
    t_i (clamped to the dtype's n-bit range with ``.sat``, else its low n bits) where the mask names i, c's
    element i elsewhere. Accumulate: d = c + the sum of the masked t_i, modulo 2^32. ptxas 13.0 expands
    them into byte permutes and integer adds; the H100 equals this on every input of the capture."""
    base = instr.base
    op, n = base[1:-1], int(base[-1])
    mods = list(instr.mods)
    types = [m for m in mods if m in _T]
    rest = [m for m in mods if m not in _T]
    is_set = op == "set"
    cmps = [m for m in rest if m in _VCMP] if is_set else []
    flags = [m for m in rest if m not in cmps]
    want_types = 2 if is_set else 3
    if len(types) != want_types or len(cmps) != int(is_set) or len(set(flags)) != len(flags) or \
            any(f not in (("add",) if is_set else ("add", "sat")) for f in flags):
        form = (f"{base}.atype.btype.cmp{{.add}} with cmp in {', '.join('.' + c for c in _VCMP)}" if is_set else
                f"{base}.dtype.atype.btype{{.sat}} or {base}.dtype.atype.btype.add")
        raise UnsupportedError(f"{instr.opcode}: expected {form}, the types .u32 or .s32")
    add, sat = "add" in flags, "sat" in flags
    if add and sat:
        raise OperandError(f"{instr.opcode}: .sat and .add do not go together")
    if len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: takes 4 operands (d, a, b, c), found {len(instr.operands)}")
    sd = False if is_set else _T[types[0]]
    sa, sb = _T[types[-2]], _T[types[-1]]
    every = "".join(str(i) for i in reversed(range(n)))
    d_op, mask = _video_operand(env, instr.operands[0], instr, n, "d", ("h" if n == 2 else "b") + every)
    a_op, asel = _video_operand(env, instr.operands[1], instr, n, "a", "h10" if n == 2 else "b3210")
    b_op, bsel = _video_operand(env, instr.operands[2], instr, n, "b", "h32" if n == 2 else "b7654")
    c_op, csel = _video_operand(env, instr.operands[3], instr, n, "c", "h10" if n == 2 else "b3210")
    if csel != list(reversed(range(n))):
        raise OperandError(f"{instr.opcode}: c takes no video selector")
    a, b, c = (src(env, o, "u32", instr) for o in (a_op, b_op, c_op))
    d = dst(env, d_op, "u32", instr)
    w = 32 // n
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if sd else (0, (1 << w) - 1)
    on = np.array([i in mask for i in range(n)])
    fn = _VCMP[cmps[0]] if is_set else _VOP[op]

    def run(warp, mask_):
        pair = a(warp).astype(np.uint64) | (b(warp).astype(np.uint64) << np.uint64(32))
        x, y = _elements(pair, n, asel, sa), _elements(pair, n, bsel, sb)
        t = fn(x, y).astype(np.int64)
        cv = c(warp).astype(np.int64)
        if add:
            r = cv + (t * on).sum(axis=1)
        else:
            if sat:
                t = np.clip(t, lo, hi)
            r = np.zeros(32, np.int64)
            for i in range(n):
                part = t[:, i] if on[i] else cv >> (w * i)
                r |= (part & ((1 << w) - 1)) << (w * i)
        d(warp, (r & 0xFFFFFFFF).astype(np.uint32), mask_)
    return run


@executor("lop3")
def compile_lop3(instr, env):
    if list(instr.mods) != ["b32"]:
        raise UnsupportedError(f"{instr.opcode}: supported: lop3.b32 d, a, b, c, immLut (not the predicate "
                               f"forms lop3.BoolOp.b32 d|p, ...)")
    if len(instr.operands) != 5:
        raise OperandError(f"{instr.opcode}: takes 5 operands (d, a, b, c, immLut), found {len(instr.operands)}")
    lut = instr.operands[4]
    if type(lut).__name__ != "Imm" or lut.kind != "int" or not 0 <= lut.value <= 255:
        raise OperandError(f"{instr.opcode}: immLut must be an integer constant 0..255, found {lut}")
    table = int(lut.value)
    a, b, c = (src(env, op, "b32", instr) for op in instr.operands[1:4])
    d = dst(env, instr.operands[0], "b32", instr)
    full = np.uint32(0xFFFFFFFF)

    def run(warp, mask):
        x, y, z = a(warp), b(warp), c(warp)
        r = np.zeros(32, np.uint32)
        for k in range(8):          # minterm k = (a, b, c) bits (k>>2, k>>1, k) & 1
            if table >> k & 1:
                r |= (x if k & 4 else x ^ full) & (y if k & 2 else y ^ full) & (z if k & 1 else z ^ full)
        d(warp, r, mask)
    return run
