"""The CTA loop's wgmma instructions (``wg_c``, on ``wgmmax``'s arrays) as one C-callable function, compiled apart
from the loops (as ``fcall.py`` and ``xcall.py`` are): ``loop.run`` and ``loop.run_cta`` call it through its address
(``wgmmax.call_wg``; the translation puts it in its table-pointer array), so the tile arithmetic it carries adds
nothing to the loops' compile time. ``families.py`` compiles it (or loads it from numba's cache) as it does the
instruction families ("wgmma"): only for kernels with wgmma instructions, under the compile lock, and with
``engine="auto"`` never while another process compiles (the CTA then runs on the Python scheduler meanwhile).

The tile arithmetic is compiled apart again, one function per form (``wgmmax.tile_of``: "wg_int", "wg_dec",
"wg_f32_16", "wg_f32_32", "wg_f32_8", "wg_f32_4"), which ``wg_c`` calls through its address
(``wgmmax.call_tile``): an f16 or bf16 wgmma with f32 accumulators compiles neither the decode path nor the
fp8, tf32 and integer kernels.
"""
import numpy as np
from numba import carray, types

from .wgmmax import (FULL, I_ADESC, I_AMAP, I_BDESC, I_D32, I_DMAP, I_EPRA, I_EPRD, I_FIX, I_K, I_KEEP, I_KIND, I_N,
                     I_NA, I_ND, I_NEGA, I_NEGB, I_REGROW, I_SDC, I_SDNEG, I_SDSLOT, I_SHAPE, I_SS, I_TA, I_TB, I_TILE,
                     I_WA, I_WB, I_WD, K_ABYTES, K_ARENAS, K_CNT, K_EXP, K_INS, K_KNOWN, K_LOG, K_LOGLEN, K_LR, K_MAPS,
                     K_NMAPS, K_NMMA, K_NPC, K_NREAD, K_NW, K_NWR, K_PTRS, K_R, K_READS, K_REC, K_REGS, K_SEQ, K_SMEM,
                     K_SMSIZE, K_STAMP, K_STAMPV, K_WANT, K_WGOK, K_WGR, NCF, NCTL, NIF, NREGCOL, NRF, N_COMMIT,
                     N_FENCED, N_FIRST, N_ISSUED, N_LASTPC, N_REC, N_STALL, N_STALLLIM, N_STALLSEQ, N_USED, RA, RAK, RD,
                     RDK, R_AD, R_BD, R_DONE, R_GRP, R_HELD, R_NUM, R_PC, R_SCD, U0, W_COMMIT, W_FENCE, W_WAIT,
                     call_tile, fix_arrays, fix_tile, tile_arrays, tile_dec, tile_f32_16, tile_f32_32, tile_f32_4,
                     tile_f32_8, tile_int, _addresses, _count, _in_bounds, _pack, _pack_d32, _pi32, _pi64, _pu32, _pu64,
                     _pu8, _read, _reads, _uniform64, _unpack, _unpack_d32)
from . import table as T

_PI64 = types.CPointer(types.int64)


# compiled by families.py: cfunc(SIG, cache=True) (numerics/jitcache.guard finds the modules whose cached functions
# it drops when the sources change by that text, so it must stay in this file)
SIG = types.int64(types.int64, types.int64, types.int64, _PI64, _PI64)
# the tile functions: (row, A, B^T, C, D addresses, K, N, the address of wg_fix or 0), cfunc(TILE_SIG, cache=True)
# each; wg_fix: (row, A, B^T, C, D, special rows, columns and elements addresses, K, N), cfunc(FIX_SIG, cache=True)
TILE_SIG = types.int64(*([types.int64] * 8))
FIX_SIG = types.int64(*([types.int64] * 10))


