"""mbarrier.*, fence.proxy / fence.mbarrier_init, and tensormap.replace / tensormap.cp_fenceproxy.

mbarrier state lives in the CTA's async unit (``emulator.memory.asyncunit``), keyed by shared address. A
``try_wait`` whose phase has not completed stalls its lanes (the scheduler runs other warps and wakes them
when the barrier moves); ``test_wait`` answers at once and yields the warp's turn, so a spin loop on it lets
the other warps run.
"""
from __future__ import annotations

import numpy as np

from ..errors import MBarrierError, OperandError, UnsupportedError, fail
from ..frontend.ptx import Imm, Mem, Reg
from ..memory.tensormap import replace_field
from ..memory import dsmem
from .cluster import resolve_one
from .common import address, dst, src
from .registry import executor
from .warpops import compile_nop

LANE = np.arange(32)


class MBarrierWait:
    """Why lanes stall: a wait for an mbarrier phase (what the deadlock report and the timeline name).
    Lanes whose test_wait/try_wait failed step aside for the other lanes of their warp (``lane_yield``)."""
    lane_yield = True

    def __init__(self, unit, text, addrs, parity=None, states=None, units=None):
        self.unit, self.text, self.addrs, self.parity, self.states = unit, text, addrs, parity, states
        self.units = units or [unit] * len(addrs)     # the async unit of the CTA each barrier lives in

    def ready(self):
        last = None                 # (unit, address, phase) of the previous lane: lanes mostly wait on one barrier
        for i, a in enumerate(self.addrs):
            u = self.units[i]
            if last is not None and last[0] is u and last[1] == a:
                phase = last[2]
            else:
                b = u.mbarriers.live.get(a)
                if b is None:
                    last = None
                    continue
                phase = b.phase
                last = (u, a, phase)
            if self.parity is not None and (phase & 1) != self.parity[i]:
                return True
            if self.states is not None and phase != self.states[i] >> 32:
                return True
        return False

    def describe(self):
        parts = []
        seen = set()
        for i, a in enumerate(self.addrs):
            if (id(self.units[i]), a) in seen:
                continue
            seen.add((id(self.units[i]), a))
            b = self.units[i].mbarriers.live.get(a)
            want = (f"the phase of parity {self.parity[i]}" if self.parity is not None
                    else f"phase {self.states[i] >> 32} to complete")
            parts.append(f"{want} of " + (b.describe() if b else f"the (invalidated) mbarrier at {a:#x}"))
        return f"{self.text}: waits for " + "; ".join(parts)


def _smem_addr(env, op, instr):
    if not isinstance(op, Mem):
        raise OperandError(f"{instr.opcode}: the mbarrier operand must be an address [..], found {op}")
    return address(env, op, instr)


def _lanes(mask):
    return np.flatnonzero(mask)


def _check_space(instr, q):
    sp = q.get("space")
    if sp not in (None, "shared", "shared::cta", "shared::cluster"):
        raise UnsupportedError(f"{instr.opcode}: mbarrier objects live in shared memory, not .{sp}")


MB_GROUPS = {
    "op": {"init", "inval", "arrive", "arrive_drop", "expect_tx", "complete_tx", "test_wait", "try_wait",
           "pending_count"},
    "tx": {"expect_tx"}, "noComplete": {"noComplete"}, "parity": {"parity"},
    "sem": {"release", "acquire", "relaxed"}, "scope": {"cta", "cluster"},
    "space": {"shared", "shared::cta", "shared::cluster"}, "type": {"b64"},
}


def _mods(instr):
    mods = list(instr.mods)
    q = {}
    if not mods or mods[0] not in MB_GROUPS["op"]:
        raise UnsupportedError(f"{instr.opcode}: unsupported; supported: mbarrier.init/inval/arrive/arrive_drop/"
                               f"expect_tx/complete_tx/test_wait/try_wait/pending_count")
    q["op"] = mods.pop(0)
    if mods and mods[0] == "expect_tx" and q["op"] in ("arrive", "arrive_drop"):
        q["tx"] = mods.pop(0)
    for m in mods:
        for g, vals in MB_GROUPS.items():
            if g not in ("op", "tx") and m in vals:
                q[g] = m
                break
        else:
            raise UnsupportedError(f"{instr.opcode}: unsupported qualifier .{m}")
    _check_space(instr, q)
    return q


def _unit(warp):
    return warp.async_unit


def _target(warp, text, space, addr, lane):
    """(async unit, shared offset) of the mbarrier at ``addr``: a shared::cluster (or generic) address may
    name a barrier in another CTA of the cluster (``mbarrier.arrive.shared::cluster`` on a remote barrier)."""
    a = int(addr)
    if space == "shared::cluster" or (space is None and a >= 1 << dsmem.SHIFT):
        tw, off = resolve_one(warp, text, a, lane)
        return tw.async_unit, off
    return warp.async_unit, a


