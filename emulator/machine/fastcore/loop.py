"""The jitted loop: runs one warp over the translated code until it meets an instruction it hands back.

Values are raw bits held as uint64 (every integer constant is typed explicitly: numba turns mixed
uint64/int64 arithmetic into float64). Any lane that would break a rule (misaligned or out-of-range
address, an in-flight cp.async destination, the instruction budget) sends the instruction back to the
reference executor, which raises the error the reference defines.
"""
import numpy as np
from numba import njit

from . import table as T
from .raw import _allocation, _mask, _peek, _peek16, _poke, _sext  # noqa: F401 (raw memory access, shared with cpasync)
from .cpasync import cp_step
from ...numerics.gemm_fast import tc_one_noalloc
from .fmath import call_rows, TABLES as _TABLES
from .memx import mark_generic, smem_write_ok
from .scalarx import call_x
from .atomics import call_atom
from .asyncx import K_NOP, call_hop

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
IDX = T.INDEX_MASK
CANON32 = np.uint32(0x7FFFFFFF)
LANES = 32
XSLOT = len(_TABLES)        # translation.mufu_ptr: the addresses of xcall.x_c and xcall.atom_c
ASLOT = len(_TABLES) + 1
HSLOT = len(_TABLES) + 2   # translation.mufu_ptr: the address of hopcall.hop_c (HOPX rows)


@njit(cache=True, inline="always")
def _cwidth(c):
    if c == T.R32:
        return 32
    if c == T.R64:
        return 64
    if c == T.R16:
        return 16
    return 1


@njit(cache=True, _nrt=False)
def _rd(e, lane, a8, a16, a32, a64, im):
    if e < -1:
        return im[-2 - e]
    c = e >> T.CLASS_SHIFT
    i = (e & IDX) + lane
    if c == T.R32:
        return np.uint64(a32[i])
    if c == T.R64:
        return a64[i]
    if c == T.R16:
        return np.uint64(a16[i])
    return np.uint64(a8[i])


@njit(cache=True, _nrt=False)
def _rdf(e, lane, tw, sgn, a8, a16, a32, a64, im):
    """A source read as a tw-bit typed value (``ops.common.src``: truncate, or extend a narrower register)."""
    raw = _rd(e, lane, a8, a16, a32, a64, im)
    if e < -1:
        return raw
    rw = _cwidth(e >> T.CLASS_SHIFT)
    if tw == 1:
        return U1 if raw != U0 else U0
    if sgn and tw > rw and rw > 1:
        raw = _sext(raw, rw)
    return raw & _mask(tw)


@njit(cache=True, _nrt=False)
def _wrf(e, lane, v, tw, sgn, a8, a16, a32, a64):
    """Write a tw-bit value into a register (``ops.common.dst``: truncate, or extend by signedness)."""
    if e < 0:
        return
    c = e >> T.CLASS_SHIFT
    i = (e & IDX) + lane
    if c == T.PRED:
        a8[i] = 1 if v != U0 else 0
        return
    rw = _cwidth(c)
    if sgn and rw > tw:
        v = _sext(v, tw)
    if c == T.R32:
        a32[i] = np.uint32(v & np.uint64(0xFFFFFFFF))
    elif c == T.R64:
        a64[i] = v
    else:
        a16[i] = np.uint16(v & np.uint64(0xFFFF))


@njit(cache=True, _nrt=False)
def _mulhi_u64(a, b):
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1 = a & m32, a >> s32
    b0, b1 = b & m32, b >> s32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    return p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)


@njit(cache=True, _nrt=False)
def _mulhi(a, b, w, sgn):
    if w == 64:
        h = _mulhi_u64(a, b)
        if sgn:
            if np.int64(a) < 0:
                h -= b
            if np.int64(b) < 0:
                h -= a
        return h
    if sgn:
        p = np.int64(_sext(a, w)) * np.int64(_sext(b, w))
        return np.uint64(p >> np.int64(w)) & _mask(w)
    return ((a * b) >> np.uint64(w)) & _mask(w)


@njit(cache=True, _nrt=False)
def _cmp(code, a, b, w, sgn, flt, fu32, ff32, fu64, ff64):
    if flt:
        if flt == 1:
            fu32[0] = np.uint32(a)
            fu32[1] = np.uint32(b)
            x, y = np.float64(ff32[0]), np.float64(ff32[1])
        else:
            fu64[0] = a
            fu64[1] = b
            x, y = ff64[0], ff64[1]
        un = (x != x) or (y != y)
        if code == 16:          # num
            return not un
        if code == 17:          # nan
            return un
        base = code if code < 10 else code - 10
        if base == 0:
            r = x == y
        elif base == 1:
            r = x != y
        elif base == 2:
            r = x < y
        elif base == 3:
            r = x <= y
        elif base == 4:
            r = x > y
        else:
            r = x >= y
        if code >= 10:
            return r or un
        return r and not un
    if code == 0:
        return a == b
    if code == 1:
        return a != b
    if code >= 6:               # lo ls hi hs: unsigned
        code -= 4
    elif sgn:
        x, y = np.int64(_sext(a, w)), np.int64(_sext(b, w))
        if code == 2:
            return x < y
        if code == 3:
            return x <= y
        if code == 4:
            return x > y
        return x >= y
    if code == 2:
        return a < b
    if code == 3:
        return a <= b
    if code == 4:
        return a > b
    return a >= b


