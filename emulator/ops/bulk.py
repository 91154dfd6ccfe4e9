"""Bulk asynchronous copies: ``cp.async.bulk`` (contiguous bytes), ``cp.async.bulk.tensor`` (tensor-map
tiles, 1d..5d, loads / stores / prefetches), ``cp.reduce.async.bulk{.tensor}``, the bulk async-groups
(``cp.async.bulk.commit_group`` / ``wait_group{.read}``) and ``cp.async.mbarrier.arrive``.

A copy is issued into the CTA's async unit and completes later (see ``emulator.memory.asyncunit``): a
load lands in shared memory and signals complete_tx on its mbarrier; a store or reduction reads shared
memory at issue (through the async proxy: unfenced generic writes are reported) and writes global memory
when it completes.
"""
from __future__ import annotations

import numpy as np

from ..errors import MemoryAccessError, OperandError, TensorMapError, UnsupportedError, fail
from ..frontend.ptx import Imm, Mem, TensorAddr
from ..memory import check_bounds, global_gather
from ..memory.asyncunit import AsyncCopy
from ..memory.tensormap import TensorMap
from ..memory.tma import (global_read, global_write, reduce_values, smem_addresses, tile_load,
                          tile_store_targets)
from ..memory import dsmem
from .cluster import resolve_one
from .common import address, src
from .datamove import compile_cp as _compile_cp_async
from .memops import check_inflight
from .registry import executor

RED_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
_RED_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "u32": np.uint32, "s32": np.int32,
              "u64": np.uint64, "s64": np.int64, "b32": np.uint32, "b64": np.uint64}


def _lanes(mask):
    return np.flatnonzero(mask)


@executor("cp")
def compile_cp(instr, env):
    mods = instr.mods
    if mods[:2] == ("async", "bulk") or mods[:3] == ("reduce", "async", "bulk"):
        if len(mods) > 2 and mods[2] in ("commit_group", "wait_group"):
            return _groups(instr, env)
        if "tensor" in mods:
            return _tensor(instr, env)
        if "prefetch" in mods:
            return _prefetch(instr, env)
        return _bulk(instr, env)
    if mods[:2] == ("async", "mbarrier"):
        return _cp_async_arrive(instr, env)
    return _compile_cp_async(instr, env)


def _groups(instr, env):
    what = instr.mods[2]
    text = instr.text or instr.opcode
    if what == "commit_group":
        if instr.operands:
            raise OperandError(f"{instr.opcode}: takes no operands")

        def commit(warp, mask):
            warp.async_unit.commit_lanes(warp.warp_id, _lanes(mask).tolist())
        return commit
    ops = instr.operands
    if len(ops) != 1 or not isinstance(ops[0], Imm) or ops[0].kind != "int" or ops[0].value < 0:
        raise OperandError(f"{instr.opcode}: takes one integer constant N >= 0")
    keep = ops[0].value
    del text

    def wait(warp, mask):
        warp.async_unit.wait_group_lanes(warp.warp_id, _lanes(mask).tolist(), keep)
    return wait


def _mbar_lane(warp, text, a, lane):
    return warp.async_unit.mbarriers.get(text, int(a), lane)


def _cluster_dst(warp, text, space, addr, lane):
    """(warp of the CTA, offset) of a shared destination or mbarrier: a .shared::cluster address names a CTA
    of the cluster (emulator.memory.dsmem); this CTA's own addresses are plain offsets."""
    if space == "shared::cluster":
        return resolve_one(warp, text, int(addr), lane)
    return warp, int(addr)


def _shared_idx(warp, text, addr, nbytes, lane):
    a = np.array([addr], np.int64)
    m = np.zeros(32, np.bool_)
    m[0] = True
    check_bounds(text, a, m, nbytes, warp.smem.size)
    return np.arange(addr, addr + nbytes)


def _count(inflight, idx, delta):
    """``np.add.at(inflight, idx, delta)`` (an index may repeat): a box's thousands of bytes through one bincount."""
    if idx.size < 512:
        np.add.at(inflight, idx, delta)
    else:
        inflight += (np.bincount(idx, minlength=inflight.size) * delta).astype(inflight.dtype)


def _land(warp, copy, idx, data, mbar, nbytes, text):
    """Complete a load: write shared bytes, release their in-flight marks, signal complete_tx."""
    def complete():
        if warp.san is not None:
            snap = copy.info.get("san")
            warp.san.async_write(idx, snap)
            if mbar is not None:
                warp.san.mbar_tx(warp.async_unit, mbar, snap)
        warp.smem[idx] = data
        _count(warp.smem_inflight, idx, -1)
        warp._inflight_n -= 1
        warp.async_unit.dirty[idx] = False
        if mbar is not None:
            warp.async_unit.mbarriers.complete_tx(text, mbar, nbytes, copy.lane)
    return complete


