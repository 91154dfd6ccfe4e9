"""The jitted loop: runs one warp over the translated code until it meets an instruction it hands back.

Values are raw bits held as uint64 (every integer constant is typed explicitly: numba turns mixed
uint64/int64 arithmetic into float64). Any lane that would break a rule (misaligned or out-of-range
address, an in-flight cp.async destination, the instruction budget) sends the instruction back to the
reference executor, which raises the error the reference defines.
"""
import numpy as np
from numba import njit

from . import table as T
from .raw import _allocation, _mask, _peek, _peek16, _poke, _sext, store_lane  # noqa: F401 (raw memory access,
#                                                                              shared with cpasync)
from .regs import I0, I64, _cwidth, _gather, _rd, _rdf, _scatter, _wrf  # noqa: F401 (register access, as the families)
from .fmath import TABLES as _TABLES
from . import ldst
from .scalarx import call_x
from . import ccall as C
from .ccall import SIG, call_cta, call_family, call_native, data_ptr, reinterpret  # noqa: F401 (SIG: brx_c's, families.APART)
from .families import APART_SLOT as _APART_SLOT, NSLOTS as _NSLOTS, OF_OPCODE as _OF_OPCODE, SLOT as _SLOT
from .wgmmax import call_wg
from .asyncx import call_hop
from .ctaloop import OP_STALL, OP_WAKE, OP_YIELD
from ...numerics.jitcache import INNER, lean

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
IDX = T.INDEX_MASK
CANON32 = np.uint32(0x7FFFFFFF)
LANES = 32
XSLOT = len(_TABLES)        # translation.mufu_ptr: the addresses of xcall.x_c and xcall.atom_c
ASLOT = len(_TABLES) + 1
WSLOT = _NSLOTS             # wgcall.wg_c (after the families' slots)
HSLOT = _NSLOTS + 1         # hopcall.hop_c (HOPX rows)
BSLOT = _NSLOTS + 2         # bulkcall.bulk_c (BULKX rows)
CSLOT = _APART_SLOT["ctawait"]   # ctaloop.cta_c: the CTA loop's mbarrier stalls, wakes and yields
BARSLOT = _APART_SLOT["ctabar"]  # ctaloop.bar_c: a counted or register-numbered barrier's operands
RSLOT = _APART_SLOT["rare"]     # rarecall.rare_c: the ATOM, WGMMA, STMATRIX, HOPX and BULKX rows
MSLOT = _APART_SLOT["memplan"]  # memplan.plan_c: the loads and stores ldst.plan leaves
PSLOT = _APART_SLOT["pick"]     # pickcall.pick_c: the lane group to run next once the warp's lanes diverged
BRXSLOT = _APART_SLOT["brx"]    # loop.brx_c: brx.idx
XMSLOT = _APART_SLOT["memx"]    # memx.memx_c: shared stores beside the async proxy (wgmma reads, generic marks)
PUMP = -1                   # bulkx.PUMP: bulk_c's lanes for the pump at a round's end (checked in engine.py)
# the family slot of each opcode (families.py; -1: none, the loop hands the row back)
FAMSLOT = np.full(128, -1, np.int64)
for _op, _name in _OF_OPCODE.items():
    FAMSLOT[_op] = _SLOT[_name]
