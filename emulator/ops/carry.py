"""Extended-precision integer arithmetic: the carry chains ``add.cc``, ``addc``, ``sub.cc``, ``subc``,
``mad.cc``, ``madc`` (PTX ISA "Extended-Precision Integer Arithmetic Instructions").

Each lane has one carry flag (``CC.CF``), kept in the hidden register ``%cc.cf``. ``.cc`` writes it: the carry
out of the addition, for ``sub``/``subc`` the borrow out. ``addc``/``madc`` add the flag in, ``subc``
subtracts it. Types: .u32, .s32, .u64, .s64 (the signed forms compute the same bits, except the high half of a
signed product in ``mad.hi``/``madc.hi``).
libdevice's sin/cos range reduction (Payne-Hanek) and 64-bit multiplies in nvcc output use these chains.
"""
from __future__ import annotations

import numpy as np

from ..errors import OperandError
from .common import UINT, dst, split_mods, src, width
from .registry import executor

CF = "%cc.cf"
TYPES = {"u32", "s32", "u64", "s64"}


def _flag(warp):
    return warp.get_reg(CF).astype(np.uint64) & np.uint64(1)


def _ints(v):
    return [int(x) for x in v]


@executor("addc", "subc", "madc")
def compile_carry(instr, env):
    """Factory for add.cc / addc / sub.cc / subc / mad.cc / madc (called from the add, sub and mad executors
    and registered for addc, subc, madc)."""
    base = instr.base
    q = split_mods(instr, {"type": TYPES, "cc": {"cc"}, "mode": {"lo", "hi"}})
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type; supported: .u32, .s32, .u64, .s64")
    mad = base in ("mad", "madc")
    if mad and "mode" not in q:
        raise OperandError(f"{instr.opcode}: {base} needs .lo or .hi")
    if not mad and "mode" in q:
        raise OperandError(f"{instr.opcode}: .{q['mode']} is allowed with mad/madc only")
    n = 4 if mad else 3
    if len(instr.operands) != n:
        raise OperandError(f"{instr.opcode}: takes {n} operands, found {len(instr.operands)}")
    ptype = "u" + q["type"][1:]
    w = width(ptype)
    mask_w = (1 << w) - 1
    readers = [src(env, op, ptype, instr) for op in instr.operands[1:]]
    write = dst(env, instr.operands[0], ptype, instr)
    carry_in = base in ("addc", "subc", "madc")
    carry_out = "cc" in q
    sub = base in ("sub", "subc")
    hi = q.get("mode") == "hi"
    signed = q["type"][0] == "s"

    def run(warp, mask):
        vals = [_ints(r(warp)) for r in readers]
        cin = _ints(_flag(warp)) if carry_in else [0] * 32
        res, cout = [], []
        for lane in range(32):
            if mad:
                a, b = vals[0][lane], vals[1][lane]
                if signed:
                    a, b = a - ((a >> (w - 1)) << w), b - ((b >> (w - 1)) << w)
                p = (a * b) & ((1 << (2 * w)) - 1)
                p = (p >> w) if hi else (p & mask_w)
                s = p + vals[2][lane] + cin[lane]
                cout.append(s >> w)
            elif sub:
                s = vals[0][lane] - vals[1][lane] - cin[lane]
                cout.append(1 if s < 0 else 0)
            else:
                s = vals[0][lane] + vals[1][lane] + cin[lane]
                cout.append(s >> w)
            res.append(s & mask_w)
        write(warp, np.array(res, np.uint64).astype(UINT[w]), mask)
        if carry_out:
            warp.set_reg(CF, np.array(cout, np.uint32), mask)
    return run
