"""Thread-block clusters: ``mapa``, ``getctarank``, ``barrier.cluster.arrive`` / ``wait``, and the routing of
shared::cluster (and generic) addresses to the CTA of the cluster they name (``emulator.memory.dsmem``)."""
from __future__ import annotations

import numpy as np

from ..errors import MemoryAccessError, OperandError, UnsupportedError, WarpSyncError, fail
from ..memory import dsmem
from .common import dst, format_lanes, src
from .registry import executor


def cluster_groups(warp, instr, addrs, mask):
    """The active lanes of a shared::cluster access grouped by the CTA they reach:
    ``[(warp of that CTA, offsets (int64, 32), lanes)]``; an address outside the window or naming a CTA
    rank outside the cluster is an error."""
    a = np.asarray(addrs).astype(np.int64)
    bad = mask & ((a < 0) | (a >= dsmem.WINDOW_END))
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        fail(MemoryAccessError, instr, f"address {int(a[lane]):#x} is outside the shared::cluster window "
             f"[0, 2^32)", lane)
    field = (a >> dsmem.SHIFT) & 0xFF
    off = a & dsmem.OFFSET_MASK
    out = []
    for f in np.unique(field[mask]):
        lanes = mask & (field == f)
        first = int(np.flatnonzero(lanes)[0])
        rank = dsmem.target_rank(int(a[first]), warp.cluster_rank)
        out.append((warp.peer(instr, rank, first, int(a[first])), off, lanes))
    return out


def resolve_one(warp, instr, addr, lane):
    """(warp of the CTA, offset) for one lane's shared::cluster address."""
    a = int(addr)
    if not 0 <= a < dsmem.WINDOW_END:
        fail(MemoryAccessError, instr, f"address {a:#x} is outside the shared::cluster window [0, 2^32)", lane)
    return warp.peer(instr, dsmem.target_rank(a, warp.cluster_rank), lane, a), dsmem.offset(a)


def generic_window(warp, addrs, mask):
    """Generic addresses: (own shared window, other CTAs' shared windows) lanes."""
    a = np.asarray(addrs).astype(np.int64)
    own = mask & (a >= 0) & (a < warp.smem.size)
    remote = mask & (a >= 1 << dsmem.SHIFT) & (a < dsmem.WINDOW_END)
    return own, remote


def _address_type(instr, form):
    """The .u32/.u64 of mapa / getctarank, whose only other qualifier may be .shared::cluster."""
    ptype = next((m for m in instr.mods if m in ("u32", "u64")), None)
    if ptype is None or any(m not in ("shared::cluster", "u32", "u64") for m in instr.mods):
        raise UnsupportedError(f"{instr.opcode}: supported: {form}")
    return ptype


@executor("mapa")
def compile_mapa(instr, env):
    """mapa{.shared::cluster}.u32/.u64 d, a, rank: the address of the same shared variable in CTA ``rank``."""
    space = next((m for m in instr.mods if m.startswith("shared")), None)
    ptype = _address_type(instr, "mapa{.shared::cluster}.u32/.u64 d, a, rank")
    if len(instr.operands) != 3:
        raise OperandError(f"{instr.opcode}: takes d, a, rank")
    d = dst(env, instr.operands[0], ptype, instr)
    a = src(env, instr.operands[1], ptype, instr)
    b = src(env, instr.operands[2], "u32", instr)
    text = instr.text or instr.opcode
    generic = space is None

    def run(warp, mask):
        av = a(warp).astype(np.int64)
        bv = b(warp)
        out = np.zeros(32, np.uint64)
        me, n = warp.cluster_rank, warp.cluster_size
        for lane in np.flatnonzero(mask):
            x, r = int(av[lane]), int(bv[lane])
            if r >= n:
                fail(MemoryAccessError, text, f"CTA rank {r} is outside the cluster ({n} CTA(s), ranks 0-{n - 1})",
                     lane)
            if generic and not (0 <= x < warp.smem.size or (1 << dsmem.SHIFT) <= x < dsmem.WINDOW_END):
                fail(MemoryAccessError, text, f"generic address {x:#x} is not in shared memory", lane)
            if not 0 <= x < dsmem.WINDOW_END:
                fail(MemoryAccessError, text, f"address {x:#x} is outside the shared::cluster window", lane)
            out[lane] = dsmem.encode(r, me, dsmem.offset(x))
        d(warp, out.astype(np.uint32 if ptype == "u32" else np.uint64), mask)
    return run


@executor("getctarank")
def compile_getctarank(instr, env):
    """getctarank{.shared::cluster}.u32/.u64 d, a: the rank of the CTA whose shared memory ``a`` names."""
    ptype = _address_type(instr, "getctarank{.shared::cluster}.u32/.u64 d, a")
    if len(instr.operands) != 2:
        raise OperandError(f"{instr.opcode}: takes d, a")
    d = dst(env, instr.operands[0], "u32", instr)
    a = src(env, instr.operands[1], ptype, instr)
    text = instr.text or instr.opcode

    def run(warp, mask):
        av = a(warp).astype(np.int64)
        out = np.zeros(32, np.uint32)
        for lane in np.flatnonzero(mask):
            tw, _ = resolve_one(warp, text, int(av[lane]), int(lane))
            out[lane] = tw.cluster_rank
        d(warp, out, mask)
    return run


@executor("barrier")
def compile_barrier_cluster(instr, env):
    """barrier.cluster.arrive{.release|.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}."""
    mods = instr.mods
    kind = next((m for m in mods if m in ("arrive", "wait")), None)
    allowed = {"cluster", "arrive", "wait", "release", "relaxed", "acquire", "aligned"}
    bad = [m for m in mods if m not in allowed]
    if kind is None or bad or (kind == "arrive" and "acquire" in mods) or \
            (kind == "wait" and ({"release", "relaxed"} & set(mods))):
        raise UnsupportedError(f"{instr.opcode}: supported: barrier.cluster.arrive{{.release,.relaxed}}{{.aligned}}, "
                               f"barrier.cluster.wait{{.acquire}}{{.aligned}}")
    if instr.operands:
        raise OperandError(f"{instr.opcode}: takes no operands")
    aligned = "aligned" in mods
    text = instr.text or instr.opcode

    def run(warp, mask):
        if not hasattr(warp, "exited"):                 # a Warp.run warp: no CTA, no cluster
            raise UnsupportedError(f"{text}: barrier.cluster needs a kernel launch (load_ptx(...).launch)")
        if aligned:
            missing = ~warp.exited & ~mask
            if missing.any():
                fail(WarpSyncError, text, f"an .aligned barrier must be executed by every non-exited lane of the "
                     f"warp; lanes {format_lanes(np.flatnonzero(missing))} are not executing it")
        cl = getattr(warp, "cluster", None)
        if cl is None:
            raise UnsupportedError(f"{text}: barrier.cluster needs a kernel launch (load_ptx(...).launch)")
        if kind == "arrive":
            cl.arrive(warp, mask, text)
            if warp.san is not None:
                warp.san.cluster_arrive(warp, mask)
        else:
            cl.wait(warp, mask, text)
            if warp.san is not None:
                stalled = warp._stall[0] if getattr(warp, "_stall", None) is not None else None
                warp.san.cluster_wait(warp, mask if stalled is None else mask & ~stalled)
    return run
