"""Packed integer dot products, byte SIMD and three-input logic: ``dp4a``, ``dp2a``, ``vabsdiff4``, ``lop3``
(PTX ISA "Integer Arithmetic Instructions: dp4a, dp2a", "SIMD Video Instructions", "Logic and Shift
Instructions: lop3").

``lop3.b32 d, a, b, c, immLut``: bit i of d is bit ((a_i << 2) | (b_i << 1) | c_i) of the 8-bit immLut, so
that immLut = f(0xF0, 0xCC, 0xAA) for the boolean function f (every one of the 256 functions).

``dp4a.atype.btype d, a, b, c``: d = c + the sum of the four byte products of a and b (each byte signed or
unsigned as its type says), modulo 2^32. ``dp2a.lo/.hi``: the two 16-bit halves of a times bytes 0-1
(``.lo``) or 2-3 (``.hi``) of b. ``vabsdiff4.u32.u32.u32`` (the form ``__vabsdiffu4`` compiles to): each byte of
d is |a_i - b_i| (with ``.add``: d = c + the sum of the four differences).
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


@executor("vabsdiff4")
def compile_vabsdiff4(instr, env):
    mods = list(instr.mods)
    add = "add" in mods
    if [m for m in mods if m != "add"] != ["u32", "u32", "u32"]:
        raise UnsupportedError(f"{instr.opcode}: supported: vabsdiff4.u32.u32.u32{{.add}} (no .sat, byte masks "
                               f"or selectors)")
    if len(instr.operands) != 4 or not all(type(op).__name__ in ("Reg", "Imm", "Sym") for op in instr.operands):
        raise UnsupportedError(f"{instr.opcode}: supported: d, a, b, c without byte masks or selectors")
    a, b = (src(env, op, "u32", instr) for op in instr.operands[1:3])
    c = src(env, instr.operands[3], "u32", instr)
    d = dst(env, instr.operands[0], "u32", instr)

    def run(warp, mask):
        diff = np.abs(_parts(a(warp), 4, False) - _parts(b(warp), 4, False))
        if add:
            r = (diff.sum(axis=1) + c(warp).astype(np.int64)).astype(np.uint32)
        else:
            r = np.ascontiguousarray(diff.astype(np.uint8)).view(np.uint32).reshape(32)
        d(warp, r, mask)
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