def wg_c(p, w, em, pctl, pstate):
    """One wgmma instruction at ``p`` for warp ``w`` (lanes ``em``), or (p = -1) whether warp ``w``'s wgmma
    hold registers, or (p = -2) the lanes of warp ``w`` to wake from a wait_group whose records are now
    computed, or (p = -3) ptxas's injected wait for all of warp ``w``'s wgmma (``WgTable.injected_wait``). Returns 0 (done), 1 (nothing done: the reference must run it) or 2 (the warp's lanes wait).

    One function body, the fence, commit, wait and mma.async steps in turn (``wgmmax``'s docstring): numba
    compiles it as it stands, where helpers marked ``inline="always"`` would have their IR copied into it (numba
    deep-copies a callee's IR once per block, each copy with all the callee's variables: about 3 s of CPU for
    these steps), and helpers compiled apart would have their code optimised twice."""
    ctl = carray(pctl, NCTL)
    state = carray(pstate, T.NSTATE)
    nw = ctl[K_NW]
    R = ctl[K_R]
    cnt = carray(_pi64(ctl[K_CNT]), (nw, NCF))
    rec = carray(_pi64(ctl[K_REC]), (nw, R, NRF))
    if p == -1:
        return 1 if cnt[w, N_REC] > 0 else 0
    if p == -2:
        lanes = cnt[w, N_STALL]
        if lanes == 0:
            return 0
        lim = cnt[w, N_STALLLIM]
        for r in range(cnt[w, N_REC]):
            if 0 <= rec[w, r, R_GRP] < lim and rec[w, r, R_DONE] == 0:
                return 0
        cnt[w, N_STALL] = 0
        return lanes
    npc = ctl[K_NPC]
    ins = carray(_pi64(ctl[K_INS]), (npc, NIF))
    row = ins[max(p, 0)]
    # (p = -3: ptxas's injected wait (C7517) before another instruction that touches a register of warp w's
    # in-flight wgmma: its uncommitted wgmma join a group, then wait_group 0 (ops.wgmma.state.drain))
    kind = W_WAIT if p == -3 else row[I_KIND]
    if em != FULL:
        return 1
    g = w // 4
    wgok = carray(_pi64(ctl[K_WGOK]), nw // 4 + 1)
    if wgok[g] == 0:
        return 1
    ab = ctl[K_ABYTES]
    a32 = carray(_pu32(ctl[K_ARENAS] + w * ab), ab // 4)
    nwr = ctl[K_NWR]
    if kind == W_FENCE:
        exp = carray(_pu32(ctl[K_EXP]), (nw, max(nwr, 1), 32))
        known = carray(_pu8(ctl[K_KNOWN]), (nw, max(nwr, 1)))
        wgr = carray(_pi64(ctl[K_WGR]), max(nwr, 1))
        for k in range(nwr):
            for lane in range(32):
                exp[w, k, lane] = a32[wgr[k] + lane]
            known[w, k] = 1
        cnt[w, N_FENCED] = 1
        cnt[w, N_USED] = 1
        return 0
    if kind == W_COMMIT:
        for r in range(cnt[w, N_REC]):
            if rec[w, r, R_GRP] < 0:
                rec[w, r, R_GRP] = cnt[w, N_COMMIT]
        cnt[w, N_COMMIT] += 1
        cnt[w, N_USED] = 1
        return 0
    if kind == W_WAIT:
        keep = 0 if p == -3 else row[I_KEEP]
        if p == -3:
            pend = 0
            for r in range(cnt[w, N_REC]):
                if rec[w, r, R_GRP] < 0:
                    rec[w, r, R_GRP] = cnt[w, N_COMMIT]
                    pend = 1
            cnt[w, N_COMMIT] += pend
        lim = cnt[w, N_COMMIT] - keep
        n = cnt[w, N_REC]
        for r in range(n):
            if 0 <= rec[w, r, R_GRP] < lim and rec[w, r, R_DONE] == 0:
                cnt[w, N_STALL] = FULL
                cnt[w, N_STALLLIM] = lim
                ctl[K_SEQ] += 1
                cnt[w, N_STALLSEQ] = ctl[K_SEQ]
                return 2
        reads = carray(_pi32(ctl[K_READS]), ctl[K_SMSIZE])
        stamp = carray(_pi64(ctl[K_STAMP]), ctl[K_SMSIZE] // 16 + 1)
        out = 0
        for r in range(n):
            if 0 <= rec[w, r, R_GRP] < lim:
                if rec[w, r, R_HELD] == 1:          # the warpgroup's instruction is complete: its reads are over
                    row = ins[rec[w, r, R_PC]]
                    ctl[K_STAMPV] += 1
                    _reads(row, rec[w, r, R_AD], rec[w, r, R_BD], reads, stamp, ctl[K_STAMPV], np.int64(-1))
                    ctl[K_NREAD] -= 1
                    g = w // 4
                    num = rec[w, r, R_NUM]
                    for v in range(4 * g, 4 * g + 4):
                        for q in range(cnt[v, N_REC]):
                            if rec[v, q, R_NUM] == num:
                                rec[v, q, R_HELD] = 0
                continue
            if out != r:
                for f in range(NRF):
                    rec[w, out, f] = rec[w, r, f]
            out += 1
        cnt[w, N_REC] = out
        cnt[w, N_FIRST] = max(cnt[w, N_FIRST], lim)
        cnt[w, N_USED] = 1
        state[T.S_WG_REGS] = 1 if out > 0 else 0
        state[T.S_WG_SMEM] = 1 if ctl[K_NREAD] > 0 else 0
        return 0
    ab = ctl[K_ABYTES]
    a8 = carray(_pu8(ctl[K_ARENAS] + w * ab), ab)
    a64 = carray(_pu64(ctl[K_ARENAS] + w * ab), ab // 8)
    # scale-d, the descriptors: one value in every lane
    if row[I_SDC] >= 0:
        scd = row[I_SDC]
    else:
        i = row[I_SDSLOT] & T.INDEX_MASK
        scd = 1 if a8[i] != 0 else 0
        for lane in range(1, 32):
            if (1 if a8[i + lane] != 0 else 0) != scd:
                return 1
    if row[I_SDNEG] == 1:
        scd = 1 - scd
    tile = carray(_pi64(ctl[K_PTRS]), row[I_TILE] + 1)[row[I_TILE]]
    if tile == 0:                                # the form's tile function is not compiled (yet)
        return 1
    tmp = np.zeros(1, np.int64)
    if not _uniform64(a64, row[I_BDESC], tmp):
        return 1
    bd = tmp[0]
    ad = np.int64(-1)
    if row[I_SS] == 1:
        if not _uniform64(a64, row[I_ADESC], tmp):
            return 1
        ad = tmp[0]
    # the warpgroup agrees on the instruction and its descriptors (a ring of issue numbers)
    LR = ctl[K_LR]
    ng = nw // 4 + 1
    log = carray(_pi64(ctl[K_LOG]), (ng, LR, 3))
    loglen = carray(_pi64(ctl[K_LOGLEN]), ng)
    iss = cnt[w, N_ISSUED]
    ll = loglen[g]
    lo = iss
    for v in range(4 * g, 4 * g + 4):
        lo = min(lo, cnt[v, N_ISSUED])
    if iss < ll:
        e = log[g, iss % LR]
        if e[0] != p or e[1] != ad or e[2] != bd:
            return 1
    elif ll - lo >= LR:
        return 1
    # the fence rule
    if cnt[w, N_FENCED] == 0:
        return 1
    nwr = ctl[K_NWR]
    exp = carray(_pu32(ctl[K_EXP]), (nw, max(nwr, 1), 32))
    known = carray(_pu8(ctl[K_KNOWN]), (nw, max(nwr, 1)))
    regs = carray(_pi64(ctl[K_REGS]), (ctl[K_NMMA], NREGCOL))[row[I_REGROW]]
    na, nd = row[I_NA], row[I_ND]
    for i in range(na):
        k = regs[RAK + i]
        if known[w, k] == 1:
            for lane in range(32):
                if a32[regs[RA + i] + lane] != exp[w, k, lane]:
                    return 1
    if scd == 1:
        for i in range(nd):
            k = regs[RDK + i]
            if known[w, k] == 1:
                for lane in range(32):
                    if a32[regs[RD + i] + lane] != exp[w, k, lane]:
                        return 1
    # another shape onto registers in flight: the reference decides
    lastpc = cnt[w, N_LASTPC]
    if lastpc >= 0 and ins[lastpc, I_SHAPE] != row[I_SHAPE] and \
            (cnt[w, N_REC] > 0 or cnt[w, N_COMMIT] > cnt[w, N_FIRST]):
        return 1
    n = cnt[w, N_REC]
    if n >= R:
        return 1
    last = True                                  # this issue completes the warpgroup's instruction
    for v in range(4 * g, 4 * g + 4):
        if v != w and cnt[v, N_ISSUED] <= iss:
            last = False
    size = ctl[K_SMSIZE]
    K = row[I_K]
    N = row[I_N]
    baddr = np.empty((N if last else 0, K), np.int64)
    aaddr = np.empty((64 if last and row[I_SS] == 1 else 0, K), np.int64)
    if last:
        _addresses(bd, N, K, row[I_WB] // 8, row[I_TB] == 1, baddr)
        if not _in_bounds(baddr, row[I_WB] // 8, size):
            return 1
        if row[I_SS] == 1:
            _addresses(ad, np.int64(64), K, row[I_WA] // 8, row[I_TA] == 1, aaddr)
            if not _in_bounds(aaddr, row[I_WA] // 8, size):
                return 1
    # the warpgroup's tile (computed before the issue is recorded: a tile that cannot be finished here goes back
    # with nothing changed): A (64, K), B^T (K, N), C (64, N) as the operands and registers are now
    D = np.empty((64 if last else 0, N), np.uint64)
    maps = carray(_pi64(ctl[K_MAPS]), ctl[K_NMAPS])
    if last:
        smem = carray(_pu8(ctl[K_SMEM]), size)
        A = np.empty((64, K), np.uint64)
        Bn = np.empty((N, K), np.uint64)
        C = np.zeros((64, N), np.uint64)
        _read(smem, baddr, row[I_WB] // 8, Bn)
        if row[I_SS] == 1:
            _read(smem, aaddr, row[I_WA] // 8, A)
        for j in range(4):
            v = 4 * g + j
            av = carray(_pu32(ctl[K_ARENAS] + v * ab), ab // 4)
            sd = scd                                 # (this warp's record is made below, as it issues)
            if v != w:
                q = 0
                while rec[v, q, R_NUM] != iss:
                    q += 1
                sd = rec[v, q, R_SCD]
            if row[I_SS] == 0:
                _unpack(av, regs[RA:RA + 4], np.int64(4), maps, row[I_AMAP], row[I_EPRA], row[I_WA], A, 16 * j, K)
            if sd == 1:
                if row[I_D32] == 1:
                    _unpack_d32(av, regs[RD:RD + nd], nd, C, 16 * j, N)
                else:
                    _unpack(av, regs[RD:RD + nd], nd, maps, row[I_DMAP], row[I_EPRD], row[I_WD], C, 16 * j, N)
        Bt = np.empty((K, N), np.uint64)
        nb = np.uint64(row[I_NEGB])
        for n_ in range(N):
            for k in range(K):
                Bt[k, n_] = Bn[n_, k] ^ nb
        na_ = np.uint64(row[I_NEGA])
        if na_ != U0:
            for m in range(64):
                for k in range(K):
                    A[m, k] ^= na_
        fix = carray(_pi64(ctl[K_PTRS]), row[I_FIX] + 1)[row[I_FIX]]
        if call_tile(tile, row, A, Bt, C, D, np.int64(K), np.int64(N), fix) != 0:
            ctl[K_WANT] = 1                          # the tile needs the inf/NaN fix-ups, not bound yet (wg_fix)
            return 1
    # issue
    if iss >= ll:
        log[g, ll % LR, 0] = p
        log[g, ll % LR, 1] = ad
        log[g, ll % LR, 2] = bd
        loglen[g] = ll + 1
    cnt[w, N_ISSUED] = iss + 1
    cnt[w, N_LASTPC] = p
    cnt[w, N_USED] = 1
    rr = rec[w, n]
    rr[R_PC] = p
    rr[R_AD] = ad
    rr[R_BD] = bd
    rr[R_SCD] = scd
    rr[R_NUM] = iss
    rr[R_GRP] = -1
    rr[R_DONE] = 0
    rr[R_HELD] = 0
    cnt[w, N_REC] = n + 1
    state[T.S_WG_REGS] = 1
    if not last:
        return 0
    for j in range(4):
        v = 4 * g + j
        av = carray(_pu32(ctl[K_ARENAS] + v * ab), ab // 4)
        if row[I_D32] == 1:
            _pack_d32(av, regs[RD:RD + nd], nd, D, 16 * j, N, exp[v], known[v], regs[RDK:RDK + nd])
        else:
            _pack(av, regs[RD:RD + nd], nd, maps, row[I_DMAP], row[I_EPRD], row[I_WD], D, 16 * j, N, exp[v],
                  known[v], regs[RDK:RDK + nd])
        for q in range(cnt[v, N_REC]):
            if rec[v, q, R_NUM] == iss:
                rec[v, q, R_DONE] = 1
                rec[v, q, R_HELD] = 1
    reads = carray(_pi32(ctl[K_READS]), size)
    stamp = carray(_pi64(ctl[K_STAMP]), size // 16 + 1)
    ctl[K_STAMPV] += 1
    _count(reads, stamp, ctl[K_STAMPV], baddr, row[I_WB] // 8, np.int64(1), row[I_TB] == 1)
    if row[I_SS] == 1:
        _count(reads, stamp, ctl[K_STAMPV], aaddr, row[I_WA] // 8, np.int64(1), row[I_TA] == 1)
    ctl[K_NREAD] += 1
    state[T.S_WG_SMEM] = 1
    return 0


def wg_int(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_int(row, A, Bt, C, out, fix)


def wg_dec(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_dec(row, A, Bt, C, out, fix)


def wg_f32_16(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_16(row, A, Bt, C, out, fix)


def wg_f32_32(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_32(row, A, Bt, C, out, fix)


def wg_f32_8(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_8(row, A, Bt, C, out, fix)


def wg_f32_4(prow, pa, pbt, pc, pout, K, N, fix):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_4(row, A, Bt, C, out, fix)


def wg_fix(prow, pa, pbt, pc, pout, pspa, pspb, predo, K, N):
    """The inf/NaN and overflow fix-ups of a float tile (families.APART "wg_fix"): bound only once a tile of the
    process needs them (``WgTable.bind_fix``); the tile functions call it through its address."""
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    spa, spb, redo = fix_arrays(pspa, pspb, predo, K, N)
    return fix_tile(row, A, Bt, C, out, spa, spb, redo)
