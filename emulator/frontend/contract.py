"""What ptxas does to unrounded multiply-add pairs: contraction into one fused multiply-add.

PTX's ``mul``/``add``/``sub`` without a rounding modifier may be optimised by the code generator; in
particular "mul/add sequences with no rounding modifiers may be optimized to use fused-multiply-add
instructions" (PTX ISA, ``add``/``mul`` notes). ptxas 13 does it whenever it can, and the H100 then rounds
once where the PTX text suggests two roundings. Triton writes such pairs in every kernel (``mul.f32`` then
``add.f32``), and so does nvcc for ``__fmul_rn``-free code under ``--use_fast_math`` or ``-fmad=true``.

ptxas also fuses the last multiply of its expansion of ``div.full.f32``/``div.approx.f32`` (reciprocal times
dividend) with an unrounded ``add``/``sub`` that reads the quotient.

This pass marks each ``add``/``sub`` that ptxas turns into an FFMA/DFMA/HFMA2: it sets
``instr.contract = Contract(...)`` on the consumer; the executor (``ops/falu.py``) then computes the fused
result. The rule, checked against the SASS of the corpus kernels and their H100 results:

* producer: ``mul{.ftz}.T`` (T = f32, f64, f16, f16x2) with no rounding modifier and no ``.sat``, or
  ``div.full{.ftz}.f32`` / ``div.approx{.ftz}.f32``;
* consumer: ``add{.ftz}.T`` / ``sub{.ftz}.T`` of the same type and ``.ftz``, with no rounding modifier and no
  ``.sat``, reading the producer's destination;
* both unguarded, in one straight-line run of instructions (no label, branch, call or barrier between;
  ``{ }`` blocks are entered, since nvcc wraps each half-precision intrinsic in one),
  with neither the product nor its factors written again in between. Every such consumer is fused, also
  when the product has other readers (ptxas then keeps the multiply for them).

A module whose ``.target`` carries ``debug`` (``nvcc -G``) is compiled without optimisation: nothing is
fused there (``machine/program.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ptx

FUSABLE = {"f32", "f64", "f16", "f16x2"}
_BARRIERS = {"bra", "brx", "call", "ret", "exit", "bar", "barrier", "membar", "fence", "trap"}


@dataclass
class Contract:
    producer: object          # the mul/div Instruction
    index: int                # which consumer source (0 or 1) is the product
    negate_product: bool      # sub d, c, p: d = -(a*b) + c
    negate_other: bool        # sub d, p, c: d = a*b - c


def _fp(instr):
    """(type, ftz) of an unrounded mul/add/sub, or None."""
    t = [m for m in instr.mods if m in FUSABLE]
    rest = [m for m in instr.mods if m not in FUSABLE and m != "ftz"]
    if len(t) != 1 or rest:
        return None
    return t[0], "ftz" in instr.mods


def _producer_key(instr):
    if instr.guard is not None or not instr.operands or not isinstance(instr.operands[0], ptx.Reg):
        return None
    if instr.base == "mul":
        return _fp(instr)
    if instr.base == "div" and instr.mods[:1] in (("full",), ("approx",)) and instr.mods[-1] == "f32":
        if set(instr.mods[1:-1]) <= {"ftz"}:
            return "f32", "ftz" in instr.mods
    return None


def _regs(ops):
    out = set()
    for o in ops:
        if isinstance(o, ptx.Reg):
            out.add(o.name)
        elif isinstance(o, ptx.Vec):
            out |= _regs(o.items)
    return out


def _walk(statements):
    """Instructions in order, entering ``{ }`` blocks (nvcc wraps each inline-asm intrinsic in one); a label
    or a directive outside a block's head ends a straight-line run (None)."""
    for st in statements:
        if isinstance(st, ptx.Block):
            yield from _walk(st.statements)
        elif isinstance(st, ptx.Directive):
            continue
        else:
            yield st if isinstance(st, ptx.Instruction) else None


def contract(statements):
    """Mark the add/sub instructions of ``statements`` that ptxas fuses with a multiply."""
    live = {}                                   # product register -> producer instruction
    for st in _walk(statements):
        if st is None:
            live.clear()
            continue
        if st.base in _BARRIERS:
            live.clear()
            continue
        key = _fp(st) if st.base in ("add", "sub") and st.guard is None else None
        if key is not None and len(st.operands) == 3:
            for i in (0, 1):
                o = st.operands[1 + i]
                p = live.get(o.name) if isinstance(o, ptx.Reg) else None
                if p is not None and _producer_key(p) == key:
                    sub = st.base == "sub"
                    st.contract = Contract(p, i, negate_product=sub and i == 1, negate_other=sub and i == 0)
                    break
        # what this instruction writes ends the life of products that depend on it
        written = _regs(st.operands[:1]) if st.operands else set()
        if written:
            for reg, p in list(live.items()):
                if reg in written or _regs(p.operands[1:]) & written:
                    del live[reg]
        if _producer_key(st) is not None and len(st.operands) == 3:
            live[st.operands[0].name] = st
    return statements
