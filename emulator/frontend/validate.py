"""Whole-module validation with ptxas's verdicts: what ``ptxas -arch=sm_90a`` rejects, :func:`validate_module`
rejects at load with :class:`PTXValidationError` (line, column, rule).

The rules were measured on ptxas 13.0 (tools/ptxas_verdicts, docs/kernels.md "Validation"), not read off the
ISA text alone:

* every register is declared (``.reg``) in an enclosing scope, every name (variable, parameter, function,
  label) exists, a guard is a predicate;
* the opcode exists, its qualifiers belong to it, its instruction type is one the instruction takes;
* the operand count and the kind of each operand (register, immediate, address, vector, label, predicate);
* the register's declared type against the instruction type: the same size and a compatible kind for most
  instructions; ``ld``/``st``/``cvt`` allow a wider integer (or bit) register ("operand size exceeding
  instruction-type size"); float instructions take only float or bit registers of their type;
* immediates: integers never for float types, ``0f``/``0d`` literals only with their width for bit types and
  for float types, decimal integers below 2^64;
* the state space an instruction allows and the one a variable lives in (``st.const`` is illegal; ``ld.shared``
  of a ``.param`` name is a mismatch), 32-bit address registers only for shared-window spaces;
* the module directives: ``.version``, ``.target``, ``.address_size 64``, parameter and register types,
  power-of-two alignments.

Instructions the tables do not describe are checked for declared registers, names and labels only.
"""
from __future__ import annotations

import re

from isa.types import SPECIAL_REGISTERS, TYPES
from . import ptx
from ..errors import PTXValidationError, UnsupportedError

# ------------------------------------------------------------------------------------------------------------
# types

INT = {"u16", "u32", "u64", "s16", "s32", "s64"}
BITS = {"b16", "b32", "b64"}
F = {"f32", "f64"}
HALF = {"f16", "f16x2", "bf16", "bf16x2"}
ALL_TYPES = set(TYPES)

# register declarations ptxas accepts (.bf16, .tf32 and the fp8 types are not register types)
REG_TYPES = {"pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
             "f16", "f16x2", "f32", "f64"}
PARAM_TYPES = {"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
               "f32", "f64"}
VAR_TYPES = PARAM_TYPES | {"pred"}


def _rkind(rtype):
    if rtype == "f16x2":
        return "h"
    return TYPES[rtype][1][0] if rtype != "pred" else "p"


def reg_ok(rtype, itype, mode):
    """May a register declared ``rtype`` be an operand of an instruction of type ``itype``?
    ``mode``: 'strict' (same size), 'relaxed' (ld/st/cvt: a wider integer/bit register), 'vec' (a vector
    element: strict, a predicate is tolerated as ptxas does)."""
    if itype == "pred" or rtype == "pred":
        return rtype == itype or (mode == "vec" and rtype == "pred")
    rw, rk = TYPES[rtype][0], _rkind(rtype)
    iw, ik = TYPES[itype][0], TYPES[itype][1][0]
    if ik == "f":
        if rk == "f":
            return rtype == itype or (itype in ("f16", "bf16") and rtype == "f16")
        if rk == "h":
            return itype in ("f16x2", "bf16x2")
        if rk == "b":
            return rw == iw or (mode == "relaxed" and rw > iw)
        return False
    if ik in ("u", "s") and rk == "f":
        return False
    if mode == "relaxed":
        return rw >= iw and (rk != "f" or ik == "b")
    return rw == iw


# ------------------------------------------------------------------------------------------------------------
# instruction forms

SPACES = {"global", "shared", "shared::cta", "shared::cluster", "local", "const", "param", "param::entry",
          "param::func"}
_CACHE = {"ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile", "relaxed", "acquire", "release", "weak",
          "mmio", "cta", "gpu", "sys", "cluster", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
          "L1::evict_last", "L1::no_allocate", "L2::evict_normal", "L2::evict_first", "L2::evict_last",
          "L2::cache_hint", "L2::64B", "L2::128B", "L2::256B", "unified", "v2", "v4", "v8", "const::nc"}
ROUND_F = {"rn", "rz", "rm", "rp"}
ROUND_I = {"rni", "rzi", "rmi", "rpi"}
CMP = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu",
       "num", "nan"}
BOOL = {"and", "or", "xor"}

