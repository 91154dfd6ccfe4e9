"""Executors for ldmatrix, stmatrix and cp.async (with commit/wait group semantics); the ldmatrix /
stmatrix data movement itself (reference and fast path) is in ``matrix``."""
from __future__ import annotations

import numpy as np

from isa.datamove import (CP_ASYNC_GROUP_OPS, CP_ASYNC_HINTS, CP_ASYNC_OPS, CP_ASYNC_PREFETCH, MATRIX_NEWER,
                          MATRIX_OPS, MATRIX_QUALIFIERS, MOVMATRIX_OPS)
from .matrix import ldmatrix_fast, movmatrix_fast, stmatrix_fast
from ...errors import AsyncHazardError, OperandError, UnsupportedError, fail
from ...memory import check_alignment, check_bounds, count_rows, global_gather
from ...frontend.ptx import Imm, Mem
from ..registry import executor
from ..common import address, reg_name, require_full_warp, split_mods, src, vec_regs
from ..memops import check_inflight

_ARCH_ORDER = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")


def _require_arch(instr, env, intro):
    if _ARCH_ORDER.index(env.arch) < _ARCH_ORDER.index(intro):
        raise UnsupportedError(f"{instr.opcode}: needs {intro} or newer; this warp is {env.arch}")


def _canonical(instr, groups, what):
    """Put the qualifiers in canonical order (one per group); raise for unknown or repeated ones."""
    picked = [None] * len(groups)
    for m in instr.mods:
        for i, g in enumerate(groups):
            if m in g:
                if picked[i] is not None:
                    raise UnsupportedError(f"{instr.opcode}: qualifier .{m} repeats or conflicts with .{picked[i]}")
                picked[i] = m
                break
        else:
            raise UnsupportedError(f"{instr.opcode}: unsupported qualifier .{m}; supported: {what}")
    return picked


def _matrix_op(instr):
    what = f"{instr.base}.sync.aligned.m8n8{{.x1,.x2,.x4}}{{.trans}}{{.shared{{::cta}}}}.b16"
    for m in instr.mods:
        if m in MATRIX_NEWER:
            raise UnsupportedError(f"{instr.opcode}: {MATRIX_NEWER[m]}; supported: {what}")
    picked = _canonical(instr, MATRIX_QUALIFIERS, what)
    spelling = ".".join([instr.base] + [p for p in picked if p])
    spec = MATRIX_OPS.get(spelling)
    if spec is None:
        for p, g in zip(picked, MATRIX_QUALIFIERS):
            if p is None and g[0] not in ("trans", "shared"):
                raise OperandError(f"{instr.opcode}: missing required qualifier {'/'.join('.' + x for x in g)}")
        raise UnsupportedError(f"{instr.opcode}: not a supported spelling; supported: {what}")
    return spec


@executor("movmatrix")
def compile_movmatrix(instr, env):
    """movmatrix.sync.aligned.m8n8.trans.b16 d, a: transpose the 8x8 .b16 matrix the warp holds in ``a``."""
    parts = instr.opcode.split(".")
    spelling = next((s for s in MOVMATRIX_OPS if sorted(s.split(".")[1:]) == sorted(parts[1:])), None)
    if spelling is None:
        raise UnsupportedError(f"{instr.opcode}: unsupported movmatrix form; supported: {', '.join(MOVMATRIX_OPS)}")
    _require_arch(instr, env, MOVMATRIX_OPS[spelling])
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: takes 2 operands (d, a), found {len(instr.operands)}")
    d, a = (vec_regs(env, op, instr, 1, what)[0] for op, what in zip(instr.operands, ("destination", "source")))
    for n in (d, a):
        if n != "_" and env.reg_width(n) != 32:
            raise OperandError(f"{instr.opcode}: {n} must be a 32-bit register")
    text = instr.text

    def run(warp, mask):
        require_full_warp(instr, mask)
        out = movmatrix_fast(warp.get_reg(a, text).astype(np.uint32))
        if d != "_":
            warp.regs[d] = out
    return run


