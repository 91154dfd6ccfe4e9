"""Executors of the approximate math: ``ex2``, ``lg2``, ``sin``, ``cos``, ``tanh``, ``rsqrt`` (``.approx``),
``rcp.approx``, ``sqrt.approx``, ``div.approx`` and ``div.full``, as the H100's MUFU unit computes them
(``emulator/numerics/mufu.py``; every f32 form equals the H100 on all 2^32 inputs)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from isa.mufu import MUFU_SPELLINGS, canonical, operand_bits
from isa.targets import TARGETS
from ..errors import OperandError, UnsupportedError
from ..numerics import mufu as M
from ..numerics.fround import _round_fraction_f64
from .common import dst, src
from .registry import executor

_RAW = {16: "b16", 32: "b32", 64: "b64"}


def supported(base=None):
    return sorted(s for s in MUFU_SPELLINGS if base is None or s.split(".")[0] == base)


def is_mufu(instr):
    return any(m in ("approx", "full") for m in instr.mods)


def compile_mufu(instr, env):
    spelling = canonical(instr.base, instr.mods)
    if spelling not in MUFU_SPELLINGS:
        raise UnsupportedError(f"{instr.opcode}: not an approximate-math form PTX has; supported: "
                               f"{', '.join(supported(instr.base)) or ', '.join(supported())}")
    arch = getattr(env, "arch", None) or "sm_90"
    cc = TARGETS.get(arch, 90)
    if cc < MUFU_SPELLINGS[spelling]:
        raise UnsupportedError(f"{instr.opcode}: needs sm_{MUFU_SPELLINGS[spelling]} or later; the machine "
                               f"emulated is {arch}")
    nsrc = 2 if instr.base == "div" else 1
    if len(instr.operands) != nsrc + 1:
        raise OperandError(f"{instr.opcode}: takes {nsrc + 1} operands, found {len(instr.operands)}")
    raw = _RAW[operand_bits(spelling)]
    readers = [src(env, op, raw, instr) for op in instr.operands[1:]]
    write = dst(env, instr.operands[0], raw, instr)
    ut = {"b16": np.uint16, "b32": np.uint32, "b64": np.uint64}[raw]

    if spelling in M.F32_UNARY:
        def fn(vals):
            return M.ptx_f32_unary(np, spelling, vals[0])
    elif spelling in M.F32_DIV:
        def fn(vals):
            return M.ptx_f32_div(np, spelling, vals[0], vals[1])
    elif spelling in M.HALF:
        def fn(vals):
            return M.ptx_half(np, spelling, vals[0])
    elif spelling in M.F64:
        def fn(vals):
            return M.ptx_f64(np, spelling, vals[0])
    elif spelling == "rsqrt.approx.f64":
        fn = _rsqrt_f64_refined
    else:                                                   # pragma: no cover (the table and the model agree)
        raise UnsupportedError(f"{instr.opcode}: no model")

    def run(warp, mask):
        vals = [np.asarray(r(warp)).view(ut) for r in readers]
        with np.errstate(all="ignore"):         # NaN and inf operands are part of the model
            out = np.asarray(fn(vals)).astype(ut)
        write(warp, out, mask)
    run.instr = instr
    return run


@executor("ex2", "lg2", "sin", "cos", "tanh", "rsqrt")
def compile_approx(instr, env):
    return compile_mufu(instr, env)


# ------------------------------------------------------------------------------ rsqrt.approx.f64 (not .ftz)
def _f(bits):
    return float(np.uint64(bits).view(np.float64))


def _dmul(a, b):
    return _round_fraction_f64(Fraction(a) * Fraction(b), "rn")


def _dfma(a, b, c):
    return _round_fraction_f64(Fraction(a) * Fraction(b) + Fraction(c), "rn")


def _refine(x):
    """MUFU.RSQ64H, then one DFMA step (y + y*e*(0.5 + 0.375*e), e = 1 - x*y*y), as ptxas writes it."""
    y = _f(int(M.mufu_rsq64h(np, np.array([np.float64(x).view(np.uint64)]))[0]))
    e = _dfma(x, -_dmul(y, y), 1.0)
    return _dfma(_dfma(e, 0.375, 0.5), _dmul(y, e), y)


def _rsqrt_f64_refined(vals):
    out = np.empty(32, np.uint64)
    for i, b in enumerate(np.asarray(vals[0], np.uint64)):
        b = int(b)
        hi = b >> 32
        x = _f(b)
        if ((hi - 0x00100000) & 0xFFFFFFFF) < 0x7FE00000:          # positive normal: the main path
            r = np.float64(_refine(x)).view(np.uint64)
        elif x == 0:
            r = (b & (1 << 63)) | 0x7FF0000000000000
        elif np.isnan(x):
            r = b | (1 << 51)                                       # DADD x, x: the NaN, quieted
        elif b >> 63:
            r = 0xFFF8000000000000
        elif np.isinf(x):
            r = 0
        else:                                                       # positive subnormal: scaled by 2^54
            r = np.float64(_dmul(_refine(_dmul(x, 2.0 ** 54)), 2.0 ** 27)).view(np.uint64)
        out[i] = r
    return out
