"""Warp-level operations and atomics: shfl.sync, vote.sync, activemask, match.sync, bar.warp.sync,
atom, red, and the ordering instructions that have nothing to order in a sequential emulator
(membar, fence, nanosleep).

Atomics of one instruction are applied lane by lane in ascending lane order (and, across a CTA, in the
order the scheduler runs the warps: warp 0 first in each round). Programs whose results depend on that
order get this order; the GPU promises none.
"""
from __future__ import annotations

import numpy as np

from ..errors import EmulatorError, OperandError, UnsupportedError, WarpSyncError, fail
from ..memory import check_alignment, check_bounds
from ..frontend.ptx import Pair
from .registry import executor
from .common import NP, UINT, address, dst, format_lanes, split_mods, src, width
from ..numerics.fround import round_to, two_sum
from .memops import check_inflight
from .cluster import cluster_groups, generic_window

LANE = np.arange(32, dtype=np.uint32)


def _member_check(instr, mask, members, warp=None):
    """Every lane named in membermask must execute the instruction, and only those lanes may (a sanitised
    launch reports a broken rule and goes on)."""
    named = ((members >> LANE) & np.uint32(1)).astype(np.bool_)
    missing = named & ~mask
    san = getattr(warp, "san", None)
    if missing.any():
        lanes = np.flatnonzero(missing)
        msg = f"membermask names lanes {format_lanes(lanes)} that are not executing it (diverged or exited)"
        if san is None or not san.hazard(warp, "synccheck", "membermask", f"{instr.text or instr.opcode}: {msg}",
                                         int(np.flatnonzero(mask)[0]) if mask.any() else 0):
            fail(WarpSyncError, instr.text or instr.opcode, msg)
    extra = mask & ~named
    if extra.any() and san is not None and san.hazard(
            warp, "synccheck", "membermask", f"{instr.text or instr.opcode}: lane {int(np.flatnonzero(extra)[0])}: "
            f"the executing lane is not in membermask {int(members[np.flatnonzero(extra)[0]]):#010x}",
            int(np.flatnonzero(extra)[0])):
        return
    if extra.any():
        fail(WarpSyncError, instr.text or instr.opcode,
             f"the executing lane is not in membermask {int(members[np.flatnonzero(extra)[0]]):#010x}",
             int(np.flatnonzero(extra)[0]))


# ----------------------------------------------------------------------------------------------
# shfl.sync

@executor("shfl")
def compile_shfl(instr, env):
    q = split_mods(instr, {"sync": {"sync"}, "mode": {"up", "down", "bfly", "idx"}, "type": {"b32"}})
    if "sync" not in q or "mode" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: needs shfl.sync.{{up,down,bfly,idx}}.b32 "
                           f"(the non-.sync shfl is not supported on sm_70+)")
    if len(instr.operands) != 5:
        raise OperandError(f"{instr.opcode}: takes d[|p], a, b, c, membermask; found {len(instr.operands)} operands")
    d_op = instr.operands[0]
    d_reg, p_reg = (d_op.items if isinstance(d_op, Pair) else (d_op, None))
    write = dst(env, d_reg, "b32", instr)
    write_p = dst(env, p_reg, "pred", instr) if p_reg is not None else None
    a, b, c, m = (src(env, op, "b32", instr) for op in instr.operands[1:])
    mode = q["mode"]

    def run(warp, mask):
        members = m(warp)
        _member_check(instr, mask, members, warp)
        lane = LANE
        bval = b(warp) & np.uint32(0x1F)
        cv = c(warp)
        cval = cv & np.uint32(0x1F)
        seg = (cv >> np.uint32(8)) & np.uint32(0x1F)
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        li = lane.astype(np.int64)
        if mode == "up":
            j = li - bval.astype(np.int64)
            ok = j >= max_lane.astype(np.int64)
        elif mode == "down":
            j = li + bval.astype(np.int64)
            ok = j <= max_lane.astype(np.int64)
        elif mode == "bfly":
            j = (lane ^ bval).astype(np.int64)
            ok = j <= max_lane.astype(np.int64)
        else:
            j = (min_lane | (bval & ~seg)).astype(np.int64)
            ok = j <= max_lane.astype(np.int64)
        j = np.where(ok, j, li)
        bad = mask & ok & ~mask[np.clip(j, 0, 31)]
        if bad.any():
            lane_ = int(np.flatnonzero(bad)[0])
            fail(WarpSyncError, instr.text, f"reads lane {int(j[lane_])}, which is not executing this shfl "
                 f"(its value is undefined)", lane_)
        write(warp, a(warp)[j], mask)
        if write_p:
            write_p(warp, ok, mask)
    return run


