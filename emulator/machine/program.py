"""Compiling a PTX function body into flat code: resolved labels, per-function registers, calls,
barriers, and the per-thread ``.param`` / ``.local`` and shared addresses handed out while compiling."""
from dataclasses import dataclass

import numpy as np

from isa.types import SPECIAL_REGISTERS, TYPES, name_width, type_width
from ..frontend import ptx
from ..errors import (EmulatorError, OperandError, PTXSyntaxError, UnsupportedError)
from ..frontend.constfold import fold_constants
from ..frontend.contract import contract
from ..frontend.module import Function, Variable, parse_variable
from ..memory import LANES, MAX_LOCAL_BYTES, MAX_SHARED_BYTES

# functions a module may declare without a body: the CUDA runtime provides them on the device
BUILTINS = {"vprintf": 2,            # printf(format, argument buffer)
            "__assertfail": 5}       # assert(): (message, file, line, function, char size)


# Compilation: a function body -> flat code with resolved labels

EAGER_FNS = 2048     # a program's first instructions keep their compiled executors; later ones compile on use


class Op:
    """One instruction of the flat code. Control operations: 'bra' (``target``), 'brx' (``brx.idx``: the
    ``targets`` of its ``.branchtargets`` list, the index reader in ``fn``), 'ret', 'exit', 'call' (``call``,
    a :class:`CallSite`; ``target`` is the callee's entry, -1 for an indirect call) and 'bar'. ``successors``
    lists where control can go next inside the function (the basis of a control-flow graph).

    An 'op' compiled past the first ``EAGER_FNS`` instructions of a program does not hold its executor: it was
    compiled once (every error is raised at load) and is compiled again the first time it runs on the
    reference executors (``fn``), so that a long kernel costs little memory per instruction."""
    __slots__ = ("kind", "instr", "_fn", "target", "guard", "call", "env", "targets", "_sync_point")

    def __init__(self, kind, instr, fn=None, target=0, guard=None, call=None, env=None, targets=None):
        self.kind = kind           # 'op', 'bra', 'brx', 'ret', 'exit', 'call', 'bar'
        self.instr = instr
        self._fn = fn              # 'op': executor; 'bar': (id reader, count reader or None, red info); 'brx': index
        self.target = target       # 'bra': pc; 'call': callee entry pc (-1: indirect, resolved per lane at run time)
        self.guard = guard         # (reg name, negated) for control flow
        self.call = call           # 'call': CallSite
        self.env = env             # the compile-time scope (register widths, symbols), for the fast engine
        self.targets = targets     # 'brx': the pc of each entry of the .branchtargets list, in order

    @property
    def fn(self):
        f = self._fn
        if f is None and self.kind == "op":       # compiled again on first use (see the class docstring)
            from ..ops import compile_instruction
            f = self._fn = compile_instruction(self.instr, self.env)
        return f

    @fn.setter
    def fn(self, value):
        self._fn = value

    def __repr__(self):
        return f"Op({self.kind!r}, {str(self.instr)!r})"

    @property
    def aligned_sync(self):
        """A ``.sync.aligned`` instruction (``wgmma.fence.sync.aligned``, ``ldmatrix.sync.aligned``, ...)."""
        mods = getattr(self.instr, "mods", ())
        return "sync" in mods and "aligned" in mods

    def successors(self, pc):
        """The PCs that can run after this instruction at ``pc`` in the same function: the fall-through
        (``pc + 1``) unless the instruction always leaves, and every branch target. ``ret`` and ``exit`` have
        none (unless guarded); a call continues at ``pc + 1`` (its callee's body is another function)."""
        if self.kind == "bra":
            nxt = [self.target]
        elif self.kind == "brx":
            nxt = list(dict.fromkeys(self.targets))
        elif self.kind in ("ret", "exit"):
            nxt = []
        else:
            return [pc + 1]
        if self.guard is not None and pc + 1 not in nxt:
            nxt.append(pc + 1)
        return nxt


@dataclass
class CallSite:
    callee: str                # None for an indirect call (through a register holding a function address)
    rets: list                 # caller-side param symbols receiving the return values
    args: list                 # caller-side param symbols holding the arguments
    fptr: object = None        # indirect: reader of the function address (uint64 per lane)
    allowed: tuple = None      # indirect: the functions a .calltargets list allows (None: any)
    proto: tuple = None        # indirect: (return count, argument count) of the .callprototype, if given


