"""Whole-GEMM fast path for the tensor-core forms: operands decoded once, rows in parallel, each step
vectorised across the N columns.  Bit-identical to issuing the instructions one by one: every output
element runs the same chain of T-FDPA steps (ascending k, ``L`` products per step, rounded to the D format
in between), which is all an instruction sequence with D fed back as C does to it.

Elements whose row or column holds an inf or NaN, whose C is one, or whose accumulator overflows to inf,
are recomputed by the scalar per-element chain ``chain_element``.
"""
import numpy as np
from numba import njit, prange

from . import fast
from .fast import INF, NAN, NUM, PRE, ZQ, _special_step, decode, encode

_BR, _BC = 32, 256      # rows x columns of one parallel task (its B slices stay in cache)


@njit(cache=True)
def _decode_matrix(bits, fmt, S, q, t, special, by_row):
    R, C = bits.shape
    for r in range(R):
        for c in range(C):
            kk, ss, mm, qq, tt = decode(np.int64(bits[r, c]), fmt)
            if (fmt == 4 or fmt == 5) and mm != 0:
                tt = max(qq + fast.bit_length(mm) - 1, -14)
            S[r, c] = -mm if ss else mm
            if kk != NUM:
                qq = ZQ
                tt = ZQ
                special[r if by_row else c] = True
            q[r, c] = qq
            t[r, c] = tt


@njit(cache=True)
def chain_element(arow, bcol, cbits, L, fa, fb, fc, fd, F, e_zero, mode):
    """One output element through all K steps, special values included (scalar, exact)."""
    K = arow.shape[0]
    dbits = np.int64(cbits)
    dfmt = fc
    aS = np.empty(L, np.int64); aq = np.empty(L, np.int64); at = np.empty(L, np.int64)
    bS = np.empty(L, np.int64); bq = np.empty(L, np.int64); bt = np.empty(L, np.int64)
    ar = np.empty(L, np.int64); br = np.empty(L, np.int64)
    emax = np.empty(1, np.int64); acc = np.empty(1, np.int64)
    cS = np.empty(1, np.int64); cq = np.empty(1, np.int64); ct = np.empty(1, np.int64)
    for k0 in range(0, K, L):
        special = False
        for j in range(L):
            ka, sa, Ma, qa, ta = decode(np.int64(arow[k0 + j]), fa)
            kb, sb, Mb, qb, tb = decode(np.int64(bcol[k0 + j]), fb)
            special |= ka != NUM or kb != NUM
            ar[j] = arow[k0 + j]
            br[j] = bcol[k0 + j]
            aS[j] = -Ma if sa else Ma; aq[j] = qa if ka == NUM else ZQ; at[j] = ta if ka == NUM else ZQ
            bS[j] = -Mb if sb else Mb; bq[j] = qb if kb == NUM else ZQ; bt[j] = tb if kb == NUM else ZQ
        ck, cs, cM, cqq, ctt = decode(dbits, dfmt)
        if special or ck != NUM:
            dbits = _special_step(ar, br, 0, 1, 0, 1, L, fa, fb, ck, cs, fd)
        else:
            cS[0] = -cM if cs else cM
            cq[0] = cqq
            ct[0] = ctt
            fast.tc_row_step(aS, aq, at, 0, bS, bq, bt, 0, 1, L, cS, cq, ct, F, e_zero, emax, acc)
            s = acc[0]
            dbits = encode(1 if s < 0 else 0, -s if s < 0 else s, emax[0] - F, fd, mode, 0)
        dfmt = fd
    return dbits


@njit(cache=True)
def _emax_init(emax, ct, e_zero):
    for n in range(emax.shape[0]):
        emax[n] = ct[n] if ct[n] > e_zero else e_zero


@njit(cache=True)
def _emax_update(ea, btr, emax):
    for n in range(emax.shape[0]):
        e = ea + btr[n]
        emax[n] = e if e > emax[n] else emax[n]


@njit(cache=True)
def _acc_init(acc, cS, cq, emax, F):
    """The accumulator, truncated toward zero F bits below the alignment point."""
    for n in range(acc.shape[0]):
        sh = cq[n] + F - emax[n]
        mg = -cS[n] if cS[n] < 0 else cS[n]
        mg = mg << sh if sh >= 0 else mg >> min(-sh, 63)
        acc[n] = -mg if cS[n] < 0 else mg


@njit(cache=True)
def _acc_update(sa, qa, bSr, bqr, emax, acc):
    """Add the products of one k: each truncated toward zero the same way (RZ per term)."""
    for n in range(acc.shape[0]):
        p = sa * bSr[n]
        r = min(emax[n] - qa - bqr[n], 63)
        msk = p >> 63
        mag = ((p ^ msk) - msk) << PRE >> r
        acc[n] += (mag ^ msk) - msk


