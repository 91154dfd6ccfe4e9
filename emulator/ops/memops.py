"""ld / st / mov / cvta: ordinary memory access and address arithmetic.

Shared addresses are byte offsets into ``warp.smem`` (the shared window starts at 0). Generic addresses
below the shared-memory size are shared; everything else is global.
"""
from __future__ import annotations

import numpy as np

from isa.datamove import LD_ST
from isa.types import TYPES
from .wgmma.state import check_smem_write as check_wgmma_reads
from ..errors import AsyncHazardError, OperandError, UnsupportedError, fail
from ..memory.dsmem import target_rank as dsmem_rank
from ..memory import check_alignment, check_bounds, gather, global_gather, global_scatter, scatter
from ..frontend.ptx import Imm, Mem, Reg, Vec
from .registry import executor
from .cluster import cluster_groups, generic_window
from .common import NP, UINT, address, dst, reg_name, split_mods, src, width

SPACES = ("shared", "shared::cta", "shared::cluster", "global", "local", "param", "const")


# ---------------------------------------------------------------------------------------------------
# Shared memory with hazard checks and traffic logging (used by every shared-memory instruction)

def check_inflight(warp, instr, addrs, mask, nbytes, writing):
    """Raise if an active lane touches bytes that a cp.async has not yet delivered, or writes bytes that an
    in-flight wgmma.mma_async reads."""
    if writing:
        try:
            check_wgmma_reads(warp, instr, addrs, mask, nbytes)
        except AsyncHazardError as e:
            if warp.san is None or not warp.san.hazard(warp, "asynccheck", "in-flight-read", str(e)):
                raise
    if not warp._inflight_any():
        return
    lanes = np.flatnonzero(mask)
    idx = addrs[lanes][:, None] + np.arange(nbytes)
    hit = warp.smem_inflight[idx].any(axis=1)
    if hit.any():
        lane = int(lanes[np.flatnonzero(hit)[0]])
        a = int(addrs[lane])
        verb = "overwrites" if writing else "reads"
        if warp.san is not None and warp.san.hazard(
                warp, "asynccheck" if "asynccheck" in warp.san.tools else "racecheck", "in-flight-read",
                f"{instr}: lane {lane}: {verb} shared bytes [{a:#x}, {a + nbytes:#x}) while an asynchronous copy "
                f"into them is still in flight", lane, "shared", a):
            return
        fail(AsyncHazardError, instr, f"{verb} shared bytes [{a:#x}, {a + nbytes:#x}) while a cp.async into them "
             f"is still in flight; retire it first with cp.async.wait_group / cp.async.wait_all", lane)


def shared_load(warp, instr, addrs, mask, nbytes, align, op="ld", log=True):
    check_alignment(instr, addrs, mask, align)
    check_bounds(instr, addrs, mask, nbytes, warp.smem.size)
    check_inflight(warp, instr, addrs, mask, nbytes, False)
    if log:
        warp.log_smem(instr, op, addrs, nbytes, mask)
    if warp.san is not None and log:
        warp.san.shared(warp, instr, addrs, mask, nbytes, False)
    return gather(warp.smem, addrs, mask, nbytes)


def shared_store(warp, instr, addrs, mask, data, align, op="st", log=True):
    nbytes = data.shape[1]
    check_alignment(instr, addrs, mask, align)
    check_bounds(instr, addrs, mask, nbytes, warp.smem.size)
    check_inflight(warp, instr, addrs, mask, nbytes, True)
    if log:
        warp.log_smem(instr, op, addrs, nbytes, mask)
    if warp.san is not None:               # a store from another CTA of the cluster: only its bytes count
        if log:
            warp.san.shared(warp, instr, addrs, mask, nbytes, True, data)
        else:
            warp.san.untracked_write(addrs[mask].astype(np.int64)[:, None] + np.arange(nbytes))
    scatter(warp.smem, addrs, mask, data)
    if warp._async is not None:                 # generic-proxy writes, for the async-proxy fence check
        lanes = np.flatnonzero(mask)
        warp._async.generic_write(addrs[lanes].astype(np.int64)[:, None] + np.arange(nbytes))


