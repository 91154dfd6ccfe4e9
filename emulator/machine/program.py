"""Compiling a PTX function body into flat code: resolved labels, per-function registers, calls,
barriers, and the per-thread ``.param`` / ``.local`` and shared addresses handed out while compiling."""
from dataclasses import dataclass

import numpy as np

from isa.types import SPECIAL_REGISTERS, TYPES, name_width, type_width
from ..frontend import ptx
from ..errors import (EmulatorError, OperandError, PTXSyntaxError, UnsupportedError)
from ..frontend.contract import contract
from ..frontend.module import Function, Variable, parse_variable
from ..memory import LANES, MAX_LOCAL_BYTES, MAX_SHARED_BYTES

# functions a module may declare without a body: the CUDA runtime provides them on the device
BUILTINS = {"vprintf": 2,            # printf(format, argument buffer)
            "__assertfail": 5}       # assert(): (message, file, line, function, char size)


# Compilation: a function body -> flat code with resolved labels

@dataclass
class Op:
    kind: str                  # 'op', 'bra', 'ret', 'exit', 'call', 'bar'
    instr: object
    fn: object = None          # 'op': executor; 'bar': (id reader, count reader or None, red info)
    target: int = 0            # 'bra': pc; 'call': callee entry pc
    guard: object = None       # (reg name, negated) for control flow
    call: object = None        # 'call': CallSite
    env: object = None         # the compile-time scope (register widths, symbols), for the fast engine


@dataclass
class CallSite:
    callee: str
    rets: list                 # caller-side param symbols receiving the return values
    args: list                 # caller-side param symbols holding the arguments


class _Env:
    """Compile-time environment of one scope: register widths, symbols (name -> (space, address))."""

    def __init__(self, arch, reg_types, symbols):
        self.arch = arch
        self.reg_types = reg_types
        self.symbols = symbols

    def reg_width(self, name):
        t = self.reg_types.get(name)
        if t is not None:
            return type_width(t)
        if name in SPECIAL_REGISTERS:
            return SPECIAL_REGISTERS[name]
        return name_width(name)

    def is_register(self, name):
        return name.startswith("%") or name in self.reg_types


def _rename(op, suffix):
    """Give a function's registers a private name (callee frames do not clash with the caller's)."""
    if suffix is None:
        return op
    if isinstance(op, ptx.Reg):
        if op.name in SPECIAL_REGISTERS or op.name == "_" or op.name.startswith(("%envreg", "%pm")):
            return op
        return ptx.Reg(op.name + suffix)
    if isinstance(op, ptx.Mem):
        return ptx.Mem(_rename(op.base, suffix), op.offset) if isinstance(op.base, ptx.Reg) else op
    if isinstance(op, (ptx.Vec, ptx.Pair, ptx.Paren)):
        return type(op)(tuple(_rename(x, suffix) for x in op.items))
    if isinstance(op, ptx.Not):
        return ptx.Not(_rename(op.item, suffix))
    return op


def _rename_in(op, regmap):
    """``op`` with the registers ``regmap`` names renamed (a nested block's own registers)."""
    if isinstance(op, (ptx.Reg, ptx.Sym)):
        return type(op)(regmap[op.name]) if op.name in regmap else op
    if isinstance(op, ptx.Mem):
        return ptx.Mem(_rename_in(op.base, regmap), op.offset) if isinstance(op.base, (ptx.Reg, ptx.Sym)) else op
    if isinstance(op, (ptx.Vec, ptx.Pair, ptx.Paren)):
        return type(op)(tuple(_rename_in(x, regmap) for x in op.items))
    if isinstance(op, ptx.Not):
        return ptx.Not(_rename_in(op.item, regmap))
    return op