# base -> (instruction types, other qualifiers)
MODS = {
    "add": (INT | F | HALF | {"u16x2", "s16x2"}, {"sat", "cc", "ftz", "rn", "rz", "rm", "rp", "relu", "noftz"}),
    "sub": (INT | F | HALF | {"u16x2", "s16x2"}, {"sat", "cc", "ftz", "rn", "rz", "rm", "rp", "relu", "noftz"}),
    "addc": ({"u32", "s32", "u64", "s64"}, {"cc"}),
    "subc": ({"u32", "s32", "u64", "s64"}, {"cc"}),
    "mul": (INT | F | HALF, {"lo", "hi", "wide", "sat", "ftz", "rn", "rz", "rm", "rp", "relu", "noftz"}),
    "mad": (INT | F, {"lo", "hi", "wide", "sat", "cc", "ftz", "rn", "rz", "rm", "rp"}),
    "madc": ({"u32", "s32", "u64", "s64"}, {"lo", "hi", "cc"}),
    "mul24": ({"u32", "s32"}, {"lo", "hi"}),
    "mad24": ({"u32", "s32"}, {"lo", "hi", "sat"}),
    "fma": (F | HALF, {"rn", "rz", "rm", "rp", "ftz", "sat", "relu", "oob"}),
    "div": (INT | F, {"approx", "full", "ftz", "rn", "rz", "rm", "rp"}),
    "rem": (INT, set()),
    "abs": ({"s16", "s32", "s64"} | F | HALF, {"ftz"}),
    "neg": ({"s16", "s32", "s64"} | F | HALF, {"ftz"}),
    "min": (INT | F | HALF | {"u16x2", "s16x2"}, {"ftz", "NaN", "xorsign", "abs", "relu"}),
    "max": (INT | F | HALF | {"u16x2", "s16x2"}, {"ftz", "NaN", "xorsign", "abs", "relu"}),
    "and": (BITS | {"pred"}, set()),
    "or": (BITS | {"pred"}, set()),
    "xor": (BITS | {"pred"}, set()),
    "not": (BITS | {"pred"}, set()),
    "cnot": (BITS, set()),
    "shl": (BITS, set()),
    "shr": (BITS | INT, set()),
    "shf": ({"b32"}, {"l", "r", "clamp", "wrap"}),
    "popc": ({"b32", "b64"}, set()),
    "clz": ({"b32", "b64"}, set()),
    "brev": ({"b32", "b64"}, set()),
    "bfind": ({"u32", "u64", "s32", "s64"}, {"shiftamt"}),
    "bfe": ({"u32", "u64", "s32", "s64"}, set()),
    "bfi": ({"b32", "b64"}, set()),
    "prmt": ({"b32"}, {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}),
    "sad": (INT, set()),
    "mov": (BITS | INT | F | {"pred", "b128"}, set()),
    "selp": (BITS | INT | F, set()),
    "slct": (BITS | INT | F, {"ftz"}),
    "setp": (BITS | INT | F | HALF, CMP | BOOL | {"ftz"}),
    "set": (BITS | INT | F | HALF, CMP | BOOL | {"ftz"}),
    "cvt": (ALL_TYPES - {"b8", "b16", "b32", "b64", "b128", "pred"},
            ROUND_F | ROUND_I | {"rna", "rs", "ftz", "sat", "relu", "satfinite"}),
    "cvta": ({"u32", "u64"}, {"to", "global", "shared", "shared::cta", "shared::cluster", "local", "const",
                              "param", "param::entry"}),
    "ld": (ALL_TYPES - {"f16", "f16x2", "bf16", "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "pred"},
           SPACES | _CACHE),
    "ldu": (ALL_TYPES - {"f16", "f16x2", "bf16", "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "pred"},
            {"global", "v2", "v4"}),
    "st": (ALL_TYPES - {"f16", "f16x2", "bf16", "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "pred"},
           SPACES | _CACHE),
    "rcp": (F, {"approx", "rn", "rz", "rm", "rp", "ftz"}),
    "sqrt": (F, {"approx", "rn", "rz", "rm", "rp", "ftz"}),
    "rsqrt": (F | HALF, {"approx", "ftz"}),
    "ex2": ({"f32", "f16", "f16x2", "bf16", "bf16x2"}, {"approx", "ftz"}),
    "lg2": ({"f32"}, {"approx", "ftz"}),
    "sin": ({"f32"}, {"approx", "ftz"}),
    "cos": ({"f32"}, {"approx", "ftz"}),
    "tanh": ({"f32", "f16", "f16x2", "bf16", "bf16x2"}, {"approx"}),
    "copysign": (F, set()),
    "testp": (F, {"finite", "infinite", "number", "notanumber", "normal", "subnormal"}),
}

# Operand signatures: base -> function(mods, itype, types) -> list of operand kinds, or None (unchecked).
#   d: destination register of the type   s: source register or immediate of the type
#   D/S: the same, relaxed size rule      p: destination predicate (``p`` or ``p|q``)    q: source predicate
#   u: a .u32 source (shift amounts, positions)   w/W: double-width destination / source   a: address
#   l: a label                            i: an integer immediate    v: vector of the type   x: unchecked
#   d32: a 32-bit destination (popc, clz, bfind)


def _sig_arith(n):
    return lambda mods, t, ts: ["d"] + ["s"] * n


def _sig_mul(mods, t, ts):
    return ["w", "s", "s"] if "wide" in mods else ["d", "s", "s"]


def _sig_mad(mods, t, ts):
    return ["w", "s", "s", "W"] if "wide" in mods else ["d", "s", "s", "s"]


def _sig_shift(mods, t, ts):
    return ["d", "s", "u"]


SIGS = {
    "add": _sig_arith(2), "sub": _sig_arith(2), "addc": _sig_arith(2), "subc": _sig_arith(2),
    "mul": _sig_mul, "mad": _sig_mad, "madc": _sig_mad, "mul24": _sig_arith(2), "mad24": _sig_arith(3),
    "fma": _sig_arith(3), "div": _sig_arith(2), "rem": _sig_arith(2), "abs": _sig_arith(1), "neg": _sig_arith(1),
    "min": _sig_arith(2), "max": _sig_arith(2), "and": _sig_arith(2), "or": _sig_arith(2),
    "xor": _sig_arith(2), "not": _sig_arith(1), "cnot": _sig_arith(1), "shl": _sig_shift, "shr": _sig_shift,
    "shf": lambda m, t, ts: ["d", "s", "s", "u"],
    "popc": lambda m, t, ts: ["d32", "s"], "clz": lambda m, t, ts: ["d32", "s"], "brev": _sig_arith(1),
    "bfind": lambda m, t, ts: ["d32", "s"], "bfe": lambda m, t, ts: ["d", "s", "u", "u"],
    "bfi": lambda m, t, ts: ["d", "s", "s", "u", "u"], "prmt": _sig_arith(3), "sad": _sig_arith(3),
    "selp": lambda m, t, ts: ["d", "s", "s", "q"],
    "rcp": _sig_arith(1), "sqrt": _sig_arith(1), "rsqrt": _sig_arith(1), "ex2": _sig_arith(1),
    "lg2": _sig_arith(1), "sin": _sig_arith(1), "cos": _sig_arith(1), "tanh": _sig_arith(1),
    "copysign": _sig_arith(2), "testp": lambda m, t, ts: ["p", "s"],
}

# opcodes of the PTX ISA (9.0) that exist at all
OPCODES = set(MODS) | {
    "abs", "activemask", "alloca", "applypriority", "atom", "bar", "barrier", "bmsk", "bra", "break", "brkpt",
    "brx", "call", "clusterlaunchcontrol", "cp", "cp.async", "createpolicy", "cvt.pack", "discard", "dp2a",
    "dp4a", "elect", "exit", "fence", "fns", "getctarank", "griddepcontrol", "isspacep", "istypep", "ld",
    "ldmatrix", "lop3", "mapa", "match", "mbarrier", "membar", "mma", "movmatrix", "multimem", "nanosleep",
    "pmevent", "prefetch", "prefetchu", "red", "redux", "ret", "setmaxnreg", "shfl", "stackrestore",
    "stacksave", "st", "stmatrix", "suld", "suq", "sured", "sust", "szext", "tcgen05", "tensormap", "tex",
    "tld4", "trap", "txq", "vabsdiff", "vabsdiff2", "vabsdiff4", "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4",
    "vmad", "vmax", "vmax2", "vmax4", "vmin", "vmin2", "vmin4", "vote", "vset", "vset2", "vset4", "vshl",
    "vshr", "vsub", "vsub2", "vsub4", "wgmma", "wmma", "ex2", "tanh", "mul24", "mad24", "cp", "st", "ldu",
    "pmevent", "stmatrix", "cvta", "copysign", "testp", "rsqrt", "lg2", "sin", "cos", "bfind", "cnot",
}

SPECIAL_PREFIXES = ("%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid",
                    "%gridid", "%lanemask_", "%clock", "%pm", "%envreg", "%globaltimer", "%total_smem_size",
                    "%dynamic_smem_size", "%aggr_smem_size", "%reserved_smem_offset", "%cluster_", "%clusterid",
                    "%nclusterid", "%is_explicit_cluster", "%current_graph_exec")
READ_ONLY = SPECIAL_PREFIXES
# special registers newer than some targets (ptxas 13: "Feature '%cluster_ctarank' requires .target sm_90")
_SM90_SPECIALS = ("%cluster_", "%clusterid", "%nclusterid", "%is_explicit_cluster")


def _special_names(ops):
    for op in ops:
        if isinstance(op, ptx.Reg):
            if op.name.startswith("%") and op.name.startswith(_SM90_SPECIALS + ("%reserved_smem_offset",)):
                yield op.name
        elif isinstance(op, ptx.Mem) and isinstance(op.base, ptx.Reg):
            yield from _special_names((op.base,))
        elif isinstance(op, (ptx.Vec, ptx.Pair, ptx.Paren)):
            yield from _special_names(op.items)
        elif isinstance(op, ptx.Not):
            yield from _special_names((op.item,))

_NAME_RE = re.compile(r"^(.*?)(\d+)$")
_DEC_RE = re.compile(r"[0-9]+[uU]?")
_BIGDEC_RE = re.compile(r"(?<![\w.$])(?:0[xX][0-9a-fA-F]{17,}|[0-9]{20,})")


# ------------------------------------------------------------------------------------------------------------
# scopes

class Scope:
    """Registers and names visible in one ``{ }`` block (and its enclosing blocks)."""

    __slots__ = ("regs", "ranges", "names", "parent")

    def __init__(self, parent=None):
        self.regs = {}          # exact name -> type
        self.ranges = {}        # prefix -> [(count, type)]
        self.names = {}         # variable / parameter name -> space
        self.parent = parent

    def reg_type(self, name):
        s = self
        m = None
        while s is not None:
            if type(s) is Inferred:
                return s.reg_type(name)
            t = s.regs.get(name)
            if t is not None:
                return t
            if s.ranges:
                if m is None:
                    m = _NAME_RE.match(name) or False
                if m:
                    for count, rtype in s.ranges.get(m.group(1), ()):
                        idx = m.group(2)
                        if (idx == "0" or idx[0] != "0") and int(idx) < count:
                            return rtype
            s = s.parent
        return None

    def space(self, name):
        s = self
        while s is not None:
            sp = s.names.get(name)
            if sp is not None:
                return sp
            s = s.parent
        return None


class Inferred(Scope):
    """``Warp.run``'s scope: undeclared registers take their width from nvcc's naming, untyped (.bN)."""

    __slots__ = ("declared",)

    def __init__(self, declared):
        super().__init__()
        self.declared = declared

    def reg_type(self, name):
        t = self.declared.get(name)
        if t is not None or not name.startswith("%"):
            return t
        if name.startswith("%p"):
            return "pred"
        from isa.types import name_width
        return {1: "pred", 16: "b16", 32: "b32", 64: "b64"}.get(name_width(name), "b32")


_VIDEO = {f"v{op}{n}" for op in ("add", "sub", "avrg", "absdiff", "min", "max", "set") for n in (2, 4)}


def _fail(node, rule):
    raise PTXValidationError(f"line {node.line}, column {node.col}: {rule}")


# ------------------------------------------------------------------------------------------------------------
# the checker

class Checker:
    def __init__(self, target_sm=90, functions=(), lenient=False, target_name=""):
        self.inputs = set()           # the input parameters of the function being checked
        self.target_sm = target_sm
        self.target_name = target_name
        self.functions = set(functions)
        self.lenient = lenient          # Warp.run: names and labels are not checked

    # -- registers -------------------------------------------------------------------------------------
    def rtype(self, scope, name, instr):
        if name == "_":
            return "_"
        if name.startswith(SPECIAL_PREFIXES):
            w = SPECIAL_REGISTERS.get(name, 64 if name.endswith("64") else 32)
            return {32: "u32", 64: "u64"}.get(w, "u32")
        t = scope.reg_type(name)
        if t is None and "." in name and instr.base in _VIDEO:      # %r1.b3210: a video selector (ops.simd)
            t = scope.reg_type(name.partition(".")[0])
        if t is None:
            _fail(instr, f"{instr.opcode}: register {name} is not declared (.reg)")
        return t

    # -- operands --------------------------------------------------------------------------------------
    def reg_of(self, scope, op):
        """The register name an operand is, or None."""
        if isinstance(op, ptx.Reg):
            return op.name
        if isinstance(op, ptx.Sym) and scope.reg_type(op.name) is not None:
            return op.name
        return None

    def check_imm(self, instr, imm, t):
        k = TYPES[t][1]
        w = TYPES[t][0]
        if imm.kind == "int":
            if ptx.int_overflows(imm.text):
                _fail(instr, f"{instr.opcode}: constant {imm.text} overflows 64 bits")
            if k == "f":
                _fail(instr, f"{instr.opcode}: integer constant {imm.text} for a .{t} operand (write a float)")
            return
        # a decimal float is a double; 0f / 0d literals have their width
        bits = 32 if imm.kind == "f32" else 64
        if k == "f":
            return
        if k in ("u", "s", "p"):
            _fail(instr, f"{instr.opcode}: floating-point constant {imm.text} for a .{t} operand")
        if bits != w:
            _fail(instr, f"{instr.opcode}: {bits}-bit floating-point constant {imm.text} for a .{t} operand")

    def operand(self, scope, instr, op, kind, t, pos):
        """Check one operand of kind ``kind`` ('d', 's', ...) against type ``t``."""
        if kind == "x":
            return
        if kind in ("d", "D", "w", "d32", "p"):
            if kind == "p" and isinstance(op, ptx.Pair):
                for it in op.items:
                    self.operand(scope, instr, it, "p", t, pos)
                return
            name = self.reg_of(scope, op)
            if name is None:
                _fail(instr, f"{instr.opcode}: operand {pos + 1} ({op}) must be a register: expected a register")
            if name.startswith(READ_ONLY):
                _fail(instr, f"{instr.opcode}: special register {name} cannot be a destination")
            rt = self.rtype(scope, name, instr)
            if rt == "_":
                return
            want = {"w": _double(t), "d32": "u32", "p": "pred"}.get(kind, t)
            if want is None:
                _fail(instr, f"{instr.opcode}: .wide needs a 16- or 32-bit integer type, not .{t}")
            if not reg_ok(rt, want, "relaxed" if kind == "D" else "strict"):
                _fail(instr, f"{instr.opcode}: register {name} (.{rt}) does not fit a .{want} operand")
            return
        if kind in ("s", "S", "u", "W", "q"):
            if isinstance(op, ptx.Not):
                if kind != "q":
                    _fail(instr, f"{instr.opcode}: '!' only applies to predicate operands")
                op = op.item
            want = {"u": "u32", "W": _double(t), "q": "pred"}.get(kind, t)
            if want is None:
                _fail(instr, f"{instr.opcode}: .wide needs a 16- or 32-bit integer type, not .{t}")
            if isinstance(op, ptx.Imm):
                if want in ("f16x2", "bf16x2"):
                    _fail(instr, f"{instr.opcode}: a .{want} operand cannot be a constant")
                if kind == "q":
                    if op.kind != "int":
                        _fail(instr, f"{instr.opcode}: predicate operand {op} must be a predicate or an integer")
                    return
                self.check_imm(instr, op, want)
                return
            name = self.reg_of(scope, op)
            if name is None:
                if isinstance(op, (ptx.Sym, ptx.Mem)) and want in ("u64", "b64", "s64", "u32", "b32", "s32") \
                        and instr.base in ("mov", "cvta"):
                    self.name_ref(scope, instr, op.name if isinstance(op, ptx.Sym) else op.base.name)
                    return
                _fail(instr, f"{instr.opcode}: operand {pos + 1} ({op}) must be a register or a constant")
            rt = self.rtype(scope, name, instr)
            if rt == "_":
                _fail(instr, f"{instr.opcode}: the sink '_' is not a source")
            if name.startswith(SPECIAL_PREFIXES):
                if instr.base not in ("mov", "cvt") and not self.lenient:
                    _fail(instr, f"{instr.opcode}: special register {name} may only be read by mov or cvt")
                if TYPES[want][1] in ("f", "p") or TYPES[want][0] > TYPES[rt][0]:
                    _fail(instr, f"{instr.opcode}: special register {name} (.{rt}) does not fit a .{want} operand")
                return
            if kind == "u":
                if rt not in ("b32", "u32", "s32"):
                    _fail(instr, f"{instr.opcode}: register {name} (.{rt}) does not fit a .u32 operand")
                return
            if not reg_ok(rt, want, "relaxed" if kind == "S" else "strict"):
                _fail(instr, f"{instr.opcode}: register {name} (.{rt}) does not fit a .{want} operand")
            return
        if kind == "i":
            if not isinstance(op, ptx.Imm) or op.kind != "int":
                _fail(instr, f"{instr.opcode}: operand {pos + 1} ({op}) must be an integer constant")
            return
        if kind == "l":
            if not isinstance(op, ptx.Sym):
                _fail(instr, f"{instr.opcode}: operand {pos + 1} ({op}) must be a label")
            return
        raise AssertionError(kind)

    def vector(self, scope, instr, op, n, t, pos, dst, mode="vec"):
        if not isinstance(op, ptx.Vec):
            _fail(instr, f"{instr.opcode}: operand {pos + 1} must be a vector of {n} registers {{...}}")
        if len(op.items) != n:
            _fail(instr, f"{instr.opcode}: vector operand {pos + 1} has {len(op.items)} elements, .v{n} needs {n}")
        widths = set()
        for it in op.items:
            if isinstance(it, ptx.Imm) and not dst:
                self.check_imm(instr, it, t)
                continue
            name = self.reg_of(scope, it)
            if name is None:
                _fail(instr, f"{instr.opcode}: vector element {it} must be a register")
            rt = self.rtype(scope, name, instr)
            if rt == "_" or rt == "pred":
                if rt == "pred" and not reg_ok(rt, t, "vec"):
                    _fail(instr, f"{instr.opcode}: predicate {name} cannot be a .{t} vector element")
                continue
            if not reg_ok(rt, t, mode):
                _fail(instr, f"{instr.opcode}: register {name} (.{rt}) does not fit a .{t} vector element")
            widths.add(TYPES[rt][0])
        if len(widths) > 1:
            _fail(instr, f"{instr.opcode}: the elements of a vector operand must have one width")

    def address(self, scope, instr, op, space, pos):
        """``[reg+off]`` / ``[var+off]`` / ``[imm]`` in ``space`` (None: generic)."""
        if not isinstance(op, ptx.Mem):
            _fail(instr, f"{instr.opcode}: operand {pos + 1} ({op}) must be an address [...]")
        base = op.base
        if base is None:
            if not self.lenient and space != "local" and instr.base in ("ld", "st", "ldu", "atom", "red", "cp",
                                                                        "ldmatrix", "stmatrix"):
                _fail(instr, f"{instr.opcode}: an immediate address [{op.offset}] is allowed only in .local")
            return
        name = self.reg_of(scope, base)
        if name is not None:
            rt = self.rtype(scope, name, instr)
            if rt in ("pred", "_") or _rkind(rt) == "f":
                _fail(instr, f"{instr.opcode}: address register {name} (.{rt}) must be an integer or bit register")
            if TYPES[rt][0] == 32 and (space is None or space == "global") and not self.lenient \
                    and instr.base in ("ld", "st", "atom", "red", "ldu"):
                _fail(instr, f"{instr.opcode}: a 32-bit address register ({name}) is a 32-bit address, which "
                             f"sm_90 does not support in the {space or 'generic'} space")
            return
        if isinstance(base, ptx.Reg):
            self.rtype(scope, base.name, instr)
            return
        sp = self.name_ref(scope, instr, base.name)
        if sp is not None and space is not None and sp != "func" and not _space_ok(space, sp):
            _fail(instr, f"{instr.opcode}: {base.name} is a .{sp} variable, the instruction addresses .{space}")
        if sp is not None and space is None and sp in ("param", "local"):
            _fail(instr, f"{instr.opcode}: {base.name} is a .{sp} variable; a generic address needs cvta")

    def name_ref(self, scope, instr, name):
        sp = scope.space(name)
        if sp is None and name in self.functions:
            return "func"
        if sp is None and not self.lenient:
            _fail(instr, f"{instr.opcode}: unknown name {name}")
        return sp

    # -- one instruction -------------------------------------------------------------------------------
    def instruction(self, scope, instr, labels):
        ops = instr.operands
        if _BIGDEC_RE.search(instr.text):
            for m in _BIGDEC_RE.finditer(instr.text):
                if ptx.int_overflows(m.group()):
                    _fail(instr, f"{instr.opcode}: constant {m.group()} overflows 64 bits")
        if instr.guard is not None:
            g = instr.guard[0].name
            rt = self.rtype(scope, g, instr)
            if rt != "pred":
                _fail(instr, f"{instr.opcode}: guard {g} must be a predicate register, not .{rt}")
        base = instr.base
        # registers anywhere in the operands must be declared
        for op in ops:
            self._declared(scope, instr, op)
        if base not in OPCODES and instr.opcode.split(".")[0] + "." + (instr.mods[0] if instr.mods else "") \
                not in OPCODES:
            raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: unknown or unsupported "
                                   f"instruction '{base}': not a PTX instruction")
        mods = instr.mods
        self._target(instr, base, mods)
        _qualifier_order(instr, base, mods)
        if base in ("bra", "brx"):
            return self._bra(scope, instr, labels)
        if base in ("ret", "exit"):
            bad = [m for m in mods if m != "uni"]
            if bad:
                _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]}")
            if ops:
                _fail(instr, f"{instr.opcode}: takes no operands")
            return
        if base in ("st", "red") and mods[:1] == ("async",):
            return self._async(scope, instr)
        if base in ("ld", "st", "ldu"):
            return self._ldst(scope, instr)
        if base == "cvt":
            return self._cvt(scope, instr)
        if base == "mov":
            return self._mov(scope, instr)
        if base == "setp":
            return self._setp(scope, instr)
        if base == "cvta":
            return self._cvta(scope, instr)
        if base in ("bar", "barrier"):
            return self._bar(scope, instr)
        if base == "shfl":
            return self._shfl(scope, instr)
        if base == "vote":
            return self._vote(scope, instr)
        if base in ("atom", "red"):
            return self._atom(scope, instr)
        if base == "cp":
            if mods[:1] not in (("async",), ("reduce",)):
                _fail(instr, f"{instr.opcode}: cp needs .async or .reduce")
            if len(mods) > 1 and mods[1] in ("ca", "cg"):
                return self._cp_async(scope, instr)
            return self._cp_other(scope, instr)
        if base == "set":
            return self._set(scope, instr)
        if base == "slct":
            return self._slct(scope, instr)
        if base in ("prefetch", "prefetchu"):
            return self._prefetch(scope, instr)
        if base == "call":
            return self._call(scope, instr)
        if base in ("redux", "match", "activemask"):
            return self._warpop(scope, instr)
        if base in ("ldmatrix", "stmatrix"):
            return self._matrix(scope, instr)
        if base == "mma":
            return self._mma(scope, instr)
        if base == "wgmma" and mods[:1] not in (("fence",), ("commit_group",), ("wait_group",), ("mma_async",),
                                                ("mma_async_sp",)):
            _fail(instr, f"{instr.opcode}: unknown wgmma instruction")
        if base in ("wgmma", "setmaxnreg") and self.target_name and not self.target_name.endswith("a"):
            _fail(instr, f"{instr.opcode}: {base} needs an arch-specific target (.target {self.target_name}a)")
        if base == "wgmma" and mods[:2] == ("mma_async", "sp"):
            return self._wgmma_sp(instr)
        if base == "wgmma" and mods[:1] == ("mma_async",):
            from isa.wgmma import VARIANTS as WG
            if not any(instr.opcode.startswith(v) and instr.opcode[len(v):] in ("", ".satfinite") for v in WG) \
                    and instr.opcode not in WG:
                raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: not a wgmma form "
                                       f"the emulator knows (docs/wgmma.md lists them)")
            return
        spec = MODS.get(base)
        if spec is None:
            # unchecked forms: still no immediate destination
            if ops and base not in ("call", "fence", "membar", "cp", "mbarrier", "wgmma", "tensormap", "prefetch",
                                    "prefetchu", "applypriority", "discard", "griddepcontrol", "nanosleep",
                                    "pmevent", "trap", "brkpt", "setmaxnreg", "tcgen05", "multimem", "red",
                                    "stmatrix", "sust", "sured", "elect") \
                    and isinstance(ops[0], ptx.Imm):
                _fail(instr, f"{instr.opcode}: operand 1 ({ops[0]}) must be a register: expected a register")
            return
        types, other = spec
        t = self._types(instr, types, other, 1)[0]
        self._rounding(instr, base, t, mods)
        sig = SIGS.get(base)
        kinds = sig(mods, t, None) if sig else None
        if base in ("min", "max"):
            if "abs" in mods and "xorsign" not in mods:
                _fail(instr, f"{instr.opcode}: .abs needs .xorsign")
            if len(ops) == 4 and self.target_sm < 100:
                _fail(instr, f"{instr.opcode}: three-input {base} needs .target sm_100 or higher")
            kinds = ["d"] + ["s"] * max(len(ops) - 1, 2) if len(ops) == 4 else ["d", "s", "s"]
        if kinds is None:
            return
        if len(ops) != len(kinds):
            _fail(instr, f"{instr.opcode}: takes {len(kinds)} operands, found {len(ops)}")
        for k, (op, kind) in enumerate(zip(ops, kinds)):
            self.operand(scope, instr, op, kind, t, k)
            if kind == "u" and base in ("bfe", "bfi") and isinstance(op, ptx.Imm) and not 0 <= op.value <= 255:
                _fail(instr, f"{instr.opcode}: operand {k + 1} ({op}) out of range [0..255]")
        if base == "shf" and (sum(m in mods for m in ("l", "r")) != 1 or
                              sum(m in mods for m in ("clamp", "wrap")) != 1):
            _fail(instr, f"{instr.opcode}: needs shf.{{l,r}}.{{clamp,wrap}}.b32")

    def _target(self, instr, base, mods):
        """Instructions and qualifiers newer than the module's .target."""
        need, what = MIN_SM.get(base, 0), base
        if base == "cp" and mods[:1] == ("async",):
            need, what = (90, "cp.async.bulk") if "bulk" in mods else (80, "cp.async")
        if need <= self.target_sm:
            for m in mods:
                if "cluster" in m:
                    need, what = 90, "." + m
                    break
                if m in ("bf16", "bf16x2") and base in ("add", "sub", "mul", "ex2", "setp"):
                    need, what = 90, f"{base}.{m}"
                    break
                if m in ("bf16", "bf16x2", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "tf32") and base != "mma":
                    need, what = (89 if m.startswith("e") else 80), f"{base}.{m}"
                if m == "abs" and base in ("min", "max"):
                    need, what = 86, f"{base}.abs"
        if need <= self.target_sm:
            for name in _special_names(instr.operands):
                n = 90 if name.startswith(_SM90_SPECIALS) else 80 if name.startswith("%reserved_smem_offset") else 0
                if n > need:
                    need, what = n, name
        if need > self.target_sm:
            _fail(instr, f"{instr.opcode}: {what} needs .target sm_{need} or higher (the module's .target is "
                         f"sm_{self.target_sm})")

    def _declared(self, scope, instr, op):
        if isinstance(op, ptx.Reg):
            self.rtype(scope, op.name, instr)
        elif isinstance(op, ptx.Mem):
            if isinstance(op.base, ptx.Reg):
                self.rtype(scope, op.base.name, instr)
        elif isinstance(op, (ptx.Vec, ptx.Pair, ptx.Paren)):
            for it in op.items:
                self._declared(scope, instr, it)
        elif isinstance(op, ptx.Not):
            self._declared(scope, instr, op.item)
        elif isinstance(op, ptx.TensorAddr):
            self._declared(scope, instr, op.addr)
            self._declared(scope, instr, op.coords)

    def _types(self, instr, types, other, n):
        """The instruction's type qualifiers (exactly ``n``), after checking every qualifier belongs."""
        found = []
        for m in instr.mods:
            if m in types:
                found.append(m)
            elif m in ALL_TYPES or m in ("b1", "b4", "u4", "s4", "e2m1x2"):
                _fail(instr, f"{instr.opcode}: unexpected instruction type .{m}")
            elif m not in other:
                _fail(instr, f"{instr.opcode}: illegal qualifier .{m} for {instr.base}")
        if len(found) != n:
            _fail(instr, f"{instr.opcode}: needs {n} instruction type(s); found "
                         f"{', '.join('.' + f for f in found) or 'none'}")
        return found

    def _rounding(self, instr, base, t, mods):
        rnd = [m for m in mods if m in ROUND_F or m in ROUND_I]
        k = TYPES[t][1]
        if len(rnd) > 1:
            _fail(instr, f"{instr.opcode}: more than one rounding qualifier")
        if rnd and rnd[0] in ROUND_I:
            _fail(instr, f"{instr.opcode}: illegal rounding modifier .{rnd[0]}")
        if "sat" in mods and k != "f" and not (t == "s32" and base in ("add", "sub", "mad", "mul24", "mad24")):
            _fail(instr, f"{instr.opcode}: .sat does not apply to .{t}")
        if sum(m in mods for m in ("lo", "hi", "wide")) > 1:
            _fail(instr, f"{instr.opcode}: .lo, .hi and .wide exclude each other")
        if k != "f":
            if rnd or any(m in ("ftz", "approx", "full", "NaN", "xorsign", "noftz") for m in mods) or \
                    ("relu" in mods and not (base in ("min", "max") and t in ("s32", "s16x2"))):
                bad = next(m for m in mods if m in ROUND_F or m in ("ftz", "approx", "full", "NaN", "xorsign",
                                                                    "relu", "noftz"))  # noqa: E127
                _fail(instr, f"{instr.opcode}: .{bad} needs a floating-point type, not .{t}")
            if "wide" in mods and t not in ("u16", "u32", "s16", "s32"):
                _fail(instr, f"{instr.opcode}: .wide needs a 16- or 32-bit integer type")
            if base in ("mul", "mad") and not any(m in mods for m in ("lo", "hi", "wide")):
                _fail(instr, f"{instr.opcode}: needs .lo, .hi or .wide")
            return
        if any(m in mods for m in ("lo", "hi", "wide", "cc")) or ("sat" in mods and base in ("mul24", "mad24")):
            bad = next(m for m in mods if m in ("lo", "hi", "wide", "cc"))
            _fail(instr, f"{instr.opcode}: .{bad} needs an integer type, not .{t}")
        if base in ("fma", "mad") and not rnd:
            _fail(instr, f"{instr.opcode}: needs a rounding qualifier (.rn, .rz, .rm, .rp)")
        if base in ("div",) and t == "f64" and not rnd:
            _fail(instr, f"{instr.opcode}: needs a rounding qualifier (.rn, .rz, .rm, .rp)")
        if base == "div" and t == "f32" and not rnd and not ({"approx", "full"} & set(mods)):
            _fail(instr, f"{instr.opcode}: needs .rn/.rz/.rm/.rp, .approx or .full")
        if base in ("rcp", "sqrt") and t in F and not rnd and "approx" not in mods:
            _fail(instr, f"{instr.opcode}: needs a rounding qualifier or .approx")
        if base in ("ex2", "lg2", "sin", "cos", "tanh", "rsqrt") and "approx" not in mods \
                and not (base == "ex2" and t != "f32") and not (base == "rsqrt" and t == "f64" and False):
            _fail(instr, f"{instr.opcode}: needs .approx")
        if rnd and base in ("min", "max", "abs", "neg", "copysign", "testp", "selp", "slct", "ex2", "lg2", "sin",
                            "cos", "tanh", "rsqrt"):
            _fail(instr, f"{instr.opcode}: illegal rounding modifier .{rnd[0]}")
        if ("approx" in mods or "full" in mods) and rnd:
            _fail(instr, f"{instr.opcode}: .approx/.full and a rounding qualifier exclude each other")
        if "ftz" in mods and t != "f32" and base not in ("fma", "add", "sub", "mul", "min", "max", "ex2", "abs",
                                                          "neg", "setp", "set", "cvt", "rcp", "rsqrt"):
            _fail(instr, f"{instr.opcode}: .ftz needs .f32")
        if "ftz" in mods and t == "f64" and base not in ("rcp", "rsqrt"):
            _fail(instr, f"{instr.opcode}: .ftz is not allowed with .f64")
        if base == "rcp" and t == "f64" and "approx" in mods and "ftz" not in mods:
            _fail(instr, f"{instr.opcode}: rcp.approx.f64 needs .ftz")
        if base == "sqrt" and t == "f64" and "approx" in mods:
            _fail(instr, f"{instr.opcode}: sqrt.approx does not take .f64")
        if base == "ex2" and t in ("bf16", "bf16x2") and "ftz" not in mods:
            _fail(instr, f"{instr.opcode}: ex2 of .{t} needs .ftz")
        if base == "ex2" and t in ("f16", "f16x2") and "ftz" in mods:
            _fail(instr, f"{instr.opcode}: .ftz does not apply to ex2.{t}")
        if "ftz" in mods and t in ("bf16", "bf16x2") and base != "ex2":
            _fail(instr, f"{instr.opcode}: .ftz does not apply to .{t}")

    # -- families ----------------------------------------------------------------------------------------
    def _bra(self, scope, instr, labels):
        bad = [m for m in instr.mods if m != "uni"]
        if instr.base == "brx":
            bad = [] if instr.mods[:1] == ("idx",) and all(m == "uni" for m in instr.mods[1:]) else \
                [m for m in instr.mods if m not in ("idx", "uni")] or ["idx"]
            if bad:
                _fail(instr, f"{instr.opcode}: brx needs .idx (brx.idx{{.uni}}); illegal qualifier .{bad[0]}")
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for bra")
        if instr.base == "brx":
            return self._brx(scope, instr)
        if len(instr.operands) != 1:
            _fail(instr, f"{instr.opcode}: takes one label, found {len(instr.operands)} operands")
        op = instr.operands[0]
        if not isinstance(op, ptx.Sym) or (scope.reg_type(op.name) is not None):
            _fail(instr, f"{instr.opcode}: the target must be a label, found {op}")
        if labels is not None and op.name not in labels:
            _fail(instr, f"{instr.opcode}: unknown label {op.name}")

    def _brx(self, scope, instr):
        ops = instr.operands
        if len(ops) != 2 or not isinstance(ops[1], ptx.Sym):
            _fail(instr, f"{instr.opcode}: takes an index and a .branchtargets list")
        idx = ops[0]
        if isinstance(idx, ptx.Imm):
            if idx.kind != "int":
                _fail(instr, f"{instr.opcode}: the index must be an integer")
        elif isinstance(idx, ptx.Reg):
            t = self.rtype(scope, idx.name, instr)
            if t not in ("b32", "u32", "s32"):
                _fail(instr, f"{instr.opcode}: the index {idx.name} must be a 32-bit integer register, not .{t}")
        else:
            _fail(instr, f"{instr.opcode}: the index must be a register or an immediate")
        if not self.lenient and scope.space(ops[1].name) != "branchtargets":
            _fail(instr, f"{instr.opcode}: {ops[1].name} is not a .branchtargets list declared before this "
                         f"instruction")

    def _ldst(self, scope, instr):
        base, mods, ops = instr.base, instr.mods, instr.operands
        types, other = MODS[base]
        t = self._types(instr, types, other, 1)[0]
        spaces = [m for m in mods if m in SPACES]
        if len(spaces) > 1:
            _fail(instr, f"{instr.opcode}: more than one state space")
        space = spaces[0] if spaces else None
        if base == "st" and space in ("const", "param::entry"):
            _fail(instr, f"{instr.opcode}: .{space} is read-only; st cannot write it")
        if base == "ldu" and space not in (None, "global"):
            _fail(instr, f"{instr.opcode}: ldu reads .global only")
        if space == "shared::cluster" and self.target_sm < 90:
            _fail(instr, f"{instr.opcode}: .shared::cluster needs .target sm_90 or higher")
        vec = [m for m in mods if m in ("v2", "v4", "v8")]
        if len(vec) > 1:
            _fail(instr, f"{instr.opcode}: more than one vector qualifier")
        n = int(vec[0][1:]) if vec else 1
        if n * TYPES[t][0] > 256 or (n * TYPES[t][0] > 128 and not (space == "global" and self.target_sm >= 100)):
            _fail(instr, f"{instr.opcode}: .v{n}.{t} is wider than a vector access may be")
        if "nc" in mods and (base != "ld" or space != "global"):
            _fail(instr, f"{instr.opcode}: .nc needs ld.global")
        if "nc" in mods and "volatile" in mods:
            _fail(instr, f"{instr.opcode}: .volatile cannot be combined with .nc")
        if space not in (None, "global") and any(m.startswith(("L1::", "L2::")) for m in mods):
            _fail(instr, f"{instr.opcode}: cache eviction hints apply to .global (or generic) addresses only")
        sems = [m for m in mods if m in ("relaxed", "acquire", "release", "weak", "mmio", "volatile")]
        scopes = [m for m in mods if m in ("cta", "gpu", "sys", "cluster")]
        if len(sems) > 1:
            _fail(instr, f"{instr.opcode}: more than one memory-ordering qualifier")
        if scopes and not (sems and sems[0] in ("relaxed", "acquire", "release", "mmio")):
            _fail(instr, f"{instr.opcode}: .{scopes[0]} needs .relaxed, .acquire or .release")
        if sems and sems[0] in ("relaxed", "acquire", "release") and not scopes:
            _fail(instr, f"{instr.opcode}: .{sems[0]} needs a scope (.cta, .cluster, .gpu, .sys)")
        if (base == "ld" and "release" in sems) or (base == "st" and "acquire" in sems):
            _fail(instr, f"{instr.opcode}: .{sems[0]} is not allowed with {base}")
        if sems and space in ("const", "param", "local", "param::entry", "param::func"):
            _fail(instr, f"{instr.opcode}: .{sems[0]} cannot be applied to .{space}")
        cache = [m for m in mods if m in ("ca", "cg", "cs", "lu", "cv", "wb", "wt")]
        if cache and (sems or len(cache) > 1):
            _fail(instr, f"{instr.opcode}: cache operator .{cache[0]} excludes other qualifiers")
        if cache and base == "ld" and cache[0] in ("wb", "wt"):
            _fail(instr, f"{instr.opcode}: .{cache[0]} is a store cache operator")
        if cache and base == "st" and cache[0] in ("ca", "cg", "lu", "cv") and cache[0] != "cg":
            _fail(instr, f"{instr.opcode}: .{cache[0]} is a load cache operator")
        hint = "L2::cache_hint" in mods
        want = 2 + (1 if hint else 0)
        if base in ("ld", "ldu") and len(ops) == 3 and not hint and isinstance(ops[2], ptx.Pair):
            want = 3
        if len(ops) != want:
            _fail(instr, f"{instr.opcode}: takes {want} operands, found {len(ops)}")
        if base in ("ld", "ldu"):
            data, addr = ops[0], ops[1]
            if n > 1:
                self.vector(scope, instr, data, n, t, 0, True, "relaxed")
            elif isinstance(data, ptx.Vec):
                if len(data.items) != 1:
                    _fail(instr, f"{instr.opcode}: a vector operand needs .v{len(data.items)}")
                self.operand(scope, instr, data.items[0], "D", t, 0)
            else:
                self.operand(scope, instr, data, "D", t, 0)
            self.address(scope, instr, addr, space, 1)
        else:
            addr, data = ops[0], ops[1]
            self.address(scope, instr, addr, space, 0)
            if space in ("param", "param::entry", "param::func") and isinstance(addr, ptx.Mem) and \
                    isinstance(addr.base, ptx.Sym) and addr.base.name in self.inputs and \
                    scope.space(addr.base.name) == "param" and not _declared_in_body(scope, addr.base.name):
                _fail(instr, f"{instr.opcode}: {addr.base.name} is an input parameter of the function; ptxas "
                             f"does not allow writing to it")
            if n > 1:
                self.vector(scope, instr, data, n, t, 1, False, "relaxed")
            elif isinstance(data, ptx.Vec):
                if len(data.items) != 1:
                    _fail(instr, f"{instr.opcode}: a vector operand needs .v{len(data.items)}")
                self.operand(scope, instr, data.items[0], "S", t, 1)
            else:
                self.operand(scope, instr, data, "S", t, 1)
        if hint:
            self.operand(scope, instr, ops[-1], "s", "b64", len(ops) - 1)

    def _cvt(self, scope, instr):
        mods = instr.mods
        types, other = MODS["cvt"]
        if mods and mods[-1] in ("pack",) or "pack" in mods:
            return
        ts = self._types(instr, types, other, 2)
        d, s = ts
        dk, sk = TYPES[d][1], TYPES[s][1]
        rnd = [m for m in mods if m in ROUND_F or m in ROUND_I or m in ("rna", "rs")]
        if len(rnd) > 1:
            _fail(instr, f"{instr.opcode}: more than one rounding qualifier")
        if dk == "f" and sk == "f":
            dw, sw = TYPES[d][0], TYPES[s][0]
            if rnd and rnd[0] in ROUND_I and d != s:
                _fail(instr, f"{instr.opcode}: integer rounding between different float types")
            if dw < sw and not rnd and d not in ("e4m3x2", "e5m2x2"):
                _fail(instr, f"{instr.opcode}: a narrowing float conversion needs a rounding qualifier")
            if d == s and rnd and rnd[0] in ROUND_F:
                _fail(instr, f"{instr.opcode}: .{rnd[0]} between equal float types (use .rni/.rzi/.rmi/.rpi)")
            if dw > sw and rnd and rnd[0] in ROUND_F and not s.endswith("x2") and s != "bf16":
                _fail(instr, f"{instr.opcode}: a widening float conversion takes no rounding qualifier")
        elif dk == "f":
            if not rnd or rnd[0] in ROUND_I:
                _fail(instr, f"{instr.opcode}: an int-to-float conversion needs .rn, .rz, .rm or .rp")
        elif sk == "f":
            if not rnd or rnd[0] not in ROUND_I:
                _fail(instr, f"{instr.opcode}: a float-to-int conversion needs .rni, .rzi, .rmi or .rpi")
        elif rnd:
            _fail(instr, f"{instr.opcode}: an int-to-int conversion takes no rounding qualifier")
        if "ftz" in mods and ("f32" not in ts or d.endswith("x2")):
            _fail(instr, f"{instr.opcode}: .ftz needs an .f32 operand")
        if d == "tf32" and not rnd:
            _fail(instr, f"{instr.opcode}: a conversion to .tf32 needs a rounding qualifier (.rna, .rn, .rz)")
        if "rna" in rnd and d != "tf32":
            _fail(instr, f"{instr.opcode}: .rna is only for conversions to .tf32")
        if s.endswith("x2") and d != "f16x2" and not (s == "f16x2" and d in ("e4m3x2", "e5m2x2")):
            _fail(instr, f"{instr.opcode}: a .{s} source converts to .f16x2 only")
        ops = instr.operands
        packed = d in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m1x2", "e2m3x2", "e3m2x2", "ue8m0x2") and \
            s in ("f32",)
        n = 3 if packed else 2
        if len(ops) != n:
            _fail(instr, f"{instr.opcode}: takes {n} operands, found {len(ops)}")
        if d.endswith("x2") and not packed and not (d == "f16x2" and s.endswith("x2")) \
                and not (s == "f16x2" and d in ("e4m3x2", "e5m2x2")):
            _fail(instr, f"{instr.opcode}: .{d} is made from two .f32 values (or a packed fp8 pair)")
        if packed:
            self.operand(scope, instr, ops[0], "D", "b16" if d.startswith(("e", "ue")) else "b32", 0)
            self.operand(scope, instr, ops[1], "S", s, 1)
            self.operand(scope, instr, ops[2], "S", s, 2)
            return
        if s == "f16x2" and d in ("e4m3x2", "e5m2x2"):
            self.operand(scope, instr, ops[0], "d", "b16", 0)
            self.operand(scope, instr, ops[1], "s", "b32", 1)
            return
        if s.endswith("x2") and d == "f16x2":
            self.operand(scope, instr, ops[0], "d", "b32", 0)
            if isinstance(ops[1], ptx.Imm):
                _fail(instr, f"{instr.opcode}: the packed source must be a register")
            self.operand(scope, instr, ops[1], "s", "b16" if s in ("e4m3x2", "e5m2x2") else "b32", 1)
            return
        if d in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2") or s in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2"):
            return
        strict = "bf16" in (d, s)          # ptxas takes no wider register next to a .bf16
        self.operand(scope, instr, ops[0], "d" if strict else "D", d, 0)
        self.operand(scope, instr, ops[1], "s" if strict else "S", s, 1)

    def _mov(self, scope, instr):
        types, other = MODS["mov"]
        t = self._types(instr, types, other, 1)[0]
        ops = instr.operands
        if len(ops) != 2:
            _fail(instr, f"{instr.opcode}: takes 2 operands, found {len(ops)}")
        d, s = ops
        if isinstance(d, ptx.Vec) or isinstance(s, ptx.Vec):
            if t not in ("b32", "b64", "b128") or (isinstance(d, ptx.Vec) and isinstance(s, ptx.Vec)):
                _fail(instr, f"{instr.opcode}: pack/unpack needs .b32, .b64 or .b128 and one vector")
            v, other_op, is_dst = (d, s, True) if isinstance(d, ptx.Vec) else (s, d, False)
            n = len(v.items)
            w = TYPES[t][0]
            if n not in (2, 4) or w // n < 8:
                _fail(instr, f"{instr.opcode}: cannot split .{t} into {n} elements")
            self.vector(scope, instr, v, n, f"b{w // n}", 0 if is_dst else 1, is_dst)
            self.operand(scope, instr, other_op, "s" if is_dst else "d", t, 1 if is_dst else 0)
            return
        self.operand(scope, instr, d, "d", t, 0)
        self.operand(scope, instr, s, "s", t, 1)

    def _setp(self, scope, instr):
        types, other = MODS["setp"]
        t = self._types(instr, types, other, 1)[0]
        mods = instr.mods
        cmp = [m for m in mods if m in CMP]
        boolop = [m for m in mods if m in BOOL]
        if len(cmp) != 1:
            _fail(instr, f"{instr.opcode}: needs one comparison qualifier")
        k = TYPES[t][1]
        c = cmp[0]
        if k in ("u", "s", "b") and c in ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
            _fail(instr, f"{instr.opcode}: .{c} is a floating-point comparison")
        if k == "b" and c not in ("eq", "ne"):
            _fail(instr, f"{instr.opcode}: .{c} is not allowed with .{t} (bit types compare with .eq/.ne)")
        if k == "f" and c in ("lo", "ls", "hi", "hs"):
            _fail(instr, f"{instr.opcode}: .{c} is an unsigned-integer comparison")
        if k in ("s",) and c in ("lo", "ls", "hi", "hs"):
            _fail(instr, f"{instr.opcode}: .{c} is an unsigned-integer comparison")
        if "ftz" in mods and t not in ("f32", "f16", "f16x2", "bf16", "bf16x2"):
            _fail(instr, f"{instr.opcode}: .ftz needs .f32 (or a half type)")
        if len(boolop) > 1:
            _fail(instr, f"{instr.opcode}: more than one boolean operation")
        ops = instr.operands
        kinds = ["p", "s", "s"] + (["q"] if boolop else [])
        if len(ops) != len(kinds):
            _fail(instr, f"{instr.opcode}: takes {len(kinds)} operands, found {len(ops)}")
        for k2, (op, kind) in enumerate(zip(ops, kinds)):
            self.operand(scope, instr, op, kind, t, k2)

    def _set(self, scope, instr):
        mods = instr.mods
        ts = [m for m in mods if m in ALL_TYPES]
        cmp = [m for m in mods if m in CMP]
        boolop = [m for m in mods if m in BOOL]
        bad = [m for m in mods if m not in ALL_TYPES and m not in CMP and m not in BOOL and m != "ftz"]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for set")
        if len(ts) != 2 or ts[0] not in ("u32", "s32", "f32", "f16", "bf16", "f16x2", "bf16x2", "u16x2", "s16x2") \
                or ts[1] not in BITS | INT | F | HALF:
            _fail(instr, f"{instr.opcode}: set needs .dtype.stype (.u32, .s32 or .f32 and a source type)")
        if len(cmp) != 1 or len(boolop) > 1:
            _fail(instr, f"{instr.opcode}: needs one comparison qualifier")
        ops = instr.operands
        kinds = ["d", "s", "s"] + (["q"] if boolop else [])
        if len(ops) != len(kinds):
            _fail(instr, f"{instr.opcode}: takes {len(kinds)} operands, found {len(ops)}")
        if ts[1] in HALF:
            return
        self.operand(scope, instr, ops[0], "d", ts[0], 0)
        for k, (op, kind) in enumerate(zip(ops[1:], kinds[1:])):
            self.operand(scope, instr, op, kind, ts[1], k + 1)

    def _slct(self, scope, instr):
        mods = instr.mods
        ts = [m for m in mods if m in ALL_TYPES]
        bad = [m for m in mods if m not in ALL_TYPES and m != "ftz"]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for slct")
        if len(ts) != 2 or ts[0] not in BITS | INT | F or ts[1] not in ("s32", "f32"):
            _fail(instr, f"{instr.opcode}: slct needs .dtype.s32 or .dtype.f32")
        ops = instr.operands
        if len(ops) != 4:
            _fail(instr, f"{instr.opcode}: takes 4 operands, found {len(ops)}")
        for k, op in enumerate(ops[:3]):
            self.operand(scope, instr, op, "d" if k == 0 else "s", ts[0], k)
        self.operand(scope, instr, ops[3], "s", ts[1], 3)

    def _prefetch(self, scope, instr):
        allowed = {"global", "local", "L1", "L2", "L2::evict_last", "L2::evict_normal", "tensormap", "const",
                   "param", "shared", "shared::cluster"}
        bad = [m for m in instr.mods if m not in allowed]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for prefetch")
        if len(instr.operands) != 1:
            _fail(instr, f"{instr.opcode}: takes 1 operand (an address), found {len(instr.operands)}")
        sp = [m for m in instr.mods if m in SPACES]
        self.address(scope, instr, instr.operands[0], sp[0] if sp else None, 0)

    def _call(self, scope, instr):
        bad = [m for m in instr.mods if m != "uni"]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for call")
        ops = list(instr.operands)
        if ops and isinstance(ops[0], ptx.Paren):
            ops.pop(0)
        if ops and isinstance(ops[0], ptx.Reg):          # indirect: call (r), fptr, (a), prototype/targets
            t = self.rtype(scope, ops[0].name, instr)
            if t not in ("b32", "u32", "s32", "b64", "u64", "s64"):
                _fail(instr, f"{instr.opcode}: the function address {ops[0].name} must be a 32- or 64-bit "
                             f"integer register, not .{t}")
            last = ops[-1]
            if len(ops) < 2 or not isinstance(last, ptx.Sym) or not self.lenient and \
                    scope.space(last.name) not in ("callprototype", "calltargets"):
                _fail(instr, f"{instr.opcode}: an indirect call ends with a .callprototype or .calltargets list "
                             f"declared before it")
            for op in ops[1:-1]:
                if not isinstance(op, ptx.Paren):
                    _fail(instr, f"{instr.opcode}: unexpected operand {op}")
            return
        if not ops or not isinstance(ops[0], ptx.Sym):
            _fail(instr, f"{instr.opcode}: expected the called function's name")
        name = ops[0].name
        if not self.lenient and name not in self.functions and scope.space(name) is None:
            _fail(instr, f"{instr.opcode}: unknown function {name}")
        for op in ops[1:]:
            if not isinstance(op, (ptx.Paren, ptx.Sym)):
                _fail(instr, f"{instr.opcode}: unexpected operand {op}")

    def _warpop(self, scope, instr):
        mods, ops, base = instr.mods, instr.operands, instr.base
        if base == "activemask":
            if mods != ("b32",) or len(ops) != 1:
                _fail(instr, f"{instr.opcode}: activemask.b32 takes one destination")
            self.operand(scope, instr, ops[0], "d", "b32", 0)
            return
        if base == "redux":
            rops = {"add", "min", "max", "and", "or", "xor"}
            allowed = {"sync", "u32", "s32", "b32", "f32", "abs", "NaN"} | rops
            bad = [m for m in mods if m not in allowed]
            o = [m for m in mods if m in rops]
            ts = [m for m in mods if m in ("u32", "s32", "b32", "f32")]
            if bad or "sync" not in mods or len(o) != 1 or len(ts) != 1:
                _fail(instr, f"{instr.opcode}: needs redux.sync.{{add,min,max}}.{{u32,s32}} or "
                             f"redux.sync.{{and,or,xor}}.b32")
            if (o[0] in ("and", "or", "xor")) != (ts[0] == "b32"):
                _fail(instr, f"{instr.opcode}: .{o[0]} does not take .{ts[0]}")
            if len(ops) != 3:
                _fail(instr, f"{instr.opcode}: takes 3 operands, found {len(ops)}")
            self.operand(scope, instr, ops[0], "d", ts[0], 0)
            self.operand(scope, instr, ops[1], "s", ts[0], 1)
            self.operand(scope, instr, ops[2], "s", "b32", 2)
            return
        modes = [m for m in mods if m in ("any", "all")]
        ts = [m for m in mods if m in ("b32", "b64")]
        bad = [m for m in mods if m not in ("any", "all", "sync", "b32", "b64")]
        if bad or len(modes) != 1 or len(ts) != 1 or "sync" not in mods:
            _fail(instr, f"{instr.opcode}: needs match.{{any,all}}.sync.{{b32,b64}}")
        if len(ops) != 3:
            _fail(instr, f"{instr.opcode}: takes 3 operands, found {len(ops)}")
        d = ops[0]
        if isinstance(d, ptx.Pair):
            if modes[0] != "all":
                _fail(instr, f"{instr.opcode}: only match.all writes a predicate")
            self.operand(scope, instr, d.items[0], "d", "b32", 0)
            self.operand(scope, instr, d.items[1], "p", "pred", 0)
        else:
            self.operand(scope, instr, d, "d", "b32", 0)
        self.operand(scope, instr, ops[1], "s", ts[0], 1)
        self.operand(scope, instr, ops[2], "s", "b32", 2)

    def _matrix(self, scope, instr):
        mods, ops, base = instr.mods, instr.operands, instr.base
        allowed = {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta", "b16"}
        bad = [m for m in mods if m not in allowed]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier or type .{bad[0]} for {base}")
        num = [m for m in mods if m in ("x1", "x2", "x4")]
        if not {"sync", "aligned", "m8n8", "b16"} <= set(mods) or len(num) != 1 or len(set(mods)) != len(mods):
            _fail(instr, f"{instr.opcode}: needs {base}.sync.aligned.m8n8.{{x1,x2,x4}}{{.trans}}{{.shared}}.b16")
        if len(ops) != 2:
            _fail(instr, f"{instr.opcode}: takes 2 operands, found {len(ops)}")
        n = int(num[0][1])
        v, a = (ops[0], ops[1]) if base == "ldmatrix" else (ops[1], ops[0])
        self.vector(scope, instr, v, n, "b32", 0 if base == "ldmatrix" else 1, base == "ldmatrix")
        self.address(scope, instr, a, "shared", 1 if base == "ldmatrix" else 0)

    def _wgmma_sp(self, instr):
        """wgmma.mma_async.sp: a form ptxas accepts, with d, a (descriptor or four registers), b-desc, sp-meta,
        sp-sel, scale-d and the form's immediates."""
        from isa.wgmma_sp import VARIANTS as WSP
        sv = WSP.get(instr.opcode)
        if sv is None:
            raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: not a wgmma.mma_async.sp "
                                   f"form the emulator knows (docs/wgmma.md lists them)")
        ops = instr.operands
        rs = len(ops) > 1 and isinstance(ops[1], ptx.Vec)
        n = 6 + sv.dense.n_imm("rs" if rs else "ss")
        if len(ops) != n:
            imms = ["imm-scale-a", "imm-scale-b"] if sv.dense.is_float else []
            if sv.dense.can_transpose:
                imms += ([] if rs else ["imm-trans-a"]) + ["imm-trans-b"]
            _fail(instr, f"{instr.opcode}: takes {n} operands (d, {'a' if rs else 'a-desc'}, b-desc, sp-meta, "
                         f"sp-sel, scale-d{''.join(', ' + x for x in imms)}), found {len(ops)}")
        if rs and len(ops[1].items) != 4:
            _fail(instr, f"{instr.opcode}: the A operand from registers is a vector of 4 registers, found "
                         f"{len(ops[1].items)}")
        if isinstance(ops[3], ptx.Imm):
            _fail(instr, f"{instr.opcode}: sp-meta must be a 32-bit register (ptxas takes no immediate), found "
                         f"{ops[3]}")
        if not isinstance(ops[4], ptx.Imm):
            _fail(instr, f"{instr.opcode}: sp-sel must be an immediate")
        if ops[4].value not in sv.selectors:
            _fail(instr, f"{instr.opcode}: sp-sel must be {' or '.join(map(str, sv.selectors))}, not {ops[4].value}")

    def _mma(self, scope, instr):
        from isa.mma import VARIANTS as MMA
        if any(m in ("sp", "sp::ordered_metadata") for m in instr.mods):
            return self._mma_sp(scope, instr)
        var = MMA.get(instr.opcode)
        if var is None:
            raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: not an mma form the "
                                   f"emulator knows (isa/mma.py lists them)")
        ops = instr.operands
        if len(ops) != 4:
            _fail(instr, f"{instr.opcode}: takes 4 operands (D, A, B, C), found {len(ops)}")
        for k, (op, which) in enumerate(zip(ops, "DABC")):
            t = {"D": var.dtype, "A": var.atype, "B": var.btype, "C": var.ctype}[which]
            rt = t if t in ("f32", "f64", "s32") else "b32"
            self.vector(scope, instr, op, var.n_regs(which), rt, k, which == "D")
            if rt == "b32":             # packed fragments: untyped 32-bit registers only
                for it in op.items:
                    name = self.reg_of(scope, it)
                    if name is not None and self.rtype(scope, name, instr) not in ("b32", "_"):
                        _fail(instr, f"{instr.opcode}: packed {which} fragment register {name} must be .b32")

    def _mma_sp(self, scope, instr):
        from isa.mma_sp import VARIANTS as SP
        var = SP.get(instr.opcode)
        if var is None:
            raise UnsupportedError(f"line {instr.line}, column {instr.col}: {instr.opcode}: not an mma.sp form the "
                                   f"emulator knows (isa/mma_sp.py lists them)")
        ops = instr.operands
        if len(ops) != 6:
            _fail(instr, f"{instr.opcode}: takes 6 operands (D, A, B, C, metadata, selector), found {len(ops)}")
        for k, (op, which) in enumerate(zip(ops[:4], "DABC")):
            t = {"D": var.dtype, "A": var.atype, "B": var.btype, "C": var.ctype}[which]
            rt = t if t in ("f32", "s32") else "b32"
            self.vector(scope, instr, op, var.n_regs(which), rt, k, which == "D")
        e, f = ops[4], ops[5]
        if not isinstance(e, ptx.Imm):
            name = self.reg_of(scope, e)
            if name is None or TYPES.get(self.rtype(scope, name, instr), (0,))[0] != 32:
                _fail(instr, f"{instr.opcode}: the metadata (operand 5) must be a 32-bit register or constant")
        if not isinstance(f, ptx.Imm) or f.kind != "int" or int(f.value) not in var.selectors:
            _fail(instr, f"{instr.opcode}: the sparsity selector (operand 6) must be one of the constants "
                         f"{', '.join(map(str, var.selectors))}")

    def _cp_other(self, scope, instr):
        mods, ops = instr.mods, instr.operands
        op = ".".join(mods)
        if op in ("async.commit_group", "async.wait_all", "async.bulk.commit_group"):
            if ops:
                _fail(instr, f"{instr.opcode}: takes no operands")
            return
        if "bulk" not in mods and "reduce" not in mods and "mbarrier" not in mods and op not in (
                "async.commit_group", "async.wait_all", "async.wait_group"):
            _fail(instr, f"{instr.opcode}: cp.async needs .ca or .cg (or .bulk)")
        if op in ("async.wait_group", "async.bulk.wait_group", "async.bulk.wait_group.read"):
            if len(ops) != 1 or not isinstance(ops[0], ptx.Imm) or ops[0].kind != "int":
                _fail(instr, f"{instr.opcode}: takes one integer constant")
            return
        vocab = {"async", "reduce", "bulk", "tensor", "1d", "2d", "3d", "4d", "5d", "shared::cluster", "shared::cta",
                 "global", "shared", "mbarrier::complete_tx::bytes", "bulk_group", "tile", "im2col", "im2col_no_offs",
                 "multicast::cluster", "L2::cache_hint", "prefetch", "add", "min", "max", "inc", "dec", "and", "or",
                 "xor", "u32", "s32", "u64", "s64", "f32", "f64", "f16", "bf16", "b32", "b64", "noftz", "cp_mask",
                 "mbarrier", "arrive", "noinc", "b8", "L2::evict_last", "L2::evict_first", "L2::evict_normal",
                 "tile::gather4", "tile::scatter4", "cta_group::1", "cta_group::2", "im2col::w", "im2col::w::128",
                 "L2"}
        bad = [m for m in mods if m not in vocab]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for cp")
        if ops and isinstance(ops[0], ptx.Imm):
            _fail(instr, f"{instr.opcode}: operand 1 ({ops[0]}) must be an address: expected a register")

    def _cvta(self, scope, instr):
        types, other = MODS["cvta"]
        t = self._types(instr, types, other, 1)[0]
        sp = [m for m in instr.mods if m in SPACES]
        if len(sp) != 1:
            _fail(instr, f"{instr.opcode}: needs one state space")
        ops = instr.operands
        if len(ops) != 2:
            _fail(instr, f"{instr.opcode}: takes 2 operands, found {len(ops)}")
        self.operand(scope, instr, ops[0], "d", t, 0)
        s = ops[1]
        if isinstance(s, (ptx.Sym, ptx.Mem)) and self.reg_of(scope, s) is None:
            if "to" in instr.mods:
                _fail(instr, f"{instr.opcode}: cvta.to takes an address in a register")
            self.name_ref(scope, instr, s.name if isinstance(s, ptx.Sym) else s.base.name)
            return
        self.operand(scope, instr, s, "s", t, 1)

    def _bar(self, scope, instr):
        mods = instr.mods
        if instr.base == "bar" and mods[:1] == ("warp",):
            if len(instr.operands) != 1:
                _fail(instr, f"{instr.opcode}: takes a membermask")
            self.operand(scope, instr, instr.operands[0], "s", "b32", 0)
            return
        if "cluster" in mods:           # barrier.cluster.arrive/wait: unchecked
            return
        kinds = [m for m in mods if m in ("sync", "arrive", "red")]
        if len(kinds) != 1:
            _fail(instr, f"{instr.opcode}: needs one of .sync, .arrive, .red")
        allowed = {"sync", "arrive", "red", "aligned", "cta", "popc", "and", "or", "u32", "pred"}
        bad = [m for m in mods if m not in allowed]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]}")
        ops = list(instr.operands)
        if kinds[0] == "red":
            if len(ops) not in (3, 4):
                _fail(instr, f"{instr.opcode}: takes 3 or 4 operands, found {len(ops)}")
            self.operand(scope, instr, ops[-1], "q", "pred", len(ops) - 1)
            ops = ops[1:-1]
        if not 1 <= len(ops) <= 2 or (kinds[0] == "arrive" and len(ops) != 2):
            count = " and a thread count" if kinds[0] == "arrive" else " and an optional thread count"
            _fail(instr, f"{instr.opcode}: takes a barrier number{count}, found {len(ops)} operands")
        for k, op in enumerate(ops):
            if isinstance(op, ptx.Imm):
                if op.kind != "int":
                    _fail(instr, f"{instr.opcode}: operand {op} must be an integer")
                self.check_imm(instr, op, "u32")
                v = op.value & 0xFFFFFFFF
                if k == 0 and v > 15:
                    _fail(instr, f"{instr.opcode}: barrier number {op.value} out of range [0..15]")
                if k == 1 and v % 32:
                    _fail(instr, f"{instr.opcode}: thread count {op.value} must be a positive multiple of 32")
            else:
                self.operand(scope, instr, op, "u", "u32", k)

    def _shfl(self, scope, instr):
        mods = instr.mods
        allowed = {"sync", "up", "down", "bfly", "idx", "b32"}
        bad = [m for m in mods if m not in allowed]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]}")
        if "b32" not in mods or len([m for m in mods if m in ("up", "down", "bfly", "idx")]) != 1:
            _fail(instr, f"{instr.opcode}: needs shfl{{.sync}}.{{up,down,bfly,idx}}.b32")
        ops = instr.operands
        n = 5 if "sync" in mods else 4
        if len(ops) != n:
            _fail(instr, f"{instr.opcode}: takes {n} operands, found {len(ops)}")
        d = ops[0]
        if isinstance(d, ptx.Pair):
            self.operand(scope, instr, d.items[0], "d", "b32", 0)
            self.operand(scope, instr, d.items[1], "p", "pred", 0)
        else:
            self.operand(scope, instr, d, "d", "b32", 0)
        for k in range(1, n):
            self.operand(scope, instr, ops[k], "u" if k == 4 else "s", "b32", k)

    def _vote(self, scope, instr):
        mods = instr.mods
        modes = [m for m in mods if m in ("all", "any", "uni", "ballot")]
        allowed = {"sync", "all", "any", "uni", "ballot", "pred", "b32"}
        bad = [m for m in mods if m not in allowed]
        if bad or len(modes) != 1:
            _fail(instr, f"{instr.opcode}: needs vote{{.sync}}.{{all,any,uni}}.pred or vote{{.sync}}.ballot.b32")
        t = "b32" if modes[0] == "ballot" else "pred"
        if t not in mods or ("b32" in mods and "pred" in mods):
            _fail(instr, f"{instr.opcode}: vote.{modes[0]} takes .{t}")
        ops = instr.operands
        n = 3 if "sync" in mods else 2
        if len(ops) != n:
            _fail(instr, f"{instr.opcode}: takes {n} operands, found {len(ops)}")
        self.operand(scope, instr, ops[0], "d" if t == "b32" else "p", t, 0)
        self.operand(scope, instr, ops[1], "q", "pred", 1)
        if n == 3:
            self.operand(scope, instr, ops[2], "s", "b32", 2)

    def _atom(self, scope, instr):
        base, mods, ops = instr.base, instr.mods, instr.operands
        atom_ops = {"and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"}
        t_all = {"b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2",
                 "b16", "b128", "u16", "s16"}
        other = atom_ops | {"global", "shared", "shared::cta", "shared::cluster", "relaxed", "acquire", "release",
                            "acq_rel", "sem", "cta", "gpu", "sys", "cluster", "noftz", "L2::cache_hint", "v2", "v4",
                            "v8", "ftz", "rn", "mmio"}
        ts = [m for m in mods if m in t_all]
        bad = [m for m in mods if m not in t_all and m not in other]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for {base}")
        if len(ts) != 1:
            _fail(instr, f"{instr.opcode}: needs one instruction type")
        t = ts[0]
        op = [m for m in mods if m in atom_ops]
        if len(op) != 1:
            _fail(instr, f"{instr.opcode}: needs one operation (.add, .min, .cas, ...)")
        o = op[0]
        k = TYPES[t][1]
        if o in ("and", "or", "xor") and t not in ("b32", "b64"):
            _fail(instr, f"{instr.opcode}: .{o} needs .b32 or .b64")
        if o in ("cas", "exch") and t not in ("b32", "b64", "b16", "b128"):
            _fail(instr, f"{instr.opcode}: .{o} needs a bit type")
        if o in ("inc", "dec") and t != "u32":
            _fail(instr, f"{instr.opcode}: .{o} needs .u32")
        if o in ("min", "max") and k not in ("u", "s") and t not in ("f16", "bf16", "f16x2", "bf16x2"):
            _fail(instr, f"{instr.opcode}: .{o} needs an integer type")
        if o == "add" and k == "b":
            _fail(instr, f"{instr.opcode}: .add needs a typed operand (.u32, .s32, .f32, ...)")
        if o == "add" and t in ("s64", "u16", "s16"):
            _fail(instr, f"{instr.opcode}: .add.{t} does not exist")
        spaces = [m for m in mods if m in SPACES]
        if len(spaces) > 1:
            _fail(instr, f"{instr.opcode}: more than one state space")
        space = spaces[0] if spaces else None
        if space in ("local", "const", "param"):
            _fail(instr, f"{instr.opcode}: .{space} is not allowed for {base}")
        hint = "L2::cache_hint" in mods
        vec = [m for m in mods if m in ("v2", "v4", "v8")]
        if len(vec) > 1:
            _fail(instr, f"{instr.opcode}: more than one vector qualifier")
        nv = int(vec[0][1:]) if vec else 1
        n = (2 if base == "red" else 3) + (1 if o == "cas" else 0) + (1 if hint else 0)
        if len(ops) != n:
            _fail(instr, f"{instr.opcode}: takes {n} operands, found {len(ops)}")
        if base == "atom":
            self._atom_data(scope, instr, ops[0], nv, t, 0, True)
            self.address(scope, instr, ops[1], space, 1)
            rest = ops[2:n - (1 if hint else 0)]
            first = 2
        else:
            self.address(scope, instr, ops[0], space, 0)
            rest = ops[1:n - (1 if hint else 0)]
            first = 1
        for k2, opnd in enumerate(rest):
            self._atom_data(scope, instr, opnd, nv, t, first + k2, False)
        if hint:
            self.operand(scope, instr, ops[-1], "s", "b64", n - 1)

    def _atom_data(self, scope, instr, op, nv, t, pos, is_dst):
        """A data operand of atom/red/st.async: a register (or constant), or a vector of ``nv`` of them."""
        if nv > 1:
            self.vector(scope, instr, op, nv, t, pos, is_dst, "relaxed")
        elif isinstance(op, ptx.Vec):
            if len(op.items) != 1:
                _fail(instr, f"{instr.opcode}: a vector operand needs .v{len(op.items)}")
            self.operand(scope, instr, op.items[0], "d" if is_dst else "s", t, pos)
        else:
            self.operand(scope, instr, op, "d" if is_dst else "s", t, pos)

    def _async(self, scope, instr):
        """red.async / st.async [a], b, [mbar] (which qualifier sets exist, the executors check)."""
        mods, ops = instr.mods, instr.operands
        ts = [m for m in mods if m in TYPES]
        if len(ts) != 1:
            _fail(instr, f"{instr.opcode}: needs one type")
        vec = [m for m in mods if m in ("v2", "v4")]
        nv = int(vec[0][1:]) if vec else 1
        spaces = [m for m in mods if m in SPACES]
        space = spaces[0] if spaces else None
        if space not in (None, "shared::cluster", "shared::cta"):
            _fail(instr, f"{instr.opcode}: {instr.base}.async writes shared memory (.shared::cluster), not .{space}")
        if len(ops) != 3:
            _fail(instr, f"{instr.opcode}: takes [a], b, [mbar]; found {len(ops)} operands")
        self.address(scope, instr, ops[0], space, 0)
        self._atom_data(scope, instr, ops[1], nv, ts[0], 1, False)
        self.address(scope, instr, ops[2], space, 2)

    def _cp_async(self, scope, instr):
        mods = instr.mods
        allowed = {"async", "ca", "cg", "shared", "global", "shared::cta", "L2::64B", "L2::128B", "L2::256B",
                   "L2::cache_hint"}
        bad = [m for m in mods if m not in allowed]
        if bad:
            _fail(instr, f"{instr.opcode}: illegal qualifier .{bad[0]} for cp.async")
        if "global" not in mods or not ({"shared", "shared::cta"} & set(mods)):
            _fail(instr, f"{instr.opcode}: cp.async copies .global to .shared{{::cta}}")
        ops = instr.operands
        hint = "L2::cache_hint" in mods
        if not 3 + hint <= len(ops) <= 4 + hint:
            _fail(instr, f"{instr.opcode}: takes {3 + hint} or {4 + hint} operands, found {len(ops)}")
        self.address(scope, instr, ops[0], "shared", 0)
        self.address(scope, instr, ops[1], "global", 1)
        size = ops[2]
        if not isinstance(size, ptx.Imm) or size.kind != "int":
            _fail(instr, f"{instr.opcode}: cp-size must be an integer constant")
        allowed_sizes = (16,) if "cg" in mods else (4, 8, 16)
        if size.value not in allowed_sizes:
            _fail(instr, f"{instr.opcode}: cp-size {size.text} is not allowed; allowed: "
                         f"{', '.join(map(str, allowed_sizes))}")
        if len(ops) - hint == 4:
            s = ops[3]
            if isinstance(s, ptx.Imm):
                if s.kind != "int" or not 0 <= s.value <= size.value:
                    _fail(instr, f"{instr.opcode}: src-size {s.text} out of range [0..{size.value}]")
            else:
                name = self.reg_of(scope, s)
                if name is None:
                    _fail(instr, f"{instr.opcode}: src-size must be a register or an integer constant")
        if hint:
            self.operand(scope, instr, ops[-1], "s", "b64", len(ops) - 1)