def _generic_split(warp, addrs, mask):
    """Generic addresses: this CTA's shared window, other CTAs' shared windows (the cluster), the rest."""
    shared, remote = generic_window(warp, addrs, mask)
    return shared, remote, mask & ~shared & ~remote


def cluster_load(warp, instr, addrs, mask, nbytes, align):
    """A shared::cluster load: each lane reads the CTA its address names (this CTA's bytes as a shared load)."""
    out = np.zeros((32, nbytes), np.uint8)
    for tw, off, lanes in cluster_groups(warp, instr, addrs, mask):
        out[lanes] = shared_load(tw, instr, off, lanes, nbytes, align, log=tw is warp)[lanes]
    return out


def cluster_store(warp, instr, addrs, mask, data, align):
    for tw, off, lanes in cluster_groups(warp, instr, addrs, mask):
        shared_store(tw, instr, off, lanes, data, align, log=tw is warp)


def load(warp, instr, space, addrs, mask, nbytes, align):
    """Bytes (32, nbytes) from any state space."""
    if space in ("shared", "shared::cta"):
        return shared_load(warp, instr, addrs, mask, nbytes, align)
    if space == "shared::cluster":
        return cluster_load(warp, instr, addrs, mask, nbytes, align)
    if space == "global":
        check_alignment(instr, addrs, mask, align)
        if warp.profile is not None:
            warp.profile.gmem(warp.cur_pc, addrs, mask, nbytes)
        out = global_gather(warp.gmem, instr, addrs, mask, nbytes)
        if warp.san is not None:
            warp.san.global_access(warp, instr, addrs, mask, nbytes, False)
        return out
    if space is None:
        sh, dsm, gl = _generic_split(warp, addrs, mask)
        out = np.zeros((32, nbytes), np.uint8)
        if sh.any():
            out[sh] = shared_load(warp, instr, addrs, sh, nbytes, align)[sh]
        if dsm.any():
            out[dsm] = cluster_load(warp, instr, addrs, dsm, nbytes, align)[dsm]
        if gl.any():
            check_alignment(instr, addrs, gl, align)
            if warp.profile is not None:
                warp.profile.gmem(warp.cur_pc, addrs, gl, nbytes)
            out[gl] = global_gather(warp.gmem, instr, addrs, gl, nbytes)[gl]
            if warp.san is not None:
                warp.san.global_access(warp, instr, addrs, gl, nbytes, False)
        return out
    return warp.space_load(instr, space, addrs, mask, nbytes, align)


def store(warp, instr, space, addrs, mask, data, align):
    if space in ("shared", "shared::cta"):
        return shared_store(warp, instr, addrs, mask, data, align)
    if space == "shared::cluster":
        return cluster_store(warp, instr, addrs, mask, data, align)
    if space == "global":
        check_alignment(instr, addrs, mask, align)
        if warp.profile is not None:
            warp.profile.gmem(warp.cur_pc, addrs, mask, data.shape[1])
        global_scatter(warp.gmem, instr, addrs, mask, data)
        if warp.san is not None:
            warp.san.global_access(warp, instr, addrs, mask, data.shape[1], True, data)
        return None
    if space is None:
        sh, dsm, gl = _generic_split(warp, addrs, mask)
        if gl.any():
            check_alignment(instr, addrs, gl, align)
            if warp.profile is not None:
                warp.profile.gmem(warp.cur_pc, addrs, gl, data.shape[1])
            global_scatter(warp.gmem, instr, addrs, gl, data)
            if warp.san is not None:
                warp.san.global_access(warp, instr, addrs, gl, data.shape[1], True, data)
        if sh.any():
            shared_store(warp, instr, addrs, sh, data, align)
        if dsm.any():
            cluster_store(warp, instr, addrs, dsm, data, align)
        return None
    return warp.space_store(instr, space, addrs, mask, data, align)