MMA_SLOT = _SLOT["mma"]
MMAX_SLOT = _SLOT["mma_ext"]
LDM_SLOT = _SLOT["ldmatrix"]
CP_SLOT = _SLOT["cpasync"]
I32 = np.int64(32)          # (np.int64, not a literal: one specialisation of _gather)
LEAN = lean()               # numba's pipeline without SSA and the passes the loops never need (jitcache.lean)


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def fill_ctx(ctx, inflight, gtab, state, log_pc, log_addr, log_mask, mptr, cpd, cpx, cpg, cpm, cpc):
    """The ctx slots (ccall.K_*) that change from one run of the loop to the next: where the families find the
    warp's records and the launch's arrays. The translation's tables (the mma decode tables, the MUFU sizes, the
    cp.async source log: ``engine.TABLE_SLOTS``) are in the ctx before the loop runs, written once per launch."""
    ctx[C.K_STATE] = data_ptr(state)
    ctx[C.K_INFLIGHT] = data_ptr(inflight)
    ctx[C.K_INFLIGHT_N] = inflight.shape[0]
    ctx[C.K_GTAB] = data_ptr(gtab)
    ctx[C.K_GTAB_N] = gtab.shape[0]
    ctx[C.K_MPTR] = data_ptr(mptr)
    ctx[C.K_NPTR] = mptr.shape[0]
    ctx[C.K_LOG_PC] = data_ptr(log_pc)
    ctx[C.K_LOG_N] = log_pc.shape[0]
    ctx[C.K_LOG_ADDR] = data_ptr(log_addr)
    ctx[C.K_LOG_W] = log_addr.shape[1]
    ctx[C.K_LOG_MASK] = data_ptr(log_mask)
    ctx[C.K_CPD] = data_ptr(cpd)
    ctx[C.K_CPX] = data_ptr(cpx)
    ctx[C.K_CPG] = data_ptr(cpg)
    ctx[C.K_CPM] = data_ptr(cpm)
    ctx[C.K_CPC] = data_ptr(cpc)
    ctx[C.K_CP_R] = cpd.shape[0]


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _brx(row, imrow, m, em, pc, a8, a16, a32, a64):
    """A BRX row: the taken lanes (``em``) jump to the target their index names, the others of ``m`` go on. Returns
    the one target of all taken lanes (-1: several, or none), or -2 (nothing done) when an index is past the
    list."""
    nt = row[T.X]
    for lane in range(LANES):
        if (em >> lane) & 1 and np.int64(_rd(row[T.A], lane, a8, a16, a32, a64, imrow)) >= nt:
            return np.int64(-2)
    dest = np.int64(-1)
    same = True
    for lane in range(LANES):
        if (m >> lane) & 1:
            if (em >> lane) & 1:
                t = row[T.V0 + np.int64(_rd(row[T.A], lane, a8, a16, a32, a64, imrow))]
                pc[lane] = t
                if dest < 0:
                    dest = t
                elif t != dest:
                    same = False
            else:
                pc[lane] += 1
    return dest if same else np.int64(-1)


def brx_c(em, prow, pimm, parena, narena, pscratch):
    """``_brx`` compiled apart ("brx" of ``families.APART``, the families' signature ``ccall.SIG``), bound only for
    kernels with brx.idx: the lanes of the row in ctx[K_M], the warp's PCs through ctx[K_PCS] (set by ``run``)."""
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    a8 = C.u8_1d(parena, narena)
    return _brx(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), ctx[C.K_M], em, C.i64_1d(ctx[C.K_PCS], LANES), a8,
                reinterpret(a8, np.uint16), reinterpret(a8, np.uint32), reinterpret(a8, np.uint64))


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _one_group(pc, live, come):
    """The PC of the lanes when every lane that will come is live and at one PC (the group ``pickcall._pick``
    picks then, as after a barrier or a uniform branch), else -1."""
    if live != come or live == 0:
        return np.int64(-1)
    q = np.int64(-1)
    same = True
    for lane in range(LANES):
        if (live >> lane) & 1:
            if q < 0:
                q = pc[lane]
            elif pc[lane] != q:
                same = False
    return q if same else np.int64(-1)