MIN_SM = {"stmatrix": 90, "wgmma": 90, "setmaxnreg": 90, "elect": 90, "tensormap": 90, "griddepcontrol": 90,
          "multimem": 90, "mapa": 90, "getctarank": 90, "redux": 80, "ldmatrix": 75, "mbarrier": 80,
          "movmatrix": 78, "match": 70, "activemask": 70, "nanosleep": 70, "createpolicy": 80, "fence": 70}


def _declared_in_body(scope, name):
    """Whether ``name`` is declared in a ``{ }`` scope of the body (which hides a parameter of that name)."""
    s = scope
    while s is not None and s.parent is not None and s.parent.parent is not None:
        if name in s.names:
            return True
        s = s.parent
    return False


def _qualifier_order(instr, base, mods):
    """Orders ptxas refuses although the qualifiers are right: an integer multiply's .lo/.hi/.wide after its
    type (``mul.u32.wide``: "Unknown modifier"), and cvta's .to anywhere but first."""
    if base in ("mul", "mad", "mul24", "mad24"):
        mode = next((k for k, m in enumerate(mods) if m in ("lo", "hi", "wide")), None)
        typ = next((k for k, m in enumerate(mods) if m in TYPES), None)
        if mode is not None and typ is not None and mode > typ:
            _fail(instr, f"{instr.opcode}: .{mods[mode]} must come before the type .{mods[typ]} "
                         f"({base}.{mods[mode]}.{mods[typ]})")
    if base == "cvta" and "to" in mods and mods[0] != "to":
        _fail(instr, f"{instr.opcode}: .to must come first (cvta.to.<space>.<size>)")


