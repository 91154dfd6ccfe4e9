"""ld / st / mov / cvta: ordinary memory access and address arithmetic.

Shared addresses are byte offsets into ``warp.smem`` (the shared window starts at 0). Generic addresses
below the shared-memory size are shared; everything else is global.
"""
from __future__ import annotations

import numpy as np

from isa.datamove import LD_ST
from isa.types import TYPES
from .wgmma.state import check_smem_write as check_wgmma_reads
from ..errors import AsyncHazardError, MemoryAccessError, OperandError, UnsupportedError, fail
from ..memory import check_alignment, check_bounds, gather, global_gather, global_scatter, scatter
from ..frontend.ptx import Imm, Mem, Reg, Sym, Vec
from .registry import executor
from .common import NP, UINT, address, dst, fit, reg_name, split_mods, src, symbol_address, width

SPACES = ("shared", "shared::cta", "global", "local", "param", "const")


# ---------------------------------------------------------------------------------------------------
# Shared memory with hazard checks and traffic logging (used by every shared-memory instruction)

def check_inflight(warp, instr, addrs, mask, nbytes, writing):
    """Raise if an active lane touches bytes that a cp.async has not yet delivered, or writes bytes that an
    in-flight wgmma.mma_async reads."""
    if writing:
        check_wgmma_reads(warp, instr, addrs, mask, nbytes)
    if not warp._inflight_any():
        return
    lanes = np.flatnonzero(mask)
    idx = addrs[lanes][:, None] + np.arange(nbytes)
    hit = warp.smem_inflight[idx].any(axis=1)
    if hit.any():
        lane = int(lanes[np.flatnonzero(hit)[0]])
        a = int(addrs[lane])
        verb = "overwrites" if writing else "reads"
        fail(AsyncHazardError, instr, f"{verb} shared bytes [{a:#x}, {a + nbytes:#x}) while a cp.async into them "
             f"is still in flight; retire it first with cp.async.wait_group / cp.async.wait_all", lane)


def shared_load(warp, instr, addrs, mask, nbytes, align, op="ld", log=True):
    check_alignment(instr, addrs, mask, align)
    check_bounds(instr, addrs, mask, nbytes, warp.smem.size)
    check_inflight(warp, instr, addrs, mask, nbytes, False)
    if log:
        warp.log_smem(instr, op, addrs, nbytes, mask)
    return gather(warp.smem, addrs, mask, nbytes)


def shared_store(warp, instr, addrs, mask, data, align, op="st", log=True):
    nbytes = data.shape[1]
    check_alignment(instr, addrs, mask, align)
    check_bounds(instr, addrs, mask, nbytes, warp.smem.size)
    check_inflight(warp, instr, addrs, mask, nbytes, True)
    if log:
        warp.log_smem(instr, op, addrs, nbytes, mask)
    scatter(warp.smem, addrs, mask, data)
    if warp._async is not None:                 # generic-proxy writes, for the async-proxy fence check
        lanes = np.flatnonzero(mask)
        warp._async.generic_write(addrs[lanes].astype(np.int64)[:, None] + np.arange(nbytes))


def _generic_split(warp, addrs, mask):
    shared = mask & (addrs >= 0) & (addrs < warp.smem.size)
    return shared, mask & ~shared


def load(warp, instr, space, addrs, mask, nbytes, align):
    """Bytes (32, nbytes) from any state space."""
    if space in ("shared", "shared::cta"):
        return shared_load(warp, instr, addrs, mask, nbytes, align)
    if space == "global":
        check_alignment(instr, addrs, mask, align)
        return global_gather(warp.gmem, instr, addrs, mask, nbytes)
    if space is None:
        sh, gl = _generic_split(warp, addrs, mask)
        out = np.zeros((32, nbytes), np.uint8)
        if sh.any():
            out[sh] = shared_load(warp, instr, addrs, sh, nbytes, align)[sh]
        if gl.any():
            check_alignment(instr, addrs, gl, align)
            out[gl] = global_gather(warp.gmem, instr, addrs, gl, nbytes)[gl]
        return out
    return warp.space_load(instr, space, addrs, mask, nbytes, align)


def store(warp, instr, space, addrs, mask, data, align):
    if space in ("shared", "shared::cta"):
        return shared_store(warp, instr, addrs, mask, data, align)
    if space == "global":
        check_alignment(instr, addrs, mask, align)
        return global_scatter(warp.gmem, instr, addrs, mask, data)
    if space is None:
        sh, gl = _generic_split(warp, addrs, mask)
        if gl.any():
            check_alignment(instr, addrs, gl, align)
            global_scatter(warp.gmem, instr, addrs, gl, data)
        if sh.any():
            shared_store(warp, instr, addrs, sh, data, align)
        return None
    return warp.space_store(instr, space, addrs, mask, data, align)


# ---------------------------------------------------------------------------------------------------
# ld / st

_LDST_GROUPS = {
    "space": set(SPACES),
    "vec": {"v2", "v4", "v8"},
    "type": set(LD_ST["types"]),
    "hint": set(LD_ST["hints"]),
}