@njit(cache=True, _nrt=False)
def _bool(op, r, c):
    if op == 1:
        return r and c
    if op == 2:
        return r or c
    if op == 3:
        return r != c
    return r


@njit(cache=True, _nrt=False)
def _f32bits(x, fu32, ff32):
    ff32[2] = x
    if x != x:
        return np.uint64(CANON32)
    return np.uint64(fu32[2])


@njit(cache=True, _nrt=False)
def _ffma32(a, b, c, fu64, ff64):
    """fma.rn.f32 as the reference computes it: exact product in binary64, two-sum with c, the error folded
    in by rounding to odd, one rounding to binary32."""
    p = np.float64(a) * np.float64(b)
    cc = np.float64(c)
    s = p + cc
    if s - s == 0.0:                       # finite
        bb = s - p
        e = (p - (s - bb)) + (cc - bb)
        if e != 0.0:
            ff64[2] = s
            bits = fu64[2]
            if (bits & U1) == U0:
                if (e > 0.0) == (s > 0.0):
                    fu64[2] = bits + U1
                else:
                    fu64[2] = bits - U1
                s = ff64[2]
    return np.float32(s)


@njit(cache=True, _nrt=False)
def _mem_plan(row, imrow, m, a8, a16, a32, a64, inflight, gtab, state, addrs, ptrs):
    """Addresses of every lane and, for the active ones, the raw host address of the access (``ptrs``).
    Returns the lanes that access shared memory, or -1 when an active lane needs the reference's checks
    (alignment, bounds, a cp.async destination in flight, an address outside every allocation)."""
    nbytes = row[T.Y] * row[T.Z]
    space = row[T.X]
    off = np.int64(imrow[T.IMM_OFFSET])
    base = row[T.A]
    if base == -1:
        for lane in range(LANES):
            addrs[lane] = off
    else:
        _gather(base, 64, 0, ptrs, a8, a16, a32, a64, imrow)     # zero-extended register, as int64
        wrap = np.int64(0xFFFFFFFF) if base >> T.CLASS_SHIFT == T.R32 else np.int64(-1)   # 32 bits wrap at 2^32
        for lane in range(LANES):
            addrs[lane] = (np.int64(ptrs[lane]) + off) & wrap
    smem_size = state[T.S_SMEM_SIZE]
    shared = 0
    k = state[T.S_LASTALLOC]
    for lane in range(LANES):
        if not (m >> lane) & 1:
            continue
        a = addrs[lane]
        if a % nbytes != 0:
            return -1
        sp = space
        if sp == T.GENERIC:
            sp = T.SHARED if 0 <= a < smem_size else T.GLOBAL
        if sp == T.SHARED:
            if a < 0 or a + nbytes > smem_size:
                return -1
            if state[T.S_INFLIGHT] > 0:
                for b in range(nbytes):
                    if inflight[a + b] != 0:
                        return -1
            shared |= 1 << lane
            ptrs[lane] = np.uint64(state[T.S_SMEM_PTR] + a)
        elif sp == T.GLOBAL:
            if a < 0:
                return -1
            k = _allocation(gtab, state, k, a, nbytes)
            if k < 0:
                return -1
            ptrs[lane] = np.uint64(gtab[k, 2] + (a - gtab[k, 0]))
        else:
            if a < 0 or a + nbytes > state[T.S_PARAM_SIZE]:
                return -1
            ptrs[lane] = np.uint64(state[T.S_PARAM_PTR] + lane * state[T.S_PARAM_SIZE] + a)
    return shared


@njit(cache=True, _nrt=False)
def _gather(e, tw, sgn, out, a8, a16, a32, a64, im):
    """All 32 lanes of a source read as tw-bit typed values (``ops.common.src``)."""
    if e < -1:
        v = im[-2 - e]
        for lane in range(LANES):
            out[lane] = v
        return
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    if c == T.R32:
        for lane in range(LANES):
            out[lane] = np.uint64(a32[i + lane])
        rw = 32
    elif c == T.R64:
        for lane in range(LANES):
            out[lane] = a64[i + lane]
        rw = 64
    elif c == T.R16:
        for lane in range(LANES):
            out[lane] = np.uint64(a16[i + lane])
        rw = 16
    else:
        for lane in range(LANES):
            out[lane] = np.uint64(a8[i + lane] != 0)
        rw = 1
    if tw == 1:
        for lane in range(LANES):
            out[lane] = U1 if out[lane] != U0 else U0
    elif sgn and tw > rw and rw > 1:
        for lane in range(LANES):
            out[lane] = _sext(out[lane], rw) & _mask(tw)
    elif tw < rw:
        mk = _mask(tw)
        for lane in range(LANES):
            out[lane] &= mk


@njit(cache=True, _nrt=False)
def _scatter(e, vals, em, tw, sgn, a8, a16, a32, a64):
    """Write tw-bit values to the lanes in ``em`` of a register (``ops.common.dst``)."""
    if e < 0:
        return
    c = e >> T.CLASS_SHIFT
    i = e & IDX
    if c == T.PRED:
        for lane in range(LANES):
            if (em >> lane) & 1:
                a8[i + lane] = 1 if vals[lane] != U0 else 0
        return
    rw = _cwidth(c)
    ext = sgn and rw > tw
    for lane in range(LANES):
        if (em >> lane) & 1:
            v = vals[lane]
            if ext:
                v = _sext(v, tw)
            if c == T.R32:
                a32[i + lane] = np.uint32(v & np.uint64(0xFFFFFFFF))
            elif c == T.R64:
                a64[i + lane] = v
            else:
                a16[i + lane] = np.uint16(v & np.uint64(0xFFFF))


