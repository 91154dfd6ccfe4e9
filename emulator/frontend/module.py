"""Module-level structure of ``nvcc -ptx`` output: entry points, functions, parameters and variables.

:func:`parse_module` turns the statements of :func:`emulator.frontend.ptx.parse` into a :class:`ModuleInfo`:
functions (``.entry`` / ``.func`` with their parameter lists and bodies), external declarations
(``vprintf``) and module variables (``.global``, ``.const``, ``.shared`` with initialisers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from isa.types import TYPES
from . import ptx
from ..errors import PTXSyntaxError, UnsupportedError

LINKAGE = {".extern", ".visible", ".weak", ".common"}
STARTERS = {".version", ".target", ".address_size", ".extern", ".visible", ".weak", ".common", ".entry",
            ".func", ".global", ".const", ".shared", ".local", ".file", ".section", ".alias", ".param"}
SPACES = {".global", ".const", ".shared", ".local", ".param"}
PERF_VALUES = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".reqnctapercluster",
               ".maxclusterrank"}
PERF = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".noreturn", ".pragma",
        ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters"}

_STRIP_RE = re.compile(r"^[ \t]*\.(?:loc|file)\b[^\n]*$", re.MULTILINE)
_DEBUG_NUM_RE = re.compile(r"(?<![\w.])\d{10,}(?![\w.])")   # numbers of .loc/.file (strings blanked first)
_SECTION_RE = re.compile(r"^[ \t]*\.section\b[^{;\n]*\s*\{", re.MULTILINE)


def _err(tok, msg):
    raise PTXSyntaxError(f"line {tok.line}, column {tok.col}: {msg}")


_INT_RE = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")


def _int(tok, what):
    """A non-negative integer token (array sizes, alignments)."""
    if tok.kind != "num" or not _INT_RE.fullmatch(tok.text):
        _err(tok, f"{what} must be an integer, found {tok.text!r}")
    return int(tok.text, 0) if tok.text[:2] in ("0x", "0X") else int(tok.text, 10)


@dataclass
class Param:
    name: str
    ptype: str          # element type ('u64', 'b8', ...)
    count: int          # array length (1 for scalars)
    align: int
    unsized: bool = False   # declared 'name[]'

    @property
    def size(self):
        return TYPES[self.ptype][0] // 8 * self.count


@dataclass
class Variable:
    name: str
    space: str          # 'global', 'const', 'shared', 'local'
    ptype: str
    count: int          # elements (0 for an unsized extern array)
    align: int
    init: bytes | None = None
    extern: bool = False
    line: int = 0
    col: int = 0
    relocs: tuple = ()  # (byte offset, width, name, token): addresses written when the module is placed

    @property
    def size(self):
        return TYPES[self.ptype][0] // 8 * self.count


@dataclass
class Function:
    name: str
    kind: str                                  # 'entry' or 'func'
    params: list = field(default_factory=list)
    returns: list = field(default_factory=list)
    body: object = None                        # ptx.Block, or None for a declaration
    line: int = 0
    col: int = 0
    perf: dict = field(default_factory=dict)   # header directives: '.reqnctapercluster' -> [4, 1, 1], ...


@dataclass
class ModuleInfo:
    version: str = ""
    target: str = ""
    address_size: int = 64
    functions: dict = field(default_factory=dict)
    variables: dict = field(default_factory=dict)


_LOC_SYNTAX_RE = re.compile(r"\.loc\s+\d+\s+\d+\s+\d+(?:\s*,\s*function_name\s+[\w$.]+(?:\s*\+\s*\d+)?\s*,\s*inlined_at"
                     r"\s+\d+\s+\d+\s+\d+)?\s*(?://.*)?")
_FILE_SYNTAX_RE = re.compile(r'\.file\s+\d+\s+"(?:[^"\\\n]|\\.)*"(?:\s*,\s*(?:\d+\s*,\s*\d+|"(?:[^"\\\n]|\\.)*"))?'
                             r'\s*(?://.*)?')
_ITEM = r"(?:-?(?:0[xX][0-9a-fA-F]+|\d+)|[A-Za-z_$.][\w$.]*(?:\s*[+-]\s*\d+)?)"
_SECTION_LINE_RE = re.compile(rf"(?:[A-Za-z_$.][\w$.]*:|\.b(?:8|16|32|64)\s+{_ITEM}(?:\s*,\s*{_ITEM})*)?\s*(?://.*)?")


def _check_debug(text, body_start, body_end, labels):
    """The lines of a debug section as ptxas parses them: labels (each defined once in the module) and
    ``.b8/.b16/.b32/.b64`` lists of numbers and names (``name+offset``)."""
    line = text.count("\n", 0, body_start) + 1
    for ln in text[body_start:body_end].split("\n"):
        s = ln.strip()
        if s and not _SECTION_LINE_RE.fullmatch(s):
            raise PTXSyntaxError(f"line {line}: {s[:60]}: not a label or a .b8/.b16/.b32/.b64 list (a debug "
                                 f"section holds only those)")
        if s.endswith(":"):
            if s[:-1] in labels:
                raise PTXSyntaxError(f"line {line}: duplicate definition of label {s[:-1]} (first at line "
                                     f"{labels[s[:-1]]})")
            labels[s[:-1]] = line
        line += 1


def strip_debug(text: str) -> str:
    """Blank out debug information, keeping line numbers: ``.loc`` / ``.file`` lines (they end without ';')
    and ``.section .debug_* { ... }`` blocks (``nvcc -lineinfo`` / ``-G``), after checking their syntax as
    ptxas does."""
    out, pos = [], 0
    labels = {}
    for m in _SECTION_RE.finditer(text):
        if m.start() < pos:
            continue
        end = _closing_brace(text, m.end())
        if end < 0:
            break                       # unclosed: left for the parser to report with its line and column
        _check_debug(text, m.end(), end - 1, labels)
        out.append(text[pos:m.start()])
        out.append("\n" * text.count("\n", m.start(), end))
        pos = end
    out.append(text[pos:])
    kept = "".join(out)
    for m in _STRIP_RE.finditer(kept):
        d = m.group(0).strip()
        if not (_LOC_SYNTAX_RE if d.startswith(".loc") else _FILE_SYNTAX_RE).fullmatch(d):
            line = kept.count("\n", 0, m.start()) + 1
            raise PTXSyntaxError(f"line {line}: {d[:60]}: malformed {d.split()[0]} (expected "
                                 + ('.loc file line column, optionally ", function_name label, inlined_at file '
                                    'line column")' if d.startswith(".loc") else '.file index "name", optionally '
                                    '", timestamp, size")'))
        nums = list(_DEBUG_NUM_RE.finditer(re.sub(r'"[^"]*"', '""', m.group(0))))
        if m.group(0).lstrip().startswith(".file"):
            nums = nums[:1] if nums and m.group(0).split()[1:2] == [nums[0].group(0)] else []   # the file index
        for n in nums:
            if int(n.group(0)) >= 1 << 32:
                line = kept.count("\n", 0, m.start()) + 1
                raise PTXSyntaxError(f"line {line}, column {m.start() - kept.rfind(chr(10), 0, m.start())}: "
                                     f"{m.group(0).strip()[:60]}: constant {n.group(0)} overflows 32 bits")
    return _STRIP_RE.sub("", kept)


def _closing_brace(text, i):
    """Index just past the '}' that closes a '{' ending at ``i`` (strings and comments skipped), or -1."""
    depth, n = 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            while j > 0 and text[j - 1] == "\\":
                j = text.find('"', j + 1)
            if j < 0:
                return -1
            i = j + 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _split_directive(d: ptx.Directive):
    """A top-level Directive may hold several declarations that nvcc writes without ';'
    (``.version 9.0 .target sm_90 .address_size 64 .extern .func ...``): split them."""
    toks = [ptx.Token("name", d.name, d.line, d.col)] + list(d.tokens)
    chunks, cur, depth = [], [], 0
    for i, t in enumerate(toks):
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        if depth == 0 and t.kind == "name" and t.text in STARTERS and cur and cur[-1].text not in LINKAGE \
                and not (t.text in SPACES and cur[-1].text in (".extern",)):
            chunks.append(cur)
            cur = []
        cur.append(t)
    if cur:
        chunks.append(cur)
    return chunks


def parse_module(text: str) -> ModuleInfo:
    try:
        stmts = ptx.parse(strip_debug(text), newline_terminates=False)
    except ValueError as e:             # a malformed number literal (e.g. octal '09')
        raise PTXSyntaxError(f"malformed number: {e}") from None
    info = ModuleInfo()
    i = 0
    order = [0, None]                # module-level directives seen, and the last one's name (_header_order)
    while i < len(stmts):
        st = stmts[i]
        i += 1
        if isinstance(st, ptx.Directive):
            chunks = _split_directive(st)
            for k, ch in enumerate(chunks):
                last = k == len(chunks) - 1
                head = [t.text for t in ch if t.text not in LINKAGE]
                if not head:
                    continue
                _header_order(ch[0], head[0], order)
                if head[0] in (".entry", ".func"):
                    fn = _parse_header(ch)
                    if last and i < len(stmts) and isinstance(stmts[i], ptx.Block):
                        fn.body = stmts[i]
                        i += 1
                        if any(t.text == ".extern" for t in ch):
                            _err(ch[0], f".extern {fn.name} has a body: an .extern function is defined elsewhere")
                    old = info.functions.get(fn.name)
                    if old is not None and old.body is not None and fn.body is not None:
                        _err(ch[0], f"duplicate definition of function {fn.name}")
                    if old is None or fn.body is not None:
                        info.functions[fn.name] = fn
                elif head[0] == ".version":
                    info.version = " ".join(head[1:])
                elif head[0] == ".target":
                    info.target = " ".join(head[1:])
                elif head[0] == ".address_size":
                    info.address_size = int(head[1]) if len(head) > 1 and head[1].isdigit() else 64
                    if info.address_size != 64:
                        _err(ch[0], ".address_size 32 is not supported; supported: .address_size 64")
                elif head[0] in (".global", ".const", ".shared"):
                    v = parse_variable(ch)
                    extern = any(t.text == ".extern" for t in ch)
                    if v.name in info.variables and not (extern and v.space == "shared"):
                        _err(ch[0], f"duplicate definition of variable {v.name}")
                    info.variables[v.name] = v
                elif head[0] in (".section", ".alias"):
                    raise UnsupportedError(f"line {ch[0].line}, column {ch[0].col}: {head[0]} is not supported")
                else:
                    _err(ch[0], f"unexpected directive {head[0]} at module level")
        elif isinstance(st, ptx.Block):
            _err(ptx.Token("punct", "{", st.line, st.col), "a '{' block at module level without a function header")
        elif isinstance(st, ptx.Instruction):
            raise PTXSyntaxError(f"line {st.line}, column {st.col}: instruction {st.opcode} outside a function")
        else:
            raise PTXSyntaxError(f"line {st.line}, column {st.col}: label {st.name} outside a function")
    return info


def _header_order(tok, name, order):
    """ptxas's rule for a module's first directives: ``.version``, then ``.target`` (which ptxas also takes
    repeated), then an optional ``.address_size``; none of them later. ``order`` = [count, last name]."""
    n, last = order
    if n == 0 and name != ".version":
        _err(tok, f"{name}: a module must begin with .version (ptxas: missing .version directive at start of file)")
    if n == 1 and name != ".target":
        _err(tok, f"{name}: .target must follow .version (ptxas: missing .target directive at start of file)")
    ok = {".version": n == 0, ".target": n == 1 or last == ".target",
          ".address_size": last == ".target"}.get(name, True)
    if not ok:
        _err(tok, f"{name} may appear only among the module's first directives (.version, .target, "
                  f".address_size), once")
    order[0], order[1] = n + 1, name


def _parse_header(toks):
    """``.entry name ( params ) perf...`` or ``.func (rets) name ( params )``."""
    s = [t for t in toks if t.text not in LINKAGE]
    kind_tok = s[0]
    kind = kind_tok.text[1:]
    j = 1
    returns = []
    if kind == "func" and j < len(s) and s[j].text == "(":
        returns, j = _param_list(s, j)
    if j >= len(s) or s[j].kind != "name" or s[j].text.startswith("."):
        _err(s[min(j, len(s) - 1)], f"expected the name of the {kind}")
    name = s[j].text
    j += 1
    params = []
    if j < len(s) and s[j].text == "(":
        params, j = _param_list(s, j)
    perf, cur = {}, None
    while j < len(s):
        t = s[j]
        if t.kind == "name" and t.text.startswith("."):
            if t.text not in PERF:
                _err(t, f"unexpected {t.text} in the header of {name}")
            if t.text in PERF_VALUES:
                if kind == "func" and t.text not in (".noreturn", ".maxnreg"):
                    _err(t, f"{t.text} applies to kernels (.entry), not to the .func {name}")
                j += 1
                vals = []
                while j < len(s) and (s[j].kind == "num" or s[j].text in (",", "-") or
                                      (s[j].kind == "name" and not s[j].text.startswith("."))):
                    if s[j].text != ",":
                        if s[j].kind != "num" or not _INT_RE.fullmatch(s[j].text) or _int(s[j], t.text) <= 0:
                            _err(s[j], f"{t.text} needs positive integers, found {s[j].text!r}")
                        vals.append(_int(s[j], t.text))
                    j += 1
                if not vals:
                    _err(t, f"{t.text} needs a value")
                perf[t.text] = vals
                cur = None
                continue
            cur = perf.setdefault(t.text, [])
        elif cur is not None and t.kind == "num" and _INT_RE.fullmatch(t.text):
            cur.append(_int(t, t.text))
        elif cur is None and t.text == ",":               # ptxas: "Parsing error near ','"
            _err(t, f"unexpected ',' after the header of {name}")
        j += 1
    if kind == "func" and any(t.text == ".ptr" for t in s):
        _err(next(t for t in s if t.text == ".ptr"), f".ptr qualifies kernel (.entry) parameters, not those of "
                                                    f"the .func {name}")
    return Function(name, kind, params, returns, None, kind_tok.line, kind_tok.col, perf)


def _param_list(s, j):
    """Parse ``( .param .u64 a, .param .align 8 .b8 b[16] )`` starting at s[j] == '('."""
    if s[j].text != "(":
        _err(s[j], "expected '('")
    j += 1
    groups, cur = [], []
    while j < len(s) and s[j].text != ")":
        if s[j].text == ",":
            groups.append(cur)
            cur = []
        else:
            cur.append(s[j])
        j += 1
    if j >= len(s):
        _err(s[-1], "unclosed '(' in a parameter list")
    if cur:
        groups.append(cur)
    params = []
    for g in groups:
        if not g or g[0].text not in (".param", ".reg"):
            _err(g[0] if g else s[j], "a parameter must start with .param")
        v = _decl(g[1:], g[0])
        params.append(Param(v[0], v[1], max(v[2], 1), v[3], v[2] == 0))
    return params, j + 1


def _decl(toks, at):
    """``[.ptr .global] [.align N] [.vN] .type name [ [N] ]`` -> (name, type, count, align, rest index)."""
    align, ptype, vec, name, count = 0, None, 1, None, 1
    j = 0
    while j < len(toks) and toks[j].kind == "name" and toks[j].text.startswith("."):
        t = toks[j].text
        if t == ".align":
            if j + 1 >= len(toks):
                _err(toks[j], ".align needs a number")
            align = _int(toks[j + 1], ".align")
            if align <= 0 or align & (align - 1):
                _err(toks[j + 1], f".align must be a power of two, not {align}")
            j += 2
            continue
        if t in (".v2", ".v4", ".v8"):
            vec = int(t[2:])
        elif t[1:] in TYPES:
            ptype = t[1:]
        elif t in (".ptr", ".global", ".const", ".shared", ".local", ".volatile"):
            pass
        else:
            _err(toks[j], f"unexpected {t} in a declaration")
        j += 1
    if ptype is None:
        _err(toks[j] if j < len(toks) else at, "a declaration needs a type")
    if j >= len(toks) or toks[j].kind != "name":
        _err(toks[j] if j < len(toks) else at, "expected a name in the declaration")
    name = toks[j].text
    j += 1
    count = vec
    if j < len(toks) and toks[j].text == "[":
        if j + 1 < len(toks) and toks[j + 1].text == "]":
            count = 0
            j += 2
        else:
            if j + 2 >= len(toks) or toks[j + 2].text != "]":
                _err(toks[j], "expected '[N]' in the declaration")
            count = vec * _int(toks[j + 1], "an array size")
            j += 3
        while j < len(toks) and toks[j].text == "[":       # multi-dimensional arrays
            if j + 2 >= len(toks) or toks[j + 2].text != "]":
                _err(toks[j], "expected '[N]' in the declaration")
            count *= _int(toks[j + 1], "an array size")
            j += 3
    return name, ptype, count, align or TYPES[ptype][0] // 8 * (vec if vec > 1 else 1), j


def parse_variable(toks):
    """A variable directive's tokens (``.shared .align 4 .b8 x[16] = {...}``) -> Variable."""
    extern = False
    s = list(toks)
    while s and s[0].text in LINKAGE:
        extern = extern or s[0].text == ".extern"
        s = s[1:]
    space_tok = s[0]
    space = space_tok.text[1:]
    name, ptype, count, align, j = _decl(s[1:], space_tok)
    rest = s[1 + j:]
    init = None
    if count == 0 and not extern and not (rest and rest[0].text == "="):
        _err(space_tok, f"{name}[]: an array without a size must be .extern or initialised")
    if rest:
        if rest[0].text == "=" and space not in ("global", "const"):
            _err(rest[0], f"{name}: a .{space} variable cannot have an initial value")
        if rest[0].text == ",":
            raise UnsupportedError(f"line {rest[0].line}, column {rest[0].col}: declare one variable per "
                                   f"statement (as nvcc does)")
        if rest[0].text != "=":
            _err(rest[0], f"unexpected {rest[0].text!r} after the variable {name}")
        if count == 0:          # 'x[] = {...}': the initializer gives the size
            count = sum(1 for t in rest[1:] if t.kind in ("num", "name") and t.text != "generic")
        relocs = []
        init = _initializer(rest[1:], ptype, count, rest[0], relocs)
        return Variable(name, space, ptype, count, align, init, extern, space_tok.line, space_tok.col,
                        tuple(relocs))
    return Variable(name, space, ptype, count, align, init, extern, space_tok.line, space_tok.col)