def _ldst_common(instr, env, kind):
    q = split_mods(instr, _LDST_GROUPS)
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the element type (e.g. .u32)")
    ptype = q["type"]
    n = LD_ST["vectors"][q.get("vec")]
    ew = width(ptype) // 8
    if ew * n * 8 > LD_ST["max_bits"]:
        raise UnsupportedError(f"{instr.opcode}: {n} x {ew * 8}-bit elements exceed the 128 bits one lane may "
                               f"access at once")
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: {kind} takes 2 operands, found {len(instr.operands)}")
    return q.get("space"), ptype, n, ew


def _reg_list(env, op, n, instr):
    if n == 1:
        if isinstance(op, Vec):
            raise OperandError(f"{instr.opcode}: scalar access takes a register, found {op}")
        return [op]
    if not isinstance(op, Vec) or len(op.items) != n:
        raise OperandError(f"{instr.opcode}: .v{n} needs a vector operand of {n} registers, found {op}")
    return list(op.items)


@executor("ld", "ldu")
def compile_ld(instr, env):
    space, ptype, n, ew = _ldst_common(instr, env, "ld")
    d, a = instr.operands
    if not isinstance(a, Mem):
        raise OperandError(f"{instr.opcode}: the source must be an address [..], found {a}")
    addr = address(env, a, instr)
    regs = _reg_list(env, d, n, instr)
    writers = [dst(env, r, ptype, instr) for r in regs]
    dt = UINT[ew * 8]
    nbytes = ew * n
    text = instr.text

    def run(warp, mask):
        raw = load(warp, text, space, addr(warp), mask, nbytes, nbytes)
        vals = raw.view(dt).reshape(32, n)
        for i, wr in enumerate(writers):
            wr(warp, vals[:, i].copy().view(NP[ptype]), mask)
    return run


@executor("st")
def compile_st(instr, env):
    space, ptype, n, ew = _ldst_common(instr, env, "st")
    a, s = instr.operands
    if not isinstance(a, Mem):
        raise OperandError(f"{instr.opcode}: the destination must be an address [..], found {a}")
    addr = address(env, a, instr)
    readers = [src(env, r, ptype, instr) for r in _reg_list(env, s, n, instr)]
    dt = UINT[ew * 8]
    nbytes = ew * n
    text = instr.text

    def run(warp, mask):
        vals = np.stack([r(warp).view(dt) for r in readers], axis=1)
        store(warp, text, space, addr(warp), mask, np.ascontiguousarray(vals).view(np.uint8).reshape(32, nbytes),
              nbytes)
    return run


# ---------------------------------------------------------------------------------------------------
# mov / cvta

@executor("mov")
def compile_mov(instr, env):
    q = split_mods(instr, {"type": set(TYPES) - {"b128"}})
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type (e.g. .u32)")
    ptype = q["type"]
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: mov takes 2 operands, found {len(instr.operands)}")
    d, s = instr.operands
    w = width(ptype)
    if isinstance(d, Vec) or isinstance(s, Vec):
        return _mov_pack(instr, env, ptype, d, s)
    read = src(env, s, ptype, instr)
    write = dst(env, d, ptype, instr)
    return lambda warp, mask: write(warp, read(warp), mask)


def _mov_pack(instr, env, ptype, d, s):
    """mov.b32 %r, {%h0, %h1} (pack) and mov.b32 {%h0, %h1}, %r (unpack)."""
    w = width(ptype)
    if isinstance(s, Vec) and not isinstance(d, Vec):
        k = len(s.items)
        ew = w // k
        readers = [src(env, it, f"b{ew}", instr) for it in s.items]
        write = dst(env, d, f"b{w}", instr)

        def pack(warp, mask):
            v = np.stack([r(warp) for r in readers], axis=1)
            write(warp, np.ascontiguousarray(v).view(UINT[w]).reshape(32), mask)
        return pack
    if isinstance(d, Vec) and not isinstance(s, Vec):
        k = len(d.items)
        ew = w // k
        read = src(env, s, f"b{w}", instr)
        writers = [dst(env, it, f"b{ew}", instr) if not (isinstance(it, Reg) and it.name == "_") else None
                   for it in d.items]

        def unpack(warp, mask):
            v = read(warp).reshape(32, 1).view(UINT[ew])
            for i, wr in enumerate(writers):
                if wr:
                    wr(warp, v[:, i].copy(), mask)
        return unpack
    raise OperandError(f"{instr.opcode}: vector operands on both sides")


@executor("cvta")
def compile_cvta(instr, env):
    q = split_mods(instr, {"to": {"to"}, "space": set(SPACES), "type": {"u32", "u64"}})
    if "space" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: cvta needs a state space and .u32/.u64")
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: cvta takes 2 operands, found {len(instr.operands)}")
    ptype = q["type"]
    read = src(env, instr.operands[1], ptype, instr)
    write = dst(env, instr.operands[0], ptype, instr)
    space = q["space"]
    to = "to" in q

    def run(warp, mask):
        write(warp, warp.cvta(space, read(warp), to), mask)
    return run
