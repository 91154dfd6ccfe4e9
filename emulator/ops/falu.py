"""Floating-point arithmetic (add, sub, mul, fma, mad, min, max, neg, abs on .f16/.bf16/.f32/.f64)."""
from __future__ import annotations

from ..errors import UnsupportedError


def compile_float(instr, env):
    raise UnsupportedError(f"{instr.opcode}: floating-point arithmetic is not supported by Warp.run yet; "
                           f"supported arithmetic types: .u16/.u32/.u64/.s16/.s32/.s64")
