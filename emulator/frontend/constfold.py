"""What ptxas evaluates at compile time: approximate math on constant operands.

The ``.approx`` (and ``div.full``) instructions run on the multi-function unit, whose results are not
correctly rounded (``numerics/mufu.py``). But when an operand is a compile-time constant, ptxas does not emit
the MUFU operation: it evaluates the instruction itself and puts the constant in the SASS. unsloth's exact GeGLU
computes ``rsqrt(2.0)`` with libdevice's ``rsqrt.approx.ftz.f32`` on a ``mov`` of 2.0: the H100 then multiplies by
0x3F3504F3 (1/sqrt(2) correctly rounded), where MUFU.RSQ(2) is 0x3F3504F2.

The rule, from ptxas 13's SASS and the H100's results on 1,200 to 1,600 constant operands per form
(``tools/hwcapture/constfold.py``):

* a constant operand is an immediate, or a register that one unguarded ``mov`` of an immediate defines (the only
  write of it in the function);
* ``ex2``, ``lg2``, ``rcp``, ``rsqrt``, ``sqrt``, ``sin``, ``cos`` ``.approx{.ftz}.f32`` fold to the correctly
  rounded value of the exact function; ``div.approx{.ftz}.f32`` and ``div.full{.ftz}.f32`` fold to
  RN(a * RN(1/b)) (``div.full.f32`` for every operand: ptxas's own sequence, the range scaling of both operands
  by 0.25 or 2^24, with a correctly rounded reciprocal); ``.ftz`` flushes subnormal inputs and results to zero of the same sign; ``sin``/``cos``
  flush subnormal inputs also without ``.ftz``; a NaN result is 0x7FFFFFFF;
* ``tanh.approx.f32`` is never folded (MUFU.TANH runs);
* where the measurements do not pin ptxas's value (a subnormal result of ``rcp.approx.f32`` or a division, a
  subnormal input of ``lg2.approx.f32``, divisors outside [2^-126, 2^126], the f16, bf16 and f64 forms) and
  where a constant reaches the instruction through other arithmetic (ptxas propagates it; the emulator does
  not evaluate that chain), the program is refused (UnsupportedError) rather than given the MUFU's value.

A module whose ``.target`` says ``debug`` (``nvcc -G``) is not optimised: nothing is folded there.
``fold_constants`` marks each folded instruction with ``instr.folded`` (the result bits); the program compiles
it as a ``mov`` of that value (``machine/program.py``). ``Warp.run`` executes its text as written: there an
immediate is a run-time value, as in the capture harnesses that measure the MUFU.
"""
from __future__ import annotations

import math

import numpy as np

from isa.mufu import canonical
from . import ptx
from ..errors import UnsupportedError
from .contract import _all_regs, _flat, _writes

UNARY = {"ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos"}
APPROX = UNARY | {"tanh", "div"}
NAN = 0x7FFFFFFF
# instructions through which ptxas propagates constants (a chain the emulator refuses rather than evaluates)
_PURE = {"mov", "add", "sub", "mul", "fma", "mad", "div", "neg", "abs", "min", "max", "cvt", "and", "or", "xor",
         "not", "shl", "shr", "selp", "sqrt", "rcp", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "cnot", "copysign",
         "bfe", "bfi", "prmt", "lop3", "cvta"}


class _Refused(Exception):
    pass


def _f32(bits):
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def _bits(x):
    """RN to f32 of a Python float (inf on overflow), raw bits; NaN -> 0x7FFFFFFF."""
    if math.isnan(x):
        return NAN
    with np.errstate(over="ignore"):
        return int(np.array([x], np.float64).astype(np.float32).view(np.uint32)[0])


def _sub(bits):
    return (bits & 0x7F800000) == 0 and (bits & 0x7FFFFF) != 0


def _nan(bits):
    return (bits & 0x7F800000) == 0x7F800000 and (bits & 0x7FFFFF) != 0


def _flush(bits):
    return bits & 0x80000000 if _sub(bits) else bits


def fold_value(form, srcs):
    """The result bits ptxas folds ``form`` (canonical spelling) to for constant operand bits ``srcs``;
    raises _Refused where that value is not pinned."""
    op = form.split(".")[0]
    ftz = ".ftz." in form
    if any(_nan(s) for s in srcs):
        return NAN
    if form == "div.full.f32":
        return _div_full(*srcs)
    if op == "div":
        a, b = srcs
        if ftz:
            a, b = _flush(a), _flush(b)
        av, bv = _f32(a), _f32(b)
        if not (2.0 ** -126 <= abs(bv) <= 2.0 ** 126) or math.isinf(av) or _sub(a):
            raise _Refused("a divisor outside [2^-126, 2^126] or an infinite or subnormal dividend")
        r = _f32(_bits(1.0 / bv))
        q = _bits(av * r)                    # exact product of two f32 values, rounded once
        if _sub(q):
            if not ftz:
                raise _Refused("a subnormal quotient")
            q = _flush(q)
        return q
    (x,) = srcs
    if ftz or op in ("sin", "cos"):
        x = _flush(x)
    elif _sub(x) and op == "lg2":
        raise _Refused("a subnormal input")
    v = _f32(x)
    neg = bool(x & 0x80000000)
    if op == "ex2":
        r = math.inf if v > 128 else 0.0 if v < -160 else 2.0 ** v
    elif op == "lg2":
        r = -math.inf if v == 0 else math.nan if neg else math.inf if math.isinf(v) else math.log2(v)
    elif op == "rcp":
        r = math.copysign(math.inf, v) if v == 0 else math.copysign(0.0, v) if math.isinf(v) else 1.0 / v
    elif op == "rsqrt":
        r = (math.copysign(math.inf, v) if v == 0 else math.nan if neg else 0.0 if math.isinf(v)
             else 1.0 / math.sqrt(v))
    elif op == "sqrt":
        r = v if v == 0 else math.nan if neg else math.sqrt(v)
    elif op == "sin":
        r = math.nan if math.isinf(v) else (v if v == 0 else math.sin(v))
    else:
        r = math.nan if math.isinf(v) else math.cos(v)
    bits = _bits(r)
    if _sub(bits):
        if ftz:
            bits = _flush(bits)
        elif op == "rcp":
            raise _Refused("a subnormal result")
    return bits