@executor("mbarrier")
def compile_mbarrier(instr, env):
    q = _mods(instr)
    op = q["op"]
    ops = list(instr.operands)
    text = instr.text or instr.opcode
    space = q.get("space")
    if op == "init":
        if len(ops) != 2:
            raise OperandError(f"{instr.opcode}: mbarrier.init [addr], count")
        addr = _smem_addr(env, ops[0], instr)
        count = src(env, ops[1], "u32", instr)

        def run(warp, mask):
            a, c = addr(warp), count(warp)
            for lane in _lanes(mask):
                u, off = _target(warp, text, space, a[lane], lane)
                u.mbarriers.init(text, off, int(c[lane]), lane)
        return run
    if op == "inval":
        addr = _smem_addr(env, ops[0], instr)

        def run(warp, mask):
            a = addr(warp)
            for lane in _lanes(mask):
                u, off = _target(warp, text, space, a[lane], lane)
                if off in u.mbarriers.live:
                    u.mbarriers.inval(text, off, lane)
        return run
    if op in ("expect_tx", "complete_tx"):
        if len(ops) != 2:
            raise OperandError(f"{instr.opcode}: mbarrier.{op} [addr], txCount")
        addr = _smem_addr(env, ops[0], instr)
        cnt = src(env, ops[1], "u32", instr)

        def run(warp, mask):
            a, c = addr(warp), cnt(warp)
            for lane in _lanes(mask):
                u, off = _target(warp, text, space, a[lane], lane)
                getattr(u.mbarriers, op)(text, off, int(c[lane]), lane)
        return run
    if op in ("arrive", "arrive_drop"):
        # [state,] [addr] {, count | txCount}
        state_w = None
        if ops and not isinstance(ops[0], Mem):
            d = ops.pop(0)
            if not (isinstance(d, Reg) and d.name == "_"):
                state_w = dst(env, d, "b64", instr)
        if not ops:
            raise OperandError(f"{instr.opcode}: missing the mbarrier address")
        addr = _smem_addr(env, ops.pop(0), instr)
        extra = src(env, ops.pop(0), "u32", instr) if ops else None
        if ops:
            raise OperandError(f"{instr.opcode}: too many operands")
        expect = "tx" in q
        if expect and extra is None:
            raise OperandError(f"{instr.opcode}: arrive.expect_tx needs a txCount")
        if q.get("scope") == "cluster" and state_w is not None:
            pass
        drop = op == "arrive_drop"

        def run(warp, mask):
            a = addr(warp)
            e = extra(warp) if extra is not None else None
            out = np.zeros(32, np.uint64)
            for lane in _lanes(mask):
                u, off = _target(warp, text, space, a[lane], lane)
                if expect:
                    u.mbarriers.expect_tx(text, off, int(e[lane]), lane)
                    n = 1
                else:
                    n = int(e[lane]) if e is not None else 1
                    if e is not None and not 1 <= n < 1 << 20:
                        fail(MBarrierError, text, f"arrive count {n} must be 1..{(1 << 20) - 1}", lane)
                before = u.mbarriers.get(text, off, lane).phase if warp.san is not None else 0
                out[lane] = u.mbarriers.arrive(text, off, n, drop, lane)
                if warp.san is not None:
                    warp.san.mbar_arrive(warp, u, off, lane, before)
            if state_w is not None:
                state_w(warp, out, mask)
        return run
    if op in ("test_wait", "try_wait"):
        if len(ops) not in (3, 4):
            raise OperandError(f"{instr.opcode}: mbarrier.{op}{{.parity}} waitComplete, [addr], state|phaseParity"
                               f"{{, suspendTimeHint}}")
        pw = dst(env, ops[0], "pred", instr)
        addr = _smem_addr(env, ops[1], instr)
        parity = "parity" in q
        val = src(env, ops[2], "b32" if parity else "b64", instr)
        blocking = op == "try_wait"

        def run(warp, mask):
            u = _unit(warp)
            a = addr(warp)
            v = val(warp)
            done = np.zeros(32, np.bool_)
            where = {}
            for lane in _lanes(mask):
                tu, off = where[lane] = _target(warp, text, space, a[lane], lane)
                if parity:
                    done[lane] = tu.mbarriers.phase_done(text, off, int(v[lane]) & 1, lane)
                else:
                    done[lane] = tu.mbarriers.state_done(text, off, int(v[lane]), lane)
            if warp.san is not None:
                for lane in _lanes(mask):
                    warp.san.mbar_wait(warp, where[lane][0], where[lane][1], lane, bool(done[lane]),
                                       int(v[lane]) & 1 if parity else None)
            waiting = mask & ~done
            if waiting.any():
                lanes = _lanes(waiting)
                reason = MBarrierWait(u, text, [where[i][1] for i in lanes],
                                      parity=[int(v[i]) & 1 for i in lanes] if parity else None,
                                      states=None if parity else [int(v[i]) for i in lanes],
                                      units=[where[i][0] for i in lanes])
                if blocking and warp.stall(waiting, reason):
                    pw(warp, done, mask & done)
                    return
                warp.yield_turn(reason)
            pw(warp, done, mask)
        return run
    if op == "pending_count":
        if len(ops) != 2:
            raise OperandError(f"{instr.opcode}: mbarrier.pending_count count, state")
        w = dst(env, ops[0], "u32", instr)
        st = src(env, ops[1], "b64", instr)
        return lambda warp, mask: w(warp, (st(warp) & np.uint64(0xFFFFF)).astype(np.uint32), mask)
    raise UnsupportedError(f"{instr.opcode}: unsupported")


