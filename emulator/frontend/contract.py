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
* both unguarded;
* **every** reader of the product is such an add/sub: a product that anything else also reads (a store, a
  ``cvt``, another ``mul``, an ``fma``, an ``add.rn``, ``abs``...) is kept as an FMUL and no reader is fused
  (checked on ptxas 13's SASS and on the H100, ``tools/hwcapture/contract.py``; Liger-Kernel's layer norm
  stores the mean ``div.full`` computes and subtracts it from every element: FMUL, then FADDs);
* when the product and its factors are each written once in the function (Triton's and nvcc's SSA form), the
  readers may lie anywhere (ptxas fuses across branches and labels), but several readers spread over basic
  blocks are refused (UnsupportedError): ptxas fuses them or not depending on whether it if-converts the blocks
  (``tests/ptxas_probes.py``: two adds, one in a short branch-over block, are both left unfused on the H100);
  otherwise they must lie in one
  straight-line run (no branch, branch target, call or barrier between; labels nothing branches to, such as
  Triton's ``$L__tmp`` debug labels, do not end a run), before the product or a factor is written again, and
  the product must be written again inside the run, or be written only once in the function with every
  reader inside the run, or the function must end there (else readers beyond it may exist: not fused). nvcc
  writes ``mul`` of a wgmma accumulator register (written by every wgmma of the loop) into a fresh register
  that one ``sub`` reads a few lines later (ThunderKittens' attention: ``att * scale - max``): one FFMA.
``{ }`` blocks are entered, since nvcc wraps each half-precision intrinsic in one.

A module whose ``.target`` carries ``debug`` (``nvcc -G``) is compiled without optimisation: nothing is
fused there (``machine/program.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ptx
from ..errors import UnsupportedError

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


def _all_regs(ops):
    """Every register an operand list names (vectors, pairs, addresses, negations included)."""
    out = set()
    for o in ops:
        if isinstance(o, ptx.Reg):
            out.add(o.name)
        elif isinstance(o, (ptx.Vec, ptx.Pair, ptx.Paren)):
            out |= _all_regs(o.items)
        elif isinstance(o, ptx.Mem) and isinstance(o.base, ptx.Reg):
            out.add(o.base.name)
        elif isinstance(o, ptx.Not):
            out |= _all_regs((o.item,))
    return out


_READS_FIRST = ("wgmma", "mma", "wmma", "st", "red", "prefetch", "cp", "bar", "barrier", "mbarrier")


def _reads(instr):
    ops = instr.operands
    r = _all_regs(ops[1:])
    if ops and (not isinstance(ops[0], (ptx.Reg, ptx.Vec)) or instr.base in _READS_FIRST):
        r |= _all_regs(ops[:1])
    if instr.guard is not None:
        r.add(instr.guard[0].name)
    return r


def _writes(instr):
    ops = instr.operands
    if not ops or instr.base in ("st", "red", "prefetch", "bar", "barrier"):
        return set()
    return _regs(ops[:1]) | (_all_regs(ops[:1]) if isinstance(ops[0], ptx.Pair) else set())


def _flat(statements):
    """Instructions and labels in order, entering ``{ }`` blocks (nvcc wraps each inline-asm intrinsic in one)."""
    for st in statements:
        if isinstance(st, ptx.Block):
            yield from _flat(st.statements)
        elif isinstance(st, (ptx.Instruction, ptx.Label)):
            yield st


def _branch_targets(statements):
    """The labels the ``.branchtargets`` lists of ``statements`` name (``{ }`` blocks entered)."""
    out = set()
    for st in statements:
        if isinstance(st, ptx.Block):
            out |= _branch_targets(st.statements)
        elif isinstance(st, ptx.Directive) and st.name == ".branchtargets":
            out |= {t.text for t in st.tokens if t.kind == "name" and not t.text.startswith(".")}
    return out


def _consumer(instr, product, key):
    """Which source (0 or 1) of ``instr`` is ``product`` if ``instr`` is an add/sub ptxas can fuse with it."""
    if instr.base not in ("add", "sub") or instr.guard is not None or len(instr.operands) != 3 or \
            _fp(instr) != key:
        return None
    hits = [i for i in (0, 1) if isinstance(instr.operands[1 + i], ptx.Reg) and
            instr.operands[1 + i].name == product]
    if len(hits) != 1 or product in _all_regs(instr.operands[:1]) - _regs(instr.operands[:1]):
        return None
    return hits[0]


def _mark(producer, consumers, nreaders=None):
    """Fuse ``producer`` into each consumer. An add/sub whose two sources are both fusable products keeps the
    product with fewer readers (ptxas fuses the one that then dies: ``att * scale - max * scale`` in
    ThunderKittens' attention is FFMA(att, scale, -m) with m = FMUL(max, scale) shared by the row)."""
    for c, i in consumers:
        old = getattr(c, "contract", None)
        if old is not None and old.producer is not producer and nreaders is not None and \
                nreaders(old.producer) <= nreaders(producer):
            continue
        sub = c.base == "sub"
        c.contract = Contract(producer, i, negate_product=sub and i == 1, negate_other=sub and i == 0)


def contract(statements):
    """Mark the add/sub instructions of ``statements`` (a whole function body) that ptxas fuses with a
    multiply (see the module's rule)."""
    items = list(_flat(statements))
    instrs = [st for st in items if isinstance(st, ptx.Instruction)]
    targets = {o.name for st in instrs if st.base in ("bra", "brx") for o in st.operands if isinstance(o, ptx.Sym)}
    targets |= _branch_targets(statements)      # brx.idx jumps to the labels of a .branchtargets list
    ndefs, readers = {}, {}
    for j, st in enumerate(instrs):
        for r in _writes(st):
            ndefs[r] = ndefs.get(r, 0) + 1
        for r in _reads(st):
            readers.setdefault(r, []).append(j)
    def nread(producer):
        return len(readers.get(producer.operands[0].name, ()))
    block, b = {}, 0                            # basic blocks: a branch target starts one, a branch ends one
    for st in items:
        if isinstance(st, ptx.Label):
            if st.name in targets:
                b += 1
            continue
        block[id(st)] = b
        if st.base in ("bra", "brx", "ret", "exit"):
            b += 1
    done = set()
    # products and factors defined once in the function (the SSA form Triton and nvcc write): every reader of
    # the product sees it, wherever it is; ptxas fuses when every reader is a fusable add/sub
    for j, p in enumerate(instrs):
        key = _producer_key(p)
        if key is None or len(p.operands) != 3 or getattr(p, "folded", None) is not None:
            continue
        prod = p.operands[0].name
        if ndefs.get(prod) != 1 or any(ndefs.get(f, 0) > 1 for f in _all_regs(p.operands[1:])):
            continue
        done.add(id(p))
        rs = readers.get(prod, [])
        if not rs or min(rs) <= j:
            continue
        cons = [(instrs[k], _consumer(instrs[k], prod, key)) for k in rs]
        if not all(i is not None for _, i in cons):
            continue
        if len(cons) > 1 and any(block[id(c)] != block[id(p)] for c, _ in cons):
            raise UnsupportedError(
                f"line {p.line}, column {p.col}: {p.text or p.opcode}: its result is read by unrounded add/sub "
                f"instructions in several basic blocks (lines {', '.join(str(c.line) for c, _ in cons)}); whether "
                f"ptxas fuses them into FFMAs depends on how it if-converts those blocks (a short branch-over "
                f"block becomes predicated instructions, and then nothing is fused), which the emulator does not "
                f"model; round the product explicitly (mul.rn) or fuse it (fma.rn)")
        _mark(p, cons, nread)
    # other products: within a straight-line run (no branch, no branch target, no barrier), fused when every
    # read of the product until it is written again is a fusable add/sub (a product still live where the run
    # ends may have readers beyond it: not fused)
    live = {}                                   # product register -> [producer, consumers, ok, factors ok]
    factor_of = {}                              # factor register -> live product registers
    for st in items + [None]:
        if st is None or isinstance(st, ptx.Instruction) and st.base in ("ret", "exit") and st.guard is None:
            for rec in live.values():           # the function ends: every reader was seen
                if rec[2] and rec[1]:
                    _mark(rec[0], rec[1], nread)
        if st is None or isinstance(st, ptx.Label) and st.name in targets or \
                isinstance(st, ptx.Instruction) and st.base in _BARRIERS:
            for reg, rec in live.items():       # a product written once whose every reader lies in the run
                if rec[2] and rec[1] and ndefs.get(reg) == 1 and len(rec[1]) == len(readers.get(reg, ())):
                    _mark(rec[0], rec[1], nread)
            live.clear()
            factor_of.clear()
            if st is None or isinstance(st, ptx.Label):
                continue
        if isinstance(st, ptx.Label):
            continue
        if live:
            for reg in _reads(st) & live.keys():
                rec = live[reg]
                i = _consumer(st, reg, _producer_key(rec[0]))
                if i is None or not rec[3]:
                    rec[2] = False
                else:
                    rec[1].append((st, i))
            written = _writes(st)
            for reg in written & live.keys():       # the product's life ends here: decide
                rec = live.pop(reg)
                if rec[2] and rec[1]:
                    _mark(rec[0], rec[1], nread)
            for w in written:
                for reg in factor_of.pop(w, ()):
                    if reg in live:
                        live[reg][3] = False        # a factor changed: later readers cannot be fused
        if id(st) not in done and _producer_key(st) is not None and len(st.operands) == 3 and \
                getattr(st, "folded", None) is None:
            reg = st.operands[0].name
            live[reg] = [st, [], True, True]
            for f in _all_regs(st.operands[1:]):
                factor_of.setdefault(f, set()).add(reg)
    return statements