MAX_INITIALIZED_BYTES = 1 << 28       # a variable with an initializer is built in host memory at load


def _initializer(toks, ptype, count, at, relocs=None):
    """The initial bytes; a function or variable name (``{f0, f1}``, ``generic(v)``) is an address the module
    fills in when it is placed: listed in ``relocs`` as (byte offset, width, name, token), zero bytes here."""
    vals = []
    neg = False
    for t in toks:
        if t.text in ("{", "}", ",", "(", ")", "generic"):
            continue
        if t.text == "-":
            neg = True
            continue
        if t.kind == "name" and relocs is not None and not neg and TYPES[ptype][1] in "bu" and \
                TYPES[ptype][0] in (32, 64):
            relocs.append((len(vals) * (TYPES[ptype][0] // 8), TYPES[ptype][0] // 8, t.text, t))
            vals.append(ptx.Imm(0, "int", "0"))
            continue
        if t.kind != "num":
            raise UnsupportedError(f"line {t.line}, column {t.col}: initializer {t.text!r} is not supported "
                                   f"(numbers, and names of functions and variables in .u32/.u64/.b32/.b64 "
                                   f"variables)")
        try:
            vals.append(ptx.parse_number(t, negative=neg))
        except ValueError:
            _err(t, f"malformed number {t.text!r} in an initializer")
        neg = False
    w = TYPES[ptype][0] // 8
    kind = TYPES[ptype][1]
    if len(vals) > max(count, 1):
        _err(at, f"initializer has {len(vals)} values for {count} elements")
    if w * max(count, 1) > MAX_INITIALIZED_BYTES:
        raise UnsupportedError(f"line {at.line}, column {at.col}: an initialized variable of {w * max(count, 1)} "
                               f"bytes; at most {MAX_INITIALIZED_BYTES} are supported")
    out = bytearray(w * max(count, 1))
    for k, imm in enumerate(vals):
        if kind == "f" and imm.kind == "int":
            _err(at, f"integer initializer {imm.text} for a .{ptype} variable (write a float)")
        if kind == "f" and imm.kind in ("int", "float"):
            raw = np.array(float(imm.value), {2: np.float16, 4: np.float32, 8: np.float64}[w]).tobytes()
        elif imm.kind == "float":
            raise UnsupportedError(f"line {at.line}: float initializer for .{ptype}")
        else:
            raw = (int(imm.value) & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
        out[k * w:(k + 1) * w] = raw
    return bytes(out)


_LOC_RE = re.compile(r"^[ \t]*\.loc[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)", re.MULTILINE)
_FILE_RE = re.compile(r'^[ \t]*\.file[ \t]+(\d+)[ \t]+"([^"]*)"(?:[ \t]*,[ \t]*"([^"]*)")?', re.MULTILINE)


def source_of_line(text: str, line: int):
    """The source position (file, line, column) that the debug information of ``text`` (``.loc`` / ``.file``
    lines, as ``nvcc -lineinfo`` and Triton write them) gives for PTX line ``line`` (1-based): the last
    ``.loc`` above it in its function. None when the module has no line information there."""
    if ".loc" not in text:
        return None
    files = {}
    for m in _FILE_RE.finditer(text):
        path = m.group(2)
        if m.group(3):                       # .file N "directory", "name" (DWARF 5 form)
            path = path.rstrip("/") + "/" + m.group(3) if path else m.group(3)
        files[int(m.group(1))] = path
    best = None
    for m in _LOC_RE.finditer(text):
        at = text.count("\n", 0, m.start()) + 1
        if at >= line:
            break
        best = m
    if best is None:
        return None
    # a function boundary ('}' alone on a line, or an .entry/.func header) between the .loc and the line ends it
    between = text[best.end():_line_start(text, line)]
    if re.search(r"^\s*\}\s*$|\.(entry|func)\b", between, re.MULTILINE):
        return None
    src_line = int(best.group(2))
    if src_line == 0:
        return None
    return files.get(int(best.group(1)), f"file {best.group(1)}"), src_line, int(best.group(3))


def _line_start(text, line):
    pos = 0
    for _ in range(line - 1):
        nxt = text.find("\n", pos)
        if nxt < 0:
            return len(text)
        pos = nxt + 1
    return pos
