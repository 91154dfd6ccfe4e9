"""The PTX front end: text -> statements (instructions, labels, directives).

Accepts PTX as written in CUDA inline asm and in ``nvcc -ptx`` output. Every syntax error raises
:class:`PTXSyntaxError` with line and column (1-based) of the offending character.
"""
from __future__ import annotations

import re
import sys
import struct
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import PTXSyntaxError, UnsupportedError

# ----------------------------------------------------------------------------------------------
# Operands


@dataclass(frozen=True)
class Reg:
    """A register or special register (``%r1``, ``%tid.x``, ``_`` the sink)."""
    name: str

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class Imm:
    """An immediate. ``kind`` is 'int', 'f32' (0fXXXXXXXX), 'f64' (0dXXXXXXXXXXXXXXXX) or 'float'."""
    value: object
    kind: str
    text: str

    def __str__(self):
        return self.text


@dataclass(frozen=True)
class Sym:
    """A name: a label, a variable or a function."""
    name: str

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class Vec:
    """A brace list ``{a, b, ...}``."""
    items: tuple

    def __str__(self):
        return "{" + ", ".join(map(str, self.items)) + "}"


@dataclass(frozen=True)
class Mem:
    """An address ``[base+offset]``; base is a Reg, a Sym or None (absolute address)."""
    base: object
    offset: int

    def __str__(self):
        if self.base is None:
            return f"[{self.offset}]"
        return f"[{self.base}{'+' if self.offset >= 0 else ''}{self.offset}]" if self.offset else f"[{self.base}]"


@dataclass(frozen=True)
class TensorAddr:
    """``[tmap, {c0, c1, ...}]``: a tensor map's address and the coordinates (cp.async.bulk.tensor)."""
    addr: Mem
    coords: Vec

    def __str__(self):
        return f"[{str(self.addr)[1:-1]}, {self.coords}]"


@dataclass(frozen=True)
class Pair:
    """``a|b`` (setp with two predicate destinations)."""
    items: tuple

    def __str__(self):
        return "|".join(map(str, self.items))


@dataclass(frozen=True)
class Not:
    """``!%p`` as an operand."""
    item: object

    def __str__(self):
        return f"!{self.item}"


@dataclass(frozen=True)
class Paren:
    """A parenthesised list ``(a, b)``, as in ``call``."""
    items: tuple

    def __str__(self):
        return "(" + ", ".join(map(str, self.items)) + ")"


# ----------------------------------------------------------------------------------------------
# Statements


@dataclass(slots=True)
class Instruction:
    opcode: str                    # the dotted opcode as written, e.g. 'ldmatrix.sync.aligned.m8n8.x4.shared.b16'
    operands: tuple
    guard: object = None           # (Reg, negated) or None
    line: int = 1
    col: int = 1
    text: str = ""                 # the statement as written (without ';')
    # set by later passes: ptxas's compile-time value (frontend/constfold.py), the fused producer
    # (frontend/contract.py), the wgmma register names (ops/wgmma/state.py)
    folded: object = field(default=None, compare=False, repr=False)
    contract: object = field(default=None, compare=False, repr=False)
    _wgmma_names: object = field(default=None, compare=False, repr=False)

    @property
    def base(self):
        return self.opcode.split(".", 1)[0]

    @property
    def mods(self):
        """The qualifiers after the base name, in written order."""
        return tuple(self.opcode.split(".")[1:])

    def __str__(self):
        return self.text or self.opcode


@dataclass
class Label:
    name: str
    line: int = 1
    col: int = 1


@dataclass
class Directive:
    """A directive statement, kept as its tokens (``.reg .b32 %r<4>``)."""
    name: str                      # '.reg', '.shared', '.version', ...
    tokens: list = field(default_factory=list)   # list of Token after the name
    line: int = 1
    col: int = 1
    text: str = ""


@dataclass
class Block:
    """A ``{ ... }`` scope of statements (a function body or a nested scope)."""
    statements: list
    line: int = 1
    col: int = 1


# ----------------------------------------------------------------------------------------------
# Tokens