@executor("ldmatrix", "stmatrix")
def compile_matrix(instr, env):
    """ldmatrix / stmatrix: lanes 0..8N-1 give the row addresses (16-byte aligned, inside shared memory)."""
    spec = _matrix_op(instr)
    _require_arch(instr, env, spec.intro)
    nmat, trans, store = spec.nmat, spec.trans, spec.op == "stmatrix"
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: takes 2 operands ({', '.join(spec.operands)}), "
                           f"found {len(instr.operands)}")
    regs_op, addr_op = instr.operands[::-1] if store else instr.operands
    what = "source" if store else "destination"
    names = vec_regs(env, regs_op, instr, nmat, f"{what} of .x{nmat}")
    for n in names:
        if env.reg_width(n) != 32:
            raise OperandError(f"{instr.opcode}: {what} {n} must be a 32-bit register")
    addr = address(env, addr_op, instr)
    used = np.arange(32) < 8 * nmat
    text = instr.text

    def run(warp, mask):
        require_full_warp(instr, mask)
        a = addr(warp)
        check_alignment(text, a, used, 16, "row address")
        check_bounds(text, a, used, 16, warp.smem.size)
        check_inflight(warp, text, a, used, 16, store)
        warp.log_smem(text, spec.op, a, 16, used, nmat)
        if store:
            regs = np.stack([warp.get_reg(n, text) for n in names]).astype(np.uint32)
            if warp.san is not None:          # each row-address lane writes its 16 bytes (the race check)
                rows = np.zeros(32 * 16, np.uint8)
                stmatrix_fast(rows, np.arange(32, dtype=a.dtype) * 16, nmat, trans, regs)
                warp.san.shared(warp, text, a, used, 16, True, rows.reshape(32, 16))
            stmatrix_fast(warp.smem, a, nmat, trans, regs)
            if warp._async is not None:
                warp._async.generic_write(a[used].astype(np.int64)[:, None] + np.arange(16))
            return
        if warp.san is not None:              # each row-address lane reads its 16 bytes
            warp.san.shared(warp, text, a, used, 16, False)
        out = np.empty((nmat, 32), np.uint32)
        ldmatrix_fast(warp.smem, a, nmat, trans, out)
        for j, n in enumerate(names):
            warp.set_reg(n, out[j], mask)
    return run


# ---------------------------------------------------------------------------------------------------
# cp.async

def _cp_async_groups(instr, env):
    what = instr.mods[1] if len(instr.mods) > 1 else ""
    if what == "commit_group":
        if instr.operands:
            raise OperandError(f"{instr.opcode}: takes no operands")

        def commit(warp, mask):
            warp.cp_async.commit(mask)
        return commit
    if what in ("wait_group", "wait_all"):
        if what == "wait_group":
            if len(instr.operands) != 1 or not isinstance(instr.operands[0], Imm) or instr.operands[0].kind != "int":
                raise OperandError(f"{instr.opcode}: takes one integer constant N")
            keep = instr.operands[0].value
            if not 0 <= keep <= 0xFFFFFFFF:
                raise OperandError(f"{instr.opcode}: N must be a 32-bit unsigned integer, got {keep}")
        else:
            if instr.operands:
                raise OperandError(f"{instr.opcode}: takes no operands")
            keep = 0

        def wait(warp, mask):
            st = warp.cp_async
            if what == "wait_all":
                st.commit(mask)
            st.retire(warp, mask, keep)
        return wait
    raise UnsupportedError(f"{instr.opcode}: unsupported; supported: cp.async.ca.shared.global, "
                           f"cp.async.cg.shared.global, cp.async.commit_group, cp.async.wait_group N, "
                           f"cp.async.wait_all")