def _start_load(warp, text, lane, idx, data, mbar, nbytes, info, issuer=None):
    flat = idx.reshape(-1)
    if warp.san is not None and issuer is not None and issuer.san is warp.san:
        info["san"] = warp.san.snapshot(issuer, lane)
    _count(warp.smem_inflight, flat, 1)
    warp._inflight_n += 1
    queue_load(warp, text, lane, flat, data.reshape(-1), mbar, nbytes, info)


def queue_load(warp, text, lane, flat, data, mbar, nbytes, info, land=None):
    """Put a load whose destination bytes ``flat`` are already marked in flight into the async unit: it lands
    ``data`` there and signals complete_tx on the mbarrier at ``mbar``. The fast engine's TMA rows come here too
    (machine/fastcore/bulkx.py), with ``land(copy)``: the same completion, its byte moves jitted."""
    c = AsyncCopy("load", text, warp.warp_id, int(lane), 0, None, info=info)
    c.complete = _land(warp, c, flat, data, mbar, nbytes, text) if land is None else land(c)
    warp.async_unit.issue(c)


def queue_store(warp, text, lane, ga, rows, op, dtype, info, group=-1):
    """Put a tiled store (``op`` None) or reduction of ``rows`` (n, element bytes) to the global addresses ``ga``
    into the async unit: bulk async-group copies, which write global memory when they complete (``group``: the
    bulk async-group the fast engine's CTA loop already committed it to; -1: not committed yet)."""
    def complete():
        if op is None:
            global_write(warp.gmem, text, ga, rows)
        else:
            old = global_read(warp.gmem, text, ga, rows.shape[1])
            global_write(warp.gmem, text, ga, reduce_values(op, dtype, old, rows, text))
    cp = AsyncCopy("reduce" if op else "store", text, warp.warp_id, int(lane), 0, complete, group=int(group),
                   grouped=True, info=info)
    warp.async_unit.issue(cp)