def _double(t):
    return {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}.get(t)


def _space_ok(space, var_space):
    if space.startswith("shared") and var_space.startswith("shared"):
        return True
    if space.startswith("param") and var_space == "param":
        return True
    return space == var_space


# ------------------------------------------------------------------------------------------------------------
# declarations and bodies

def declare(scope, d: ptx.Directive, checker=None):
    """Record a body directive in ``scope``: registers and variables."""
    if d.name == ".reg":
        toks = d.tokens
        types = [t.text[1:] for t in toks if t.kind == "name" and t.text.startswith(".") and t.text not in
                 (".v2", ".v4", ".v8")]
        tok0 = toks[0] if toks else d
        if len(types) != 1:
            _fail(tok0, f".reg needs exactly one type, found {types or 'none'}")
        t = types[0]
        if t not in REG_TYPES:
            _fail(tok0, f".reg .{t}: not a register type; register types: "
                        f"{', '.join('.' + x for x in sorted(REG_TYPES))}")
        i = next(k for k, tk in enumerate(toks) if tk.text == "." + t) + 1
        while i < len(toks):
            tk = toks[i]
            if tk.kind != "name" or tk.text.startswith("."):
                _fail(tk, f".reg: expected a register name, found {tk.text!r}")
            if i + 1 < len(toks) and toks[i + 1].text == "<":
                if i + 3 >= len(toks) or toks[i + 2].kind != "num" or toks[i + 3].text != ">" \
                        or not toks[i + 2].text.isdigit():
                    _fail(toks[i + 1], ".reg: expected '<N>'")
                count = int(toks[i + 2].text)
                if count > 1 << 24:
                    _fail(toks[i + 2], f".reg: {count} registers is more than a function may declare")
                if tk.text in scope.ranges or any(_in_range(n, tk.text, count) for n in scope.regs):
                    _fail(tk, f".reg: duplicate definition of {tk.text}<{count}> in this scope")
                scope.ranges.setdefault(tk.text, []).append((count, t))
                i += 4
            else:
                if tk.text in scope.regs or any(_in_range(tk.text, pre, n) for pre, rs in scope.ranges.items()
                                                for n, _ in rs):
                    _fail(tk, f".reg: duplicate definition of {tk.text} in this scope")
                scope.regs[tk.text] = t
                i += 1
            if i < len(toks):
                if toks[i].text != ",":
                    _fail(toks[i], f".reg: expected ',', found {toks[i].text!r}")
                i += 1
        return
    if d.name in (".shared", ".local", ".global", ".const", ".param"):
        toks = d.tokens
        names = [t for t in toks if t.kind == "name" and not t.text.startswith(".")]
        types = [t.text[1:] for t in toks if t.kind == "name" and t.text[1:] in TYPES]
        if types and types[0] not in VAR_TYPES:
            _fail(toks[0], f"{d.name}: .{types[0]} is not a variable type")
        if types and types[0] == "pred" and d.name != ".reg":
            _fail(toks[0], f"{d.name}: a predicate variable must be in .reg")
        _check_align(toks)
        if d.name != ".global" and d.name != ".const" and any(t.text == "=" for t in toks):
            _fail(d, f"a {d.name} variable cannot have an initial value")
        for k in range(len(toks) - 1):
            if toks[k].text == "[" and toks[k + 1].text == "]" and not any(t.text == ".extern" for t in toks):
                _fail(toks[k], "an array without a size must be .extern")
        if names:
            if names[0].text in scope.names:
                _fail(names[0], f"{d.name}: duplicate definition of {names[0].text} in this scope")
            scope.names[names[0].text] = d.name[1:]
        return


