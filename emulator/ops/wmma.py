"""wmma.load, wmma.store, wmma.mma: the WMMA instructions (``nvcuda::wmma``).

The spellings, fragment layouts and the lowering onto ``mma.sync`` are the data of ``isa.wmma``; the
arithmetic is that of the ``mma.sync`` steps (``ops.mma``) plus the conversions of ``numerics.wmma``.

Memory rules: every lane gives the same address and stride; the address is 16-byte aligned and the stride (in
elements) a multiple of 8 bytes.  PTX and the CUDA C++ Programming Guide ask for more (a 256-bit aligned
address, a stride of 16-byte multiples), but the GPU runs these (ptxas lowers a fragment to accesses of at most
16 bytes) and real code relies on it: nvcc's int8 WMMA GEMM steps k by 16 bytes, and the default stride of
the m32n8k16 .s8 B fragment is 8 bytes.  Without a stride
operand the stride is the extent of the contiguous dimension (measured on the H100).  Generic addresses are
shared or global as for ``ld``/``st``.
"""
from __future__ import annotations

import difflib
import functools

import numpy as np

from isa.wmma import F64_SHAPE_QUIRK, MEM_FORMS, MMA_FORMS, SHAPES
from .common import address, require_full_warp, src, vec_regs
from .memops import load, store
from .mma import get_mma
from .registry import executor
from ..errors import AlignmentError, OperandError, UnsupportedError, fail
from ..frontend.ptx import Mem
from ..numerics import wmma as wnum

_SPACES = {"global", "shared", "shared::cta"}
_TYPES = {"f16", "bf16", "tf32", "f32", "f64", "s8", "u8", "s4", "u4", "b1", "s32"}
_UINT = {32: np.uint32, 64: np.uint64}
_ELEM_DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
BASE_ALIGN = 16


@functools.lru_cache(maxsize=256)
def _near(spelling, kind):
    table = MEM_FORMS if kind == "mem" else MMA_FORMS
    head = ".".join(spelling.split(".")[:3])
    pool = [s for s in table if s.startswith(head)] or list(table)
    return tuple(difflib.get_close_matches(spelling, pool, n=3, cutoff=0.6))


def _nearest(spelling, table, what):
    near = _near(spelling, "mem" if table is MEM_FORMS else "mma")
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"{what}{hint} (every supported form: docs/wmma.md, isa/wmma.py)"


def canonical_mem(opcode):
    """Canonical spelling of a wmma.load / wmma.store opcode whose qualifiers may come in any order."""
    parts = opcode.split(".")
    op, rest = parts[1], parts[2:]
    mat = layout = shape = space = typ = None
    flags = set()
    for p in rest:
        if p in ("a", "b", "c", "d") and mat is None:
            mat = p
        elif p in ("sync", "aligned") and p not in flags:
            flags.add(p)
        elif p in ("row", "col") and layout is None:
            layout = p
        elif p in SHAPES and shape is None:
            shape = p
        elif p in _SPACES and space is None:
            space = p
        elif p == "shared::cta" and space is None:
            space = p
        elif p in _TYPES and typ is None:
            typ = p
        else:
            return None
    if None in (mat, layout, shape, typ) or flags != {"sync", "aligned"}:
        return None
    sp = f".{space}" if space else ""
    return f"wmma.{op}.{mat}.sync.aligned.{layout}.{shape}{sp}.{typ}"


def canonical_mma(opcode):
    parts = opcode.split(".")[2:]
    layouts, types, flags = [], [], set()
    shape = rnd = bop = None
    for p in parts:
        if p in ("row", "col"):
            layouts.append(p)
        elif p in SHAPES and shape is None:
            shape = p
        elif p in _TYPES:
            types.append(p)
        elif p in ("rn", "rz", "rm", "rp") and rnd is None:
            rnd = p
        elif p in ("xor", "and") and bop is None:
            bop = p
        elif p in ("sync", "aligned", "satfinite", "popc") and p not in flags:
            flags.add(p)
        else:
            return None
    if shape is None or len(layouts) != 2 or not {"sync", "aligned"} <= flags or bool(bop) != ("popc" in flags):
        return None
    head = f"wmma.mma.{bop}.popc" if bop else "wmma.mma"
    r = f".{rnd}" if rnd else ""
    sat = ".satfinite" if "satfinite" in flags else ""
    return f"{head}.sync.aligned.{layouts[0]}.{layouts[1]}.{shape}{r}.{'.'.join(types)}{sat}"


def _check_arch(instr, env, form):
    arch = {"sm_90a": "sm_90"}.get(env.arch, env.arch)
    if arch not in form.archs:
        raise UnsupportedError(f"{instr.opcode}: not modelled on {env.arch} (modelled: {', '.join(form.archs)})")