@njit(cache=True)
def _round_row(acc, emax, F, fd, mode, cS, cq, ct, redo_row):
    """One rounding per step to the D format, kept decoded (significand, last place, nominal exponent)."""
    eb, mb, w = fast.fmt_info(fd)
    p = mb + 1
    bias = (1 << (eb - 1)) - 1
    qmin = 1 - bias - mb
    qmax = (1 << eb) - 2 - bias - mb           # last-place exponent of the largest binade
    for n in range(acc.shape[0]):
        s = acc[n]
        mag = -s if s < 0 else s
        lsb = emax[n] - F
        top = lsb + 63 - fast.clz64(mag)
        qq = max(top - (p - 1), qmin)
        sh = qq - lsb
        if sh <= 0:
            r = mag << -sh
        else:
            sh2 = min(sh, 63)
            r = mag >> sh2
            if mode == fast.RNE:
                rem = mag - (r << sh2)
                half = np.int64(1) << (sh2 - 1)
                r += 1 if (rem > half or (rem == half and (r & 1) == 1)) else 0
        if r >> p:
            r >>= 1
            qq += 1
        if r == 0:
            cS[n] = 0
            cq[n] = ZQ
            ct[n] = ZQ
        else:
            cS[n] = -r if s < 0 else r
            cq[n] = qq
            ct[n] = qq + mb if r >> mb else 1 - bias
            if qq > qmax:
                redo_row[n] = True


@njit(cache=True)
def _block(m0, m1, n0, n1, aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo):
    """Rows m0..m1, columns n0..n1, all K steps.  The block's accumulators stay decoded between steps
    and each step's slice of B is reused by every row of the block while it is in cache."""
    K = bS.shape[0]
    R = m1 - m0
    W = n1 - n0
    cS = np.empty((R, W), np.int64); cq = np.empty((R, W), np.int64); ct = np.empty((R, W), np.int64)
    emax = np.empty(W, np.int64); acc = np.empty(W, np.int64)
    for i in range(R):
        for n in range(W):
            kk, ss, mm, qq, tt = decode(np.int64(cbits[m0 + i, n0 + n]), fc)
            cS[i, n] = -mm if ss else mm
            cq[i, n] = qq if kk == NUM else ZQ
            ct[i, n] = tt if kk == NUM else ZQ
            if kk != NUM:
                redo[m0 + i, n0 + n] = True
    for k0 in range(0, K, L):
        for i in range(R):
            m = m0 + i
            _emax_init(emax, ct[i], e_zero)
            for j in range(L):
                _emax_update(at[m, k0 + j], bt[k0 + j, n0:n1], emax)
            _acc_init(acc, cS[i], cq[i], emax, F)
            for j in range(L):
                _acc_update(aS[m, k0 + j], aq[m, k0 + j] - PRE + F, bS[k0 + j, n0:n1], bq[k0 + j, n0:n1],
                            emax, acc)
            _round_row(acc, emax, F, fd, mode, cS[i], cq[i], ct[i], redo[m, n0:n1])
    for i in range(R):
        for n in range(W):
            s = cS[i, n]
            if s == 0:
                out[m0 + i, n0 + n] = 0
            else:
                out[m0 + i, n0 + n] = encode(1 if s < 0 else 0, -s if s < 0 else s, cq[i, n], fd, fast.RZ, 0)


@njit(cache=True, parallel=True)
def _gemm_par(aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo):
    M = aS.shape[0]
    N = bS.shape[1]
    nrb = (M + _BR - 1) // _BR
    ncb = (N + _BC - 1) // _BC
    for blk in prange(nrb * ncb):
        m0 = (blk // ncb) * _BR
        n0 = (blk % ncb) * _BC
        _block(m0, min(M, m0 + _BR), n0, min(N, n0 + _BC), aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero,
               mode, out, redo)


@njit(cache=True)
def _fixups(abits, bbits, cbits, spa, spb, redo, fa, fb, fc, fd, L, F, e_zero, mode, out):
    M, N = out.shape
    for m in range(M):
        for n in range(N):
            if spa[m] or spb[n] or redo[m, n]:
                out[m, n] = chain_element(abits[m], bbits[:, n], cbits[m, n], L, fa, fb, fc, fd, F, e_zero,
                                          mode)


def tc_gemm(abits, bbits, cbits, op):
    """D bits (M, N) of the GEMM built from the tensor-core instruction ``op`` (an MmaOp)."""
    prm = op._prm
    fa, fb, fc, fd = (int(x) for x in prm[3:7])
    L, F, e_zero, mode = (int(x) for x in prm[15:19])
    M, K = abits.shape
    N = bbits.shape[1]
    aS = np.empty((M, K), np.int64); aq = np.empty((M, K), np.int64); at = np.empty((M, K), np.int64)
    bS = np.empty((K, N), np.int64); bq = np.empty((K, N), np.int64); bt = np.empty((K, N), np.int64)
    spa = np.zeros(M, np.bool_)
    spb = np.zeros(N, np.bool_)
    abits = np.ascontiguousarray(abits, np.uint64)
    bbits = np.ascontiguousarray(bbits, np.uint64)
    cbits = np.ascontiguousarray(cbits, np.uint64)
    _decode_matrix(abits, fa, aS, aq, at, spa, True)
    _decode_matrix(bbits, fb, bS, bq, bt, spb, False)
    out = np.empty((M, N), np.uint64)
    redo = np.zeros((M, N), np.bool_)
    _gemm_par(aS, aq, at, bS, bq, bt, cbits, fc, fd, L, F, e_zero, mode, out, redo)
    if spa.any() or spb.any() or redo.any():
        _fixups(abits, np.ascontiguousarray(bbits), cbits, spa, spb, redo, fa, fb, fc, fd, L, F, e_zero, mode, out)
    return out