def _in_range(name, prefix, count):
    """Whether register ``name`` is one of ``prefix<count>`` (``%r3`` of ``%r<5>``; not ``%r03``)."""
    if not name.startswith(prefix):
        return False
    idx = name[len(prefix):]
    return idx.isdigit() and (idx == "0" or idx[0] != "0") and int(idx) < count


def _check_align(toks):
    for k, t in enumerate(toks):
        if t.text == ".align" and k + 1 < len(toks):
            v = toks[k + 1]
            try:
                n = int(v.text, 0)
            except ValueError:
                _fail(v, f".align needs a number, found {v.text!r}")
            if n <= 0 or n & (n - 1):
                _fail(v, f"alignment {n} must be a power of two")


def _labels(statements, out):
    for st in statements:
        if isinstance(st, ptx.Label):
            out.add(st.name)
        elif isinstance(st, ptx.Block):
            _labels(st.statements, out)
    return out


def check_body(checker, statements, scope, labels):
    scope = Scope(scope)
    here = set()
    for st in statements:
        if isinstance(st, ptx.Directive):
            declare(scope, st, checker)
        elif isinstance(st, ptx.Label):
            if st.name in here:
                _fail(st, f"duplicate definition of label {st.name} in this scope")
            here.add(st.name)
    for i, st in enumerate(statements):
        if isinstance(st, ptx.Instruction):
            checker.instruction(scope, st, labels)
        elif isinstance(st, ptx.Block):
            check_body(checker, st.statements, scope, labels)
        elif isinstance(st, ptx.Directive) and st.name in _TARGET_LISTS and i and \
                isinstance(statements[i - 1], ptx.Label):
            # 'name: .branchtargets ...': usable from here on (ptxas allows no forward reference to a list)
            scope.names[statements[i - 1].name] = st.name[1:]