@executor("wmma")
def compile_wmma(instr, env):
    kind = instr.mods[0] if instr.mods else ""
    if kind in ("load", "store"):
        return _compile_mem(instr, env)
    if kind == "mma":
        return _compile_mma(instr, env)
    raise UnsupportedError(f"{instr.opcode}: unknown wmma instruction; supported: wmma.load.{{a,b,c}}, "
                           f"wmma.store.d, wmma.mma")


# ------------------------------------------------------------------------------------------------
# wmma.load / wmma.store

def _slots(form):
    """Per unique (register, element) slot: (register, element, row, col) arrays over lanes; and, for the
    registers that copy another (the duplicated 16-bit A/B fragments), the register they copy."""
    f = form.fragment()
    n = f.shape[0]
    first = {}
    copies = {}
    for r in range(n):
        key = f[r].tobytes()
        if key in first:
            copies[r] = first[key]
        else:
            first[key] = r
    return f, [r for r in range(n) if r not in copies], copies


def _compile_mem(instr, env):
    spelling = canonical_mem(instr.opcode)
    form = MEM_FORMS.get(spelling) if spelling else None
    if form is None:
        what = f"unsupported wmma.{instr.mods[0]} form"
        if spelling and any(spelling.endswith(t) for t in (".s4", ".u4", ".b1")):
            what += " (sub-byte fragments: A is .row and B is .col only)"
        fail(UnsupportedError, instr.opcode, _nearest(spelling or instr.opcode, MEM_FORMS, what))
    _check_arch(instr, env, form)
    is_load = form.op == "load"
    ops = instr.operands
    if len(ops) not in (2, 3):
        raise OperandError(f"{instr.opcode}: takes 2 or 3 operands ({'d, [p]' if is_load else '[p], s'}"
                           f"{{, stride}}), found {len(ops)}")
    regs_op, addr_op = (ops[0], ops[1]) if is_load else (ops[1], ops[0])
    if not isinstance(addr_op, Mem):
        raise OperandError(f"{instr.opcode}: the address must be [..], found {addr_op}")
    names = vec_regs(env, regs_op, instr, form.n_regs, "fragment")
    for n in names:
        if n == "_":
            continue
        if env.reg_width(n) != form.reg_bits:
            raise OperandError(f"{instr.opcode}: fragment register {n} is {env.reg_width(n)}-bit; "
                               f"{form.type} fragments are {form.reg_bits}-bit registers")
    addr = address(env, addr_op, instr)
    stride_read = src(env, ops[2], "u32", instr) if len(ops) == 3 else None
    f, unique, copies = _slots(form)
    epr = f.shape[2]
    w = form.elem_bits
    nbytes = max(1, w // 8)
    row_major = form.layout == "row"
    unit = form.stride_unit
    space = form.space
    text = instr.text
    rdt = _UINT[form.reg_bits]

    def geometry(warp):
        a = addr(warp)
        if not (a == a[0]).all():
            lane = int(np.flatnonzero(a != a[0])[0])
            fail(OperandError, text, f"address {int(a[lane]):#x} differs from lane 0's {int(a[0]):#x}; "
                 f"every lane must give the same address", lane)
        base = int(a[0])
        if base % BASE_ALIGN:
            fail(AlignmentError, text, f"address {base:#x} is not {BASE_ALIGN}-byte aligned")
        if stride_read is None:
            stride = form.min_stride
        else:
            s = stride_read(warp).astype(np.int64)
            if not (s == s[0]).all():
                lane = int(np.flatnonzero(s != s[0])[0])
                fail(OperandError, text, f"stride {int(s[lane])} differs from lane 0's {int(s[0])}; every lane "
                     f"must give the same stride", lane)
            stride = int(s[0])
            if stride % unit:
                fail(AlignmentError, text, f"stride {stride} is not a multiple of {unit} {form.type} elements "
                     f"(8 bytes)")
        return base, stride

    def elem_offsets(stride, r, e):
        row, col = f[r, :, e, 0], f[r, :, e, 1]
        return (row * stride + col) if row_major else (col * stride + row)

    if is_load:
        def run(warp, mask):
            require_full_warp(instr, mask)
            base, stride = geometry(warp)
            out = np.zeros((len(names), 32), np.uint64)
            for r in unique:
                acc = np.zeros(32, np.uint64)
                for e in range(epr):
                    off = elem_offsets(stride, r, e) * w
                    byte = base + off // 8
                    raw = load(warp, text, space, byte.astype(np.int64), mask, nbytes, nbytes)
                    v = raw.view(_ELEM_DT[max(w, 8)]).reshape(32).astype(np.uint64)
                    if w < 8:               # sub-byte elements: bit offset inside the byte (little-endian)
                        v = (v >> (off % 8).astype(np.uint64)) & np.uint64((1 << w) - 1)
                    acc |= v << np.uint64(e * w)
                out[r] = acc
            for r, s in copies.items():
                out[r] = out[s]
            regs = warp.regs
            for i, n in enumerate(names):
                if n != "_":
                    regs[n] = out[i].astype(rdt)
        return run

    def run_store(warp, mask):
        require_full_warp(instr, mask)
        base, stride = geometry(warp)
        get = warp.get_reg
        vals = [get(n, text).astype(np.uint64) for n in names]
        for r in range(len(names)):
            for e in range(epr):
                off = elem_offsets(stride, r, e) * w
                byte = base + off // 8
                v = (vals[r] >> np.uint64(e * w)) & np.uint64((1 << w) - 1) if w < 64 else vals[r]
                data = v.astype(_ELEM_DT[w])
                store(warp, text, space, byte.astype(np.int64), mask,
                      np.ascontiguousarray(data).view(np.uint8).reshape(32, nbytes), nbytes)
    return run_store


# ------------------------------------------------------------------------------------------------
# wmma.mma

class WmmaMmaOp:
    """One wmma.mma form bound to an architecture: raw fragment registers in, D's registers out."""

    def __init__(self, form, arch):
        self.form = form
        self.arch = arch
        self.steps = [(st, get_mma(st.mma, arch)) for st in form.steps]
        self.n = {op: form.n_regs(op) for op in "abcd"}
        self.rnd = form.rnd if form.rnd not in (None, "rn") else None
        if self.rnd:
            from isa.mma import VARIANTS
            self._f64 = VARIANTS[self.steps[0][0].mma]

    def execute(self, a, b, c):
        """a, b, c: raw registers (n, 32) -> d (n_d, 32)."""
        form = self.form
        acc = wnum.widen_f16(c) if form.convert_c else np.array(c)
        if self.rnd:
            return self._f64_rounded(a, b, acc)
        d = np.zeros_like(acc)
        for st, op in self.steps:
            ca = np.ascontiguousarray((d if st.chain else acc)[list(st.c)])
            xa = np.ascontiguousarray(a[list(st.a)])
            xb = np.ascontiguousarray(b[list(st.b)])
            d[list(st.c)] = op.execute(xb, xa, ca) if st.swap else op.execute(xa, xb, ca)
        return wnum.narrow_f32(d) if form.convert_d else d

    def _f64_rounded(self, a, b, c):
        from isa.fragments import pack, unpack
        v = self._f64
        A, B, C = unpack(v, "A", a[:1]), unpack(v, "B", b[:1]), unpack(v, "C", c[:2])
        D = np.array(wnum.f64_rounded(A.tolist(), B.tolist(), C.tolist(), self.rnd), np.uint64)
        return pack(v, "D", D)


_MMA_CACHE: dict = {}


def get_wmma(opcode, arch="sm_90"):
    key = (opcode, arch)
    op = _MMA_CACHE.get(key)
    if op is None:
        spelling = canonical_mma(opcode)
        form = MMA_FORMS.get(spelling) if spelling else None
        if form is None:
            extra = ""
            if spelling and "satfinite" in spelling and any(t in spelling for t in (".f16", ".f32", ".bf16")):
                extra = " (.satfinite on floating-point wmma.mma was removed in PTX ISA 6.5)"
            elif spelling and ".f64" in spelling and ".m8n8k4." not in spelling:
                extra = f" ({F64_SHAPE_QUIRK})"
            fail(UnsupportedError, opcode, _nearest(spelling or opcode, MMA_FORMS, "unsupported wmma.mma form" + extra))
        a = {"sm_90a": "sm_90"}.get(arch, arch)
        if a not in form.archs:
            fail(UnsupportedError, opcode, f"not modelled on {arch} (modelled: {', '.join(form.archs)})")
        op = _MMA_CACHE[key] = WmmaMmaOp(form, a)
    return op


def _compile_mma(instr, env):
    op = get_wmma(instr.opcode, env.arch)
    form = op.form
    if len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: takes 4 operands (d, a, b, c), found {len(instr.operands)}")
    groups = []
    for opnd, what in zip(instr.operands, "dabc"):
        n, bits = form.n_regs(what), form.reg_bits(what)
        names = vec_regs(env, opnd, instr, n, f"{what} fragment")
        for name in names:
            if name != "_" and env.reg_width(name) != bits:
                raise OperandError(f"{instr.opcode}: {what} register {name} is {env.reg_width(name)}-bit; "
                                   f"this form needs {bits}-bit registers")
        groups.append((names, _UINT[bits]))
    (d_names, d_dt), srcs = groups[0], groups[1:]
    text = instr.text

    def run(warp, mask):
        require_full_warp(instr, mask)
        get = warp.get_reg
        a, b, c = (np.stack([get(n, text) for n in names]).astype(dt) for names, dt in srcs)
        d = op.execute(a, b, c)
        regs = warp.regs
        for i, n in enumerate(d_names):
            if n != "_":
                regs[n] = d[i].astype(d_dt)
    return run