@njit(cache=True, _nrt=False)
def _alu(opc, row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq, fu32, ff32, fu64, ff64):
    """One ALU instruction on the lanes in ``em``: gather the sources, compute every lane, write back."""
    w = row[T.W]
    sgn = row[T.SGN]
    mk = _mask(w)
    ea, eb, ec = row[T.A], row[T.B], row[T.C]
    tw = w
    if opc == T.SETP:
        _gather(ea, w, sgn, xa, a8, a16, a32, a64, imrow)
        _gather(eb, w, sgn, xb, a8, a16, a32, a64, imrow)
        bop = row[T.Y]
        if bop != 0:
            _gather(ec, 1, 0, xc, a8, a16, a32, a64, imrow)
        code, flt, cneg = row[T.X], row[T.FLT], row[T.CNEG] == 1
        for lane in range(LANES):
            r = _cmp(code, xa[lane], xb[lane], w, sgn, flt, fu32, ff32, fu64, ff64)
            c = (xc[lane] != U0) != cneg if bop != 0 else False
            xr[lane] = U1 if _bool(bop, r, c) else U0
            xq[lane] = U1 if _bool(bop, not r, c) else U0
        _scatter(row[T.D], xr, em, 1, 0, a8, a16, a32, a64)
        _scatter(row[T.Z], xq, em, 1, 0, a8, a16, a32, a64)
        return
    _gather(ea, w, sgn, xa, a8, a16, a32, a64, imrow)
    if opc == T.MOV:
        _scatter(row[T.D], xa, em, w, sgn, a8, a16, a32, a64)
        return
    if opc == T.CVT_II:
        tw = row[T.X]
        mt = _mask(tw)
        for lane in range(LANES):
            x = xa[lane]
            if sgn:
                x = _sext(x, w)
            xr[lane] = x & mt
        _scatter(row[T.D], xr, em, tw, row[T.Y], a8, a16, a32, a64)
        return
    if opc == T.NOT:
        for lane in range(LANES):
            xr[lane] = (U1 - xa[lane]) if w == 1 else (~xa[lane]) & mk
    elif opc == T.NEG:
        for lane in range(LANES):
            xr[lane] = (U0 - xa[lane]) & mk
    elif opc == T.ABS:
        for lane in range(LANES):
            x = xa[lane]
            xr[lane] = ((U0 - x) & mk) if np.int64(_sext(x, w)) < 0 else x
    elif opc == T.BFE:                            # ops.intx.compile_bfe
        _gather(eb, 32, 0, xb, a8, a16, a32, a64, imrow)
        _gather(ec, 32, 0, xc, a8, a16, a32, a64, imrow)
        for lane in range(LANES):
            pos = np.int64(xb[lane])
            ln = np.int64(xc[lane])
            if w == 32:
                pos &= 0xFF
                ln &= 0xFF
            else:
                pos = min(pos, 255)
                ln = min(ln, 255)
            x = xa[lane]
            k = 0 if pos >= w else min(ln, w - pos)
            keep = U0 if k == 0 else ALL >> np.uint64(64 - k)
            field = (x >> np.uint64(pos if pos < 64 else 0)) & keep
            if sgn and ln != 0 and (x >> np.uint64(min(pos + ln - 1, w - 1))) & U1:
                field |= ~keep & mk
            xr[lane] = field
    elif opc == T.TF32_RNA:                       # ops.cvt_narrow._to_tf32, rna
        for lane in range(LANES):
            x = xa[lane]
            r = (x if (x & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000) else x + np.uint64(0x1000)) \
                & np.uint64(0xFFFFE000)
            if row[T.X] == 1 and (r & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000):
                r -= np.uint64(0x2000)
            xr[lane] = r
    elif opc == T.PRMT:                           # ops.intx.compile_prmt, no mode
        _gather(eb, 32, 0, xb, a8, a16, a32, a64, imrow)
        _gather(ec, 32, 0, xc, a8, a16, a32, a64, imrow)
        for lane in range(LANES):
            both = xa[lane] | (xb[lane] << np.uint64(32))
            c = xc[lane]
            r = U0
            for k in range(4):
                sel = (c >> np.uint64(4 * k)) & np.uint64(0xF)
                byte = (both >> ((sel & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
                if sel & np.uint64(8):
                    byte = np.uint64(0xFF) if byte & np.uint64(0x80) else U0
                r |= byte << np.uint64(8 * k)
            xr[lane] = r
    elif opc == T.SHL or opc == T.SHR:
        _gather(eb, 32, 0, xb, a8, a16, a32, a64, imrow)
        uw = np.uint64(w)
        for lane in range(LANES):
            amt = xb[lane]
            if amt > uw:
                amt = uw
            x = xa[lane]
            if opc == T.SHR and sgn:
                s = amt if amt < np.uint64(63) else np.uint64(63)
                xr[lane] = np.uint64(np.int64(_sext(x, w)) >> np.int64(s)) & mk
            elif amt >= uw:
                xr[lane] = U0
            elif opc == T.SHL:
                xr[lane] = (x << amt) & mk
            else:
                xr[lane] = x >> amt
    else:
        _gather(eb, w, sgn, xb, a8, a16, a32, a64, imrow)
        if opc == T.ADD:
            for lane in range(LANES):
                xr[lane] = (xa[lane] + xb[lane]) & mk
        elif opc == T.SUB:
            for lane in range(LANES):
                xr[lane] = (xa[lane] - xb[lane]) & mk
        elif opc == T.MUL_LO:
            for lane in range(LANES):
                xr[lane] = (xa[lane] * xb[lane]) & mk
        elif opc == T.MAD_LO:
            _gather(ec, w, sgn, xc, a8, a16, a32, a64, imrow)
            for lane in range(LANES):
                xr[lane] = (xa[lane] * xb[lane] + xc[lane]) & mk
        elif opc == T.AND:
            for lane in range(LANES):
                xr[lane] = xa[lane] & xb[lane]
        elif opc == T.OR:
            for lane in range(LANES):
                xr[lane] = xa[lane] | xb[lane]
        elif opc == T.XOR:
            for lane in range(LANES):
                xr[lane] = xa[lane] ^ xb[lane]
        elif opc == T.MUL_HI:
            for lane in range(LANES):
                xr[lane] = _mulhi(xa[lane], xb[lane], w, sgn)
        elif opc == T.MAD_HI:
            _gather(ec, w, sgn, xc, a8, a16, a32, a64, imrow)
            for lane in range(LANES):
                xr[lane] = (_mulhi(xa[lane], xb[lane], w, sgn) + xc[lane]) & mk
        elif opc == T.MUL_WIDE or opc == T.MAD_WIDE:
            tw = 2 * w
            mt = _mask(tw)
            if opc == T.MAD_WIDE:
                _gather(ec, tw, sgn, xc, a8, a16, a32, a64, imrow)
            for lane in range(LANES):
                x, y = xa[lane], xb[lane]
                if sgn:
                    x, y = _sext(x, w), _sext(y, w)
                r = x * y
                if opc == T.MAD_WIDE:
                    r += xc[lane]
                xr[lane] = r & mt
        elif opc == T.MIN or opc == T.MAX:
            for lane in range(LANES):
                x, y = xa[lane], xb[lane]
                if sgn:
                    lt = np.int64(_sext(x, w)) < np.int64(_sext(y, w))
                else:
                    lt = x < y
                xr[lane] = x if lt == (opc == T.MIN) else y
        elif opc == T.SELP:
            _gather(ec, 1, 0, xc, a8, a16, a32, a64, imrow)
            cneg = row[T.CNEG] == 1
            for lane in range(LANES):
                xr[lane] = xa[lane] if (xc[lane] != U0) != cneg else xb[lane]
        else:                                        # binary32 arithmetic
            if opc == T.FFMA32:
                _gather(ec, w, sgn, xc, a8, a16, a32, a64, imrow)
            for lane in range(LANES):
                fu32[0] = np.uint32(xa[lane])
                fu32[1] = np.uint32(xb[lane])
                fa, fb = ff32[0], ff32[1]
                if opc == T.FADD32:
                    fr = fa + fb
                elif opc == T.FSUB32:
                    fr = fa - fb
                elif opc == T.FMUL32:
                    fr = fa * fb
                else:
                    fu32[3] = np.uint32(xc[lane])
                    fr = _ffma32(fa, fb, ff32[3], fu64, ff64)
                xr[lane] = _f32bits(fr, fu32, ff32)
    _scatter(row[T.D], xr, em, tw, sgn, a8, a16, a32, a64)


@njit(cache=True, _nrt=False)
def _movunpack(row, imrow, em, a8, a16, a32, a64, xa, xr):
    """mov.bW unpack (``ops.memops._mov_pack``): element i is bits [i*Z, (i+1)*Z) of the W-bit value."""
    n, ew, w = row[T.Y], row[T.Z], row[T.W]
    mk = _mask(ew)
    _gather(row[T.A], w, 0, xa, a8, a16, a32, a64, imrow)
    for i in range(n):
        sh = np.uint64(i * ew)
        for lane in range(LANES):
            xr[lane] = (xa[lane] >> sh) & mk
        _scatter(row[T.V0 + i], xr, em, ew, 0, a8, a16, a32, a64)


@njit(cache=True, _nrt=False)
def _shfl(row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq):
    """shfl.sync as ``ops.warpops`` defines it; False (nothing written) when a lane breaks a rule."""
    _gather(row[T.V0], 32, 0, xr, a8, a16, a32, a64, imrow)      # membermask, per lane
    union = U0                                                  # the lanes the executing lanes name
    for lane in range(LANES):
        if (em >> lane) & 1:
            union |= xr[lane]
            if (xr[lane] >> np.uint64(lane)) & U1 == U0:      # an executing lane outside its own mask
                return False
    for lane in range(LANES):
        if (union >> np.uint64(lane)) & U1 != U0 and (em >> lane) & 1 == 0:
            return False
    _gather(row[T.A], 32, 0, xa, a8, a16, a32, a64, imrow)
    _gather(row[T.B], 32, 0, xb, a8, a16, a32, a64, imrow)
    _gather(row[T.C], 32, 0, xc, a8, a16, a32, a64, imrow)
    mode = row[T.X]
    m5 = np.uint64(0x1F)
    for lane in range(LANES):
        ul = np.uint64(lane)
        bval = xb[lane] & m5
        cv = xc[lane]
        cval = cv & m5
        seg = (cv >> np.uint64(8)) & m5
        max_lane = np.int64((ul & seg) | (cval & ~seg & m5))
        if mode == 0:
            j = lane - np.int64(bval)
            ok = j >= max_lane
        elif mode == 1:
            j = lane + np.int64(bval)
            ok = j <= max_lane
        elif mode == 2:
            j = np.int64(ul ^ bval)
            ok = j <= max_lane
        else:
            j = np.int64((ul & seg) | (bval & ~seg & m5))
            ok = j <= max_lane
        if not ok:
            j = lane
        if (em >> lane) & 1 and ok and not (em >> j) & 1:
            return False
        xq[lane] = U1 if ok else U0
        xr[lane] = xa[j]
    _scatter(row[T.D], xr, em, 32, 0, a8, a16, a32, a64)
    _scatter(row[T.Z], xq, em, 1, 0, a8, a16, a32, a64)
    return True


@njit(cache=True, inline="always")
def _lut(kind, i, l1, l256, l64k):
    if kind == 0:
        return l1[i]
    if kind == 1:
        return l256[i]
    return l64k[i]


@njit(cache=True, _nrt=False)
def _mma(row, mregs, mmaps, mprm, l1, l256, l64k, mlutidx, a32, mbuf, mu64, mi64, mflags):
    """mma.sync of a tensor-core family through the same arithmetic as ``ops.mma`` (numerics.gemm_fast);
    False (nothing written) when a special value needs the reference."""
    k = row[T.X]
    nd, na, nb, nc = row[T.V0], row[T.V0 + 1], row[T.V0 + 2], row[T.V0 + 3]
    regs = mregs[k]
    a = mbuf[0:na].reshape((1, na, LANES))
    b = mbuf[4:4 + nb].reshape((1, nb, LANES))
    c = mbuf[8:8 + nc].reshape((1, nc, LANES))
    d = mbuf[12:12 + nd].reshape((1, nd, LANES))
    for i in range(na):
        e = regs[4 + i] & IDX
        for lane in range(LANES):
            a[0, i, lane] = a32[e + lane]
    for i in range(nb):
        e = regs[8 + i] & IDX
        for lane in range(LANES):
            b[0, i, lane] = a32[e + lane]
    for i in range(nc):
        e = regs[12 + i] & IDX
        for lane in range(LANES):
            c[0, i, lane] = a32[e + lane]
    li = mlutidx[k]
    if not tc_one_noalloc(a, b, c, d, mmaps[k], mprm[k], _lut(li[0], li[1], l1, l256, l64k),
                          _lut(li[2], li[3], l1, l256, l64k), mu64, mi64, mflags):
        return False
    for i in range(nd):
        if regs[i] >= 0:
            e = regs[i] & IDX
            for lane in range(LANES):
                a32[e + lane] = d[0, i, lane]
    return True


@njit(cache=True, _nrt=False)
def _ldmatrix(row, imrow, a8, a16, a32, a64, inflight, state, addrs, xr, out):
    """ldmatrix as ``ops.datamove`` defines it (lane 8j+r: row r of matrix j); False when a used lane's row
    address breaks a rule (the reference then raises)."""
    nmat = row[T.Y]
    trans = row[T.Z] == 1
    off = np.int64(imrow[T.IMM_OFFSET])
    if row[T.A] == -1:
        for lane in range(LANES):
            addrs[lane] = off
    else:
        _gather(row[T.A], 64, 0, xr, a8, a16, a32, a64, imrow)
        wrap = np.int64(0xFFFFFFFF) if row[T.A] >> T.CLASS_SHIFT == T.R32 else np.int64(-1)
        for lane in range(LANES):
            addrs[lane] = (np.int64(xr[lane]) + off) & wrap
    size = state[T.S_SMEM_SIZE]
    for lane in range(8 * nmat):
        a = addrs[lane]
        if a % 16 != 0 or a < 0 or a + 16 > size:
            return False
        if state[T.S_INFLIGHT] > 0:
            for b in range(16):
                if inflight[a + b] != 0:
                    return False
    base = state[T.S_SMEM_PTR]
    for j in range(nmat):
        for lane in range(LANES):
            g, t = lane >> 2, lane & 3
            if trans:
                lo = _peek16(base + addrs[8 * j + 2 * t] + 2 * g)
                hi = _peek16(base + addrs[8 * j + 2 * t + 1] + 2 * g)
            else:
                lo = _peek16(base + addrs[8 * j + g] + 4 * t)
                hi = _peek16(base + addrs[8 * j + g] + 4 * t + 2)
            out[j, lane] = np.uint32(lo | (hi << np.uint64(16)))
    for j in range(nmat):
        e = row[T.V0 + j]
        if e >= 0:
            i = e & IDX
            for lane in range(LANES):
                a32[i + lane] = out[j, lane]
    return True


@njit(cache=True, _nrt=False)
def _fmath(opc, row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, mptr, msz):
    """MUFU, MUFU_DIV, MUFU_DIVFMA, FMINMAX, FNEGABS, FARITH and FCVT rows (fmath.py) on the lanes in ``em``."""
    w, sgn = row[T.W], row[T.SGN]
    _gather(row[T.A], w, sgn, xa, a8, a16, a32, a64, imrow)
    if row[T.B] != -1:
        _gather(row[T.B], w, sgn, xb, a8, a16, a32, a64, imrow)
    if row[T.C] != -1:
        _gather(row[T.C], w, sgn, xc, a8, a16, a32, a64, imrow)
    call_rows(mptr[mptr.shape[0] - 1], opc, row[T.X], row[T.Y], row[T.Z], em, xa.ctypes.data, xb.ctypes.data,
              xc.ctypes.data, xr.ctypes.data, mptr.ctypes.data, msz.ctypes.data)      # fastcore/fcall.py
    _scatter(row[T.D], xr, em, row[T.V0] if opc == T.FCVT else 32, 0, a8, a16, a32, a64)


@njit(cache=True, _nrt=False)
def _joins(code, p, q):
    """machine.convergence.Convergence.joins: lanes at ``p`` wait for lanes at ``q``."""
    rp = code[p]
    rq = code[q]
    if rp[T.PDIN] < rq[T.PDIN] and rq[T.PDOUT] <= rp[T.PDOUT]:
        return True
    for d in range(4):
        lp = rp[T.LID + d]
        if lp < 0:
            return False
        for e in range(4):
            if rq[T.LID + e] == lp:
                return rp[T.LIN + d] < rq[T.LIN + e] and rq[T.LOUT + e] <= rp[T.LOUT + d]
    return False


@njit(cache=True, _nrt=False)
def _pick(code, pc, live, come, qs, a32):
    """machine.convergence.pick without force (the Python scheduler lifts the waits): the PC of the lane group
    to run next, or -1. ``qs``: room for the distinct PCs of the lanes that will come."""
    nq = 0
    for lane in range(LANES):
        if (come >> lane) & 1:
            q = pc[lane]
            dup = False
            for i in range(nq):
                if qs[i] == q:
                    dup = True
                    break
            if not dup:
                qs[nq] = q
                nq += 1
    big = 1 << 62
    big_rank = np.int64(code.shape[0])
    bfree = big                 # the best group of each level: its key (free: lanes, then rank; else rank), PC
    bsync = big
    bjoin = big
    btail = big
    pfree = -1
    psync = -1
    pjoin = -1
    ptail = -1
    seen = 0
    for lane in range(LANES):
        if (live >> lane) & 1 and not (seen >> lane) & 1:
            p = pc[lane]
            row = code[p]
            n = 0                       # the group's lanes: the fewest run first among the free groups
            for ln in range(lane, LANES):
                if (live >> ln) & 1 and pc[ln] == p:
                    n += 1
                    seen |= 1 << ln
            r = row[T.RANK]
            key = n * big_rank + r
            join = False
            other = False
            for i in range(nq):
                q = qs[i]
                if q != p:
                    other = True
                    if _joins(code, p, q):
                        join = True
                        break
            wait = False
            if not join and other and row[T.SYNCPT] != 0:     # the lanes it names, elsewhere?
                kind = row[T.SYNCPT]
                names = np.int64(0xFFFFFFFF)
                if kind == 2:
                    names = row[T.MMASK]
                elif kind == 3:
                    names = np.int64(0)
                    idx = row[T.MMASK] & T.INDEX_MASK
                    for ln in range(LANES):
                        if (live >> ln) & 1 and pc[ln] == p:
                            names |= np.int64(a32[idx + ln])
                for k in range(LANES):
                    if (come >> k) & 1 and (names >> k) & 1 and pc[k] != p:
                        wait = True
                        break
            if join and row[T.TAIL] == 1:
                if r < btail:
                    btail = r
                    ptail = p
            elif join:
                if r < bjoin:
                    bjoin = r
                    pjoin = p
            elif wait:
                if r < bsync:
                    bsync = r
                    psync = p
            elif key < bfree:
                bfree = key
                pfree = p
    if pfree >= 0:
        return pfree
    if come & ~live:
        return -1               # the groups wait for lanes parked elsewhere
    if ptail >= 0:              # every lane of the warp is here and waits: lanes on the exit path leave,
        return ptail            # else a warp-synchronous group, else a join
    if psync >= 0:
        return psync
    return pjoin


@njit(cache=True, _nrt=False)
def run(code, imm, arena, pc, exited, waiting, inflight, gtab, state, log_pc, log_addr, log_mask, mregs, mmaps,
        mprm, l1, l256, l64k, mlutidx, scratch, mbuf, mu64, mi64, mflags, mptr, msz, log_src, cpd, cpx, cpg, cpm,
        cpc):
    """Run the warp from its current state (state S_CTA: 1 inside run_cta, which executes the barriers). Returns (through ``state``) why it stopped. Compiled without
    the reference-counting runtime (``_nrt=False``): no atomic increments on every array view and call;
    ``scratch`` (uint64[13, 32], from the caller) holds every temporary. ``log_src``: the source addresses of
    logged cp.async; ``cpd`` .. ``cpc``: the warp's cp.async records (``cpasync.CpAsyncTable.row``)."""
    a8 = arena
    a16 = arena.view(np.uint16)
    a32 = arena.view(np.uint32)
    a64 = arena.view(np.uint64)
    fu32 = scratch[0].view(np.uint32)
    ff32 = fu32.view(np.float32)
    fu64 = scratch[1]
    ff64 = fu64.view(np.float64)
    addrs = scratch[2].view(np.int64)
    xa = scratch[3]
    xb = scratch[4]
    xc = scratch[5]
    xr = scratch[6]
    xq = scratch[7]
    mtmp = scratch[8:10].reshape(64).view(np.uint32).reshape((4, LANES))
    srcs = scratch[10].view(np.int64)
    sizes = scratch[11].view(np.int64)
    qs = scratch[12].view(np.int64)
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
            p = _pick(code, pc, live, come, qs, a32)
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
        if g != -1:
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
            for lane in range(LANES):
                if (m >> lane) & 1:
                    if (em >> lane) & 1:
                        pc[lane] = tgt
                    else:
                        pc[lane] += 1
            if together and em == m:
                p = tgt
            elif together and em == 0:
                p += 1
            else:
                p = -1
            continue
        w = row[T.W]
        sgn = row[T.SGN]
        if opc == T.LD or opc == T.ST:
            if em != 0:
                shared_lanes = _mem_plan(row, imrow, em, a8, a16, a32, a64, inflight, gtab, state, addrs, xq)
                if shared_lanes < 0:
                    handback = True
                    break
                n = row[T.Y]
                ew = row[T.Z]
                if opc == T.LD:
                    for i in range(n):
                        for lane in range(LANES):
                            if (em >> lane) & 1:
                                xr[lane] = _peek(np.int64(xq[lane]) + i * ew, ew)
                        _scatter(row[T.V0 + i], xr, em, w, sgn, a8, a16, a32, a64)
                else:
                    if shared_lanes != 0 and not smem_write_ok(state, addrs, shared_lanes, n * ew):
                        handback = True          # bytes an in-flight wgmma reads (memx.py): the reference raises
                        break
                    for i in range(n):
                        _gather(row[T.V0 + i], w, sgn, xr, a8, a16, a32, a64, imrow)
                        for lane in range(LANES):
                            if (em >> lane) & 1:
                                _poke(np.int64(xq[lane]) + i * ew, ew, xr[lane])
                                if wide:
                                    log_addr[nlog, LANES + 4 * lane + i] = np.int64(xr[lane])
                    mark_generic(state, addrs, shared_lanes, n * ew)
                if shared_lanes != 0:
                    log_pc[nlog] = p
                    log_mask[nlog] = shared_lanes
                    for lane in range(LANES):
                        log_addr[nlog, lane] = addrs[lane]
                    nlog += 1
                if wide and row[T.X] != T.PARAM and em & ~shared_lanes != 0:
                    log_pc[nlog] = p
                    log_mask[nlog] = (em & ~shared_lanes) | (np.int64(1) << 32)
                    for lane in range(LANES):
                        log_addr[nlog, lane] = addrs[lane]
                    nlog += 1
        elif opc == T.MMA:
            if em != 0xFFFFFFFF:                   # .sync.aligned: all 32 lanes (the reference names who is missing)
                handback = True
                break
            if not _mma(row, mregs, mmaps, mprm, l1, l256, l64k, mlutidx, a32, mbuf, mu64, mi64, mflags):
                handback = True
                break
        elif opc == T.LDMATRIX:
            if em != 0xFFFFFFFF or nlog >= log_pc.shape[0] or not _ldmatrix(row, imrow, a8, a16, a32, a64,
                                                                            inflight, state, addrs, xr, mtmp):
                handback = True
                break
            log_pc[nlog] = p
            log_mask[nlog] = (1 << (8 * row[T.Y])) - 1
            for lane in range(LANES):
                log_addr[nlog, lane] = addrs[lane]
            nlog += 1
        elif opc == T.CPASYNC or opc == T.CP_COMMIT or opc == T.CP_WAIT:
            if em != 0:
                got = cp_step(opc, row, imrow, em, p, nlog, a32, a64, inflight, gtab, state, log_pc, log_addr,
                              log_mask, log_src, cpd, cpx, cpg, cpm, cpc, addrs, srcs, sizes, xq.view(np.int64))
                if got < 0:
                    handback = True
                    break
                nlog = got
        elif opc == T.XROW and em != 0:                     # xcall.x_c: gathers, computes, writes back
            if call_x(mptr[XSLOT], em, row.ctypes.data, imrow.ctypes.data, arena.ctypes.data, arena.shape[0],
                      scratch.ctypes.data) != 0:
                handback = True                             # a lane breaks a rule: nothing was written
                break
        elif opc == T.ATOM and em != 0:
            shared_lanes = _mem_plan(row, imrow, em, a8, a16, a32, a64, inflight, gtab, state, addrs, xq)
            if shared_lanes < 0:
                handback = True
                break
            call_atom(mptr[ASLOT], em, shared_lanes, row.ctypes.data, imrow.ctypes.data, arena.ctypes.data,
                      arena.shape[0], scratch.ctypes.data)     # xcall.atom_c; the addresses in scratch[7] (xq)
            if shared_lanes != 0:
                log_pc[nlog] = p
                log_mask[nlog] = shared_lanes
                for lane in range(LANES):
                    log_addr[nlog, lane] = addrs[lane]
                nlog += 1
        elif opc == T.HOPX and em != 0:                     # hopcall.hop_c (asyncx.py)
            if wide == 1 or row[T.X] != K_NOP and call_hop(mptr[HSLOT], em, state.ctypes.data, row.ctypes.data,
                                                           imrow.ctypes.data, arena.ctypes.data, arena.shape[0],
                                                           scratch.ctypes.data) != 0:
                handback = True             # a lane breaks a rule (nothing was written); a sanitised launch
                break
        elif opc == T.SHFL and em != 0:
            if not _shfl(row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq):
                handback = True
                break
        elif (opc == T.MUFU or opc == T.MUFU_DIV or opc == T.FMINMAX or opc == T.FNEGABS or opc == T.FARITH or
              opc == T.FCVT or opc == T.MUFU_DIVFMA) and em != 0:                  # table.FLOAT_ROWS
            _fmath(opc, row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, mptr, msz)
        elif opc == T.MOV_UNPACK and em != 0:
            _movunpack(row, imrow, em, a8, a16, a32, a64, xa, xr)
        elif opc != T.NOP and em != 0:
            _alu(opc, row, imrow, em, a8, a16, a32, a64, xa, xb, xc, xr, xq, fu32, ff32, fu64, ff64)
        for lane in range(LANES):
            if (m >> lane) & 1:
                pc[lane] += 1
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


@njit(cache=True, _nrt=False)
def _check_bars(exited, waiting, wbid, bar_arrived, bar_seq):
    """machine.cta.CTA._check_barriers: release every barrier all non-exited threads arrived at."""
    nw = exited.shape[0]
    expected = 0
    for w in range(nw):
        for lane in range(LANES):
            if not exited[w, lane]:
                expected += 1
    for bid in range(16):
        if bar_seq[bid] != 0 and bar_arrived[bid] != 0 and bar_arrived[bid] >= expected:
            for w in range(nw):
                for lane in range(LANES):
                    if waiting[w, lane] and wbid[w, lane] == bid:
                        waiting[w, lane] = False
                        wbid[w, lane] = -1
            bar_arrived[bid] = 0
            bar_seq[bid] = 0


@njit(cache=True, _nrt=False)
def _runnable(exited, waiting, w):
    for lane in range(LANES):
        if not exited[w, lane] and not waiting[w, lane]:
            return True
    return False


@njit(cache=True, _nrt=False)
def run_cta(code, imm, arenas, pcs, exited, waiting, inflight, gtab, state, log_pc, log_addr, log_mask, log_warp,
            mregs, mmaps, mprm, l1, l256, l64k, mlutidx, scratch, mbuf, mu64, mi64, mflags, cst, issued, executed,
            param_ptrs, wbid, bar_arrived, bar_seq, backs, mptr, msz, log_src, cpd, cpx, cpg, cpm, cpc):
    """A whole CTA as machine.cta.CTA._run schedules it: warp 0, 1, ... in turn, each until none of its lanes
    can run; barriers (BAR rows) arrive and release here. Returns (cst[C_STATUS]) when every thread exited,
    when warp cst[C_WARP] needs Python for the instruction at state S_PC (lanes S_MASK) or a full log, or
    when no warp can go on (a deadlock, which Python reports). Resumes where it returned."""
    nw = arenas.shape[0]
    state[T.S_CTA] = 1
    _check_bars(exited, waiting, wbid, bar_arrived, bar_seq)    # an exit run by Python may release one
    while True:
        w = cst[T.C_WARP]
        if w >= nw:
            done = True
            for i in range(nw):
                for lane in range(LANES):
                    if not exited[i, lane]:
                        done = False
            if done:
                cst[T.C_STATUS] = T.CTA_DONE
                return
            if cst[T.C_PROGRESSED] != 0:
                cst[T.C_PROGRESSED] = 0
                cst[T.C_WARP] = 0
                continue
            cst[T.C_STATUS] = T.CTA_DEADLOCK
            return
        if cst[T.C_INWARP] == 0:
            if not _runnable(exited, waiting, w):
                _check_bars(exited, waiting, wbid, bar_arrived, bar_seq)
                cst[T.C_WARP] = w + 1
                continue
            cst[T.C_INWARP] = 1
        state[T.S_ISSUED] = issued[w]
        state[T.S_BACK] = backs[w]
        state[T.S_PARAM_PTR] = param_ptrs[w]
        state[T.S_EXECUTED] = 0
        n0 = state[T.S_NLOG]
        run(code, imm, arenas[w], pcs[w], exited[w], waiting[w], inflight, gtab, state, log_pc, log_addr, log_mask,
            mregs, mmaps, mprm, l1, l256, l64k, mlutidx, scratch, mbuf, mu64, mi64, mflags, mptr, msz, log_src,
            cpd[w], cpx[w], cpg[w], cpm[w], cpc[w])
        issued[w] = state[T.S_ISSUED]
        backs[w] = state[T.S_BACK]
        executed[w] += state[T.S_EXECUTED]
        for k in range(n0, state[T.S_NLOG]):
            log_warp[k] = w
        st = state[T.S_STATUS]
        if st == T.ST_IDLE or st == T.ST_DEFER:
            cst[T.C_INWARP] = 0
            if st == T.ST_IDLE:
                cst[T.C_PROGRESSED] = 1
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq)
            cst[T.C_WARP] = w + 1
        elif st == T.ST_EXITED:
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq)
        elif st == T.ST_BAR:
            row = code[state[T.S_PC]]
            bid = row[T.X]
            em = state[T.S_MASK]
            if bar_seq[bid] == 0:
                cst[T.C_SEQ] += 1
                bar_seq[bid] = cst[T.C_SEQ]
            for lane in range(LANES):
                if (em >> lane) & 1:
                    bar_arrived[bid] += 1
                    if row[T.Y] == 0:
                        waiting[w, lane] = True
                        wbid[w, lane] = bid
            _check_bars(exited, waiting, wbid, bar_arrived, bar_seq)
        else:
            cst[T.C_STATUS] = T.CTA_SLOW
            return