# ----------------------------------------------------------------------------------------------
# vote / activemask / match / bar.warp.sync

@executor("vote")
def compile_vote(instr, env):
    q = split_mods(instr, {"sync": {"sync"}, "mode": {"all", "any", "uni", "ballot"}, "type": {"pred", "b32"}})
    if "sync" not in q or "mode" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: needs vote.sync.{{all,any,uni}}.pred or vote.sync.ballot.b32")
    if (q["mode"] == "ballot") != (q["type"] == "b32"):
        raise OperandError(f"{instr.opcode}: .ballot goes with .b32, .all/.any/.uni with .pred")
    if len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: takes d, {{!}}a, membermask; found {len(instr.operands)} operands")
    write = dst(env, instr.operands[0], q["type"], instr)
    a = src(env, instr.operands[1], "pred", instr)
    m = src(env, instr.operands[2], "b32", instr)
    mode = q["mode"]

    def run(warp, mask):
        members = m(warp)
        _member_check(instr, mask, members, warp)
        p = a(warp) & mask
        if mode == "ballot":
            bits = np.uint32(int(np.sum((p.astype(np.uint64) << LANE.astype(np.uint64)))))
            write(warp, np.full(32, bits, np.uint32), mask)
            return
        act = p[mask]
        r = {"all": act.all(), "any": act.any(), "uni": act.all() or not act.any()}[mode]
        write(warp, np.full(32, bool(r)), mask)
    return run


@executor("activemask")
def compile_activemask(instr, env):
    split_mods(instr, {"type": {"b32"}})
    if len(instr.operands) != 1:
        raise OperandError(f"{instr.opcode}: takes one destination")
    write = dst(env, instr.operands[0], "b32", instr)

    def run(warp, mask):
        bits = np.uint32(int(np.sum(mask.astype(np.uint64) << LANE.astype(np.uint64))))
        write(warp, np.full(32, bits, np.uint32), mask)
    return run


@executor("match")
def compile_match(instr, env):
    q = split_mods(instr, {"sync": {"sync"}, "mode": {"any", "all"}, "type": {"b32", "b64"}})
    if "sync" not in q or "mode" not in q or "type" not in q or len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: match.sync.{{any,all}}.{{b32,b64}} d[|p], a, membermask")
    d_op = instr.operands[0]
    d_reg, p_reg = (d_op.items if isinstance(d_op, Pair) else (d_op, None))
    write = dst(env, d_reg, "b32", instr)
    write_p = dst(env, p_reg, "pred", instr) if p_reg is not None else None
    a = src(env, instr.operands[1], q["type"], instr)
    m = src(env, instr.operands[2], "b32", instr)

    def run(warp, mask):
        members = m(warp)
        _member_check(instr, mask, members, warp)
        v = a(warp)
        same = (v[:, None] == v[None, :]) & mask[None, :]
        bits = (same.astype(np.uint64) << LANE.astype(np.uint64)[None, :]).sum(axis=1).astype(np.uint32)
        if q["mode"] == "all":
            allsame = bool((same[mask][:, mask]).all())
            full = np.uint32(int(np.sum(mask.astype(np.uint64) << LANE.astype(np.uint64))))
            bits = np.full(32, full if allsame else 0, np.uint32)
            if write_p:
                write_p(warp, np.full(32, allsame), mask)
        write(warp, bits, mask)
    return run


_REDUX_TYPES = {"add": {"u32", "s32"}, "min": {"u32", "s32"}, "max": {"u32", "s32"},
                "and": {"b32"}, "or": {"b32"}, "xor": {"b32"}}


