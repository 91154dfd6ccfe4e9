"""The ldmatrix and stmatrix families of the fast engine (table: LDMATRIX, STMATRIX), as ``ops.datamove`` defines
them; compiled apart from the loops, each as one C-callable function (``entry``, ``entry_st``, ``ccall.SIG``;
``families.py``). The loop logs the access from the addresses the function leaves in scratch row 2."""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .memx import mark_generic, smem_write_ok
from .raw import _peek16, _poke
from .regs import I0, I32, _gather
from ...numerics.jitcache import INNER

IDX = T.INDEX_MASK
LANES = 32


@njit(cache=True, _nrt=False, **INNER)
def matrix_addresses(row, imrow, a32, a64, inflight, state, addrs):
    """The row addresses of an ldmatrix or stmatrix (lane 8j+r: row r of matrix j) into ``addrs``; False when a
    used lane's row address breaks a rule or its bytes are still in flight (cp.async): the reference then
    raises."""
    off = np.int64(imrow[T.IMM_OFFSET])
    e = row[T.A]                    # no register (-1), or a 32- or 64-bit one: read here (no _gather to compile)
    i = e & IDX
    if e == -1:
        for lane in range(LANES):
            addrs[lane] = off
    elif e >> T.CLASS_SHIFT == T.R32:
        for lane in range(LANES):
            addrs[lane] = (np.int64(a32[i + lane]) + off) & np.int64(0xFFFFFFFF)
    else:
        for lane in range(LANES):
            addrs[lane] = np.int64(a64[i + lane]) + off
    size = state[T.S_SMEM_SIZE]
    for lane in range(8 * row[T.Y]):
        a = addrs[lane]
        if a % 16 != 0 or a < 0 or a + 16 > size:
            return False
        if state[T.S_INFLIGHT] > 0:
            for b in range(16):
                if inflight[a + b] != 0:
                    return False
    return True


@njit(cache=True, _nrt=False, **INNER)
def _ldmatrix(row, imrow, a32, a64, inflight, state, addrs, out):
    """ldmatrix as ``ops.datamove`` defines it (lane 8j+r: row r of matrix j); False when a used lane's row
    address breaks a rule (the reference then raises)."""
    nmat = row[T.Y]
    trans = row[T.Z] == 1
    if not matrix_addresses(row, imrow, a32, a64, inflight, state, addrs):
        return False
    base = state[T.S_SMEM_PTR]
    for j in range(nmat):
        for lane in range(LANES):
            g, t = lane >> 2, lane & 3
            if trans:
                a0 = addrs[8 * j + 2 * t] + 2 * g
                a1 = addrs[8 * j + 2 * t + 1] + 2 * g
            else:
                a0 = addrs[8 * j + g] + 4 * t
                a1 = a0 + 2
            out[j, lane] = np.uint32(_peek16(base + a0) | (_peek16(base + a1) << np.uint64(16)))
    for j in range(nmat):
        e = row[T.V0 + j]
        if e >= 0:
            i = e & IDX
            for lane in range(LANES):
                a32[i + lane] = out[j, lane]
    return True


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when a used lane's row address breaks a rule."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    state = C.i64_1d(ctx[C.K_STATE], T.NSTATE)
    inflight = C.i32_1d(ctx[C.K_INFLIGHT], ctx[C.K_INFLIGHT_N])
    mtmp = C.u32_2d(pscratch + 8 * 8 * LANES, 4, LANES)           # scratch rows 8 and 9
    ok = _ldmatrix(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), C.reinterpret(a8, np.uint32),
                   C.reinterpret(a8, np.uint64), inflight, state, C.reinterpret(s[2], np.int64), mtmp)
    return 0 if ok else 1


@njit(cache=True, _nrt=False, **INNER)
def _stmatrix(row, imrow, a8, a16, a32, a64, inflight, state, addrs, xr):
    """stmatrix, the inverse of ldmatrix (``ops.datamove``); False (nothing written) when a used lane's row
    address breaks a rule, or its bytes are still in flight (cp.async) or read by an in-flight wgmma (the
    reference then raises)."""
    nmat = row[T.Y]
    trans = row[T.Z] == 1
    if not matrix_addresses(row, imrow, a32, a64, inflight, state, addrs):
        return False
    used = (np.int64(1) << (8 * nmat)) - 1
    if not smem_write_ok(state, addrs, used, 16):
        return False
    base = state[T.S_SMEM_PTR]
    for j in range(nmat):
        _gather(row[T.V0 + j], I32, I0, xr, a8, a16, a32, a64, imrow)
        for lane in range(LANES):
            g, t = lane >> 2, lane & 3
            v = xr[lane]
            if trans:
                a0 = addrs[8 * j + 2 * t] + 2 * g
                a1 = addrs[8 * j + 2 * t + 1] + 2 * g
            else:
                a0 = addrs[8 * j + g] + 4 * t
                a1 = a0 + 2
            _poke(base + a0, 2, v & np.uint64(0xFFFF))
            _poke(base + a1, 2, (v >> np.uint64(16)) & np.uint64(0xFFFF))
    mark_generic(state, addrs, used, 16)
    return True


def entry_st(em, prow, pimm, parena, n, pscratch):
    """The stmatrix family's C-callable body (ccall.SIG): 1 when nothing was written (the reference raises)."""
    a8 = C.u8_1d(parena, n)
    s = C.u64_2d(pscratch, C.NSCRATCH, LANES)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    state = C.i64_1d(ctx[C.K_STATE], T.NSTATE)
    inflight = C.i32_1d(ctx[C.K_INFLIGHT], ctx[C.K_INFLIGHT_N])
    ok = _stmatrix(C.i64_1d(prow, T.NFIELDS), C.u64_1d(pimm, T.NIMM), a8, C.reinterpret(a8, np.uint16),
                   C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64), inflight, state,
                   C.reinterpret(s[2], np.int64), s[6])
    return 0 if ok else 1