@dataclass(frozen=True, slots=True)
class Token:
    kind: str      # 'name', 'num', 'str', 'punct'
    text: str
    line: int
    col: int


_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<num>0[fF][0-9a-fA-F]{8}(?![0-9A-Za-z_])|0[dD][0-9a-fA-F]{16}(?![0-9A-Za-z_])
        |0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<name>[%.$_A-Za-z][A-Za-z0-9_$]*(?:(?:\.|::)[A-Za-z0-9_$]+)*)
  | (?P<punct>[{}\[\](),;:+\-!|@<>=*])
""", re.VERBOSE | re.DOTALL)


def tokenize(text: str):
    """Split PTX text into tokens; comments are dropped, newlines kept as 'nl' tokens."""
    toks = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if not m:
            col = pos - line_start + 1
            if text.startswith("/*", pos):
                raise PTXSyntaxError(f"line {line}, column {col}: unterminated /* comment")
            if text[pos] == '"':
                raise PTXSyntaxError(f"line {line}, column {col}: unterminated string")
            raise PTXSyntaxError(f"line {line}, column {col}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        s = m.group()
        col = pos - line_start + 1
        if kind == "nl":
            toks.append(Token("nl", s, line, col))
        elif kind == "bcomment":
            if "\n" in s:
                toks.append(Token("nl", "\n", line, col))
        elif kind not in ("ws", "lcomment"):
            toks.append(Token(kind, s, line, col))
        nl = s.count("\n")
        if nl:
            line += nl
            line_start = pos + s.rfind("\n") + 1
        pos = m.end()
    return toks


def _err(tok, msg):
    raise PTXSyntaxError(f"line {tok.line}, column {tok.col}: {msg}")


def parse_int(text: str) -> int:
    t = text.rstrip("uU")
    return int(t, 16) if t[:2] in ("0x", "0X") else int(t, 10)


def int_overflows(text: str) -> bool:
    """Whether ptxas refuses the integer literal ``text`` ("Constant overflow"). Measured with ptxas 13: it
    reads the digits into 64 bits and refuses a literal only when the value of all its digits but the last is
    2^63 or more; a larger value is kept modulo 2^64 (``18446744073709551616`` is 0, ``92233720368547758079``
    = 5 * 2^64 - 1 is accepted, ``92233720368547758080`` refused; the same for hexadecimal)."""
    t = text.lstrip("-").rstrip("uU")
    if t[:2] in ("0x", "0X"):
        digits, base = t[2:], 16
    elif t[:1] == "0" and len(t) > 1:
        digits, base = t[1:], 8
    else:
        digits, base = t, 10
    try:
        return len(digits) > 1 and int(digits[:-1], base) >= 1 << 63
    except ValueError:
        return False


def parse_number(tok: Token, negative=False) -> Imm:
    try:
        return _parse_number(tok, negative)
    except ValueError:
        _err(tok, f"malformed number {tok.text!r}")


def _parse_number(tok: Token, negative=False) -> Imm:
    t = tok.text
    if t[:2] in ("0f", "0F"):
        return Imm(int(t[2:], 16), "f32", t)
    if t[:2] in ("0d", "0D"):
        return Imm(int(t[2:], 16), "f64", t)
    if re.fullmatch(r"0[xX][0-9a-fA-F]+[uU]?|\d+[uU]?", t):
        v = parse_int(t)
        if t[:1] == "0" and len(t.rstrip("uU")) > 1 and t[:2] not in ("0x", "0X"):
            v = int(t.rstrip("uU"), 8)     # PTX octal literal
        if v >> 64 and not int_overflows(t):
            v &= (1 << 64) - 1             # ptxas keeps such a literal modulo 2^64 (int_overflows); others stay
                                           # whole, for the checks that refuse them
        return Imm(-v if negative else v, "int", ("-" if negative else "") + t)
    v = float(t)
    return Imm(-v if negative else v, "float", ("-" if negative else "") + t)


class _Stream:
    def __init__(self, toks, end_line=1, end_col=1):
        self.toks = toks
        self.i = 0
        self.end = Token("punct", "<end>", end_line, end_col)

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.end

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def at_end(self):
        return self.i >= len(self.toks)

    def expect(self, text, what):
        t = self.next()
        if t.text != text:
            _err(t, f"expected {text!r} {what}, found {t.text!r}")
        return t


def _parse_operand(s: _Stream):
    t = s.peek()
    if t.text == "{":
        s.next()
        items = []
        while True:
            if s.peek().text == "}":
                s.next()
                break
            items.append(_parse_operand(s))
            if s.peek().text == ",":
                s.next()
            elif s.peek().text != "}":
                _err(s.peek(), f"expected ',' or '}}' in a vector operand, found {s.peek().text!r}")
        return Vec(tuple(items))
    if t.text == "(":
        s.next()
        items = []
        while s.peek().text != ")":
            if s.at_end():
                _err(s.peek(), "unclosed '('")
            items.append(_parse_operand(s))
            if s.peek().text == ",":
                s.next()
            elif s.peek().text != ")":
                _err(s.peek(), f"expected ',' or ')' found {s.peek().text!r}")
        s.next()
        return Paren(tuple(items))
    if t.text == "[":
        s.next()
        base, offset = None, 0
        first = s.peek()
        if first.kind == "name":
            s.next()
            base = _reg(first.text) if first.text.startswith("%") else Sym(first.text)
        elif first.kind == "num":
            s.next()
            imm = parse_number(first)
            if imm.kind != "int":
                _err(first, "an address must be an integer")
            offset = imm.value
        else:
            _err(first, f"expected a register, a name or a number in an address, found {first.text!r}")
        while s.peek().text in ("+", "-"):
            sign = -1 if s.next().text == "-" else 1
            if s.peek().text in ("+", "-"):         # '[%r1+-16]'
                sign *= -1 if s.next().text == "-" else 1
            n = s.next()
            if n.kind != "num":
                _err(n, f"expected a number after '+' in an address, found {n.text!r}")
            imm = parse_number(n)
            if imm.kind != "int":
                _err(n, "an address offset must be an integer")
            offset += sign * imm.value
        if s.peek().text == "," and s.peek(1).text == "{":      # [tmap, {c0, c1}]
            s.next()
            coords = _parse_operand(s)
            s.expect("]", "to close the tensor address")
            return TensorAddr(Mem(base, offset), coords)
        s.expect("]", "to close the address")
        return Mem(base, offset)
    if t.text == "!":
        s.next()
        return Not(_parse_operand(s))
    if t.text == "-" and s.peek(1).kind == "num":
        s.next()
        return _maybe_pair(s, parse_number(s.next(), negative=True))
    if t.kind == "num":
        s.next()
        return _maybe_pair(s, parse_number(t))
    if t.kind == "name":
        s.next()
        if t.text.startswith("%") or t.text == "_":
            op = _reg(t.text)
        elif t.text == "WARP_SZ":            # PTX's predefined constant: the warp size, an integer immediate
            return Imm(32, "int", "WARP_SZ")
        else:
            op = Sym(t.text)
        if s.peek().text == "+" and s.peek(1).kind == "num" and isinstance(op, Sym):
            # 'var+4' as an operand (mov.u64 %rd1, var+4)
            s.next()
            return Mem(op, parse_number(s.next()).value)
        return _maybe_pair(s, op)
    _err(t, f"expected an operand, found {t.text!r}")


@lru_cache(maxsize=1 << 16)
def _reg(name):
    """One shared ``Reg`` per register name (operands are immutable): a long kernel names few registers."""
    return Reg(sys.intern(name))


def _maybe_pair(s, op):
    if s.peek().text == "|":
        s.next()
        return Pair((op, _parse_operand(s)))
    return op


def _source_text(text_lines, toks):
    if not toks:
        return ""
    a, b = toks[0], toks[-1]
    if a.line == b.line:
        return text_lines[a.line - 1][a.col - 1:b.col - 1 + len(b.text)]
    return " ".join(t.text for t in toks)


def _parse_instruction(toks, lines):
    s = _Stream(toks, toks[-1].line, toks[-1].col + len(toks[-1].text))
    guard = None
    first = s.peek()
    if first.text == "@":
        s.next()
        neg = False
        if s.peek().text == "!":
            s.next()
            neg = True
        g = s.next()
        if g.kind != "name" or g.text.startswith("."):      # %p1, or a name declared with .reg .pred
            _err(g, f"expected a predicate register after '@', found {g.text!r}")
        guard = (_reg(g.text), neg)
    op = s.next()
    if op.kind != "name" or op.text.startswith("%") or op.text.startswith("."):
        _err(op, f"expected an instruction name, found {op.text!r}")
    operands = []
    if not s.at_end():
        while True:
            operands.append(_parse_operand(s))
            if s.at_end():
                break
            t = s.next()
            if t.text != ",":
                _err(t, f"expected ',' between operands, found {t.text!r}")
    return Instruction(sys.intern(op.text), tuple(operands), guard, first.line, first.col,
                       _source_text(lines, toks))


def _split_statements(toks, newline_terminates):
    """Group tokens into statements: (kind, tokens) with kind 'stmt', 'label', '{' or '}'."""
    out, cur, depth = [], [], 0   # depth counts brackets opened inside the current statement
    for t in toks:
        if t.kind == "nl":
            if newline_terminates and depth == 0 and cur:
                out.append(("stmt", cur))
                cur = []
            continue
        if t.kind == "punct" and t.text == ";":
            if depth:
                _err(t, "';' inside brackets")
            if cur:
                out.append(("stmt", cur))
            elif not newline_terminates:
                _err(t, "an empty statement: ';' with nothing before it (ptxas: syntax error)")
            cur = []
            continue
        if t.kind == "punct" and depth == 0 and (t.text == "}" or (t.text == "{" and not _opens_operand(cur))):
            if cur:
                out.append(("stmt", cur))
                cur = []
            out.append((t.text, [t]))
            continue
        if t.kind == "punct" and t.text == ":" and depth == 0 and len(cur) == 1 and cur[0].kind == "name":
            out.append(("label", cur))
            cur = []
            continue
        if t.kind == "punct" and t.text in "[({":
            depth += 1
        elif t.kind == "punct" and t.text in "])}":
            depth -= 1
            if depth < 0:
                _err(t, f"unbalanced {t.text!r}")
        cur.append(t)
    if depth:
        _err(cur[-1], "unclosed bracket at end of statement")
    if cur:
        out.append(("stmt", cur))
    return out


def _opens_operand(cur):
    """A '{' at statement level opens a vector operand (or an initializer) rather than a scope when it
    follows a ',' or '=', or directly follows the instruction name."""
    if not cur:
        return False
    if cur[-1].text in (",", "="):
        return True
    i = 0
    if cur[0].text == "@":
        i = 3 if len(cur) > 1 and cur[1].text == "!" else 2
    return len(cur) == i + 1 and cur[i].kind == "name" and cur[i].text[0] not in ".%"


def parse(text: str, newline_terminates: bool = True):
    """Parse PTX text into a list of Instruction / Label / Directive / Block.

    ``newline_terminates``: a line break ends a statement (inline-asm style text); ``nvcc -ptx`` modules
    are parsed with ``False`` (statements end at ';').
    """
    return list(_parse_cached(text, newline_terminates))


MAX_SCOPE_DEPTH = 1664        # nested { } (a function body's own braces included) that ptxas 13 parses


@contextmanager
def deep_scopes():
    """Room on the interpreter's stack for the passes that walk nested ``{ }`` scopes (parse allows
    MAX_SCOPE_DEPTH of them, a few frames each)."""
    need = 4 * MAX_SCOPE_DEPTH + 2000
    old = sys.getrecursionlimit()
    if old < need:
        sys.setrecursionlimit(need)
    try:
        yield
    finally:
        if old < need:
            sys.setrecursionlimit(old)


@lru_cache(maxsize=4096)
def _parse_cached(text, newline_terminates):
    lines = text.split("\n")
    toks = tokenize(text)
    groups = _split_statements(toks, newline_terminates)
    stack = [[]]
    opens = []
    for kind, ts in groups:
        if kind == "{":
            if len(stack) > MAX_SCOPE_DEPTH:
                _err(ts[0], f"'{{' opens a scope {len(stack)} deep; ptxas's parser stops at {MAX_SCOPE_DEPTH} "
                            f"nested {{ }} (\"memory exhausted\")")
            stack.append([])
            opens.append(ts[0])
        elif kind == "}":
            if len(stack) == 1:
                _err(ts[0], "unmatched '}'")
            body = stack.pop()
            o = opens.pop()
            stack[-1].append(Block(body, o.line, o.col))
        elif kind == "label":
            stack[-1].append(Label(ts[0].text, ts[0].line, ts[0].col))
        else:
            head = ts[0]
            if head.kind == "name" and head.text.startswith(".") :
                stack[-1].append(Directive(head.text, ts[1:], head.line, head.col, _source_text(lines, ts)))
            else:
                stack[-1].append(_parse_instruction(ts, lines))
    if len(stack) != 1:
        _err(opens[-1], "unclosed '{'")
    return tuple(stack[0])


# ----------------------------------------------------------------------------------------------
# Register declarations

MAX_REGS_PER_STATEMENT = 1 << 16     # a .reg statement declaring more is refused before any name is made


def expand_reg_directive(d: Directive, room=None):
    """``.reg .b32 %r<4>, %x;`` -> ('b32', ['%r0', '%r1', '%r2', '%r3', '%x']). ``room``: how many more
    registers the caller can take (checked, like the per-statement limit, before names are made)."""
    toks = d.tokens
    if not toks:
        _err(Token("name", d.name, d.line, d.col), ".reg needs a type and names")
    types = []
    i = 0
    while i < len(toks) and toks[i].kind == "name" and toks[i].text.startswith("."):
        types.append(toks[i].text[1:])
        i += 1
    # '.v2', '.v4' prefixes are allowed in PTX; keep the scalar type
    types = [t for t in types if t not in ("v2", "v4")]
    if len(types) != 1:
        _err(toks[0], f".reg needs exactly one type, found {types or 'none'}")
    from isa.types import TYPES
    if types[0] not in TYPES:
        _err(toks[0], f".reg: unknown type .{types[0]}")
    names = []
    while i < len(toks):
        t = toks[i]
        if t.kind != "name":
            _err(t, f"expected a register name in .reg, found {t.text!r}")
        if i + 3 < len(toks) + 1 and i + 1 < len(toks) and toks[i + 1].text == "<":
            if i + 3 >= len(toks) or toks[i + 2].kind != "num" or toks[i + 3].text != ">":
                _err(toks[i + 1], "expected '<N>' in .reg")
            if not re.fullmatch(r"\d+", toks[i + 2].text):
                _err(toks[i + 2], f"expected a decimal count in '<N>', found {toks[i + 2].text!r}")
            if len(toks[i + 2].text) > 12 or len(names) + int(toks[i + 2].text) > MAX_REGS_PER_STATEMENT:
                raise UnsupportedError(f"line {d.line}, column {d.col}: .reg declares {toks[i + 2].text} registers "
                                       f"(at most {MAX_REGS_PER_STATEMENT} per statement are supported)")
            if room is not None and len(names) + int(toks[i + 2].text) > room:
                raise UnsupportedError(f"line {d.line}, column {d.col}: .reg: more registers than the program may "
                                       f"declare here (room for {room} more)")
            names.extend(f"{t.text}{k}" for k in range(int(toks[i + 2].text)))
            i += 4
        else:
            names.append(t.text)
            i += 1
        if i < len(toks):
            if toks[i].text != ",":
                _err(toks[i], f"expected ',' in .reg, found {toks[i].text!r}")
            i += 1
    return types[0], names


def f32_from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def f32_bits(x: float) -> int:
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:                       # beyond the f32 range: rounds to infinity
        return 0xFF800000 if x < 0 else 0x7F800000


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]