# ---------------------------------------------------------------------------------------------------
# ld / st

_LDST_GROUPS = {
    "space": set(SPACES),
    "vec": {"v2", "v4", "v8"},
    "type": set(LD_ST["types"]),
    # the hints combine (ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B): one group per kind
    "nc": {"nc"},
    "cache": {h for h in LD_ST["hints"] if h in ("ca", "cg", "cs", "lu", "cv", "wb", "wt")},
    "sem": {h for h in LD_ST["hints"] if h in ("weak", "volatile", "relaxed", "acquire", "release", "mmio")},
    "scope": {h for h in LD_ST["hints"] if h in ("cta", "gpu", "sys", "cluster")},
    "L1": {h for h in LD_ST["hints"] if h.startswith("L1::")},
    "L2": {h for h in LD_ST["hints"] if h.startswith("L2::evict") or h == "L2::cache_hint"},
    "prefetch": {h for h in LD_ST["hints"] if h in ("L2::64B", "L2::128B", "L2::256B")},
}
assert set().union(*[v for k, v in _LDST_GROUPS.items() if k not in ("space", "vec", "type")]) == set(LD_ST["hints"])


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
    n_ops = 3 if "L2::cache_hint" in instr.mods else 2
    if len(instr.operands) != n_ops:
        raise OperandError(f"{instr.opcode}: {kind} takes {n_ops} operands"
                           f"{' (the last a 64-bit cache policy)' if n_ops == 3 else ''}, found {len(instr.operands)}")
    if n_ops == 3:      # the cache policy only steers the L2; it is read (so it must exist) and has no effect
        src(env, instr.operands[2], "b64", instr)
    return q.get("space"), ptype, n, ew


def _reg_list(env, op, n, instr):
    if n == 1:
        if isinstance(op, Vec):         # '{ %r1 }': Triton writes single registers in braces
            if len(op.items) != 1:
                raise OperandError(f"{instr.opcode}: scalar access takes one register, found {op}")
            return [op.items[0]]
        return [op]
    if not isinstance(op, Vec) or len(op.items) != n:
        raise OperandError(f"{instr.opcode}: .v{n} needs a vector operand of {n} registers, found {op}")
    return list(op.items)


@executor("ld", "ldu")
def compile_ld(instr, env):
    space, ptype, n, ew = _ldst_common(instr, env, "ld")
    d, a = instr.operands[:2]
    if not isinstance(a, Mem):
        raise OperandError(f"{instr.opcode}: the source must be an address [..], found {a}")
    addr = address(env, a, instr)
    regs = _reg_list(env, d, n, instr)
    writers = [dst(env, r, ptype, instr) for r in regs]
    nbytes = ew * n
    text = instr.text
    if ptype == "b128":                 # a 128-bit register holds (32, 2) uint64, low half first
        def run128(warp, mask):
            vals = load(warp, text, space, addr(warp), mask, nbytes, nbytes).view(np.uint64).reshape(32, n, 2)
            for i, wr in enumerate(writers):
                wr(warp, vals[:, i].copy(), mask)
        return run128
    dt = UINT[ew * 8]

    def run(warp, mask):
        raw = load(warp, text, space, addr(warp), mask, nbytes, nbytes)
        vals = raw.view(dt).reshape(32, n)
        for i, wr in enumerate(writers):
            wr(warp, vals[:, i].copy().view(NP[ptype]), mask)
    return run


