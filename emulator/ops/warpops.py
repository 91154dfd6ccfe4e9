"""Warp-level operations: shfl.sync, vote.sync, activemask, match.sync, bar.warp.sync, elect, trap, and the
ordering instructions that have nothing to order in a sequential emulator (membar, fence, nanosleep).
The atomics (atom, red) are ``ops.atomics``."""
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
    """Every lane named in membermask must execute the instruction, and only those lanes may. The lanes named
    are those of the executing lanes' membermasks (a lane that does not execute has no say: its register may
    hold an older mask). A sanitised launch reports a broken rule and goes on."""
    own = ((members >> LANE) & np.uint32(1)).astype(np.bool_)
    union = int(np.bitwise_or.reduce(members[mask].astype(np.uint32))) if mask.any() else 0
    named = ((np.uint32(union) >> LANE) & np.uint32(1)).astype(np.bool_)
    missing = named & ~mask
    san = getattr(warp, "san", None)
    if missing.any():
        lanes = np.flatnonzero(missing)
        msg = f"membermask names lanes {format_lanes(lanes)} that are not executing it (diverged or exited)"
        if san is None or not san.hazard(warp, "synccheck", "membermask", f"{instr.text or instr.opcode}: {msg}",
                                         int(np.flatnonzero(mask)[0]) if mask.any() else 0):
            fail(WarpSyncError, instr.text or instr.opcode, msg)
    extra = mask & ~own
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