def _r32(x):
    """x (a float64 scalar) rounded to f32, as a float64 again."""
    with np.errstate(all="ignore"):
        return np.float64(np.float32(x))


def _div_full(a, b):
    """div.full.f32 on constants: ptxas's own sequence (range scaling of both operands by 0.25 or 2^24) with a
    correctly rounded reciprocal, RN(a' * RN(1/b'))."""
    av, bv = np.float64(_f32(a)), np.float64(_f32(b))
    with np.errstate(all="ignore"):
        if abs(bv) > 2.0 ** 126 and not np.isnan(bv):
            av, bv = _r32(av * 0.25), _r32(bv * 0.25)
        if abs(bv) < 2.0 ** -126:
            av, bv = _r32(av * 2.0 ** 24), _r32(bv * 2.0 ** 24)
        r = _r32(np.float64(1.0) / bv)
        return _bits(float(av * r))


def _imm_bits(imm):
    if imm.kind in ("f32", "int"):
        return int(imm.value) & 0xFFFFFFFF
    if imm.kind == "f64":
        return _bits(float(np.array([imm.value], np.uint64).view(np.float64)[0]))
    return _bits(float(imm.value))


def fold_constants(statements):
    """Mark the approximate-math instructions of ``statements`` (a whole function body) whose operands are
    compile-time constants with ``instr.folded`` (the result bits ptxas puts there); refuse the ones whose
    folded value the emulator does not know."""
    instrs = [st for st in _flat(statements) if isinstance(st, ptx.Instruction)]
    defs = {}
    for st in instrs:
        for r in _writes(st):
            defs.setdefault(r, []).append(st)
    memo = {}

    def const(reg, depth=0):
        """'imm' (bits) for a mov of an immediate, 'derived' for a constant through other arithmetic, None."""
        if reg in memo:
            return memo[reg]
        memo[reg] = None
        d = defs.get(reg)
        res = None
        if d and len(d) == 1 and d[0].guard is None and depth < 32:
            st = d[0]
            srcs = st.operands[1:]
            if st.base == "mov" and len(srcs) == 1 and isinstance(srcs[0], ptx.Imm) and \
                    isinstance(st.operands[0], ptx.Reg):
                res = ("imm", _imm_bits(srcs[0]))
            elif st.base in _PURE and srcs and all(isinstance(o, ptx.Imm) or isinstance(o, ptx.Reg) and
                                                   not o.name.startswith("%envreg") and
                                                   const(o.name, depth + 1) is not None for o in srcs):
                res = ("derived", None)
        memo[reg] = res
        return res

    for st in instrs:
        if st.base not in APPROX or not ({"approx", "full"} & set(st.mods)) or len(st.operands) < 2:
            continue
        srcs = st.operands[1:]
        kinds = []
        for o in srcs:
            if isinstance(o, ptx.Imm):
                kinds.append(("imm", _imm_bits(o)))
            elif isinstance(o, ptx.Reg):
                kinds.append(const(o.name))
            else:
                kinds.append(None)
        if any(k is None for k in kinds):
            continue
        form = canonical(st.base, st.mods)
        where = f"line {st.line}, column {st.col}: {st.text or st.opcode}"
        if form == "tanh.approx.f32":
            continue                         # MUFU.TANH runs whatever the operand
        if any(k[0] == "derived" for k in kinds):
            raise UnsupportedError(f"{where}: its operand is a constant that ptxas computes at compile time and "
                                   f"then evaluates this approximate instruction on (not the MUFU's value); the "
                                   f"emulator folds only constants that a mov of an immediate defines")
        if not (form.endswith(".f32") and (st.base in UNARY and "approx" in st.mods or
                                            st.base == "div" and len(srcs) == 2)):
            raise UnsupportedError(f"{where}: ptxas evaluates it at compile time on a constant operand; the "
                                   f"value it folds to is not measured for this form (modelled: ex2, lg2, rcp, "
                                   f"rsqrt, sqrt, sin, cos .approx.f32 and div.approx/div.full.f32)")
        try:
            st.folded = fold_value(form, [k[1] for k in kinds])
        except _Refused as e:
            raise UnsupportedError(f"{where}: ptxas evaluates it at compile time on constant operands "
                                   f"({', '.join(f'0x{k[1]:08x}' for k in kinds)}); the value it folds to is not "
                                   f"measured for {e}") from None
    return statements
