"""Extended-precision integer arithmetic: add.cc, addc, sub.cc, subc, mad.cc, madc (PTX ISA "Extended-Precision
Integer Arithmetic Instructions").

The carry flag (CC.CF) is per lane; ``.cc`` writes it and ``addc``/``subc``/``madc`` read it. For subtraction the
flag holds the *borrow*: ``sub.cc`` sets it when a < b (unsigned), ``subc`` computes a - (b + CF). Operands are
.u32/.s32/.u64/.s64 (signed and unsigned are the same bits).
"""
from __future__ import annotations

import numpy as np

from ..errors import OperandError
from .registry import executor
from .common import NP, UINT, dst, split_mods, src, width

TYPES = {"u32", "s32", "u64", "s64"}


def carry_flag(warp):
    """The warp's per-lane carry flag (bool[32]), created clear."""
    cf = getattr(warp, "carry_flag", None)
    if cf is None:
        cf = warp.carry_flag = np.zeros(32, np.bool_)
    return cf


def compile_carry(instr, env):
    base = instr.base
    groups = {"type": TYPES, "cc": {"cc"}}
    if base in ("mad", "madc"):
        groups["half"] = {"lo", "hi"}
    q = split_mods(instr, groups)
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type; supported: .u32, .s32, .u64, .s64")
    n = 4 if base in ("mad", "madc") else 3
    if len(instr.operands) != n:
        raise OperandError(f"{instr.opcode}: takes {n} operands, found {len(instr.operands)}")
    if base in ("mad", "madc") and "half" not in q:
        raise OperandError(f"{instr.opcode}: needs .lo or .hi")
    ptype = q["type"]
    w = width(ptype)
    m = (1 << w) - 1
    signed = ptype[0] == "s"
    reads = [src(env, op, ptype, instr) for op in instr.operands[1:]]
    d = dst(env, instr.operands[0], ptype, instr)
    sets, uses = "cc" in q, base in ("addc", "subc", "madc")
    hi = q.get("half") == "hi"

    def run(warp, mask):
        vals = [[int(x) for x in r(warp).view(UINT[w])] for r in reads]
        cf = carry_flag(warp)
        cin = [int(c) for c in cf] if uses else [0] * 32
        out, cout = [], []
        for lane in range(32):
            a, b = vals[0][lane], vals[1][lane]
            if base in ("add", "addc"):
                s = a + b + cin[lane]
                out.append(s & m)
                cout.append(s >> w)
            elif base in ("sub", "subc"):
                s = a - b - cin[lane]
                out.append(s & m)
                cout.append(1 if s < 0 else 0)
            else:
                if signed:
                    a = a - (1 << w) if a >> (w - 1) else a
                    b = b - (1 << w) if b >> (w - 1) else b
                p = (a * b) & ((1 << (2 * w)) - 1)
                p = (p >> w) if hi else (p & m)
                s = p + vals[2][lane] + cin[lane]
                out.append(s & m)
                cout.append(s >> w)
        d(warp, np.array(out, np.uint64).astype(UINT[w]).view(NP[ptype]), mask)
        if sets:
            cf[mask] = np.array(cout, np.bool_)[mask]
    return run


@executor("addc", "subc", "madc")
def compile_carry_in(instr, env):
    return compile_carry(instr, env)
