"""Whole kernels: ``nvcc -ptx`` output run on CTAs of 1..32 warps.

    module = load_ptx(open("kernel.ptx").read())
    module.launch("ptx_mma_shared", grid=(1, 1, 1), block=(32, 1, 1), args=[a, b, c, 16, 8, 16], gmem=g)

How a launch runs
-----------------
* A grid runs CTA after CTA (``%ctaid`` x fastest). A CTA is ``ceil(threads / 32)`` warps that share one
  shared memory (static ``.shared`` variables, demoted ones included, then the dynamic ``extern .shared``
  window of ``shared_bytes``); lanes beyond the block's thread count never run.
* Each lane has its own program counter. A warp always executes the instruction with the smallest PC
  among its runnable lanes, for exactly the lanes at that PC; so lanes that branch apart run their paths
  one after the other with real masks, and meet again where the paths join (the immediate post-dominator
  in structured code). Inside calls the comparison is made on the call-site chain, so lanes in a callee
  run before the lanes waiting after its call site.
* The scheduler runs warp 0, 1, ... in turn, each until it finishes or waits at a barrier; ``bar.sync`` /
  ``barrier.sync`` release when every non-exited thread of the CTA (or the thread count given) arrived.
  A barrier nobody can reach raises an error (deadlock).
* ``.local`` memory (``__local_depot``) is private per thread; its generic addresses (``cvta.local``)
  are distinct per thread. ``.global`` / ``.const`` module variables live in the launch's GlobalMemory,
  allocated on first launch and kept across launches with the same GlobalMemory, like a loaded module.
* ``%clock`` / ``%clock64`` count the instructions the warp has issued: deterministic.
* ``call vprintf`` formats like CUDA's printf and writes to ``sys.stdout`` (lanes in order).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from isa.types import SPECIAL_REGISTERS, TYPES, name_width, type_width
from . import ptx
from .errors import (EmulatorError, MemoryAccessError, OperandError, PTXSyntaxError, UnsupportedError,
                     WarpSyncError, fail)
from .kernel_ptx import Function, Variable, parse_module, parse_variable
from .memory import LANES, GlobalMemory, check_alignment, global_gather, global_scatter
from .ops.common import format_lanes
from .warp import ARCHS, Warp, WarpOptions

__all__ = ["load_ptx", "Module", "LaunchResult", "KernelWarp"]

_UINT = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
LANE = np.arange(LANES)


def load_ptx(text: str, arch: str | None = None) -> "Module":
    """Parse a PTX module (``nvcc -ptx`` output) and return a :class:`Module`."""
    return Module(text, arch)


# ------------------------------------------------------------------------------------------------
# Compilation: a function body -> flat code with resolved labels

@dataclass
class Op:
    kind: str                  # 'op', 'bra', 'ret', 'exit', 'call', 'bar'
    instr: object
    fn: object = None          # 'op': executor; 'bar': (id reader, count reader or None, red info)
    target: int = 0            # 'bra': pc; 'call': callee entry pc
    guard: object = None       # (reg name, negated) for control flow
    call: object = None        # 'call': CallSite


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


class Program:
    """One entry point and every function it can call, as flat code with per-function registers."""

    def __init__(self, module, entry: Function, arch):
        self.module = module
        self.arch = arch
        self.code: list[Op] = []
        self.reg_types: dict[str, str] = {}
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

    def _declare(self, d: ptx.Directive, syms, suffix):
        if d.name == ".reg":
            try:
                ptype, names = ptx.expand_reg_directive(d)
            except ValueError as e:
                raise PTXSyntaxError(f"line {d.line}, column {d.col}: .reg: malformed number ({e})") from None
            if ptype not in TYPES:
                raise PTXSyntaxError(f"line {d.line}, column {d.col}: .reg: unknown type .{ptype}; supported: "
                                     f"{', '.join('.' + t for t in TYPES)}")
            if len(names) > 1 << 16:
                raise UnsupportedError(f"line {d.line}, column {d.col}: .reg declares {len(names)} registers "
                                       f"(at most 65536 per statement are supported)")
            for n in names:
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
                                   f"body in this module (only vprintf is provided by the emulator)")
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
        labels: dict[str, int] = {}
        fixups = []       # (Op, label, instr)
        called = []
        self._flatten(fn.body.statements, syms, suffix, labels, fixups, called, pending_calls, is_entry)
        for op, label, instr in fixups:
            if label not in labels:
                raise PTXSyntaxError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unknown label "
                                     f"{label}")
            op.target = labels[label]
        # falling off the end of a body returns
        self.code.append(Op("ret", ptx.Instruction("ret", (), None, fn.body.line, fn.body.col, "ret")))
        return called

    def _flatten(self, statements, syms, suffix, labels, fixups, called, pending_calls, is_entry):
        from .ops import compile_instruction
        syms = dict(syms)
        # declarations first: PTX scopes see every name declared anywhere in the block
        for st in statements:
            if isinstance(st, ptx.Directive):
                self._declare(st, syms, suffix)
        env = _Env(self.arch, self.reg_types, syms)
        for st in statements:
            if isinstance(st, ptx.Directive):
                continue
            if isinstance(st, ptx.Label):
                if st.name in labels:
                    raise PTXSyntaxError(f"line {st.line}, column {st.col}: label {st.name} defined twice")
                labels[st.name] = len(self.code)
                continue
            if isinstance(st, ptx.Block):
                self._flatten(st.statements, syms, suffix, labels, fixups, called, pending_calls, is_entry)
                continue
            instr = st
            if suffix is not None:
                instr = ptx.Instruction(st.opcode, tuple(_rename(o, suffix) for o in st.operands),
                                        (_rename(st.guard[0], suffix), st.guard[1]) if st.guard else None,
                                        st.line, st.col, st.text)
            guard = (instr.guard[0].name, instr.guard[1]) if instr.guard else None
            base = instr.base
            if base in ("bra", "brx"):
                if base == "brx":
                    raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: indirect "
                                           f"branches are not supported; supported: bra, bra.uni")
                _check_mods(instr, {"uni"})
                if len(instr.operands) != 1 or not isinstance(instr.operands[0], ptx.Sym):
                    raise OperandError(f"line {instr.line}, column {instr.col}: {instr.opcode}: takes one label")
                op = Op("bra", instr, guard=guard)
                fixups.append((op, instr.operands[0].name, instr))
            elif base in ("ret", "exit"):
                _check_mods(instr, {"uni"})
                if instr.operands:
                    raise OperandError(f"line {instr.line}, column {instr.col}: {instr.opcode}: takes no operands")
                op = Op("exit" if base == "exit" else "ret", instr, guard=guard)
            elif base == "call":
                op = self._compile_call(instr, env, guard)
                if op.call.callee != "vprintf":
                    called.append(op.call.callee)
                    pending_calls.append(op)
            elif base in ("bar", "barrier"):
                op = self._compile_bar(instr, env, guard)
            else:
                op = Op("op", instr, fn=compile_instruction(instr, env))
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
        if callee != "vprintf" and callee not in self.module.info.functions:
            raise OperandError(f"{where}: unknown function {callee}")
        if callee != "vprintf" and self.module.info.functions[callee].kind == "entry":
            raise OperandError(f"{where}: {callee} is a kernel (.entry), not a .func")
        site = CallSite(callee, [env.symbols[n][1] for n in rets], [env.symbols[n][1] for n in args])
        if callee != "vprintf":
            fn = self.module.info.functions[callee]
            if len(args) != len(fn.params) or len(rets) != len(fn.returns):
                raise OperandError(f"{where}: {callee} takes {len(fn.params)} argument(s) and returns "
                                   f"{len(fn.returns)} value(s); the call passes {len(args)} and receives {len(rets)}")
        elif len(args) != 2:
            raise OperandError(f"{where}: vprintf takes 2 arguments (format, argument buffer)")
        return Op("call", instr, guard=guard, call=site)

    def _compile_bar(self, instr, env, guard):
        from .ops.common import dst, src
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
    from .ops.common import src
    if len(instr.operands) != 1:
        raise OperandError(f"{instr.opcode}: bar.warp.sync takes a membermask")
    m = src(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        from .ops.warpops import _member_check
        members = m(warp) & np.uint32(warp.present_bits)
        _member_check(instr, mask, members)
    return run


# ------------------------------------------------------------------------------------------------
# Run time

class KernelWarp(Warp):
    """A warp inside a CTA: per-lane PCs and call stacks, .local / .param memory, shared CTA state."""

    def __init__(self, cta, program, warp_id, nthreads_here, smem, gmem, arch, options, param_init, local_bases,
                 local_size, trace):
        self._cta = cta
        super().__init__(smem.size, gmem, arch, options, smem=smem, warp_id=warp_id)
        self.smem_inflight = cta.smem_inflight
        self.program = program
        self.reg_types = program.reg_types
        self.pc = np.zeros(LANES, np.int64)
        self.exited = LANE >= nthreads_here
        self.present = ~self.exited.copy()
        self.present_bits = int(np.sum(self.present.astype(np.uint64) << LANE.astype(np.uint64)))
        self.waiting = np.zeros(LANES, np.bool_)
        self.stacks = [[] for _ in range(LANES)]
        self.depth = 0                     # number of lanes inside a call
        # per lane, an id of its chain of call sites (equal ids: the lanes' PCs compare directly)
        self.chain_id = np.zeros(LANES, np.int64)
        self._chains = {(): 0}             # chain of return PCs -> id
        self._chain_of = {0: ()}           # id -> chain
        self.param = np.repeat(param_init[None, :], LANES, axis=0)
        self.local_bases = local_bases     # uint64 (32,)
        self.local_size = local_size
        self.dynamic_base = program.shared_static
        self.trace = trace
        self._written = [] if trace else None
        self.issued = 0

    # shared cp.async bookkeeping of the CTA
    @property
    def _inflight_n(self):
        return self._cta.inflight_n

    @_inflight_n.setter
    def _inflight_n(self, v):
        self._cta.inflight_n = v

    def set_reg(self, name, values, mask):
        super().set_reg(name, values, mask)
        if self._written is not None:
            self._written.append(name)

    # -- address spaces ----------------------------------------------------------------------------
    def cvta(self, space, values, to):
        if space == "local":
            v = values.astype(np.uint64)
            out = v - self.local_bases if to else v + self.local_bases
            return out.astype(values.dtype)
        if space in ("const", "param"):
            if space == "param":
                raise UnsupportedError(f"cvta.param: generic addresses of .param variables are not supported")
            return values
        return super().cvta(space, values, to)

    def _local_addrs(self, instr, addrs, mask, nbytes):
        a = addrs.astype(np.int64)
        bad = mask & ((a < 0) | (a + nbytes > self.local_size))
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            fail(MemoryAccessError, instr, f"local address {int(a[lane]):#x} (+{nbytes} bytes) is outside the "
                 f"thread's .local memory ({self.local_size} bytes)", lane)
        return (a.astype(np.uint64) + self.local_bases).astype(np.uint64)

    def space_load(self, instr, space, addrs, mask, nbytes, align):
        check_alignment(instr, addrs, mask, align)
        if space == "local":
            return global_gather(self.gmem, instr, self._local_addrs(instr, addrs, mask, nbytes), mask, nbytes)
        if space == "const":
            return global_gather(self.gmem, instr, addrs, mask, nbytes)
        if space == "param":
            a = self._param_addrs(instr, addrs, mask, nbytes)
            out = np.zeros((LANES, nbytes), np.uint8)
            lanes = np.flatnonzero(mask)
            out[lanes] = self.param[lanes[:, None], a[lanes][:, None] + np.arange(nbytes)]
            return out
        return super().space_load(instr, space, addrs, mask, nbytes, align)

    def space_store(self, instr, space, addrs, mask, data, align):
        check_alignment(instr, addrs, mask, align)
        nbytes = data.shape[1]
        if space == "local":
            return global_scatter(self.gmem, instr, self._local_addrs(instr, addrs, mask, nbytes), mask, data)
        if space == "param":
            a = self._param_addrs(instr, addrs, mask, nbytes)
            lanes = np.flatnonzero(mask)
            self.param[lanes[:, None], a[lanes][:, None] + np.arange(nbytes)] = data[lanes]
            return None
        if space == "const":
            fail(MemoryAccessError, instr, ".const memory is read-only")
        return super().space_store(instr, space, addrs, mask, data, align)

    def _param_addrs(self, instr, addrs, mask, nbytes):
        a = addrs.astype(np.int64)
        bad = mask & ((a < 0) | (a + nbytes > self.param.shape[1]))
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            fail(MemoryAccessError, instr, f"param address {int(a[lane]):#x} (+{nbytes} bytes) is outside the "
                 f".param space", lane)
        return a


@dataclass
class LaunchResult:
    """What a launch leaves behind: every CTA's warps (registers, shared memory, bank records) and the
    printf output."""
    kernel: str
    grid: tuple
    block: tuple
    ctas: list = field(default_factory=list)        # [(ctaid, [KernelWarp, ...])]
    stdout: list = field(default_factory=list)       # printf output, in emission order
    instructions: int = 0

    def warps(self):
        for ctaid, ws in self.ctas:
            for w in ws:
                yield ctaid, w


class Module:
    """A loaded PTX module: its kernels, functions and module variables."""

    def __init__(self, text: str, arch: str | None = None):
        self.text = text
        self.info = parse_module(text)
        target = (self.info.target.split(",")[0].strip() if self.info.target else "sm_90")
        self.arch = arch or (target if target in ARCHS else "sm_90")
        if self.arch not in ARCHS:
            raise UnsupportedError(f"load_ptx: architecture {self.arch!r} is not supported; supported: "
                                   f"{', '.join(ARCHS)}")
        self._programs = {}
        self._globals = {}                # id(gmem) -> (gmem, {name: address})
        self._function_vars = set()

    # -- names -------------------------------------------------------------------------------------
    @property
    def kernels(self):
        return [n for n, f in self.info.functions.items() if f.kind == "entry"]

    def resolve(self, name: str) -> str:
        """The entry name for a mangled or plain name (``ptx_mma_shared`` -> ``_Z14ptx_mma_shared...``)."""
        ks = self.kernels
        if name in ks:
            return name
        hits = [k for k in ks if _plain_name(k) == name]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise OperandError(f"launch: {name!r} is ambiguous: {', '.join(hits)}")
        raise OperandError(f"launch: no kernel named {name!r}; kernels: {', '.join(ks) or 'none'}")

    def program(self, name: str) -> Program:
        entry = self.resolve(name)
        prog = self._programs.get(entry)
        if prog is None:
            prog = self._programs[entry] = Program(self, self.info.functions[entry], self.arch)
        return prog

    def _variables(self, gmem):
        hit = self._globals.get(id(gmem))
        addrs = hit[1] if hit is not None and hit[0] is gmem else {}
        for v in self.info.variables.values():
            if v.space in ("global", "const") and v.name not in addrs:
                a = gmem.alloc(max(v.size, 1))
                if v.init is not None:
                    gmem.write(a, np.frombuffer(v.init, np.uint8))
                addrs[v.name] = a
        self._globals[id(gmem)] = (gmem, addrs)
        return addrs

    def global_address(self, name: str, gmem: GlobalMemory) -> int:
        """Address of a ``.global`` / ``.const`` module variable in ``gmem`` (allocated and initialised on
        first use, like a loaded module's variables)."""
        v = self.info.variables.get(name)
        if v is None or v.space not in ("global", "const"):
            raise OperandError(f"no .global/.const variable {name!r} in this module; variables: "
                               f"{', '.join(n for n, x in self.info.variables.items() if x.space != 'shared')}")
        return self._variables(gmem)[name]

    # -- launch ------------------------------------------------------------------------------------
    def launch(self, kernel: str, grid=(1, 1, 1), block=(32, 1, 1), args=(), gmem: GlobalMemory | None = None,
               shared_bytes: int = 0, options: WarpOptions | None = None, trace=None, out=None,
               max_instructions: int = 20_000_000) -> LaunchResult:
        """Run ``kernel`` on a grid of CTAs. ``args`` follow the kernel's ``.param`` list (addresses and
        integers as Python ints, floats as Python/numpy floats, byte arrays for aggregate parameters).
        ``trace``: a writable stream that receives one line per executed instruction."""
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        nthreads = block[0] * block[1] * block[2]
        if not 1 <= nthreads <= 1024:
            raise OperandError(f"launch: a CTA has 1..1024 threads, not {nthreads}")
        if any(g < 1 for g in grid):
            raise OperandError(f"launch: grid dimensions must be >= 1, got {grid}")
        gmem = gmem if gmem is not None else GlobalMemory()
        prog = self.program(kernel)
        entry = prog.entry
        param_init = np.zeros(max(prog.layout.param, 1), np.uint8)
        _fill_params(entry, prog.kernel_params, list(args), param_init)
        var_addrs = self._variables(gmem)
        smem_size = prog.shared_static + (-(-int(shared_bytes) // 16) * 16)
        nwarps = -(-nthreads // LANES)
        # one allocation per thread (separated by unmapped gaps), so that a generic access that runs off a
        # thread's .local depot is reported instead of landing in its neighbour's
        local_bases = np.array([gmem.alloc(prog.layout.local) if prog.layout.local else 0
                                for _ in range(nwarps * LANES)], np.uint64)
        result = LaunchResult(entry.name, grid, block)
        out = out if out is not None else sys.stdout
        budget = [int(max_instructions)]
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    warps = _CTA(self, prog, (x, y, z), grid, block, smem_size, gmem, param_init, var_addrs,
                                 local_bases, options, trace, out, result, budget).run()
                    result.ctas.append(((x, y, z), warps))
        result.instructions = int(max_instructions) - budget[0]
        return result


def _plain_name(mangled: str) -> str:
    """``_Z14ptx_mma_sharedP6__halfS0_S0_iii`` -> ``ptx_mma_shared`` (plain Itanium function names)."""
    if not mangled.startswith("_Z"):
        return mangled
    s = mangled[2:]
    if s.startswith("N"):
        return mangled
    k = 0
    while k < len(s) and s[k].isdigit():
        k += 1
    if k == 0:
        return mangled
    n = int(s[:k])
    return s[k:k + n]


def _dim3(v, what):
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise OperandError(f"launch: {what} must have 1 to 3 dimensions")
    return v + (1,) * (3 - len(v))


def _fill_params(entry, params, args, buf):
    if len(args) != len(params):
        names = ", ".join(f"{p.name} (.{p.ptype}{f'[{p.count}]' if p.count > 1 else ''})" for p, _ in params)
        raise OperandError(f"launch {entry.name}: expected {len(params)} argument(s) ({names}), got {len(args)}")
    for (p, off), a in zip(params, args):
        kind = TYPES[p.ptype][1]
        w = TYPES[p.ptype][0] // 8
        if p.count > 1 or isinstance(a, (bytes, bytearray, np.ndarray)):
            raw = np.frombuffer(bytes(a), np.uint8) if isinstance(a, (bytes, bytearray)) else \
                np.ascontiguousarray(a).view(np.uint8).reshape(-1)
            if raw.size != p.size:
                raise OperandError(f"launch {entry.name}: parameter {p.name} takes {p.size} bytes, got {raw.size}")
        elif kind == "f":
            raw = np.array([float(a)], {2: np.float16, 4: np.float32, 8: np.float64}[w]).view(np.uint8)
        else:
            if isinstance(a, (float, np.floating)) and not float(a).is_integer():
                raise OperandError(f"launch {entry.name}: parameter {p.name} is .{p.ptype}, got the float {a}")
            iv = int(a)
            lo = -(1 << (8 * w - 1))
            if not lo <= iv < (1 << (8 * w)):
                raise OperandError(f"launch {entry.name}: {iv} does not fit parameter {p.name} (.{p.ptype})")
            raw = np.frombuffer((iv & ((1 << (8 * w)) - 1)).to_bytes(w, "little"), np.uint8)
        buf[off:off + raw.size] = raw


class _CTA:
    """One CTA's execution: warps, barriers, the scheduler."""

    def __init__(self, module, prog, ctaid, grid, block, smem_size, gmem, param_init, var_addrs, local_bases,
                 options, trace, out, result, budget):
        self.module, self.prog, self.ctaid = module, prog, ctaid
        self.smem = np.zeros(smem_size, np.uint8)
        self.smem_inflight = np.zeros(smem_size, np.int32)
        self.inflight_n = 0             # cp.async copies in flight in this CTA (all warps)
        self.out, self.result, self.trace, self.budget = out, result, trace, budget
        self.barriers = {}         # id -> {'arrived': int, 'waiters': [(warp, mask)], 'expected': int, 'red': []}
        nthreads = block[0] * block[1] * block[2]
        nwarps = -(-nthreads // LANES)
        self.warps = []
        for w in range(nwarps):
            tids = np.arange(w * LANES, (w + 1) * LANES)
            bases = local_bases[tids]
            kw = KernelWarp(self, prog, w, nthreads - w * LANES, self.smem, gmem, prog.arch, options, param_init,
                            bases, prog.layout.local, trace)
            kw.symbols = {n: ("global", a) for n, a in var_addrs.items()}
            sv = kw.special_values
            tid = np.minimum(tids, nthreads - 1)
            sv["%tid.x"] = (tid % block[0]).astype(np.uint32)
            sv["%tid.y"] = ((tid // block[0]) % block[1]).astype(np.uint32)
            sv["%tid.z"] = (tid // (block[0] * block[1])).astype(np.uint32)
            for c, k in zip("xyz", range(3)):
                sv[f"%ntid.{c}"] = np.full(LANES, block[k], np.uint32)
                sv[f"%ctaid.{c}"] = np.full(LANES, ctaid[k], np.uint32)
                sv[f"%nctaid.{c}"] = np.full(LANES, grid[k], np.uint32)
            sv["%laneid"] = np.arange(LANES, dtype=np.uint32)
            sv["%warpid"] = np.full(LANES, w, np.uint32)
            sv["%nwarpid"] = np.full(LANES, nwarps, np.uint32)
            sv["%dynamic_smem_size"] = np.full(LANES, smem_size - prog.shared_static, np.uint32)
            sv["%total_smem_size"] = np.full(LANES, smem_size, np.uint32)
            self.warps.append(kw)

    # -- scheduler ---------------------------------------------------------------------------------
    def run(self):
        with np.errstate(all="ignore"):          # IEEE exceptions are results here, not warnings
            return self._run()

    def _run(self):
        while True:
            progressed = False
            for w in self.warps:
                if self._runnable(w):
                    self._run_warp(w)
                    progressed = True
                self._check_barriers()
            if all(w.exited.all() for w in self.warps):
                break
            if not progressed and not any(self._runnable(w) for w in self.warps):
                self._deadlock()
        return self.warps

    @staticmethod
    def _runnable(w):
        return bool((~w.exited & ~w.waiting).any())

    def _deadlock(self):
        parts = []
        for bid, b in self.barriers.items():
            waiting = sum(int(m.sum()) for _, m in b["waiters"])
            parts.append(f"barrier {bid}: {waiting} thread(s) waiting, {self._expected(b)} expected")
        stuck = [f"warp {w.warp_id} lanes {format_lanes(np.flatnonzero(w.waiting))}" for w in self.warps
                 if w.waiting.any()]
        raise WarpSyncError(f"CTA {self.ctaid}: deadlock: {'; '.join(parts)} ({', '.join(stuck)} wait; the other "
                            f"threads exited or wait elsewhere)")

    def _expected(self, b):
        if b["count"] is not None:
            return b["count"]
        return sum(int((~w.exited).sum()) for w in self.warps)

    def _check_barriers(self):
        for bid in list(self.barriers):
            b = self.barriers[bid]
            if not b["arrived"] or b["arrived"] < self._expected(b):
                continue
            if b["red"]:
                rop = b["red"][0][0]
                entries = b["red"][1:]
                vals = np.concatenate([p[m] for _, _, p, m in entries])
                res = {"popc": np.uint32(int(vals.sum())), "and": bool(vals.all()), "or": bool(vals.any())}[rop]
                for w, writer, _, m in entries:
                    writer(w, np.full(LANES, res, np.uint32 if rop == "popc" else np.bool_), m)
            for w, m in b["waiters"]:
                w.waiting[m] = False
            del self.barriers[bid]

    # -- one warp ----------------------------------------------------------------------------------
    def _run_warp(self, w: KernelWarp):
        code = self.prog.code
        pc = w.pc
        budget = self.budget
        nxt = None          # (pc, mask) known without a search: the whole runnable warp moves together
        while True:
            if nxt is not None:
                p, mask = nxt
                nxt = None
                together = True
            else:
                live = ~w.exited & ~w.waiting
                if not live.any():
                    return
                if w.depth:
                    p, mask = self._pick_nested(w, live)
                else:
                    p = int(pc[live].min())
                    mask = live & (pc == p)
                together = bool((mask == live).all())
            op = code[p]
            w.cur_pc = p
            budget[0] -= 1
            if budget[0] < 0:
                raise EmulatorError(f"{op.instr.text or op.instr.opcode}: instruction limit reached "
                                    f"(max_instructions); an endless loop?")
            w.clock = w.issued = w.issued + 1
            if self.trace is not None:
                w._written = []
            kind = op.kind
            shown = mask
            if kind == "op":
                if self.trace is not None and op.instr.guard is not None:
                    g, neg = op.instr.guard
                    p_ = w.get_reg(g.name, op.instr.text)
                    p_ = p_ if p_.dtype == np.bool_ else p_ != 0
                    shown = mask & (~p_ if neg else p_)
                try:
                    op.fn(w, mask)
                except EmulatorError as e:
                    raise _located(e, op.instr) from None
                pc[mask] += 1
                if together:
                    nxt = (p + 1, mask)
            elif kind == "bra":
                taken = mask & self._guard(w, op, mask)
                pc[taken] = op.target
                pc[mask & ~taken] += 1
                if together:
                    if not taken.any():
                        nxt = (p + 1, mask)
                    elif (taken == mask).all():
                        nxt = (op.target, mask)
            elif kind in ("ret", "exit"):
                g = mask & self._guard(w, op, mask)
                pc[mask & ~g] += 1
                if g.any():
                    self._return(w, g, exit_=kind == "exit")
            elif kind == "call":
                g = mask & self._guard(w, op, mask)
                pc[mask & ~g] += 1
                if g.any():
                    self._call(w, op, g)
            elif kind == "bar":
                g = mask & self._guard(w, op, mask)
                pc[mask & ~g] += 1
                if g.any():
                    pc[g] += 1
                    self._arrive(w, op, g)
            if self.trace is not None:
                self._trace(w, op, shown)

    def _pick_nested(self, w, live):
        """Runnable lanes with the smallest (call sites..., pc) key: within one activation chain the PCs
        compare directly, so only the few distinct chains are compared as tuples."""
        ids = w.chain_id[live]
        if (ids == ids[0]).all():          # every runnable lane in the same activation chain
            p = int(w.pc[live].min())
            return p, live & (w.pc == p)
        chains = {c: i for i, c in w._chains.items()} if len(w._chain_of) != len(w._chains) else w._chain_of
        w._chain_of = chains
        best = None
        for cid in np.unique(ids):
            sel = live & (w.chain_id == cid)
            p = int(w.pc[sel].min())
            key = tuple(r - 1 for r in chains[int(cid)]) + (p,)
            if best is None or key < best[0]:
                best = (key, sel, p)
        _, sel, p = best
        return p, sel & (w.pc == p)

    @staticmethod
    def _guard(w, op, mask):
        if op.guard is None:
            return np.ones(LANES, np.bool_)
        name, neg = op.guard
        p = w.get_reg(name, op.instr.text)
        p = p if p.dtype == np.bool_ else p != 0
        return ~p if neg else p

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, w, op, mask):
        site = op.call
        if site.callee == "vprintf":
            self._vprintf(w, op, mask)
            w.pc[mask] += 1
            return
        if op.target < 0:
            raise UnsupportedError(f"{op.instr.text}: function {site.callee} has no body")
        params, rets = self.prog.formals[site.callee]
        lanes = np.flatnonzero(mask)
        for (p, off), src_off in zip(params, site.args):
            w.param[lanes, off:off + p.size] = w.param[lanes, src_off:src_off + p.size]
        for lane in lanes:
            st = w.stacks[lane]
            if any(f[1] == site.callee for f in st):
                fail(UnsupportedError, op.instr.text, f"recursive call of {site.callee} (its registers and "
                     f"parameters are not kept per activation)", lane)
            if not st:
                w.depth += 1
            st.append((int(w.pc[lane]) + 1, site.callee, site))
            w.chain_id[lane] = w._chains.setdefault(tuple(f[0] for f in st), len(w._chains))
        w.pc[mask] = op.target

    def _return(self, w, mask, exit_):
        for lane in np.flatnonzero(mask):
            st = w.stacks[lane]
            if exit_ or not st:
                w.exited[lane] = True
                if st:
                    st.clear()
                    w.depth -= 1
                    w.chain_id[lane] = 0
                continue
            ret_pc, callee, site = st.pop()
            w.chain_id[lane] = w._chains.setdefault(tuple(f[0] for f in st), len(w._chains))
            if not st:
                w.depth -= 1
            _, rets = self.prog.formals[callee]
            for (p, off), dst_off in zip(rets, site.rets):
                w.param[lane, dst_off:dst_off + p.size] = w.param[lane, off:off + p.size]
            w.pc[lane] = ret_pc
        if w.exited[mask].any():
            self._check_barriers()

    # -- barriers ----------------------------------------------------------------------------------
    def _arrive(self, w, op, mask):
        bid_r, cnt_r, red, kind, aligned = op.fn
        text = op.instr.text or op.instr.opcode
        if aligned:
            missing = ~w.exited & ~mask
            if missing.any():
                fail(WarpSyncError, text, f"an .aligned barrier must be executed by every non-exited lane of the "
                     f"warp; lanes {format_lanes(np.flatnonzero(missing))} are not executing it")
        bids = bid_r(w)[mask]
        if (bids != bids[0]).any() or int(bids[0]) > 15:
            fail(OperandError, text, f"barrier number must be uniform and 0..15, got {sorted(set(bids.tolist()))}")
        bid = int(bids[0])
        count = None
        if cnt_r is not None:
            count = int(cnt_r(w)[mask][0])
            if count % LANES or count <= 0:
                fail(OperandError, text, f"thread count {count} must be a positive multiple of 32")
        b = self.barriers.setdefault(bid, {"arrived": 0, "waiters": [], "count": count, "red": []})
        if count is not None and b["count"] is not None and b["count"] != count:
            fail(WarpSyncError, text, f"barrier {bid} used with thread counts {b['count']} and {count}")
        b["arrived"] += int(mask.sum())
        if kind in ("sync", "red"):
            w.waiting |= mask
            b["waiters"].append((w, mask.copy()))
        if red:
            rop, writer, pred = red
            if not b["red"]:
                b["red"].append((rop,))
            b["red"].append((w, writer, pred(w).copy(), mask.copy()))
        self._check_barriers()

    # -- printf ------------------------------------------------------------------------------------
    def _vprintf(self, w, op, mask):
        from .kernel_printf import format_printf
        site = op.call
        fmt_off, args_off = site.args
        fmt_addr = w.param[:, fmt_off:fmt_off + 8].copy().view(np.uint64).reshape(LANES)
        arg_addr = w.param[:, args_off:args_off + 8].copy().view(np.uint64).reshape(LANES)
        for lane in np.flatnonzero(mask):
            text, nargs = format_printf(w.gmem, int(fmt_addr[lane]), int(arg_addr[lane]), op.instr.text)
            self.out.write(text)
            self.result.stdout.append(text)
            if site.rets:
                w.param[lane, site.rets[0]:site.rets[0] + 4] = np.frombuffer(
                    np.int32(len(text)).tobytes(), np.uint8)
        if hasattr(self.out, "flush"):
            self.out.flush()

    # -- trace -------------------------------------------------------------------------------------
    def _trace(self, w, op, mask):
        lanes = format_lanes(np.flatnonzero(mask))
        parts = []
        for name in dict.fromkeys(w._written):
            v = w.regs[name][mask]
            shown = ", ".join(_fmt_val(x) for x in v[:4]) + (", ..." if v.size > 4 else "")
            if v.size and (v == v[0]).all():
                shown = f"{_fmt_val(v[0])} (all)"
            parts.append(f"{name}=[{shown}]")
        cta = ",".join(map(str, self.ctaid))
        txt = " ".join((op.instr.text or op.instr.opcode).split())
        self.trace.write(f"cta({cta}) w{w.warp_id} pc{w.cur_pc:>4} "
                         f"lanes {lanes}: {txt}" + (f"  -> {' '.join(parts)}" if parts else "") + "\n")
        w._written = None


def _fmt_val(x):
    if isinstance(x, (bool, np.bool_)):
        return str(int(x))
    return hex(int(x))


def _located(e, instr):
    msg = str(e)
    if msg.startswith("line "):
        return e
    return type(e)(f"line {instr.line}, column {instr.col}: {msg}")