@executor("fence")
def compile_fence(instr, env):
    """fence.proxy.async (generic writes become visible to the async proxy), fence.proxy.tensormap,
    fence.mbarrier_init; the other fences order nothing in a sequential emulator."""
    mods = instr.mods
    if mods and mods[0] == "proxy":
        kind = mods[1] if len(mods) > 1 else ""
        if kind.startswith("async"):
            if instr.operands:
                raise OperandError(f"{instr.opcode}: takes no operands")

            def run(warp, mask):
                warp.async_unit.fence_proxy_async()
            return run
        if kind.startswith("tensormap"):
            if instr.operands:
                address(env, instr.operands[0], instr)
            return lambda warp, mask: None
        if kind in ("alias",):
            return lambda warp, mask: None
        raise UnsupportedError(f"{instr.opcode}: unsupported; supported: fence.proxy.async{{.shared::cta,"
                               f".shared::cluster,.global}}, fence.proxy.tensormap::generic, fence.proxy.alias")
    if mods and mods[0] == "mbarrier_init":
        return lambda warp, mask: None
    return compile_nop(instr, env)


_REPLACE_FIELDS = {"global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
                   "elemtype", "interleave_layout", "swizzle_mode", "fill_mode", "swizzle_atomicity"}


@executor("tensormap")
def compile_tensormap(instr, env):
    mods = instr.mods
    text = instr.text or instr.opcode
    if mods and mods[0] == "replace":
        field = next((m for m in mods if m in _REPLACE_FIELDS), None)
        if field is None:
            raise UnsupportedError(f"{instr.opcode}: unknown field; supported: {', '.join(sorted(_REPLACE_FIELDS))}")
        space = "shared" if any(m.startswith("shared") for m in mods) else "global"
        ops = list(instr.operands)
        addr = address(env, ops[0], instr)
        ordinal = None
        if field in ("box_dim", "global_dim", "global_stride", "element_stride"):
            if len(ops) != 3 or not isinstance(ops[1], Imm):
                raise OperandError(f"{instr.opcode}: takes [tensormap], ordinal, value")
            ordinal = ops[1].value
            top = 3 if field == "global_stride" else 4          # a tensor map has 1..5 dimensions
            if not isinstance(ordinal, int) or not 0 <= ordinal <= top:
                raise OperandError(f"{instr.opcode}: the ordinal must be 0..{top}, not {ops[1]}")
        elif len(ops) != 2:
            raise OperandError(f"{instr.opcode}: takes [tensormap], value")
        vtype = "b64" if field in ("global_address", "global_stride") else "b32"
        val = src(env, ops[-1], vtype, instr)

        def run(warp, mask):
            a, v = addr(warp), val(warp)
            for lane in _lanes(mask):
                raw = warp.tensormap_bytes(text, space, int(a[lane]), lane)
                replace_field(raw, field, ordinal, int(v[lane]))
                warp.tensormap_store(text, space, int(a[lane]), raw, lane)
        return run
    if mods and mods[0] == "cp_fenceproxy":
        ops = list(instr.operands)
        if len(ops) != 3:
            raise OperandError(f"{instr.opcode}: takes [dst], [src], size")
        d, s = address(env, ops[0], instr), address(env, ops[1], instr)

        def run(warp, mask):
            da, sa = d(warp), s(warp)
            for lane in _lanes(mask):
                raw = warp.tensormap_bytes(text, "shared", int(sa[lane]), lane)
                warp.tensormap_store(text, "global", int(da[lane]), raw, lane)
        return run
    raise UnsupportedError(f"{instr.opcode}: unsupported; supported: tensormap.replace.tile.<field>, "
                           f"tensormap.cp_fenceproxy")