@executor("st")
def compile_st(instr, env):
    space, ptype, n, ew = _ldst_common(instr, env, "st")
    a, s = instr.operands[:2]
    if not isinstance(a, Mem):
        raise OperandError(f"{instr.opcode}: the destination must be an address [..], found {a}")
    addr = address(env, a, instr)
    readers = [src(env, r, ptype, instr) for r in _reg_list(env, s, n, instr)]
    nbytes = ew * n
    text = instr.text
    if ptype == "b128":
        def run128(warp, mask):
            vals = np.stack([np.asarray(r(warp), np.uint64).reshape(32, 2) for r in readers], axis=1)
            store(warp, text, space, addr(warp), mask, np.ascontiguousarray(vals).view(np.uint8).reshape(32, nbytes),
                  nbytes)
        return run128
    dt = UINT[ew * 8]

    def run(warp, mask):
        vals = np.stack([r(warp).view(dt) for r in readers], axis=1)
        store(warp, text, space, addr(warp), mask, np.ascontiguousarray(vals).view(np.uint8).reshape(32, nbytes),
              nbytes)
    return run


# ---------------------------------------------------------------------------------------------------
# mov / cvta

@executor("mov")
def compile_mov(instr, env):
    q = split_mods(instr, {"type": set(TYPES)})
    if "type" not in q:
        raise OperandError(f"{instr.opcode}: missing the type (e.g. .u32)")
    ptype = q["type"]
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: mov takes 2 operands, found {len(instr.operands)}")
    d, s = instr.operands
    if ptype == "b128" and (isinstance(d, Vec) or isinstance(s, Vec)):
        return _mov_pack128(instr, env, d, s)
    if isinstance(d, Vec) or isinstance(s, Vec):
        return _mov_pack(instr, env, ptype, d, s)
    read = src(env, s, ptype, instr)
    write = dst(env, d, ptype, instr)
    return lambda warp, mask: write(warp, read(warp), mask)


def _mov_pack128(instr, env, d, s):
    """mov.b128 %q, {%rd0, %rd1} and mov.b128 {%rd0, %rd1}, %q: the first element is the low half."""
    vec = s if isinstance(s, Vec) else d
    if isinstance(d, Vec) and isinstance(s, Vec):
        raise OperandError(f"{instr.opcode}: vector operands on both sides")
    if len(vec.items) != 2:
        raise OperandError(f"{instr.opcode}: the vector operand of mov.b128 has two .b64 registers, found {vec}")
    for it in vec.items:
        n = reg_name(env, it, instr) if not isinstance(it, Imm) else None
        if n is None or (n != "_" and env.reg_width(n) != 64):
            raise OperandError(f"{instr.opcode}: the vector operand of mov.b128 has two 64-bit registers, found {it}")
    if isinstance(s, Vec):
        readers = [src(env, it, "b64", instr) for it in s.items]
        write = dst(env, d, "b128", instr)
        return lambda warp, mask: write(warp, np.stack([r(warp) for r in readers], axis=1), mask)
    read = src(env, s, "b128", instr)
    writers = [dst(env, it, "b64", instr) for it in d.items]

    def unpack(warp, mask):
        v = np.asarray(read(warp), np.uint64).reshape(32, 2)
        for i, wr in enumerate(writers):
            wr(warp, v[:, i].copy(), mask)
    return unpack


def _mov_pack(instr, env, ptype, d, s):
    """mov.b32 %r, {%h0, %h1} (pack) and mov.b32 {%h0, %h1}, %r (unpack)."""
    w = width(ptype)
    vec = s if isinstance(s, Vec) else d
    if isinstance(vec, Vec) and (len(vec.items) not in (2, 4, 8) or w // len(vec.items) not in (8, 16, 32) or
                                 TYPES[ptype][1] not in ("b", "u", "s", "f")):
        raise OperandError(f"{instr.opcode}: a {w}-bit value packs 2, 4 or 8 parts of 8, 16 or 32 bits, not "
                           f"{len(vec.items)}")
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


# ---------------------------------------------------------------------------------------------------
# createpolicy / isspacep

_PRIORITIES = ("L2::evict_unchanged", "L2::evict_first", "L2::evict_last", "L2::evict_normal")


