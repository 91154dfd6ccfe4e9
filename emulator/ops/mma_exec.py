"""Executor glue for mma.sync: gathers the operand registers of all 32 lanes and calls the numerics."""
from __future__ import annotations

import numpy as np

from ..errors import OperandError
from . import executor
from .common import require_full_warp, vec_regs

_UINT = {32: np.uint32, 64: np.uint64}


@executor("mma")
def compile_mma(instr, env):
    from ..tensorcore import get_mma
    op = get_mma(instr.opcode, env.arch)
    if len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: takes 4 operands (D, A, B, C), found {len(instr.operands)}")
    groups = []
    for opnd, n, bits, what in zip(instr.operands, (op.n_d, op.n_a, op.n_b, op.n_c),
                                   (op.d_bits, op.a_bits, op.b_bits, op.c_bits), "DABC"):
        names = vec_regs(env, opnd, instr, n, f"{what} operand")
        for name in names:
            if env.reg_width(name) != bits:
                raise OperandError(f"{instr.opcode}: {what} register {name} is {env.reg_width(name)}-bit; "
                                   f"this variant needs {bits}-bit registers")
        groups.append((names, _UINT[bits]))
    (d_names, _), (a_names, a_dt), (b_names, b_dt), (c_names, c_dt) = groups
    text = instr.text

    bufs = [np.empty((len(names), 32), dt) for names, dt in groups[1:]]
    srcs = list(zip((a_names, b_names, c_names), bufs))

    def run(warp, mask):
        require_full_warp(instr, mask)
        get = warp.get_reg
        for names, buf in srcs:                 # gather the operand registers (C is read before D is written)
            for i, n in enumerate(names):
                buf[i] = get(n, text)
        d = op.execute(*bufs)
        regs = warp.regs                        # a full warp: D registers are replaced whole
        for i, n in enumerate(d_names):
            if n != "_":
                regs[n] = d[i]
    return run
