"""The executor registry: PTX base opcode -> factory.

Each executor module registers factories with :func:`executor`. A factory takes a parsed
:class:`~emulator.frontend.ptx.Instruction` and an environment (the Warp, or a kernel's function scope: it
provides ``reg_width(name)``, ``is_register(name)``, ``symbols`` and ``arch``) and returns
``fn(warp, mask)``, which executes the instruction for the lanes in ``mask`` (bool[32]).
Compilation does all parsing and validation once; the returned function only moves data.
"""
from __future__ import annotations

import numpy as np

from ..errors import EmulatorError, UnsupportedError, did_you_mean

EXECUTORS: dict = {}


def executor(*names):
    """Register a factory for opcodes whose first dotted component is one of ``names``."""
    def deco(factory):
        for n in names:
            EXECUTORS[n] = factory
        return factory
    return deco


def compile_instruction(instr, env):
    """Compile one instruction into ``fn(warp, mask)``, guard predicate included."""
    factory = EXECUTORS.get(instr.base)
    if factory is None:
        raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unknown or unsupported "
                               f"instruction '{instr.base}'; "
                               + did_you_mean(instr.base, sorted(EXECUTORS), "docs/supported.md"))
    try:
        fn = factory(instr, env)
    except EmulatorError as e:
        msg = str(e)
        if not msg.startswith("line "):
            raise type(e)(f"line {instr.line}, column {instr.col}: {msg}") from None
        raise
    if instr.guard is None:
        return fn
    reg, negated = instr.guard
    name = reg.name

    def guarded(warp, mask):
        p = warp.get_reg(name, instr.text)
        if p.dtype != np.bool_:
            p = p != 0
        m = mask & (~p if negated else p)
        if m.any():
            fn(warp, m)
    guarded.instr = instr
    return guarded