@njit(cache=True, _nrt=False, no_cfunc_wrapper=True, pipeline_class=LEAN)
def run(code, imm, arena, pc, exited, waiting, inflight, gtab, state, log_pc, log_addr, log_mask, scratch, mptr, cpd,
        cpx, cpg, cpm, cpc):
    """Run the warp from its current state (state S_CTA: 1 inside run_cta, which executes the barriers). Returns
    (through ``state``) why it stopped. Compiled without the reference-counting runtime (``_nrt=False``): no
    atomic increments on every array view and call; ``scratch`` (uint64[ccall.NSCRATCH, 32], from the caller)
    holds every temporary, then the ctx through which the instruction families find the launch's tables (the
    translation's tables written there by the engine, ``engine.fill_tables``, the others by ``fill_ctx``);
    ``cpd`` .. ``cpc``: the warp's cp.async records (``cpasync.CpAsyncTable.row``)."""
    a8 = arena
    a16 = reinterpret(arena, np.uint16)
    a32 = reinterpret(arena, np.uint32)
    a64 = reinterpret(arena, np.uint64)
    addrs = reinterpret(scratch[2], np.int64)
    xr = scratch[6]
    xq = scratch[7]
    ctx = reinterpret(scratch[C.CTX_ROW:].reshape(C.NCTX), np.int64)
    fill_ctx(ctx, inflight, gtab, state, log_pc, log_addr, log_mask, mptr, cpd, cpx, cpg, cpm, cpc)
    ctx[C.K_PCS] = data_ptr(pc)
    ctx[C.K_WAITING] = data_ptr(waiting)
    pscratch = data_ptr(scratch)
    parena = data_ptr(arena)
    narena = arena.shape[0]
    # the lane masks start as np.int64(0), not 0: a literal 0 would make numba compile every function they are
    # passed to twice (once for Literal[int](0), once for int64), which doubled much of the compile time
    live = np.int64(0)
    come = np.int64(0)          # lanes that will get somewhere (no lane is held back by a spin here)
    for lane in range(LANES):
        if not exited[lane]:
            come |= 1 << lane
            if not waiting[lane]:
                live |= 1 << lane
    if live == 0:
        state[T.S_STATUS] = T.ST_IDLE
        return
    if state[T.S_WG] != 0:              # the CTA loop owns the wgmma state: do this warp's wgmma hold registers?
        state[T.S_WG_REGS] = call_wg(mptr[WSLOT], -1, state[T.S_WARP], 0, state[T.S_WG], state.ctypes.data)
    p = -1
    m = np.int64(0)
    budget = state[T.S_BUDGET]
    issued = state[T.S_ISSUED]
    nlog = state[T.S_NLOG]
    back = state[T.S_BACK]
    spin_check = state[T.S_SPIN_CHECK]
    executed = 0
    handback = False            # the instruction at p (lanes m) goes back to Python, not counted here
    # a sanitised launch (machine.sanitize_fast) passes a wider log: its records also carry the values each
    # lane stores and the global lanes of every ld/st (mask bit 32), which the sanitizer replays
    wide = 1 if log_addr.shape[1] > LANES else 0
    while True:
        if p < 0:                      # pick (machine.convergence.pick): the lane group to run next
            p = _one_group(pc, live, come)
            if p < 0:                   # lanes at several PCs, or waiting: pickcall.pick_c, compiled apart and
                if mptr[PSLOT] == 0:    # bound on first need (the engine binds it, or picks in Python)
                    state[T.S_STATUS] = T.ST_PICK
                    break
                ctx[C.K_COME] = come
                p = call_family(mptr[PSLOT], live, data_ptr(code), code.shape[0], parena, narena, pscratch)
            if p < 0:
                state[T.S_STATUS] = T.ST_IDLE if executed > 0 else T.ST_DEFER
                break
            m = np.int64(0)
            for lane in range(LANES):
                if (live >> lane) & 1 and pc[lane] == p:
                    m |= 1 << lane
        row = code[p]
        opc = row[T.OP]
        if opc == T.BAR and state[T.S_CTA] == 0 and wide == 1:
            opc = T.SLOW                   # a sanitised warp alone: the reference arrives (and tells the sanitizer)
        if row[T.WG] == 1 and state[T.S_WG_REGS] != 0 or opc == T.ATOM and wide == 1:
            opc = T.SLOW                   # a register an in-flight wgmma may hold (the executor checks); a sanitised
                                           # atomic (the reference tells the sanitizer)
        if opc == T.SLOW or budget <= 0 or (opc == T.LD or opc == T.ST or opc == T.CPASYNC or opc == T.ATOM or
                                            wide == 1 and (opc == T.BAR or opc == T.EXIT)) and \
                nlog + wide >= log_pc.shape[0]:
            state[T.S_STATUS] = T.ST_SLOW if (opc == T.SLOW or budget <= 0) else T.ST_LOG
            state[T.S_PC] = p
            state[T.S_MASK] = m
            break
        imrow = imm[p]
        budget -= 1
        issued += 1
        executed += 1
        em = m
        g = row[T.GUARD]
        if g >= 0 and g >> T.CLASS_SHIFT == T.PRED:     # a predicate register: its 32 bytes, no per-lane read
            gi = g & IDX
            bits = np.int64(0)
            for lane in range(LANES):
                bits |= np.int64(a8[gi + lane] != 0) << lane
            if row[T.GNEG] == 1:
                bits = ~bits
            em = bits & m
        elif g != -1:
            em = np.int64(0)
            neg = row[T.GNEG]
            for lane in range(LANES):
                if (m >> lane) & 1:
                    v = _rd(g, lane, a8, a16, a32, a64, imrow) != U0
                    if v != (neg == 1):
                        em |= 1 << lane
        together = m == come
        if opc == T.EXIT:
            for lane in range(LANES):
                if (m >> lane) & 1:
                    if (em >> lane) & 1:
                        exited[lane] = True
                    else:
                        pc[lane] += 1
            if em != 0:
                if wide:                       # sanitizer: the exit, in program order (mask bit 33)
                    log_pc[nlog] = p
                    log_mask[nlog] = em | (np.int64(1) << 33)
                    nlog += 1
                state[T.S_STATUS] = T.ST_EXITED
                break
            p = p + 1 if together else -1
            continue
        if opc == T.BAR:
            if em != 0 and row[T.Z] == 1:
                nonexited = 0
                for lane in range(LANES):
                    if not exited[lane]:
                        nonexited |= 1 << lane
                if nonexited & ~em:              # .aligned with lanes missing: the reference raises
                    handback = True
                    break
            if em != 0 and state[T.S_CTA] == 1:
                if row[T.X] >= 0 and row[T.B] == -1:     # a constant number, no count (bar.sync 0)
                    state[T.S_BAR_ID] = row[T.X]
                    state[T.S_BAR_CNT] = -1
                elif mptr[BARSLOT] == 0 or \
                        call_family(mptr[BARSLOT], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch) != 0:
                    handback = True              # a barrier number or thread count that breaks a rule (ctaloop.py),
                    break                        # or ctaloop.bar_c not bound yet: the Python scheduler arrives
            for lane in range(LANES):
                if (m >> lane) & 1:
                    pc[lane] += 1
            if em != 0:
                if wide:                       # sanitizer: the arrival, in program order (mask bit 33)
                    log_pc[nlog] = p
                    log_mask[nlog] = em | (np.int64(1) << 33)
                    nlog += 1
                state[T.S_STATUS] = T.ST_BAR
                state[T.S_PC] = p
                state[T.S_MASK] = em
                break
            p = p + 1 if together else -1
            continue
        if opc == T.BRA:
            tgt = row[T.X]
            if tgt <= p and em != 0:            # a loop: every SPIN_CHECK-th time the scheduler looks for a spin
                # (it compares the state at the SPIN_CHECK-th and the next: the first backward branch has nothing
                # to compare with unless SPIN_CHECK is 1, so it stays here)
                if (back + 1) % spin_check < 2 and (back > 0 or spin_check == 1):
                    handback = True
                    break
                back += 1
            for lane in range(LANES):           # (em is within m)
                pc[lane] = tgt if (em >> lane) & 1 else pc[lane] + ((m >> lane) & 1)
            if together and em == m:
                p = tgt
            elif together and em == 0:
                p += 1
            else:
                p = -1
            continue
        if opc == T.BRX:                        # brx.idx (machine.cta: no spin check, as the reference)
            if mptr[BRXSLOT] == 0:              # brx_c, compiled apart (slot 0: not bound, handed back)
                handback = True
                break
            ctx[C.K_M] = m
            dest = call_family(mptr[BRXSLOT], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch)
            if dest == -2:
                handback = True                 # an index past the list: the reference raises
                break
            if together and em == m and dest >= 0:
                p = dest
            elif together and em == 0:
                p += 1
            else:
                p = -1
            continue
        w = row[T.W]
        sgn = row[T.SGN]
        if opc == T.LD or opc == T.ST:
            if em != 0:
                # (ldst.py: the common rows' addresses and copies; the others, and a sanitised launch's: memplan.py)
                shared_lanes = ldst.plan(row, imrow, em, a32, a64, inflight, gtab, state, addrs, xq) if wide == 0 \
                    else -2
                if shared_lanes == -2:          # memplan.plan_c, compiled apart (slot 0: not bound, handed back)
                    if mptr[MSLOT] == 0:
                        handback = True
                        break
                    shared_lanes = call_family(mptr[MSLOT], em, data_ptr(row), data_ptr(imrow), parena, narena,
                                               pscratch)
                if shared_lanes < 0:
                    handback = True
                    break
                n = row[T.Y]
                ew = row[T.Z]
                if opc == T.LD:
                    ldst.load(row, em, a8, a16, a32, a64, xq, xr)
                else:
                    # beside the async proxy (memx.memx_c, compiled apart, bound for the kernels it reads; slot 0:
                    # handed back): bytes an in-flight wgmma reads go back (the reference raises), generic-proxy
                    # writes are marked for the fence check
                    if shared_lanes != 0 and (state[T.S_WG_SMEM] != 0 or state[T.S_DIRTY] != 0) and \
                            (mptr[XMSLOT] == 0 or state[T.S_WG_SMEM] != 0 and
                             call_family(mptr[XMSLOT], shared_lanes, 0, n * ew, parena, narena, pscratch) != 0):
                        handback = True
                        break
                    ldst.store(row, imrow, em, a8, a16, a32, a64, xq, xr, log_addr, nlog, wide)
                    if shared_lanes != 0 and state[T.S_DIRTY] != 0:
                        call_family(mptr[XMSLOT], shared_lanes, 1, n * ew, parena, narena, pscratch)
                if shared_lanes != 0:
                    log_pc[nlog] = p
                    log_mask[nlog] = shared_lanes
                    for lane in range(LANES):
                        log_addr[nlog, lane] = addrs[lane]
                    nlog += 1
                if wide and row[T.X] != T.PARAM and row[T.X] != T.LOCAL and em & ~shared_lanes != 0:
                    log_pc[nlog] = p
                    log_mask[nlog] = (em & ~shared_lanes) | (np.int64(1) << 32)
                    for lane in range(LANES):
                        log_addr[nlog, lane] = addrs[lane]
                    nlog += 1
        elif opc == T.XROW:                     # xcall.x_c: gathers, computes, writes back
            if em != 0 and (mptr[XSLOT] == 0 or call_x(mptr[XSLOT], em, data_ptr(row), data_ptr(imrow), parena,
                                                       narena, pscratch) != 0):
                handback = True                 # a lane breaks a rule (nothing was written), or x_c is not
                break                           # compiled yet (families.APART): the reference executor runs it
        elif opc == T.ATOM or opc == T.WGMMA or opc == T.STMATRIX or opc == T.HOPX or opc == T.BULKX:
            # the rows a plain sm_80 kernel rarely has: rarecall.rare_c, compiled apart (slot 0: not bound, the
            # reference executor runs the row); -1: handed back, -2: the warp stops (its status set)
            if mptr[RSLOT] == 0:
                handback = True
                break
            ctx[C.K_P] = p
            ctx[C.K_M] = m
            ctx[C.K_NLOG] = nlog
            got = call_family(mptr[RSLOT], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch)
            if got == -1:
                handback = True
                break
            if got == -2:
                break
            nlog = got
        elif opc != T.NOP and (em != 0 or opc == T.MMA or opc == T.MMA_X or
                                                                     opc == T.LDMATRIX):
            # a family compiled apart (families.py), through its address; slot 0: not compiled (yet), the
            # reference executor runs the row
            slot = FAMSLOT[opc]
            if slot < 0 or mptr[slot] == 0:
                handback = True
                break
            if slot == MMA_SLOT or slot == MMAX_SLOT or slot == LDM_SLOT:
                if em != 0xFFFFFFFF:           # .sync.aligned: all 32 lanes (the reference names who is missing)
                    handback = True
                    break
                if slot == LDM_SLOT and nlog >= log_pc.shape[0]:
                    handback = True
                    break
            ctx[C.K_P] = p
            ctx[C.K_NLOG] = nlog
            if call_family(mptr[slot], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch) != 0:
                handback = True                 # a lane breaks a rule, or a special value: nothing was written
                break
            if slot == CP_SLOT:
                nlog = ctx[C.K_NLOG]
            elif slot == LDM_SLOT:              # ldmatrix: the addresses it read (scratch row 2)
                log_pc[nlog] = p
                log_mask[nlog] = (1 << (8 * row[T.Y])) - 1
                for lane in range(LANES):
                    log_addr[nlog, lane] = addrs[lane]
                nlog += 1
        for lane in range(LANES):               # (no branch: the compiler makes it a few vector adds)
            pc[lane] += (m >> lane) & 1
        if together:
            p += 1
        else:
            p = -1
    if handback:
        budget += 1
        issued -= 1
        executed -= 1
        state[T.S_STATUS] = T.ST_SLOW
        state[T.S_PC] = p
        state[T.S_MASK] = m
    state[T.S_BUDGET] = budget
    state[T.S_ISSUED] = issued
    state[T.S_NLOG] = nlog
    state[T.S_BACK] = back
    state[T.S_EXECUTED] += executed


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst):
    """machine.cta.CTA._check_barriers: release every barrier all non-exited threads (or the thread count of its
    first arrival, cst[C_BARCNT + b]) arrived at."""
    pending = False
    for bid in range(16):
        if bar_seq[bid] != 0:
            pending = True
    if not pending:             # no barrier has an arrival: nothing to release (no count of the threads)
        return
    nw = exited.shape[0]
    expected = 0
    for w in range(nw):
        for lane in range(LANES):
            if not exited[w, lane]:
                expected += 1
    for bid in range(16):
        want = cst[T.C_BARCNT + bid]
        if want < 0:
            want = expected
        if bar_seq[bid] != 0 and bar_arrived[bid] != 0 and bar_arrived[bid] >= want:
            for w in range(nw):
                for lane in range(LANES):
                    if waiting[w, lane] and wbid[w, lane] == bid:
                        waiting[w, lane] = False
                        wbid[w, lane] = -1
            bar_arrived[bid] = 0
            bar_seq[bid] = 0
            cst[T.C_BARCNT + bid] = -1


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _runnable(exited, waiting, w):
    for lane in range(LANES):
        if not exited[w, lane] and not waiting[w, lane]:
            return True
    return False