# Function addresses (``mov.u64 %rd, func``, function names in initializers): the k-th function of the module
# is at FUNCTION_BASE + k * FUNCTION_STRIDE. They fit 32 bits, as ptxas lets a .u32 register hold one; they are
# the emulator's own numbers (the H100's are code offsets), only good for calling through.
FUNCTION_BASE = 0xF000_0000
FUNCTION_STRIDE = 0x100
TARGET_LISTS = (".branchtargets", ".calltargets", ".callprototype")


def function_address(info, name):
    """The address of function ``name`` of a parsed module (``info.functions``)."""
    return FUNCTION_BASE + FUNCTION_STRIDE * list(info.functions).index(name)


def function_at(info, address):
    """The name of the function at ``address``, or None."""
    k, r = divmod(int(address) - FUNCTION_BASE, FUNCTION_STRIDE)
    names = list(info.functions)
    return names[k] if r == 0 and 0 <= k < len(names) else None


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


def _suffixed(statements, suffix):
    """A callee's statements with its registers renamed (``_rename``), nested blocks included."""
    if suffix is None:
        return statements
    out = []
    for st in statements:
        if isinstance(st, ptx.Instruction):
            st = ptx.Instruction(st.opcode, tuple(_rename(o, suffix) for o in st.operands),
                                 (_rename(st.guard[0], suffix), st.guard[1]) if st.guard else None,
                                 st.line, st.col, st.text)
        elif isinstance(st, ptx.Block):
            st = ptx.Block(_suffixed(st.statements, suffix), st.line, st.col)
        out.append(st)
    return out


def _block_regs(statements):
    """The register names a ``{ }`` block declares itself (its .reg directives, not its nested blocks')."""
    names = []
    for st in statements:
        if isinstance(st, ptx.Directive) and st.name == ".reg":
            try:
                names.extend(ptx.expand_reg_directive(st)[1])
            except (ValueError, EmulatorError):
                pass              # _declare reports it
    return names