@executor("redux")
def compile_redux(instr, env):
    q = split_mods(instr, {"sync": {"sync"}, "op": set(_REDUX_TYPES), "type": {"u32", "s32", "b32"}})
    if "sync" not in q or "op" not in q or "type" not in q or len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: redux.sync.{{add,min,max}}.{{u32,s32}} / redux.sync.{{and,or,xor}}.b32 "
                           f"d, a, membermask")
    op, ptype = q["op"], q["type"]
    if ptype not in _REDUX_TYPES[op]:
        raise UnsupportedError(f"{instr.opcode}: .{op} is not defined for .{ptype}; supported: "
                               f"{', '.join('.' + t for t in sorted(_REDUX_TYPES[op]))}")
    write = dst(env, instr.operands[0], ptype, instr)
    a = src(env, instr.operands[1], ptype, instr)
    m = src(env, instr.operands[2], "b32", instr)

    def run(warp, mask):
        _member_check(instr, mask, m(warp), warp)
        v = a(warp)[mask]
        if op == "add":
            r = np.uint32(int(v.astype(np.int64).sum()) & 0xFFFFFFFF).view(NP[ptype])
        elif op in ("min", "max"):
            r = v.min() if op == "min" else v.max()
        else:
            fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            r = fn.reduce(v)
        write(warp, np.full(32, r, NP[ptype]), mask)
    return run


class _Nap:
    """nanosleep: the lanes step aside; the scheduler lets the warp's other lanes, then other warps, run (and,
    when the whole CTA only sleeps, other CTAs: a back-off loop waits on memory another CTA may write)."""
    lane_yield = True
    global_wait = True

    def __init__(self, text):
        self.text = text

    def describe(self):
        return f"{' '.join(self.text.split())}: sleeps, and nothing changes between its naps"

    def ready(self):
        return True


@executor("membar", "fence", "nanosleep", "prefetch", "prefetchu", "griddepcontrol", "setmaxnreg")
def compile_nop(instr, env):
    """Instructions with nothing to do in a sequential emulator: memory ordering (every access is already
    visible in program order), sleeping, cache prefetches, dependent-grid control, register reallocation."""
    from ..frontend.ptx import Mem
    want = {"nanosleep": 1, "prefetch": 1, "prefetchu": 1, "setmaxnreg": 1}.get(instr.base)
    if want is not None and len(instr.operands) != want:
        raise OperandError(f"{instr.opcode}: takes {want} operand(s), found {len(instr.operands)}")
    if instr.base in ("prefetch", "prefetchu"):
        if not isinstance(instr.operands[0], Mem):
            raise OperandError(f"{instr.opcode}: takes an address [..], found {instr.operands[0]}")
        address(env, instr.operands[0], instr)
    if instr.base == "nanosleep":
        read = src(env, instr.operands[0], "u32", instr)
        nap = _Nap(instr.text or instr.opcode)

        def sleep(warp, mask):
            read(warp)
            warp.yield_turn(nap)
        return sleep
    if instr.base == "griddepcontrol" and (instr.operands or
                                           not set(instr.mods) <= {"wait", "launch_dependents"}):
        raise OperandError(f"{instr.opcode}: griddepcontrol.wait / griddepcontrol.launch_dependents take no "
                           f"operands")
    if instr.base in ("membar", "fence"):
        text = instr.text or instr.opcode

        def order(warp, mask):          # nothing to do, but a sanitiser follows the release it starts
            if warp.san is not None:
                warp.san.fence(warp, mask, text)
        return order
    return lambda warp, mask: None


@executor("elect")
def compile_elect(instr, env):
    """elect.sync d|p, membermask: the lowest-numbered executing lane of membermask is the leader."""
    q = split_mods(instr, {"sync": {"sync"}})
    if "sync" not in q or len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: elect.sync d|p, membermask")
    d_op = instr.operands[0]
    d_reg, p_reg = (d_op.items if isinstance(d_op, Pair) else (d_op, None))
    write = dst(env, d_reg, "b32", instr)
    write_p = dst(env, p_reg, "pred", instr) if p_reg is not None else None
    m = src(env, instr.operands[1], "b32", instr)

    def run(warp, mask):
        members = m(warp)
        _member_check(instr, mask, members, warp)
        leader = int(np.flatnonzero(mask)[0])
        write(warp, np.full(32, leader, np.uint32), mask)
        if write_p:
            write_p(warp, LANE == leader, mask)
    return run