def _bulk(instr, env):
    """cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
    cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size
    cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>.<type> [dst], [src], size"""
    mods = instr.mods
    text = instr.text or instr.opcode
    reduce = mods[0] == "reduce"
    spaces = [m for m in mods if m in ("shared::cluster", "shared::cta", "shared", "global")]
    if len(spaces) != 2:
        raise UnsupportedError(f"{instr.opcode}: needs a destination and a source state space")
    to_shared = spaces[0].startswith("shared")
    ops = list(instr.operands)
    if len(ops) < 3 or not isinstance(ops[0], Mem) or not isinstance(ops[1], Mem):
        raise OperandError(f"{instr.opcode}: takes [dst], [src], size{{, [mbar]}}")
    d, s = address(env, ops[0], instr), address(env, ops[1], instr)
    size = src(env, ops[2], "u32", instr)
    mbar = address(env, ops[3], instr) if to_shared and len(ops) > 3 and isinstance(ops[3], Mem) else None
    if to_shared and spaces[1].startswith("shared"):
        pass
    if to_shared and mbar is None:
        raise OperandError(f"{instr.opcode}: a copy into shared memory completes on an mbarrier operand")
    op = next((m for m in mods if m in RED_OPS), None) if reduce else None
    rtype = next((m for m in mods if m in _RED_TYPES), None) if reduce else None
    if reduce and (op is None or rtype is None):
        raise OperandError(f"{instr.opcode}: cp.reduce.async.bulk needs an operation and a type")
    from_shared = spaces[1].startswith("shared")

    def run(warp, mask):
        u = warp.async_unit
        da, sa, n = d(warp), s(warp), size(warp)
        mb = mbar(warp) if mbar is not None else None
        for lane in _lanes(mask):
            nb = int(n[lane])
            if nb % 16 or int(da[lane]) % 16 or int(sa[lane]) % 16:
                fail(MemoryAccessError, text, f"bulk copies move multiples of 16 bytes between 16-byte aligned "
                     f"addresses (size {nb}, dst {int(da[lane]):#x}, src {int(sa[lane]):#x})", lane)
            if to_shared:
                tw, doff = _cluster_dst(warp, text, spaces[0], da[lane], lane)
                mw, moff = _cluster_dst(warp, text, spaces[0], mb[lane], lane)
                if mw is not tw:
                    fail(MemoryAccessError, text, f"the destination (CTA rank {tw.cluster_rank}) and the mbarrier "
                         f"(CTA rank {mw.cluster_rank}) must be in the same CTA", lane)
                idx = _shared_idx(tw, text, doff, nb, lane)
                if from_shared:
                    sidx = _shared_idx(warp, text, int(sa[lane]), nb, lane)
                    u.check_async_read(text, sidx, "the bulk copy", (warp, lane))
                    data = warp.smem[sidx].copy()
                else:
                    m = np.zeros(32, np.bool_)
                    m[lane] = True
                    data = global_gather(warp.gmem, text, sa.astype(np.uint64), m, nb)[lane]
                _mbar_lane(tw, text, moff, lane)
                _start_load(tw, text, lane, idx, data, moff, nb,
                            {"bytes": nb, "dst": doff, "mbar": moff, "cta": tw.cluster_rank}, issuer=warp)
            else:
                sidx = _shared_idx(warp, text, int(sa[lane]), nb, lane)
                u.check_async_read(text, sidx, "the bulk copy", (warp, lane))
                check_inflight(warp, text, sa, mask & (np.arange(32) == lane), nb, False)
                data = warp.smem[sidx].copy()
                gaddr = int(da[lane])

                def complete(gaddr=gaddr, data=data, lane=lane):
                    if op is None:
                        global_write(warp.gmem, text, np.array([gaddr], np.int64), data.reshape(1, -1))
                        return
                    t = _RED_TYPES[rtype]
                    es = np.dtype(t).itemsize
                    addrs = gaddr + np.arange(nb // es, dtype=np.int64) * es
                    old = global_read(warp.gmem, text, addrs, es)
                    new = _reduce_plain(op, t, old, data.reshape(-1, es), text)
                    global_write(warp.gmem, text, addrs, new)
                c = AsyncCopy("reduce" if op else "store", text, warp.warp_id, int(lane), 0, complete, grouped=True,
                              info={"bytes": nb, "src": int(sa[lane])})
                u.issue(c)
    return run


def _reduce_plain(op, t, old, new, text):
    code = {np.float16: 6, np.float32: 7, np.float64: 8, np.uint32: 2, np.int32: 3, np.uint64: 4, np.int64: 5}[t]
    return reduce_values(op, code, old, new, text)


def _prefetch(instr, env):
    for o in instr.operands:
        if isinstance(o, Mem):
            address(env, o, instr)
    return lambda warp, mask: None


def _tensor(instr, env):
    mods = instr.mods
    text = instr.text or instr.opcode
    reduce = mods[0] == "reduce"
    dim = next((m for m in mods if len(m) == 2 and m[1] == "d" and m[0] in "12345"), None)
    if dim is None:
        raise OperandError(f"{instr.opcode}: missing the dimension (.1d .. .5d)")
    rank = int(dim[0])
    if "im2col" in mods or any(m.startswith("im2col") for m in mods):
        raise UnsupportedError(f"{instr.opcode}: im2col mode is not supported; supported: .tile")
    if "prefetch" in mods:
        return _prefetch(instr, env)
    spaces = [m for m in mods if m in ("shared::cluster", "shared::cta", "shared", "global")]
    to_shared = bool(spaces) and spaces[0].startswith("shared")
    multicast = "multicast::cluster" in mods
    ops = list(instr.operands)
    tref_i = 1 if to_shared else 0
    if len(ops) < 2 or not isinstance(ops[tref_i], TensorAddr):
        raise OperandError(f"{instr.opcode}: the tensor operand is [tensorMap, {{c0, ...}}]")
    tref = ops[tref_i]
    coords = [src(env, c, "s32", instr) for c in tref.coords.items]
    if len(coords) != rank:
        raise OperandError(f"{instr.opcode}: .{dim} takes {rank} coordinate(s), found {len(coords)}")
    tmap = address(env, tref.addr, instr)
    other = address(env, ops[1 - tref_i], instr)
    op = next((m for m in mods if m in RED_OPS), None) if reduce else None
    if reduce and op is None:
        raise OperandError(f"{instr.opcode}: cp.reduce.async.bulk.tensor needs one of {', '.join(RED_OPS)}")
    mbar = None
    if to_shared:
        if len(ops) < 3 or not isinstance(ops[2], Mem):
            raise OperandError(f"{instr.opcode}: a load completes on an mbarrier: [dst], [tmap, {{...}}], [mbar]")
        mbar = address(env, ops[2], instr)
    cta_mask = src(env, ops[3], "b16", instr) if multicast and len(ops) > 3 else None
    if multicast and cta_mask is None:
        raise OperandError(f"{instr.opcode}: .multicast::cluster needs a ctaMask operand")

    def run(warp, mask):
        u = warp.async_unit
        t = tmap(warp)
        other_a = other(warp)
        cs = [c(warp) for c in coords]
        mb = mbar(warp) if mbar is not None else None
        for lane in _lanes(mask):
            raw = warp.tensormap_bytes(text, None, int(t[lane]), lane)
            try:
                tm = TensorMap.decode(raw)
            except TensorMapError as e:
                fail(TensorMapError, text, str(e), lane)
            if tm.rank != rank:
                fail(TensorMapError, text, f"the tensor map has rank {tm.rank}, the instruction is .{dim}", lane)
            c = [int(x[lane]) for x in cs]
            es = tm.element_size
            base = int(other_a[lane])
            if base % 128:
                fail(MemoryAccessError, text, f"the shared-memory box address {base:#x} must be 128-byte aligned",
                     lane)
            if to_shared:
                if cta_mask is None:       # the destination and mbarrier name one CTA (this one, usually)
                    tw, doff = _cluster_dst(warp, text, spaces[0], base, lane)
                    mw, moff = _cluster_dst(warp, text, spaces[0], mb[lane], lane)
                    if mw is not tw:
                        fail(MemoryAccessError, text, f"the destination (CTA rank {tw.cluster_rank}) and the mbarrier "
                             f"(CTA rank {mw.cluster_rank}) must be in the same CTA", lane)
                    targets = [(tw, moff)]
                else:                      # the same offsets in every CTA of ctaMask
                    doff = dsmem.offset(base)
                    targets = [(tw, dsmem.offset(mb[lane]))
                               for tw in warp.cluster_targets(cta_mask(warp)[lane], text, lane)]
                off, data = tile_load(tm, c, warp.gmem, text)
                idx = smem_addresses(doff, off, es, tm.swizzle)
                bound = np.zeros(32, np.bool_)
                bound[lane] = True
                for tw, moff in targets:
                    check_bounds(text, np.full(32, doff, np.int64), bound, int(off[-1]) + es if off.size else 0,
                                 tw.smem.size)
                    if int(idx.max(initial=0)) >= tw.smem.size:
                        fail(MemoryAccessError, text, f"the box runs past shared memory ({tw.smem.size} bytes)", lane)
                    _mbar_lane(tw, text, moff, lane)
                    _start_load(tw, text, lane, idx, data, moff, tm.box_bytes,
                                {"bytes": tm.box_bytes, "dst": doff, "mbar": moff, "coords": c,
                                 "box": list(tm.box_dim), "cta": tw.cluster_rank}, issuer=warp)
            else:
                addr, inside, off = tile_store_targets(tm, c, text, reduce=op is not None)
                sidx = smem_addresses(base, off, es, tm.swizzle)
                if int(sidx.max(initial=0)) >= warp.smem.size:
                    fail(MemoryAccessError, text, f"the box runs past shared memory ({warp.smem.size} bytes)", lane)
                u.check_async_read(text, sidx, "the TMA store", (warp, lane))
                lm = np.zeros(32, np.bool_)
                lm[lane] = True
                data = warp.smem[sidx].copy()
                queue_store(warp, text, lane, addr[inside], data[inside], op, tm.dtype,
                            {"bytes": tm.box_bytes, "src": base, "coords": c})
    return run


def _cp_async_arrive(instr, env):
    """cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [mbar]: an arrive once the thread's prior cp.async
    copies have landed (they land now)."""
    noinc = "noinc" in instr.mods
    if len(instr.operands) != 1:
        raise OperandError(f"{instr.opcode}: takes [mbar]")
    addr = address(env, instr.operands[0], instr)
    text = instr.text or instr.opcode

    def run(warp, mask):
        warp.cp_async.commit(mask)
        warp.cp_async.retire(warp, mask, 0)
        a = addr(warp)
        u = warp.async_unit
        for lane in _lanes(mask):
            before = u.mbarriers.get(text, int(a[lane]), lane).phase
            if noinc:
                u.mbarriers.arrive(text, int(a[lane]), 1, False, lane)
            if warp.san is not None:          # the landed copies are released to the mbarrier's waiters
                warp.san.mbar_arrive(warp, u, int(a[lane]), lane, before)
    return run