@njit(cache=True, _nrt=False, pipeline_class=LEAN, **INNER)
def _pump(mptr, state, code, imm, arenas, scratch):
    """bulkx.pump through bulkcall.bulk_c: 0 no copy staged, 1 they completed, 2 Python completes them."""
    return call_hop(mptr[BSLOT], PUMP, state.ctypes.data, code[0].ctypes.data, imm[0].ctypes.data,
                    arenas[0].ctypes.data, arenas.shape[1], scratch.ctypes.data)


@njit(cache=True, _nrt=False, no_cfunc_wrapper=True, pipeline_class=LEAN)
def run_cta(code, imm, arenas, pcs, exited, waiting, inflight, gtab, state, log_pc, log_addr, log_mask, log_warp,
            scratch, cst, issued, executed, param_ptrs, wbid, bar_arrived, bar_seq, backs, mptr, cpd, cpx, cpg, cpm,
            cpc, mbw, ysnap):
    """A whole CTA as machine.cta.CTA._run schedules it: warp 0, 1, ... in turn, each until none of its lanes
    can run; barriers (BAR rows) arrive and release here. Returns (cst[C_STATUS]) when every thread exited,
    when warp cst[C_WARP] needs Python for the instruction at state S_PC (lanes S_MASK) or a full log, or
    when no warp can go on (a deadlock, which Python reports). Resumes where it returned."""
    nw = arenas.shape[0]
    state[T.S_CTA] = 1
    _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)    # an exit run by Python may release one
    woken = np.int64(-1)        # the mbarrier changes (S_MBAR_CHANGED) the last wake pass saw: -1, none yet
    # where ctaloop.cta_c (compiled apart: only kernels that can wait bind it) finds the CTA's arrays
    ctx = reinterpret(scratch[C.CTX_ROW:].reshape(C.NCTX), np.int64)
    ctx[C.K_CTA_STATE] = data_ptr(state)
    ctx[C.K_CTA_CST] = data_ptr(cst)
    ctx[C.K_CTA_NW] = nw
    ctx[C.K_CTA_WAITING] = data_ptr(waiting)
    ctx[C.K_CTA_MBW] = data_ptr(mbw)
    ctx[C.K_CTA_ARENAS] = data_ptr(arenas)
    ctx[C.K_CTA_AB] = arenas.shape[1]
    ctx[C.K_CTA_YSNAP] = data_ptr(ysnap)
    ctx[C.K_CTA_YB] = ysnap.shape[1]
    ctx[C.K_CTA_PCS] = data_ptr(pcs)
    ctx[C.K_CTA_EXITED] = data_ptr(exited)
    ctx[C.K_CTA_CODE] = data_ptr(code)
    ctx[C.K_CTA_NCODE] = code.shape[0]
    psc = data_ptr(scratch)
    while True:
        w = cst[T.C_WARP]
        if w >= nw:
            done = True
            for i in range(nw):
                for lane in range(LANES):
                    if not exited[i, lane]:
                        done = False
            if done:
                if state[T.S_BULK] != 0 and mptr[BSLOT] != 0:      # the copies still in flight complete (bulkx.pump)
                    _pump(mptr, state, code, imm, arenas, scratch)
                cst[T.C_STATUS] = T.CTA_DONE
                return
            # machine.cta.CTA._run's round end: progress or a changed mbarrier starts a new round; else the copies
            # in flight complete (the staged ones here, bulkx.pump; the async unit's own in Python), or a warp that
            # yielded with its state changed starts one
            pumped = 0
            if cst[T.C_PROGRESSED] == 0 and cst[T.C_VERCHG] == 0 and state[T.S_BULK] != 0 and mptr[BSLOT] != 0:
                pumped = _pump(mptr, state, code, imm, arenas, scratch)
            if cst[T.C_PROGRESSED] != 0 or cst[T.C_VERCHG] != 0 or pumped == 1 or \
                    (pumped == 0 and cst[T.C_YIELDED] != 0 and cst[T.C_ASYNC] == 0):
                cst[T.C_PROGRESSED] = 0
                cst[T.C_VERCHG] = 0
                cst[T.C_YIELDED] = 0
                cst[T.C_WARP] = 0
                continue
            cst[T.C_STATUS] = T.CTA_DEADLOCK
            return
        if cst[T.C_INWARP] == 0:
            if cst[T.C_NSTALL] > 0 and state[T.S_MBAR_CHANGED] != woken:
                # CTA._wake: the mbarrier stalls whose phase completed (ctaloop.py); with no mbarrier changed since the
                # last pass (a stall is recorded on a phase not completed) none can have
                call_cta(mptr[CSLOT], OP_WAKE, 0, psc)
                woken = state[T.S_MBAR_CHANGED]
            if state[T.S_WG] != 0:          # a wgmma.wait_group whose records the warpgroup computed since
                wake = call_wg(mptr[WSLOT], -2, w, 0, state[T.S_WG], state.ctypes.data)
                for lane in range(LANES):
                    if (wake >> lane) & 1:
                        waiting[w, lane] = False
            if not _runnable(exited, waiting, w):
                _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
                cst[T.C_WARP] = w + 1
                continue
            cst[T.C_INWARP] = 1
        state[T.S_ISSUED] = issued[w]
        state[T.S_BACK] = backs[w]
        state[T.S_PARAM_PTR] = param_ptrs[w]
        state[T.S_WARP] = w
        state[T.S_EXECUTED] = 0
        n0 = state[T.S_NLOG]
        c0 = state[T.S_MBAR_CHANGED]
        # the warp loop, compiled apart (its address in the ctx: numba does not link a second copy of it here)
        call_native(reinterpret(scratch[C.CTX_ROW:].reshape(C.NCTX), np.int64)[C.K_RUN],
                    (code, imm, arenas[w], pcs[w], exited[w], waiting[w], inflight, gtab, state, log_pc, log_addr,
                     log_mask, scratch, mptr, cpd[w], cpx[w], cpg[w], cpm[w], cpc[w]))
        issued[w] = state[T.S_ISSUED]
        backs[w] = state[T.S_BACK]
        executed[w] += state[T.S_EXECUTED]
        for k in range(n0, state[T.S_NLOG]):
            log_warp[k] = w
        if state[T.S_MBAR_CHANGED] != c0:
            cst[T.C_VERCHG] = 1
        st = state[T.S_STATUS]
        if st == T.ST_IDLE or st == T.ST_DEFER:
            cst[T.C_INWARP] = 0
            if st == T.ST_IDLE:
                cst[T.C_PROGRESSED] = 1
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
            cst[T.C_WARP] = w + 1
        elif st == T.ST_MBWAIT:                 # a try_wait parked lanes: the warp's turn ends, a yield
            cst[T.C_INWARP] = 0
            if call_cta(mptr[CSLOT], OP_STALL, w, psc) != 0:     # the stall recorded; a yield (ctaloop.cta_c)
                cst[T.C_YIELDED] = 1
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
            cst[T.C_WARP] = w + 1
        elif st == T.ST_WGWAIT:                 # (as machine.cta: the warp's turn ends)
            cst[T.C_INWARP] = 0
            if state[T.S_MBW] != 0:             # a yield, as above
                if call_cta(mptr[CSLOT], OP_YIELD, w, psc) != 0:
                    cst[T.C_YIELDED] = 1
            elif state[T.S_EXECUTED] > 1:       # (a sanitised launch, .param written: counted as progress)
                cst[T.C_PROGRESSED] = 1
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
            cst[T.C_WARP] = w + 1
        elif st == T.ST_EXITED:
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
        elif st == T.ST_BAR:
            row = code[state[T.S_PC]]
            bid = state[T.S_BAR_ID]             # (read and checked by loop.run: ctaloop.bar_operands)
            em = state[T.S_MASK]
            if bar_seq[bid] == 0:
                cst[T.C_SEQ] += 1
                bar_seq[bid] = cst[T.C_SEQ]
                cst[T.C_BARCNT + bid] = state[T.S_BAR_CNT]
            for lane in range(LANES):
                if (em >> lane) & 1:
                    bar_arrived[bid] += 1
                    if row[T.Y] == 0:
                        waiting[w, lane] = True
                        wbid[w, lane] = bid
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq, cst)
            if not _runnable(exited, waiting, w):   # the whole warp waits: its turn ends here, as the warp loop
                cst[T.C_INWARP] = 0                 # would end it at once (ST_IDLE) if called again
                cst[T.C_PROGRESSED] = 1
                cst[T.C_WARP] = w + 1
        else:
            cst[T.C_STATUS] = T.CTA_SLOW
            return
