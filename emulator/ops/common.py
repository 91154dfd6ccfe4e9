"""Operand access shared by every executor: compile-time readers and writers of typed lane values."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from isa.types import TYPES
from ..errors import OperandError, UnsupportedError, did_you_mean, fail
from ..frontend.ptx import Imm, Mem, Not, Reg, Sym, Vec, f32_bits, f64_bits

UINT = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
NP = {
    "pred": np.bool_, "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "f16x2": np.uint32, "bf16x2": np.uint32, "tf32": np.uint32, "u16x2": np.uint32, "s16x2": np.uint32, "e4m3x2": np.uint16, "e5m2x2": np.uint16,
}


def width(ptype):
    try:
        return TYPES[ptype][0]
    except KeyError:
        raise UnsupportedError(f"type .{ptype} is not supported; supported: "
                               f"{', '.join('.' + t for t in TYPES)}") from None


def fit(bits, to_w, signed=False):
    """Resize raw bits to ``to_w`` bits: truncate, or zero/sign-extend."""
    dt = UINT.get(to_w)
    if dt is None:
        raise UnsupportedError(f"{to_w}-bit registers are not supported by this instruction")
    if bits.dtype == dt:
        return bits
    if to_w == 1:
        return bits != 0
    if bits.dtype == np.bool_:
        return bits.astype(dt)
    from_w = bits.dtype.itemsize * 8
    if signed and to_w > from_w:
        return bits.view(SINT[from_w]).astype(SINT[to_w]).view(dt)
    return bits.astype(dt)


def reg_name(env, op, instr):
    """The register an operand names (a Reg, or a bare name declared with .reg)."""
    if isinstance(op, Reg):
        return op.name
    if isinstance(op, Sym) and env.is_register(op.name):
        return op.name
    raise OperandError(f"{instr.opcode}: expected a register, found {op}")


def imm_bits(imm: Imm, ptype, instr):
    w = width(ptype)
    kind = TYPES[ptype][1]
    if imm.kind == "int":
        if kind == "f" and ptype in ("f32", "f64", "f16", "bf16"):
            return _float_bits(float(imm.value), ptype)
        if kind == "pred":
            return bool(imm.value)
        return imm.value & ((1 << w) - 1)
    if imm.kind == "f32":
        if ptype in ("f32", "f16x2", "bf16x2", "tf32") or (w == 32 and kind != "f"):
            return imm.value
        if kind != "f":
            raise OperandError(f"{instr.opcode}: the 32-bit float literal {imm.text} does not fit a .{ptype} operand")
        return _float_bits(float(np.uint32(imm.value).view(np.float32)), ptype)
    if imm.kind == "f64":
        if ptype == "f64" or (w == 64 and kind != "f"):
            return imm.value
        if kind != "f":
            raise OperandError(f"{instr.opcode}: the 64-bit float literal {imm.text} does not fit a .{ptype} operand")
        return _float_bits(float(np.uint64(imm.value).view(np.float64)), ptype)
    if kind != "f":
        raise OperandError(f"{instr.opcode}: floating-point literal {imm.text} for a .{ptype} operand")
    return _float_bits(imm.value, ptype)


def _float_bits(x, ptype):
    if ptype == "f32":
        return f32_bits(x)
    if ptype == "f64":
        return f64_bits(x)
    if ptype not in ("f16", "bf16"):
        raise OperandError(f"a floating-point number cannot be written as a .{ptype} immediate; give its bits")
    with np.errstate(all="ignore"):
        return int(np.array(x, NP[ptype]).view(UINT[width(ptype)]))


B128_USE = "only ld, st and mov .b128 take a 128-bit register"


def _b128_name(env, op, instr, ptype):
    """The register of a .b128 operand (a 128-bit register), or OperandError."""
    if isinstance(op, Imm):
        raise OperandError(f"{instr.opcode}: a .{ptype} operand must be a 128-bit register, found {op}")
    name = reg_name(env, op, instr)
    if name != "_" and env.reg_width(name) != 128:
        raise OperandError(f"{instr.opcode}: {name} is a {env.reg_width(name)}-bit register; a .b128 operand "
                           f"needs a 128-bit one (.reg .b128)")
    return name


def _no_b128(env, name, ptype, instr):
    if name != "_" and env.is_register(name) and env.reg_width(name) == 128:
        raise OperandError(f"{instr.opcode}: {name} is a 128-bit register and cannot be a .{ptype} operand; "
                           f"{B128_USE}")


def src(env, op, ptype, instr, allow_imm=True):
    """Compile a reader: ``read(warp) -> np.ndarray`` of 32 lane values with numpy dtype NP[ptype]
    (for .b128: raw bits as (32, 2) uint64, low half first)."""
    if ptype == "b128":
        name = _b128_name(env, op, instr, ptype)
        text = instr.text
        return lambda warp: warp.get_reg(name, text)
    w = width(ptype)
    signed = TYPES[ptype][1] == "s"
    dt = NP.get(ptype)
    if dt is None or w not in UINT:
        raise UnsupportedError(f"{instr.opcode}: .{ptype} operands are not supported by this instruction")
    if isinstance(op, Imm):
        if not allow_imm:
            raise OperandError(f"{instr.opcode}: operand {op} must be a register")
        const = np.full(32, imm_bits(op, ptype, instr), UINT[w]).view(dt) if w > 1 else \
            np.full(32, bool(imm_bits(op, ptype, instr)))
        return lambda warp: const
    if isinstance(op, Not):
        if np.dtype(dt).kind not in "biu":
            raise OperandError(f"{instr.opcode}: '!' negates predicates and integers, not a .{ptype} operand")
        inner = src(env, op.item, ptype, instr, allow_imm)
        return lambda warp: ~inner(warp)
    if isinstance(op, (Sym, Mem)) and not (isinstance(op, Sym) and env.is_register(op.name)):
        addr = symbol_address(env, op, instr)
        return lambda warp: fit(addr(warp), w).view(dt)
    name = reg_name(env, op, instr)
    _no_b128(env, name, ptype, instr)
    text = instr.text

    def read(warp):
        return fit(warp.get_reg(name, text), w, signed).view(dt) if w > 1 else fit(warp.get_reg(name, text), 1)
    return read


def dst(env, op, ptype, instr):
    """Compile a writer: ``write(warp, values, mask)``; values are numpy values of NP[ptype] (or raw bits)."""
    if ptype == "b128":
        name = _b128_name(env, op, instr, ptype)
        return lambda warp, values, mask: warp.set_reg(name, values, mask)
    name = reg_name(env, op, instr)
    if name == "_":
        return lambda warp, values, mask: None
    _no_b128(env, name, ptype, instr)
    rw = env.reg_width(name)
    w = width(ptype)
    signed = TYPES[ptype][1] == "s"
    if rw not in UINT or w not in UINT:
        raise UnsupportedError(f"{instr.opcode}: register {name} is {rw} bits wide; {rw}-bit values are not "
                               f"supported by this instruction")
    if rw == 1 and w != 1:
        raise OperandError(f"{instr.opcode}: predicate register {name} cannot hold a .{ptype} value")

    def write(warp, values, mask):
        v = values.view(UINT[w]) if w > 1 and values.dtype != np.bool_ else values
        warp.set_reg(name, fit(v, rw, signed), mask)
    return write


def vec_regs(env, op, instr, n=None, what="vector operand"):
    """Register names of a {...} operand (or a lone register when n == 1)."""
    if isinstance(op, Vec):
        items = op.items
    elif n == 1:
        items = (op,)
    else:
        raise OperandError(f"{instr.opcode}: expected a {what} {{...}}, found {op}")
    if n is not None and len(items) != n:
        raise OperandError(f"{instr.opcode}: {what} must have {n} registers, it has {len(items)}")
    return [reg_name(env, it, instr) for it in items]


def symbol_address(env, op, instr):
    """Reader of the address of a variable (``sym`` or ``sym+off``), as uint64 lane values."""
    if not isinstance(op, Sym) and not isinstance(getattr(op, "base", None), Sym):
        raise OperandError(f"{instr.opcode}: operand {op} is a memory address; this operand takes a register, "
                           f"an immediate or a variable name")
    name = op.name if isinstance(op, Sym) else op.base.name
    off = 0 if isinstance(op, Sym) else op.offset
    if not isinstance(op, Sym):
        _check_offset(op, instr, 32)
    if name not in env.symbols:
        raise OperandError(f"{instr.opcode}: unknown name {name}")

    def read(warp):
        space, base = warp.symbols.get(name, env.symbols[name])
        if callable(base):
            return base(warp) + np.uint64(off)
        return np.full(32, base + off, np.uint64)
    return read


def _check_offset(op, instr, bits):
    """An address offset must fit the address arithmetic: ``bits``-bit signed or unsigned."""
    if not -(1 << (bits - 1)) <= op.offset < (1 << bits):
        raise OperandError(f"{instr.opcode}: address offset {op.offset} in {op} does not fit {bits} bits")


def address(env, op, instr):
    """Compile an address operand ``[reg+off]`` / ``[var+off]`` / ``[imm]`` into ``addr(warp) -> int64[32]``."""
    if not isinstance(op, Mem):
        raise OperandError(f"{instr.opcode}: expected an address [..], found {op}")
    off = op.offset
    _check_offset(op, instr, 64)
    if op.base is None:
        if not 0 <= off < 1 << 63:
            raise OperandError(f"{instr.opcode}: absolute address {op} is outside 0..2^63-1")
        const = np.full(32, off, np.int64)
        return lambda warp: const
    if isinstance(op.base, Sym) and not env.is_register(op.base.name):
        sym = symbol_address(env, op, instr)
        return lambda warp: sym(warp).astype(np.int64)
    name = reg_name(env, op.base, instr)
    rw = env.reg_width(name)
    if rw not in (32, 64):
        raise OperandError(f"{instr.opcode}: address register {name} must be 32 or 64 bits wide, not {rw}")
    _check_offset(op, instr, rw)
    text = instr.text
    if off == 0:
        return lambda warp: warp.get_reg(name, text).astype(np.int64)
    if rw == 32:        # a 32-bit address wraps at 2^32: '[%r13+24]' with %r13 = -8 is address 16
        o32 = np.uint32(off & 0xFFFFFFFF)
        return lambda warp: (warp.get_reg(name, text) + o32).astype(np.int64)
    o = np.int64(off - (1 << 64) if off >= 1 << 63 else off)        # 64-bit address arithmetic wraps
    return lambda warp: warp.get_reg(name, text).astype(np.int64) + o


def split_mods(instr, known_groups, conflict=None, unknown=None):
    """Classify an instruction's qualifiers. ``known_groups``: {group: set of allowed values}.

    Returns {group: value} (each group at most once) and raises UnsupportedError for a qualifier that is
    in no group, listing what is supported. ``conflict(group, first, second)`` and ``unknown(qualifier)``
    word those two errors where a family has its own message.
    """
    out = {}
    for m in instr.mods:
        for g, vals in known_groups.items():
            if m in vals:
                if g in out:
                    raise UnsupportedError(conflict(g, out[g], m) if conflict else
                                           f"{instr.opcode}: qualifier .{m} conflicts with .{out[g]}")
                out[g] = m
                break
        else:
            if unknown is not None:
                raise UnsupportedError(unknown(m))
            allowed = sorted({v for vals in known_groups.values() for v in vals})
            if len(allowed) > 16:               # a long list: the nearest few, the rest in the docs
                raise UnsupportedError(f"{instr.opcode}: unsupported qualifier .{m}; " + did_you_mean(
                    f".{m}", ["." + a for a in allowed], f"docs/kernels.md, Supported PTX"))
            raise UnsupportedError(f"{instr.opcode}: unsupported qualifier .{m}; supported: "
                                   f"{', '.join('.' + a for a in allowed)}")
    return out


_FULL_BYTES = b"\x01" * 32     # a bool lane mask with every lane set, as bytes (a quicker test than mask.all())


def require_full_warp(instr, mask):
    if mask.tobytes() != _FULL_BYTES and not mask.all():
        missing = np.flatnonzero(~mask)
        from ..errors import WarpSyncError
        fail(WarpSyncError, instr.text or instr.opcode,
             f".sync.aligned needs all 32 lanes; lanes {format_lanes(missing)} are not executing it")


def format_lanes(lanes):
    lanes = list(map(int, lanes))
    out, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        out.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ",".join(out)