@executor("trap")
def compile_trap(instr, env):
    def run(warp, mask):
        fail(EmulatorTrap, instr.text or instr.opcode, "trap executed", int(np.flatnonzero(mask)[0]))
    return run


@executor("brkpt")
def compile_brkpt(instr, env):
    """brkpt: a breakpoint. Without a debugger attached, executing it ends the launch with an error (CUTLASS
    puts it on branches that must never be taken); a module that contains it loads and runs as long as no lane
    reaches it."""
    if instr.operands or instr.mods:
        raise OperandError(f"{instr.opcode}: brkpt takes no qualifiers and no operands")

    def run(warp, mask):
        lanes = np.flatnonzero(mask)
        raise EmulatorTrap(f"{instr.text or instr.opcode}: {'lane' if lanes.size == 1 else 'lanes'} "
                           f"{format_lanes(lanes)} of warp "
                           f"{getattr(warp, 'warp_id', 0)}: brkpt executed (a breakpoint; without a debugger the "
                           f"launch stops with an error)")
    return run


class EmulatorTrap(EmulatorError):
    """The program executed ``trap`` or ``brkpt``."""


# ----------------------------------------------------------------------------------------------
# atom / red

_ATOM_TYPES = {"b16", "b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"}
_ATOM_OPS = {"add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"}
_OP_TYPES = {
    "and": {"b32", "b64"}, "or": {"b32", "b64"}, "xor": {"b32", "b64"},
    "exch": {"b32", "b64"}, "cas": {"b16", "b32", "b64"},          # cas.b16: sm_70 and later
    "inc": {"u32"}, "dec": {"u32"},
    "add": {"u32", "u64", "s32", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"},
    "min": {"u32", "u64", "s32", "s64"}, "max": {"u32", "u64", "s32", "s64"},
}


def _apply(op, ptype, old, b, c):
    """One atomic update on Python/numpy scalars of the raw type (returns the new raw value)."""
    w = width(ptype)
    m = (1 << w) - 1
    if op == "exch":
        return b
    if op == "cas":
        return c if old == b else old
    if op in ("and", "or", "xor"):
        return {"and": old & b, "or": old | b, "xor": old ^ b}[op]
    if op == "inc":
        return 0 if old >= b else old + 1
    if op == "dec":
        return b if (old == 0 or old > b) else old - 1
    if ptype[0] == "s":
        so = old - (1 << w) if old >> (w - 1) else old
        sb = b - (1 << w) if b >> (w - 1) else b
        if op == "add":
            return (so + sb) & m
        return (min(so, sb) if op == "min" else max(so, sb)) & m
    if ptype[0] == "u" or (ptype[0] == "b" and ptype[1:].isdigit()):      # not bf16: a float
        if op == "add":
            return (old + b) & m
        return min(old, b) if op == "min" else max(old, b)
    return _float_add(ptype, old, b)


def _float_add(ptype, old, b):
    if ptype.endswith("x2"):
        lo = _float_add(ptype[:-2], old & 0xFFFF, b & 0xFFFF)
        hi = _float_add(ptype[:-2], old >> 16, b >> 16)
        return lo | (hi << 16)
    ut = UINT[width(ptype)]
    x = np.array([old], ut).view(NP[ptype]).astype(np.float64)
    y = np.array([b], ut).view(NP[ptype]).astype(np.float64)
    ftz = ptype == "f32"                 # atom.add.f32 flushes subnormal inputs and results
    if ftz:
        from ..numerics.fround import flush
        x = flush(x.astype(np.float32), "f32").astype(np.float64)
        y = flush(y.astype(np.float32), "f32").astype(np.float64)
    s, e = two_sum(np.asarray(x, np.float64), np.asarray(y, np.float64))
    r = round_to(s, ptype, "rn", e=e, ftz=ftz)
    return int(r.view(ut)[0])


@executor("atom", "red")
def compile_atom(instr, env):
    groups = {"space": {"shared", "shared::cta", "shared::cluster", "global"}, "op": _ATOM_OPS, "type": _ATOM_TYPES,
              "sem": {"relaxed", "acquire", "release", "acq_rel", "sc"},
              "scope": {"cta", "gpu", "sys", "cluster"}, "ftz": {"noftz"}}
    q = split_mods(instr, groups)
    if "op" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: needs an operation ({', '.join(sorted(_ATOM_OPS))}) and a type")
    op, ptype = q["op"], q["type"]
    if ptype not in _OP_TYPES[op]:
        raise UnsupportedError(f"{instr.opcode}: .{op} is not defined for .{ptype}; supported: "
                               f"{', '.join('.' + t for t in sorted(_OP_TYPES[op]))}")
    is_red = instr.base == "red"
    if is_red and op in ("exch", "cas"):
        raise UnsupportedError(f"{instr.opcode}: red has no .{op}; use atom")
    nsrc = 2 if op == "cas" else 1
    ops = instr.operands
    want = (1 if not is_red else 0) + 1 + nsrc
    if len(ops) != want:
        raise OperandError(f"{instr.opcode}: takes {'' if is_red else 'd, '}[a], b{', c' if op == 'cas' else ''};"
                           f" found {len(ops)} operands")
    k = 0 if is_red else 1
    addr = address(env, ops[k], instr)
    raw = f"b{width(ptype)}"
    rb = src(env, ops[k + 1], raw, instr)
    rc = src(env, ops[k + 2], raw, instr) if op == "cas" else None
    write = None if is_red else dst(env, ops[0], raw, instr)
    space = q.get("space")
    nbytes = width(ptype) // 8
    ut = UINT[width(ptype)]
    text = instr.text

    def run(warp, mask):
        a = addr(warp)
        check_alignment(text, a, mask, nbytes)
        if space is None:
            shared, remote = generic_window(warp, a, mask)
        elif space == "shared::cluster":
            shared, remote = np.zeros(32, np.bool_), mask
        else:
            shared = mask if space.startswith("shared") else np.zeros(32, np.bool_)
            remote = np.zeros(32, np.bool_)
        glob = mask & ~shared & ~remote
        if shared.any():
            if space is not None:
                check_bounds(text, a, shared, nbytes, warp.smem.size)
            check_inflight(warp, text, a, shared, nbytes, True)
            warp.log_smem(text, "atom", a, nbytes, shared)
        cells = {}
        if remote.any():               # shared memory of a CTA of the cluster (this one too, through its rank)
            for tw, off, lanes in cluster_groups(warp, text, a, remote):
                check_bounds(text, off, lanes, nbytes, tw.smem.size)
                check_inflight(tw, text, off, lanes, nbytes, True)
                if tw is warp:
                    warp.log_smem(text, "atom", off, nbytes, lanes)
                for lane in np.flatnonzero(lanes):
                    cells[lane] = (tw.smem, int(off[lane]))
        if warp.profile is not None and glob.any():
            warp.profile.gmem(warp.cur_pc, a, glob, nbytes)
        for lane in np.flatnonzero(glob):
            cells[lane] = warp.gmem._locate(int(a[lane]), nbytes, text, int(lane))
        san = warp.san
        if san is not None:
            if shared.any():
                san.shared(warp, text, a, shared, nbytes, True)
            if glob.any():
                san.global_access(warp, text, a, glob, nbytes, True)
        bv = rb(warp).view(ut)
        cv = rc(warp).view(ut) if rc else bv
        old_out = np.zeros(32, ut)
        for lane in np.flatnonzero(mask):
            buf, off = (warp.smem, int(a[lane])) if shared[lane] else cells[lane]
            cell = buf[off:off + nbytes].view(ut)
            old = int(cell[0])
            old_out[lane] = old
            cell[0] = _apply(op, ptype, old, int(bv[lane]), int(cv[lane]))
        if write:
            write(warp, old_out, mask)
    return run