class _Layout:
    """Addresses handed out while compiling: per-thread .param and .local bytes, shared offsets."""

    def __init__(self):
        self.param = 0
        self.local = 0
        self.shared = 0
        self.shared_vars = []          # (Variable, offset)
        self.dynamic = []              # extern .shared variables (all at the dynamic window's start)
        self.dyn_align = 16

    def take(self, kind, size, align):
        align = max(int(align), 1)
        cur = getattr(self, kind)
        off = -(-cur // align) * align
        setattr(self, kind, off + max(int(size), 0))
        return off


MAX_REGS = 1 << 18          # registers declared in one program (every function it calls included)
MAX_KERNEL_PARAM_BYTES = 32764      # kernel parameters the H100 accepts (CUDA 12.1 and later)
MAX_PARAM_BYTES = 1 << 20           # .param space of a program: kernel parameters and call arguments


class Program:
    """One entry point and every function it can call, as flat code with per-function registers."""

    def __init__(self, module, entry: Function, arch):
        self.module = module
        self.arch = arch
        # ptxas optimises (and contracts mul/add pairs) unless the module targets debugging (nvcc -G)
        target = getattr(getattr(module, "info", None), "target", "") or ""
        self.contract = "debug" not in [t.strip() for t in target.split(",")[1:]]
        self.code: list[Op] = []
        self.reg_types: dict[str, str] = {}
        self._scopes = 0                        # nested { } blocks with their own registers, numbered
        self.entries: dict[str, int] = {}
        self.formals: dict[str, tuple] = {}     # function -> (param addresses, return addresses)
        self.layout = _Layout()
        self.entry = entry
        self.kernel_params = []                 # (Param, param-space offset)
        base_syms = {}
        for v in module.info.variables.values():
            if v.space == "shared":
                self._place_shared(v, base_syms)
            else:
                base_syms[v.name] = (v.space, 0)             # resolved per GlobalMemory at run time
        for name, fn in module.info.functions.items():
            base_syms.setdefault(name, ("func", 0))
        self.base_syms = base_syms
        todo = [entry.name]
        seen = set()
        pending_calls = []
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            fn = module.info.functions[name]
            self.entries[name] = len(self.code)
            called = self._compile_function(fn, fn is entry, pending_calls)
            todo.extend(c for c in called if c not in seen)
        for op in pending_calls:
            op.target = self.entries.get(op.call.callee, -1)
        self.shared_static = -(-self.layout.shared // 16) * 16
        if self.shared_static > MAX_SHARED_BYTES:
            raise UnsupportedError(f"{entry.name}: {self.shared_static} bytes of static .shared memory; a CTA of "
                                   f"the H100 has at most {MAX_SHARED_BYTES}")
        kparams = sum(p.size for p, _ in self.kernel_params)
        if kparams > MAX_KERNEL_PARAM_BYTES:
            raise UnsupportedError(f"{entry.name}: {kparams} bytes of kernel parameters; the H100 takes at most "
                                   f"{MAX_KERNEL_PARAM_BYTES}")
        if self.layout.param > MAX_PARAM_BYTES:
            raise UnsupportedError(f"{entry.name}: {self.layout.param} bytes of .param space (parameters and call "
                                   f"arguments); at most {MAX_PARAM_BYTES} are supported")
        if self.layout.local > MAX_LOCAL_BYTES:
            raise UnsupportedError(f"{entry.name}: {self.layout.local} bytes of .local memory per thread; the H100 "
                                   f"allows at most {MAX_LOCAL_BYTES}")

    # -- declarations --------------------------------------------------------------------------------
    def _place_shared(self, v: Variable, syms):
        if v.extern or v.count == 0:
            self.layout.dynamic.append(v)
            self.layout.dyn_align = max(self.layout.dyn_align, v.align)
            syms[v.name] = ("shared", lambda warp: np.full(LANES, warp.dynamic_base, np.uint64))
        else:
            off = self.layout.take("shared", v.size, v.align)
            self.layout.shared_vars.append((v, off))
            syms[v.name] = ("shared", off)

    def _declare(self, d: ptx.Directive, syms, suffix, regmap=None):
        if d.name == ".reg":
            try:
                ptype, names = ptx.expand_reg_directive(d, room=MAX_REGS - len(self.reg_types))
            except ValueError as e:
                raise PTXSyntaxError(f"line {d.line}, column {d.col}: .reg: malformed number ({e})") from None
            if ptype not in TYPES:
                raise PTXSyntaxError(f"line {d.line}, column {d.col}: .reg: unknown type .{ptype}; supported: "
                                     f"{', '.join('.' + t for t in TYPES)}")
            if len(names) + len(self.reg_types) > MAX_REGS:
                raise UnsupportedError(f"line {d.line}, column {d.col}: .reg: more registers than the program may "
                                       f"declare ({MAX_REGS} in all)")
            for n in names:
                if regmap:
                    n = regmap.get(n, n)
                self.reg_types[n + suffix if suffix and n.startswith("%") else n] = ptype
            return
        if d.name in (".pragma", ".loc", ".file"):
            return
        if d.name in (".shared", ".local", ".global", ".const", ".param", ".extern"):
            try:
                v = parse_variable([ptx.Token("name", d.name, d.line, d.col)] + list(d.tokens))
            except EmulatorError:
                raise
            if v.space == "shared":
                self._place_shared(v, syms)
            elif v.space == "local":
                syms[v.name] = ("local", self.layout.take("local", v.size, max(v.align, 8)))
            elif v.space == "param":
                syms[v.name] = ("param", self.layout.take("param", max(v.size, 1), max(v.align, 8)))
            else:
                if v.init is not None or v.space in ("global", "const"):
                    self.module.info.variables.setdefault(v.name, v)
                syms[v.name] = (v.space, 0)
                self.module._function_vars.add(v.name)
            return
        raise PTXSyntaxError(f"line {d.line}, column {d.col}: directive {d.name} is not supported inside a "
                             f"function body")

    # -- bodies ------------------------------------------------------------------------------------
    def _compile_function(self, fn: Function, is_entry, pending_calls):
        if fn.body is None:
            raise UnsupportedError(f"line {fn.line}, column {fn.col}: function {fn.name} is declared but has no "
                                   f"body in this module (only {', '.join(sorted(BUILTINS))} are provided by the emulator)")
        suffix = None if is_entry else f"@{fn.name}"
        syms = dict(self.base_syms)
        params, rets = [], []
        for p in fn.params:
            off = self.layout.take("param", p.size, max(p.align, 8))
            syms[p.name] = ("param", off)
            params.append((p, off))
        for p in fn.returns:
            off = self.layout.take("param", p.size, max(p.align, 8))
            syms[p.name] = ("param", off)
            rets.append((p, off))
        if is_entry:
            self.kernel_params = params
        self.formals[fn.name] = (params, rets)
        labels: list[dict] = [{}]   # the scopes around a statement, innermost first (labels are block-scoped)
        fixups = []       # (Op, label, instr, scopes)
        called = []
        self._flatten(fn.body.statements, syms, suffix, labels, fixups, called, pending_calls, is_entry)
        for op, label, instr, scopes in fixups:
            hit = next((sc[label] for sc in scopes if label in sc), None)
            if hit is None:
                raise PTXSyntaxError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unknown label "
                                     f"{label}")
            op.target = hit
        # falling off the end of a body returns
        self.code.append(Op("ret", ptx.Instruction("ret", (), None, fn.body.line, fn.body.col, "ret")))
        return called

    def _flatten(self, statements, syms, suffix, labels, fixups, called, pending_calls, is_entry, regmap=None):
        from ..ops import compile_instruction
        syms = dict(syms)
        nested = regmap is not None
        regmap = dict(regmap or {})
        # declarations first: PTX scopes see every name declared anywhere in the block. A register declared in a
        # nested { } block is that block's own (inline asm blocks reuse names such as a0 with other types): it
        # gets a private name, as a callee's registers do
        for st in statements:
            if isinstance(st, ptx.Directive):
                if nested and st.name == ".reg":
                    self._scopes += 1
                    try:
                        _, names = ptx.expand_reg_directive(st, room=MAX_REGS - len(self.reg_types))
                    except ValueError:
                        names = []
                    for n in names:
                        regmap[n] = f"{n}${self._scopes}"
                self._declare(st, syms, suffix, regmap if nested else None)
        env = _Env(self.arch, self.reg_types, syms)
        if suffix is not None:
            statements = [ptx.Instruction(st.opcode, tuple(_rename(o, suffix) for o in st.operands),
                                          (_rename(st.guard[0], suffix), st.guard[1]) if st.guard else None,
                                          st.line, st.col, st.text) if isinstance(st, ptx.Instruction) else st
                          for st in statements]
        if regmap:
            statements = [ptx.Instruction(st.opcode, tuple(_rename_in(o, regmap) for o in st.operands),
                                          (_rename_in(st.guard[0], regmap), st.guard[1]) if st.guard else None,
                                          st.line, st.col, st.text) if isinstance(st, ptx.Instruction) else st
                          for st in statements]
        if self.contract:
            contract(statements)          # ptxas's mul/add -> fma contraction (frontend/contract.py)
        for st in statements:
            if isinstance(st, ptx.Directive):
                continue
            if isinstance(st, ptx.Label):
                if st.name in labels[0]:
                    raise PTXSyntaxError(f"line {st.line}, column {st.col}: label {st.name} defined twice")
                labels[0][st.name] = len(self.code)
                continue
            if isinstance(st, ptx.Block):     # a { } block: its labels are its own (inline asm repeats them)
                self._flatten(st.statements, syms, suffix, [{}] + labels, fixups, called, pending_calls, is_entry,
                              regmap)
                continue
            instr = st
            guard = (instr.guard[0].name, instr.guard[1]) if instr.guard else None
            base = instr.base
            if base in ("bra", "brx"):
                if base == "brx":
                    raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: indirect "
                                           f"branches are not supported; supported: bra, bra.uni")
                _check_mods(instr, {"uni"})
                if len(instr.operands) != 1 or not isinstance(instr.operands[0], ptx.Sym):
                    raise OperandError(f"line {instr.line}, column {instr.col}: {instr.opcode}: takes one label")
                op = Op("bra", instr, guard=guard, env=env)
                fixups.append((op, instr.operands[0].name, instr, labels))
            elif base in ("ret", "exit"):
                _check_mods(instr, {"uni"})
                if instr.operands:
                    raise OperandError(f"line {instr.line}, column {instr.col}: {instr.opcode}: takes no operands")
                op = Op("exit" if base == "exit" else "ret", instr, guard=guard, env=env)
            elif base == "call":
                op = self._compile_call(instr, env, guard)
                if op.call.callee not in BUILTINS:
                    called.append(op.call.callee)
                    pending_calls.append(op)
            elif base == "barrier" and "cluster" in instr.mods:        # ops.cluster: it stalls like try_wait
                op = Op("op", instr, fn=compile_instruction(instr, env))
            elif base in ("bar", "barrier"):
                op = self._compile_bar(instr, env, guard)
            else:
                op = Op("op", instr, fn=compile_instruction(instr, env))
            op.env = env
            self.code.append(op)

    def _compile_call(self, instr, env, guard):
        _check_mods(instr, {"uni"})
        ops = list(instr.operands)
        where = f"line {instr.line}, column {instr.col}: {instr.opcode}"
        rets = []
        if ops and isinstance(ops[0], ptx.Paren):
            rets = [o.name for o in ops.pop(0).items if isinstance(o, ptx.Sym)]
        if not ops or not isinstance(ops[0], ptx.Sym):
            raise OperandError(f"{where}: expected the called function's name (indirect calls are not supported)")
        callee = ops.pop(0).name
        args = []
        if ops and isinstance(ops[0], ptx.Paren):
            args = [o.name for o in ops.pop(0).items if isinstance(o, ptx.Sym)]
        if ops:
            raise OperandError(f"{where}: unexpected operands after the argument list (prototype-based calls "
                               f"are not supported)")
        for n in rets + args:
            if env.symbols.get(n, ("",))[0] != "param":
                raise OperandError(f"{where}: {n} is not a .param variable of this scope")
        if callee not in BUILTINS and callee not in self.module.info.functions:
            raise OperandError(f"{where}: unknown function {callee}")
        if callee not in BUILTINS and self.module.info.functions[callee].kind == "entry":
            raise OperandError(f"{where}: {callee} is a kernel (.entry), not a .func")
        site = CallSite(callee, [env.symbols[n][1] for n in rets], [env.symbols[n][1] for n in args])
        if callee not in BUILTINS:
            fn = self.module.info.functions[callee]
            if len(args) != len(fn.params) or len(rets) != len(fn.returns):
                raise OperandError(f"{where}: {callee} takes {len(fn.params)} argument(s) and returns "
                                   f"{len(fn.returns)} value(s); the call passes {len(args)} and receives {len(rets)}")
        elif len(args) != BUILTINS[callee]:
            raise OperandError(f"{where}: {callee} takes {BUILTINS[callee]} arguments")
        return Op("call", instr, guard=guard, call=site)

    def _compile_bar(self, instr, env, guard):
        from ..ops.common import dst, src
        where = f"line {instr.line}, column {instr.col}: {instr.opcode}"
        mods = instr.mods
        kind = None
        red = None
        for m in mods:
            if m in ("sync", "arrive", "red"):
                kind = m
        if instr.base == "bar" and mods and mods[0] == "warp":
            return Op("op", instr, fn=_compile_warp_sync(instr, env))
        allowed = {"sync", "arrive", "red", "aligned", "cta", "popc", "and", "or", "u32", "pred"}
        bad = [m for m in mods if m not in allowed]
        if bad or kind is None:
            raise UnsupportedError(f"{where}: unsupported; supported: bar{{.cta}}.sync/.arrive/.red, "
                                   f"barrier{{.cta}}{{.aligned}}.sync/.arrive/.red, bar.warp.sync")
        ops = list(instr.operands)
        aligned = instr.base == "bar" or "aligned" in mods
        if kind == "red":
            rop = next((m for m in mods if m in ("popc", "and", "or")), None)
            if rop is None or len(ops) not in (3, 4):
                raise OperandError(f"{where}: bar.red.{{popc.u32,and.pred,or.pred}} d, a{{, b}}, {{!}}c")
            dtype = "u32" if rop == "popc" else "pred"
            red = (rop, dst(env, ops[0], dtype, instr), src(env, ops[-1], "pred", instr))
            ops = ops[1:-1]
        if not 1 <= len(ops) <= 2:
            raise OperandError(f"{where}: takes a barrier number and an optional thread count")
        bid = src(env, ops[0], "u32", instr)
        cnt = src(env, ops[1], "u32", instr) if len(ops) == 2 else None
        return Op("bar", instr, fn=(bid, cnt, red, kind, aligned), guard=guard)


def _check_mods(instr, allowed):
    bad = [m for m in instr.mods if m not in allowed]
    if bad:
        raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unsupported qualifier "
                               f".{bad[0]}; supported: {', '.join('.' + a for a in sorted(allowed)) or 'none'}")


def _compile_warp_sync(instr, env):
    from ..ops.common import src
    if len(instr.operands) != 1:
        raise OperandError(f"{instr.opcode}: bar.warp.sync takes a membermask")
    m = src(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        from ..ops.warpops import _member_check
        members = m(warp) & np.uint32(warp.present_bits)
        _member_check(instr, mask, members)
    return run


# ------------------------------------------------------------------------------------------------
# Run time
