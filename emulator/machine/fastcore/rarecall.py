"""The rows a plain sm_80 kernel rarely has, compiled apart from the warp loop ("rare" of ``families.APART``).

``loop.run`` hands every ATOM, WGMMA, STMATRIX, HOPX and BULKX row to one C-callable function, ``rare_c``
(the families' signature, ``ccall.SIG``), which does what the loop did with them before: each row still goes
on to its own function compiled apart (``xcall.atom_c``, ``wgcall.wg_c``, ``ldm.entry_st``, ``hopcall.hop_c``,
``bulkcall.bulk_c``; the atomics' addresses ``memplan.plan_c``), and this one only adds the glue around them (the
logs, the lanes that wait). So the warp loop, which every kernel compiles, types and
lowers none of that code; a kernel with such rows binds ``rare_c`` beside the functions its rows call
(``Translation.apart``), and while it is not bound the loop hands those rows back to the reference executors.

What the function needs besides its arguments it finds in the ctx (``ccall.K_*``): the launch's tables
(``loop.fill_ctx``, ``engine.fill_tables``), the row's PC and lanes and the log's length (``K_P``, ``K_M``,
``K_NLOG``, set by the loop before each call) and the warp's PCs and waiting flags (``K_PCS``, ``K_WAITING``). It
returns the log's new length (the row done), ``HANDBACK`` (nothing done: the reference executor runs the row) or
``STOP`` (the warp stops at the row, its status set in the state: a wgmma.wait_group or an mbarrier try_wait in
the CTA loop).
"""
import numpy as np
from numba import njit

from . import ccall as C
from . import table as T
from .asyncx import K_CL_ARRIVE, K_NOP, call_hop
from .atomics import call_atom
from .ccall import SIG, call_family, data_ptr  # noqa: F401 (SIG: families.APART's signature attribute)
from .families import APART_SLOT, SLOT
from .wgmmax import call_wg
from ...numerics.jitcache import INNER

LANES = 32
HANDBACK = -1
STOP = -2
ASLOT = APART_SLOT["atom"]
WSLOT = APART_SLOT["wgmma"]
HSLOT = APART_SLOT["hopper"]
BSLOT = APART_SLOT["bulk"]
CLSLOT = APART_SLOT["cluster"]
MSLOT = APART_SLOT["memplan"]
STM_SLOT = SLOT["stmatrix"]


@njit(cache=True, **INNER)
def _rare(row, imrow, p, m, em, pc, waiting, state, parena, narena, pscratch, addrs, mptr, log_pc, log_addr, log_mask,
          nlog, wide):
    opc = row[T.OP]
    if opc == T.ATOM:
        if em != 0:
            if mptr[ASLOT] == 0 or mptr[MSLOT] == 0:        # atom_c or plan_c not compiled yet
                return HANDBACK
            # the addresses: memplan.plan_c (through its address, so that this function links none of its code)
            shared_lanes = call_family(mptr[MSLOT], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch)
            if shared_lanes < 0:
                return HANDBACK
            call_atom(mptr[ASLOT], em, shared_lanes, data_ptr(row), data_ptr(imrow), parena, narena,
                      pscratch)                 # xcall.atom_c; the addresses in scratch[7] (xq)
            if shared_lanes != 0:
                log_pc[nlog] = p
                log_mask[nlog] = shared_lanes
                for lane in range(LANES):
                    log_addr[nlog, lane] = addrs[lane]
                nlog += 1
    elif opc == T.WGMMA:                        # wgcall.wg_c (wgmmax.py), in the CTA loop only
        if state[T.S_WG] == 0 or mptr[WSLOT] == 0:
            return HANDBACK
        got = call_wg(mptr[WSLOT], p, state[T.S_WARP], em, state[T.S_WG], data_ptr(state))
        if got == 1:
            return HANDBACK
        if got == 2:                            # wait_group: the lanes wait for the warpgroup (counted as issued)
            for lane in range(LANES):
                if (m >> lane) & 1:
                    waiting[lane] = True
            state[T.S_STATUS] = T.ST_WGWAIT
            state[T.S_PC] = p
            state[T.S_MASK] = m
            return STOP
    elif opc == T.STMATRIX:                     # the stmatrix family (ldm.entry_st); the addresses in scratch row 2
        if em != 0xFFFFFFFF or wide == 1 or nlog >= log_pc.shape[0] or mptr[STM_SLOT] == 0 or \
                call_family(mptr[STM_SLOT], em, data_ptr(row), data_ptr(imrow), parena, narena, pscratch) != 0:
            return HANDBACK
        log_pc[nlog] = p
        log_mask[nlog] = (1 << (8 * row[T.Y])) - 1
        for lane in range(LANES):
            log_addr[nlog, lane] = addrs[lane]
        nlog += 1
    elif opc == T.HOPX:                         # hopcall.hop_c (asyncx.py)
        if em != 0 and wide == 1:
            return HANDBACK                     # a sanitised launch
        if em != 0 and row[T.X] != K_NOP:
            slot = HSLOT if row[T.X] < K_CL_ARRIVE else CLSLOT     # (clusterx.cl_c: barrier.cluster, getctarank)
            if mptr[slot] == 0:
                return HANDBACK                 # hop_c (cl_c) is not compiled yet (families.APART)
            got = call_hop(mptr[slot], em, data_ptr(state), data_ptr(row), data_ptr(imrow), parena, narena,
                           pscratch)
            if got == 2:                        # a try_wait (barrier.cluster.wait) in the CTA loop: lanes S_MBSTALL
                #                                 wait (ctaloop.py)
                stall = state[T.S_MBSTALL]
                for lane in range(LANES):
                    if (m >> lane) & 1:
                        if (stall >> lane) & 1:
                            waiting[lane] = True
                        else:
                            pc[lane] += 1
                state[T.S_STATUS] = T.ST_MBWAIT
                state[T.S_PC] = p
                state[T.S_MASK] = stall
                return STOP
            if got != 0:
                return HANDBACK                 # a lane breaks a rule (nothing was written)
    elif opc == T.BULKX:                        # bulkcall.bulk_c (bulkx.py): TMA box copies
        if em != 0:
            if wide == 1 or mptr[BSLOT] == 0 or call_hop(mptr[BSLOT], em, data_ptr(state), data_ptr(row),
                                                          data_ptr(imrow), parena, narena, pscratch) != 0:
                return HANDBACK                 # the executor runs it (a rule broken, a form the rows leave,
                #                                 bulk_c not compiled yet)
    return nlog


def rare_c(em, prow, pimm, parena, n, pscratch):
    """The C-callable body (ccall.SIG): the log's new length, HANDBACK or STOP (the module's docstring)."""
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    cap = ctx[C.K_LOG_N]
    return _rare(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), ctx[C.K_P], ctx[C.K_M], em,
                 C.i64_1d(ctx[C.K_PCS], LANES), C.b1_2d(ctx[C.K_WAITING], 1, LANES)[0],
                 C.i64_1d(ctx[C.K_STATE], T.NSTATE), parena, n, pscratch, C.reinterpret(s[2], np.int64),
                 C.i64_1d(ctx[C.K_MPTR], ctx[C.K_NPTR]), C.i64_1d(ctx[C.K_LOG_PC], cap),
                 C.i64_2d(ctx[C.K_LOG_ADDR], cap, ctx[C.K_LOG_W]), C.i64_1d(ctx[C.K_LOG_MASK], cap), ctx[C.K_NLOG],
                 1 if ctx[C.K_LOG_W] > LANES else 0)