_TARGET_LISTS = (".branchtargets", ".calltargets", ".callprototype")


# ------------------------------------------------------------------------------------------------------------
# module

VERSIONS_OK = {f"{a}.{b}" for a, bs in ((1, range(6)), (2, range(4)), (3, range(3)), (4, range(4)), (5, range(1)),
                                        (6, range(6)), (7, range(9)), (8, range(9)), (9, range(1))) for b in bs}
# minimum .version per target (ptxas rejects an older ISA for a newer target)
_MIN_VERSION = {50: (4, 0), 52: (4, 1), 53: (4, 2), 60: (5, 0), 61: (5, 0), 62: (5, 0), 70: (6, 0), 72: (6, 1),
                75: (6, 3), 80: (7, 0), 86: (7, 1), 87: (7, 4), 89: (7, 8), 90: (7, 8), 100: (8, 6), 101: (8, 6),
                103: (8, 8), 110: (9, 0), 120: (8, 7), 121: (8, 8)}


def validate_module(info):
    """Check a parsed module (``frontend.module.ModuleInfo``) as ptxas does; raise PTXValidationError."""
    from isa.targets import parse_target
    sm = 90
    target_name = ""
    if info.target:
        try:
            target_name, sm, opts = parse_target(info.target)
        except ValueError:
            sm, opts = 90, ()
        if sm > 90 or (target_name and sm == 90 and False):
            raise UnsupportedError(f"line 1, column 1: .target {target_name}: the emulated H100 (sm_90a) cannot run "
                                   f"code for a newer architecture; supported: .target sm_90a and older")

    if info.version:
        v = info.version.strip()
        newer = re.fullmatch(r"(\d+)\.(\d+)", v) is not None and tuple(int(x) for x in v.split(".")) > (9, 0)
        # A newer ISA version than ptxas 13.0 knows (Triton 3.7+ writes 9.1 and later) is what a newer toolkit
        # accepts; the instructions themselves are still checked one by one, so only malformed versions fail.
        if v not in VERSIONS_OK and not newer:
            raise PTXValidationError(f"line 1, column 1: .version {v} is not a PTX ISA version (ptxas 13 knows "
                                     f"1.0 .. 9.0; later ones are taken as a newer toolkit would)")
        if target_name:
            a, b = (int(x) for x in v.split("."))
            need = _MIN_VERSION.get(sm, (0, 0))
            if target_name.endswith("a") and sm == 90:
                need = (8, 0)
            if (a, b) < need:
                raise PTXValidationError(f"line 1, column 1: .version {v} does not support .target {target_name} "
                                         f"(needs {need[0]}.{need[1]} or later)")
    checker = Checker(sm, info.functions, target_name=target_name)
    module_scope = Scope()
    for v in info.variables.values():
        if v.ptype not in VAR_TYPES or v.ptype == "pred":
            raise PTXValidationError(f"line {v.line}, column {v.col}: .{v.space} variable {v.name}: .{v.ptype} is "
                                     f"not a variable type")
        module_scope.names[v.name] = v.space
    for fn in info.functions.values():
        for k, p in enumerate(fn.params):
            if p.unsized and (fn.kind == "entry" or k != len(fn.params) - 1):
                raise PTXValidationError(f"line {fn.line}, column {fn.col}: parameter {p.name} of {fn.name}: an "
                                         f"array without a size is allowed only as the last .func parameter")
        for p in list(fn.params) + list(fn.returns):
            if p.ptype not in PARAM_TYPES:
                raise PTXValidationError(f"line {fn.line}, column {fn.col}: parameter {p.name} of {fn.name}: "
                                         f".{p.ptype} cannot be a .param type")
        seen = set()
        for p in list(fn.params) + list(fn.returns):
            if p.name in seen:
                raise PTXValidationError(f"line {fn.line}, column {fn.col}: {fn.name}: duplicate definition of "
                                         f"parameter {p.name}")
            seen.add(p.name)
        if fn.body is None:
            continue
        scope = Scope(module_scope)
        for p in list(fn.params) + list(fn.returns):
            scope.names[p.name] = "param"
        labels = _labels(fn.body.statements, set())
        checker.inputs = {p.name for p in fn.params}
        check_body(checker, fn.body.statements, scope, labels)


def validate_statements(statements, declared, arch_sm=90):
    """``Warp.run``: the same instruction rules; undeclared registers are typed from nvcc's naming."""
    checker = Checker(arch_sm, (), lenient=True)
    scope = Inferred(declared)

    def walk(sts, sc):
        inner = Scope(sc)
        for st in sts:
            if isinstance(st, ptx.Directive) and st.name == ".reg":
                declare(inner, st, checker)
        for st in sts:
            if isinstance(st, ptx.Instruction):
                checker.instruction(inner, st, None)
            elif isinstance(st, ptx.Block):
                walk(st.statements, inner)
    walk(statements, scope)