def _scope(statements, mapping, suffix=None):
    """A block's statements with the registers of ``mapping`` renamed, nested blocks included except where
    one declares the name again (its own declaration hides the outer one)."""
    def ren(op):
        if isinstance(op, (ptx.Reg, ptx.Sym)):       # names without '%' are parsed as symbols
            return type(op)(mapping[op.name]) if op.name in mapping else op
        if isinstance(op, ptx.Mem):
            return ptx.Mem(ren(op.base), op.offset) if op.base is not None else op
        if isinstance(op, (ptx.Vec, ptx.Pair, ptx.Paren)):
            return type(op)(tuple(ren(x) for x in op.items))
        if isinstance(op, ptx.Not):
            return ptx.Not(ren(op.item))
        return op
    out = []
    for st in statements:
        if isinstance(st, ptx.Instruction):
            st = ptx.Instruction(st.opcode, tuple(ren(o) for o in st.operands),
                                 (ren(st.guard[0]), st.guard[1]) if st.guard else None, st.line, st.col, st.text)
        elif isinstance(st, ptx.Block):
            inner = {n + suffix if suffix and n.startswith("%") else n for n in _block_regs(st.statements)}
            sub = {k: v for k, v in mapping.items() if k not in inner}
            st = ptx.Block(_scope(st.statements, sub, suffix) if sub else st.statements, st.line, st.col)
        out.append(st)
    return out


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
        self._nblocks = 0                      # { } blocks that declare registers (their names get {k})
        self._block_scopes = {}                # id(block) -> {declared name: its name in the program}
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
            base_syms.setdefault(name, ("func", function_address(module.info, name)))
        self.base_syms = base_syms
        todo = [entry.name]
        seen = set()
        pending_calls = []
        self.indirect = False          # an indirect call: every function with a body may be called
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            fn = module.info.functions[name]
            self.entries[name] = len(self.code)
            called = self._compile_function(fn, fn is entry, pending_calls)
            todo.extend(c for c in called if c not in seen)
            if not todo and self.indirect:
                todo = [n for n, f in module.info.functions.items() if n not in seen and f.kind == "func" and
                        f.body is not None]
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

    def _declare(self, d: ptx.Directive, syms, suffix, scoped=None):
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
                n = n + suffix if suffix and n.startswith("%") else n     # as _rename names them
                self.reg_types[scoped.get(n, n) if scoped else n] = ptype
            return
        if d.name in (".pragma", ".loc", ".file") or d.name in TARGET_LISTS:     # lists: see _flatten
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
        fixups = []       # (Op, label, instr, scopes[, index in a brx's targets])
        called = []
        body = self._scope_blocks(_suffixed(fn.body.statements, suffix), suffix)
        if self.contract:                 # (a `.target ..., debug` module is compiled without optimisation)
            fold_constants(body)          # what ptxas evaluates at compile time (frontend/constfold.py)
            contract(body)                # ptxas's mul/add -> fma contraction (frontend/contract.py)
        self._flatten(body, syms, suffix, labels, fixups, called, pending_calls, is_entry)
        for op, label, instr, scopes, *slot in fixups:
            hit = next((sc[label] for sc in scopes if label in sc), None)
            if hit is None:
                raise PTXSyntaxError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unknown label "
                                     f"{label}")
            if slot:
                op.targets[slot[0]] = hit
            else:
                op.target = hit
        # falling off the end of a body returns
        self.code.append(Op("ret", ptx.Instruction("ret", (), None, fn.body.line, fn.body.col, "ret")))
        return called

    def _scope_blocks(self, statements, suffix):
        """The statements with the registers each ``{ }`` block declares renamed to names of their own,
        ``a0{7}`` (Triton's inline asm declares ``a0`` as .b32 in one block and as .f16 in the next); the
        renaming of each block is kept for its .reg directives (``_block_scopes``)."""
        out = []
        for st in statements:
            if isinstance(st, ptx.Block):
                own = [n + suffix if suffix and n.startswith("%") else n for n in _block_regs(st.statements)]
                inner = st.statements
                mapping = None
                if own:
                    self._nblocks += 1
                    mapping = {n: f"{n}{{{self._nblocks}}}" for n in own}
                    inner = _scope(inner, mapping, suffix)
                st = ptx.Block(self._scope_blocks(inner, suffix), st.line, st.col)
                if mapping:
                    self._block_scopes[id(st)] = mapping
            out.append(st)
        return out

    def _flatten(self, statements, syms, suffix, labels, fixups, called, pending_calls, is_entry, scoped=None):
        from ..ops import compile_instruction
        syms = dict(syms)
        # declarations first: PTX scopes see every name declared anywhere in the block
        for st in statements:
            if isinstance(st, ptx.Directive):
                self._declare(st, syms, suffix, scoped)
        env = _Env(self.arch, self.reg_types, syms)
        # 'name: .branchtargets L1, L2;' / '.calltargets f, g;' / '.callprototype ...': a named list, not a code
        # label; kept in the scope under ("list", name) beside the labels
        lists = set()
        for a, b in zip(statements, statements[1:]):
            if isinstance(a, ptx.Label) and isinstance(b, ptx.Directive) and b.name in TARGET_LISTS:
                if ("list", a.name) in labels[0]:
                    raise PTXSyntaxError(f"line {a.line}, column {a.col}: {a.name} defined twice")
                labels[0][("list", a.name)] = b
                lists.add(id(a))
        for st in statements:
            if isinstance(st, ptx.Directive):
                continue
            if isinstance(st, ptx.Label) and id(st) in lists:
                continue
            if isinstance(st, ptx.Label):
                if st.name in labels[0]:
                    raise PTXSyntaxError(f"line {st.line}, column {st.col}: label {st.name} defined twice")
                labels[0][st.name] = len(self.code)
                continue
            if isinstance(st, ptx.Block):     # a { } block: its labels are its own (inline asm repeats them)
                self._flatten(st.statements, syms, suffix, [{}] + labels, fixups, called, pending_calls, is_entry,
                              self._block_scopes.get(id(st)))
                continue
            instr = st
            guard = (instr.guard[0].name, instr.guard[1]) if instr.guard else None
            base = instr.base
            if base == "brx":
                op = self._compile_brx(instr, env, guard, labels, fixups)
            elif base == "bra":
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
                op = self._compile_call(instr, env, guard, labels)
                if op.call.callee is None:
                    self.indirect = True
                    pending_calls.append(op)
                elif op.call.callee not in BUILTINS:
                    called.append(op.call.callee)
                    pending_calls.append(op)
            elif base == "barrier" and "cluster" in instr.mods:        # ops.cluster: it stalls like try_wait
                op = Op("op", instr, fn=compile_instruction(instr, env))
            elif base in ("bar", "barrier"):
                op = self._compile_bar(instr, env, guard)
            elif getattr(instr, "folded", None) is not None:     # ptxas's compile-time value (frontend/constfold.py)
                mov = ptx.Instruction("mov.b32", (instr.operands[0], ptx.Imm(instr.folded, "int", f"{instr.folded:#x}")),
                                      instr.guard, instr.line, instr.col, instr.text)
                fn = compile_instruction(mov, env)
                op = Op("op", mov, fn=fn if len(self.code) < EAGER_FNS else None)
            else:
                fn = compile_instruction(instr, env)
                op = Op("op", instr, fn=fn if len(self.code) < EAGER_FNS else None)
            op.env = env
            self.code.append(op)

    def _compile_brx(self, instr, env, guard, labels, fixups):
        """brx.idx{.uni} index, list: jump to the index-th label of a .branchtargets list declared before it in
        this scope or an enclosing one; index a .b32 register or an immediate."""
        from ..ops.common import src
        where = f"line {instr.line}, column {instr.col}: {instr.opcode}"
        if not instr.mods or instr.mods[0] != "idx" or any(m != "uni" for m in instr.mods[1:]):
            raise UnsupportedError(f"{where}: unsupported; supported: brx.idx, brx.idx.uni")
        if len(instr.operands) != 2 or not isinstance(instr.operands[1], ptx.Sym):
            raise OperandError(f"{where}: brx.idx takes an index and the name of a .branchtargets list")
        name = instr.operands[1].name
        d = next((sc[("list", name)] for sc in labels if ("list", name) in sc), None)
        if d is None or d.name != ".branchtargets":
            raise OperandError(f"{where}: {name} is not a .branchtargets list of this scope")
        idx_op = instr.operands[0]
        if isinstance(idx_op, ptx.Reg) and env.reg_width(idx_op.name) != 32:
            raise OperandError(f"{where}: the index {idx_op.name} must be a 32-bit register "
                               f"({env.reg_width(idx_op.name)}-bit)")
        names = _list_names(d, where, ".branchtargets")
        op = Op("brx", instr, fn=src(env, idx_op, "u32", instr), guard=guard, env=env, targets=[0] * len(names))
        for k, label in enumerate(names):
            fixups.append((op, label, instr, labels, k))
        return op

    def _compile_call(self, instr, env, guard, labels=()):
        _check_mods(instr, {"uni"})
        ops = list(instr.operands)
        where = f"line {instr.line}, column {instr.col}: {instr.opcode}"
        rets = []
        if ops and isinstance(ops[0], ptx.Paren):
            rets = [o.name for o in ops.pop(0).items if isinstance(o, ptx.Sym)]
        if ops and (isinstance(ops[0], ptx.Reg) or isinstance(ops[0], ptx.Sym) and ops[0].name in env.reg_types):
            return self._compile_indirect(instr, env, guard, labels, ops, rets, where)
        if not ops or not isinstance(ops[0], ptx.Sym):
            raise OperandError(f"{where}: expected the called function's name or a register holding its address")
        callee = ops.pop(0).name
        args = []
        if ops and isinstance(ops[0], ptx.Paren):
            args = [o.name for o in ops.pop(0).items if isinstance(o, ptx.Sym)]
        if ops:
            raise OperandError(f"{where}: unexpected operands after the argument list (a .callprototype or "
                               f".calltargets list follows a function address in a register, not a name)")
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

    def _compile_indirect(self, instr, env, guard, labels, ops, rets, where):
        """call{.uni} (rets), fptr, (args), list: the function whose address the register holds, checked against
        the .callprototype or .calltargets list at run time (the callee of each lane)."""
        from ..ops.common import src
        reg = ops.pop(0)
        width = env.reg_width(reg.name)
        if width not in (32, 64):
            raise OperandError(f"{where}: the function address {reg.name} must be a 32- or 64-bit register")
        fptr = src(env, reg, "u64" if width == 64 else "u32", instr)
        args = []
        if ops and isinstance(ops[0], ptx.Paren):
            args = [o.name for o in ops.pop(0).items if isinstance(o, ptx.Sym)]
        if len(ops) != 1 or not isinstance(ops[0], ptx.Sym):
            raise OperandError(f"{where}: an indirect call ends with a .callprototype or .calltargets list")
        name = ops[0].name
        d = next((sc[("list", name)] for sc in labels if ("list", name) in sc), None)
        if d is None or d.name not in (".callprototype", ".calltargets"):
            raise OperandError(f"{where}: {name} is not a .callprototype or .calltargets list of this scope")
        for n in rets + args:
            if env.symbols.get(n, ("",))[0] != "param":
                raise OperandError(f"{where}: {n} is not a .param variable of this scope")
        allowed = proto = None
        if d.name == ".calltargets":
            allowed = tuple(_list_names(d, where, ".calltargets"))
            for f in allowed:
                if f not in self.module.info.functions or self.module.info.functions[f].kind != "func":
                    raise OperandError(f"{where}: .calltargets names {f}, which is not a .func of this module")
        else:
            proto = _prototype(d, where)
            if proto != (len(rets), len(args)):
                raise OperandError(f"{where}: the prototype {name} returns {proto[0]} value(s) and takes "
                                   f"{proto[1]} argument(s); the call receives {len(rets)} and passes {len(args)}")
        site = CallSite(None, [env.symbols[n][1] for n in rets], [env.symbols[n][1] for n in args], fptr=fptr,
                        allowed=allowed, proto=proto)
        return Op("call", instr, guard=guard, call=site, target=-1)

    def callee_at(self, instr, address, lane):
        """The function an indirect call reaches at ``address`` (EmulatorError when it is none)."""
        name = function_at(self.module.info, address)
        if name is None or name not in self.entries or self.module.info.functions[name].kind != "func":
            from ..errors import fail
            what = "a kernel (.entry), which cannot be called" if name is not None and \
                self.module.info.functions[name].kind == "entry" else "not the address of a function of this module"
            fail(OperandError, instr.text or instr.opcode, f"calls through address {int(address):#x}: {what}",
                 lane)
        return name

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