def policy_bits(primary, secondary, fraction):
    """The 64-bit cache policy ``createpolicy.fractional`` makes, as the H100 encodes it (measured:
    tests/data/corpus, case nvcc_policy_values_sm90a): bit 60 set, the primary priority at bits 57-58
    (unchanged 0, first 1, last 2, normal 3), bit 56 set for a secondary evict_first, and the fraction in
    sixteenths minus one at bits 52-55. Programs only pass the value on to ``.L2::cache_hint`` accesses."""
    code = _PRIORITIES.index(primary)
    sixteenths = max(1, min(16, int(round(fraction * 16))))
    return (1 << 60) | (code << 57) | ((secondary == "L2::evict_first") << 56) | ((sixteenths - 1) << 52)


@executor("createpolicy")
def compile_createpolicy(instr, env):
    bits = np.full(32, createpolicy_value(instr), np.uint64)
    d = dst(env, instr.operands[0], "b64", instr)
    return lambda warp, mask: d(warp, bits, mask)


def createpolicy_value(instr):
    """The policy ``createpolicy.fractional`` writes (a constant of the instruction); raises on other forms."""
    mods = list(instr.mods)
    if not mods or mods[0] != "fractional" or mods[-1] != "b64":
        raise UnsupportedError(f"{instr.opcode}: supported: createpolicy.fractional.L2::primary{{.L2::secondary}}"
                               f".b64 d{{, fraction}} (not .range or .cvt)")
    prio = mods[1:-1]
    if not 1 <= len(prio) <= 2 or any(p not in _PRIORITIES for p in prio):
        raise UnsupportedError(f"{instr.opcode}: eviction priorities must be one or two of "
                               f"{', '.join('.' + p for p in _PRIORITIES)}")
    primary, secondary = prio[0], prio[1] if len(prio) > 1 else "L2::evict_unchanged"
    if secondary not in ("L2::evict_unchanged", "L2::evict_first"):
        raise UnsupportedError(f"{instr.opcode}: the secondary priority must be .L2::evict_unchanged or "
                               f".L2::evict_first")
    if len(instr.operands) not in (1, 2):
        raise OperandError(f"{instr.opcode}: takes d and an optional fraction, found {len(instr.operands)} operands")
    fraction = 1.0
    if len(instr.operands) == 2:
        f = instr.operands[1]
        if not isinstance(f, Imm):
            raise UnsupportedError(f"{instr.opcode}: the fraction must be an immediate, found {f}")
        fraction = float(np.uint32(f.value).view(np.float32)) if f.kind == "f32" else float(f.value)
        if not 0.0 < fraction <= 1.0:
            raise OperandError(f"{instr.opcode}: the fraction must be in (0, 1], found {fraction}")
    return policy_bits(primary, secondary, fraction)


@executor("isspacep")
def compile_isspacep(instr, env):
    q = split_mods(instr, {"space": {"global", "shared", "shared::cta", "shared::cluster", "local", "const", "param"}})
    if "space" not in q or len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: needs a state space and 2 operands (p, a)")
    space = q["space"]
    read = src(env, instr.operands[1], "u64", instr)
    d = dst(env, instr.operands[0], "pred", instr)

    def run(warp, mask):
        a = read(warp).astype(np.int64)
        shared, remote = generic_window(warp, a, np.ones(32, np.bool_))
        if remote.any():             # an address of a CTA rank outside the cluster is in no space
            for lane in np.flatnonzero(remote):
                if dsmem_rank(int(a[lane]), warp.cluster_rank) >= warp.cluster_size:
                    remote[lane] = False
        local = np.zeros(32, bool)
        bases = getattr(warp, "local_bases", None)
        size = getattr(warp, "local_size", 0)
        if bases is not None and size:
            rel = a - bases.astype(np.int64)
            local = (rel >= 0) & (rel < size)
        if space in ("shared", "shared::cta"):
            r = shared
        elif space == "shared::cluster":
            r = shared | remote
        elif space == "local":
            r = local
        elif space == "param":
            r = np.zeros(32, bool)
        else:
            r = ~shared & ~local & ~generic_window(warp, a, np.ones(32, np.bool_))[1]
        d(warp, r, mask)
    return run