@executor("cp")
def compile_cp(instr, env):
    mods = instr.mods
    if not mods or mods[0] != "async":
        raise UnsupportedError(f"{instr.opcode}: unsupported; of the cp family only cp.async is supported")
    _require_arch(instr, env, "sm_80")
    if ".".join(("cp",) + mods[:2]) in CP_ASYNC_GROUP_OPS:
        return _cp_async_groups(instr, env)
    if len(mods) > 1 and mods[1] in ("bulk", "mbarrier"):
        raise UnsupportedError(f"{instr.opcode}: cp.async.{mods[1]} is not supported; supported: "
                               f"cp.async.ca/.cg.shared.global and commit_group/wait_group/wait_all")
    spec, has_policy = _cp_async_op(instr)
    cache = spec.cache
    ops = instr.operands
    nmin, nmax = 3 + has_policy, 4 + has_policy
    if not nmin <= len(ops) <= nmax:
        raise OperandError(f"{instr.opcode}: takes [dst], [src], cp-size{{, src-size | ignore-src}}"
                           f"{', cache-policy' if has_policy else ''}; found {len(ops)} operands")
    if not isinstance(ops[0], Mem) or not isinstance(ops[1], Mem):
        raise OperandError(f"{instr.opcode}: [dst] and [src] must be addresses")
    size_op = ops[2]
    if not isinstance(size_op, Imm) or size_op.kind != "int":
        raise OperandError(f"{instr.opcode}: cp-size must be an integer constant")
    cp_size = size_op.value
    allowed = spec.cp_sizes
    if cp_size not in allowed:
        raise OperandError(f"{instr.opcode}: cp-size {cp_size} is not allowed with .{cache}; allowed: "
                           f"{', '.join(map(str, allowed))}")
    dst_addr = address(env, ops[0], instr)
    src_addr = address(env, ops[1], instr)
    src_size = None
    ignore = None
    if len(ops) == nmax:
        extra = ops[3]
        if not isinstance(extra, Imm) and env.reg_width(reg_name(env, extra, instr)) == 1:
            ignore = src(env, extra, "pred", instr)
        else:
            src_size = src(env, extra, "u32", instr)
    op_name = f"cp.async.{cache}"
    text = instr.text

    def run(warp, mask):
        d = dst_addr(warp)
        s = src_addr(warp)
        check_alignment(text, d, mask, cp_size, "shared destination address")
        check_bounds(text, d, mask, cp_size, warp.smem.size)
        check_alignment(text, s, mask, cp_size, "global source address")
        n = np.full(32, cp_size, np.int64)
        if src_size is not None:
            n = src_size(warp).astype(np.int64)
            bad = mask & (n > cp_size)
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                fail(OperandError, text, f"src-size {int(n[lane])} exceeds cp-size {cp_size} "
                     f"(undefined behaviour in PTX)", lane)
        if ignore is not None:
            n = np.where(ignore(warp), 0, n)
        data = np.zeros((32, cp_size), np.uint8)
        sizes = np.unique(n[mask])
        for k in sizes:
            k = int(k)
            if k:
                lanes = mask if sizes.size == 1 else mask & (n == k)
                data[lanes, :k] = global_gather(warp.gmem, text, s, lanes, k)[lanes]
        if warp.profile is not None:                 # lanes that read global memory (src-size > 0)
            warp.profile.gmem(warp.cur_pc, s, mask & (n > 0), cp_size)
        warp.log_smem(text, op_name, d, cp_size, mask, src=s)
        check_inflight(warp, text, d, mask, cp_size, True)   # overlapping un-waited destinations
        lanes = np.flatnonzero(mask)
        if warp.options.cp_async == "eager":
            if warp.san is not None:
                warp.san.shared(warp, text, d, mask, cp_size, True, data)
            warp.smem[d[lanes, None] + np.arange(cp_size)] = data[lanes]
            return
        count_rows(warp.smem_inflight, d[lanes], cp_size, 1)
        warp._inflight_n += lanes.size
        warp.cp_async.issue(d, data, mask)
    return run


CP_GROUPS = (("async",), ("ca", "cg"), ("shared", "shared::cta"), ("global",), CP_ASYNC_HINTS, CP_ASYNC_PREFETCH)


def _cp_async_op(instr):
    """The table entry of a cp.async spelling, and whether it carries a cache-policy operand."""
    what = "cp.async{.ca,.cg}.shared{::cta}.global{.L2::cache_hint}{.L2::64B,.L2::128B,.L2::256B}"
    picked = _canonical(instr, CP_GROUPS, what)
    spelling = ".".join(["cp"] + [p for p in picked[:4] if p])
    spec = CP_ASYNC_OPS.get(spelling)
    if spec is None:
        for p, g, want in zip(picked[1:4], CP_GROUPS[1:4], (".ca or .cg", ".shared", ".global")):
            if p is None:
                raise OperandError(f"{instr.opcode}: missing required qualifier {want}")
        raise UnsupportedError(f"{instr.opcode}: not a supported spelling; supported: {what}")
    return spec, picked[4] is not None