def _list_names(d, where, what):
    """The names of a .branchtargets / .calltargets list, in order."""
    names, expect_name = [], True
    for t in d.tokens:
        if t.text == ",":
            if expect_name:
                break
            expect_name = True
        elif expect_name and t.kind == "name" and not t.text.startswith("."):
            names.append(t.text)
            expect_name = False
        else:
            expect_name = None
            break
    if not names or expect_name is None or expect_name:
        raise PTXSyntaxError(f"{where}: malformed {what} list (names separated by commas)")
    return names


def _prototype(d, where):
    """A .callprototype's (return count, argument count): '(.param .b32 _) _ (.param .b64 _, ...)' or
    '_ (...)' without a return value."""
    toks = [t.text for t in d.tokens]
    groups, depth, cur = [], 0, None
    for t in toks:
        if t == "(":
            depth += 1
            if depth == 1:
                cur = []
                groups.append((len(groups), cur))
            continue
        if t == ")":
            depth -= 1
            continue
        if depth >= 1:
            cur.append(t)
    if "_" not in toks or depth:
        raise PTXSyntaxError(f"{where}: malformed .callprototype (expected '(.param .bN _) _ (.param .bN _, ...)')")

    def count(g):
        return 0 if not g else 1 + sum(1 for t in g if t == ",")
    if toks[0] == "(":
        rets = count(groups[0][1])
        args = count(groups[1][1]) if len(groups) > 1 else 0
    else:
        rets, args = 0, count(groups[0][1]) if groups else 0
    return rets, args


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
        _member_check(instr, mask, members, warp)
        if warp.san is not None:
            warp.san.warp_sync(warp, mask & (((members >> np.arange(32, dtype=np.uint32)) & 1) != 0))
    return run


# ------------------------------------------------------------------------------------------------
# Run time
