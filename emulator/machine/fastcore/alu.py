"""The ALU family of the fast engine: integer arithmetic, logic, shifts, comparisons and selects, moves,
integer conversions, bfe/prmt, the binary32 add/sub/mul/fma and mov unpack (table: MOV .. SELP, CVT_II, BFE,
PRMT, TF32_RNA, FADD32 .. FFMA32, MOV_UNPACK), each as its reference executor in ``emulator.ops`` defines it.

Compiled apart from the loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``).
"""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .ccall import NSCRATCH
from .raw import _mask, _mulhi_u64, _sext
from .regs import I0, I1, I32, M32, _g32, _g64, _gather, _is32, _is64, _s32, _s64, _scatter
from ...numerics.jitcache import INNER

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
CANON32 = np.uint32(0x7FFFFFFF)
LANES = 32
SIGN32 = np.uint64(0x80000000)


@njit(cache=True, _nrt=False, **INNER)
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


@njit(cache=True, _nrt=False, **INNER)
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


@njit(cache=True, _nrt=False, **INNER)
def _bool(op, r, c):
    if op == 1:
        return r and c
    if op == 2:
        return r or c
    if op == 3:
        return r != c
    return r


@njit(cache=True, inline="always")
def _f32bits(x, fu32, ff32):
    ff32[2] = x
    if x != x:
        return np.uint64(CANON32)
    return np.uint64(fu32[2])


@njit(cache=True, _nrt=False, **INNER)
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


@njit(cache=True, _nrt=False, **INNER)
def _movunpack(row, imrow, em, a8, a16, a32, a64, xa, xr):
    """mov.bW unpack (``ops.memops._mov_pack``): element i is bits [i*Z, (i+1)*Z) of the W-bit value."""
    n, ew, w = row[T.Y], row[T.Z], row[T.W]
    mk = _mask(ew)
    _gather(row[T.A], w, I0, xa, a8, a16, a32, a64, imrow)
    for i in range(n):
        sh = np.uint64(i * ew)
        for lane in range(LANES):
            xr[lane] = (xa[lane] >> sh) & mk
        _scatter(row[T.V0 + i], xr, em, ew, I0, a8, a16, a32, a64)





@njit(cache=True, _nrt=False)
def _fast32(opc, row, imrow, em, a8, a32, xa, xb, xc, xr, xq, fu32, ff32, fu64, ff64):
    """The common 32-bit rows with every operand a 32-bit register or an immediate (predicates for SELP's c
    and SETP's destinations), as the general path below computes them, without its width and sign steps
    (none applies at 32 bits): 1 when done, 0 when the row takes the general path."""
    if row[T.W] != 32:
        return 0
    ea, eb, ec, ed = row[T.A], row[T.B], row[T.C], row[T.D]
    if not _is32(ea):
        return 0
    sgn = row[T.SGN]
    if opc == T.SETP:
        ez = row[T.Z]
        code = row[T.X]
        flt = row[T.FLT]
        if not _is32(eb) or row[T.Y] != 0 or flt > 1 or code > 17 or (flt == 0 and code > 9) or \
                (flt == 1 and 6 <= code <= 9) or ed < 0 or ed >> T.CLASS_SHIFT != T.PRED or \
                (ez >= 0 and ez >> T.CLASS_SHIFT != T.PRED):
            return 0
        _g32(ea, xa, a32, imrow)
        _g32(eb, xb, a32, imrow)
        if flt == 1:                                # binary32: _cmp's rule on the values
            fa = C.reinterpret(xa, np.float64)      # (the bits, as float32, into the same rows as float64)
            fb = C.reinterpret(xb, np.float64)
            for lane in range(LANES):
                fu32[0] = np.uint32(xa[lane])
                fu32[1] = np.uint32(xb[lane])
                fa[lane] = np.float64(ff32[0])
                fb[lane] = np.float64(ff32[1])
            base = code if code < 10 else code - 10
            for lane in range(LANES):
                x, y = fa[lane], fb[lane]
                un = (x != x) or (y != y)
                if code == 16:
                    r = not un
                elif code == 17:
                    r = un
                else:
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
                    r = (r or un) if code >= 10 else (r and not un)
                xr[lane] = U1 if r else U0
        else:
            if sgn and 2 <= code <= 5:              # lt le gt ge, signed: as int32 values
                for lane in range(LANES):
                    xa[lane] = (xa[lane] & M32) ^ SIGN32    # (the order of the biased values is the signed order)
                    xb[lane] = (xb[lane] & M32) ^ SIGN32
            if code >= 6:                               # lo ls hi hs: the unsigned lt le gt ge
                code -= 4
            if code == 0:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] == xb[lane] else U0
            elif code == 1:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] != xb[lane] else U0
            elif code == 2:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] < xb[lane] else U0
            elif code == 3:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] <= xb[lane] else U0
            elif code == 4:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] > xb[lane] else U0
            else:
                for lane in range(LANES):
                    xr[lane] = U1 if xa[lane] >= xb[lane] else U0
        i = ed & T.INDEX_MASK
        for lane in range(LANES):
            if (em >> lane) & 1:
                a8[i + lane] = np.uint8(xr[lane])
        if ez >= 0:
            i = ez & T.INDEX_MASK
            for lane in range(LANES):
                if (em >> lane) & 1:
                    a8[i + lane] = np.uint8(xr[lane] ^ U1)
        return 1
    if ed < 0 or ed >> T.CLASS_SHIFT != T.R32:
        return 0
    # the sources: A always, B but for mov/not, C of mad.lo; selp's c is a predicate register (read in its loop)
    if opc == T.SELP:
        if ec < 0 or ec >> T.CLASS_SHIFT != T.PRED:
            return 0
    elif opc == T.MAD_LO:
        if not _is32(ec):
            return 0
    elif not (opc == T.MOV or opc == T.NOT or opc == T.ADD or opc == T.SUB or opc == T.MUL_LO or opc == T.AND or
              opc == T.OR or opc == T.XOR or opc == T.SHL or (opc == T.SHR and sgn == 0)):
        return 0
    nb = opc != T.MOV and opc != T.NOT
    if nb and not _is32(eb):
        return 0
    _g32(ea, xa, a32, imrow)
    if nb:
        _g32(eb, xb, a32, imrow)
    if opc == T.MAD_LO:
        _g32(ec, xc, a32, imrow)
    if opc == T.MOV:
        for lane in range(LANES):
            xr[lane] = xa[lane]
    elif opc == T.SELP:
        k = ec & T.INDEX_MASK
        cneg = row[T.CNEG] == 1
        for lane in range(LANES):
            xr[lane] = xa[lane] if (a8[k + lane] != 0) != cneg else xb[lane]
    elif opc == T.NOT:
        for lane in range(LANES):
            xr[lane] = ~xa[lane]
    elif opc == T.MAD_LO:
        for lane in range(LANES):
            xr[lane] = xa[lane] * xb[lane] + xc[lane]
    elif opc == T.ADD:
        for lane in range(LANES):
            xr[lane] = xa[lane] + xb[lane]
    elif opc == T.SUB:
        for lane in range(LANES):
            xr[lane] = xa[lane] - xb[lane]
    elif opc == T.MUL_LO:
        for lane in range(LANES):
            xr[lane] = xa[lane] * xb[lane]
    elif opc == T.AND:
        for lane in range(LANES):
            xr[lane] = xa[lane] & xb[lane]
    elif opc == T.OR:
        for lane in range(LANES):
            xr[lane] = xa[lane] | xb[lane]
    elif opc == T.XOR:
        for lane in range(LANES):
            xr[lane] = xa[lane] ^ xb[lane]
    elif opc == T.SHL:                              # an amount of 32 or more: 0
        for lane in range(LANES):
            amt = xb[lane]
            xr[lane] = (xa[lane] << amt) if amt < np.uint64(32) else U0
    else:                                           # SHR, unsigned
        for lane in range(LANES):
            amt = xb[lane]
            xr[lane] = (xa[lane] >> amt) if amt < np.uint64(32) else U0
    _s32(ed, xr, em, a32)
    return 1


@njit(cache=True, _nrt=False)
def _fast64(opc, row, imrow, em, a32, a64, xa, xb, xc, xr):
    """As ``_fast32`` for the 64-bit rows (address arithmetic): add/sub/mul.lo/and/or/xor/mov/shl/shr.u of 64-bit
    registers, mul.wide/mad.wide of 32-bit ones, cvt between 32- and 64-bit integers. 1 when done."""
    w = row[T.W]
    sgn = row[T.SGN]
    ea, eb, ec, ed = row[T.A], row[T.B], row[T.C], row[T.D]
    if ed < 0:
        return 0
    dc = ed >> T.CLASS_SHIFT
    # the forms: the widths of A and B (32: _g32, 64: _g64), whether B and C are read, the destination's class
    if opc == T.MUL_WIDE or opc == T.MAD_WIDE:
        if w != 32 or not _is32(ea) or not _is32(eb) or dc != T.R64 or (opc == T.MAD_WIDE and not _is64(ec)):
            return 0
        nb = 32
    elif opc == T.CVT_II:           # (the destination's signedness changes nothing here)
        if not ((w == 32 and row[T.X] == 64 and _is32(ea) and dc == T.R64) or
                (w == 64 and row[T.X] == 32 and _is64(ea) and dc == T.R32)):
            return 0
        nb = 0
    else:
        if w != 64 or not _is64(ea) or dc != T.R64:
            return 0
        if opc == T.MOV:
            nb = 0
        elif opc == T.SHL or (opc == T.SHR and sgn == 0):
            if not _is32(eb):                       # (the amount: a .u32 operand)
                return 0
            nb = 32
        elif opc == T.ADD or opc == T.SUB or opc == T.MUL_LO or opc == T.AND or opc == T.OR or opc == T.XOR:
            if not _is64(eb):
                return 0
            nb = 64
        else:
            return 0
    if w == 32:
        _g32(ea, xa, a32, imrow)
    else:
        _g64(ea, xa, a64, imrow)
    if nb == 32:
        _g32(eb, xb, a32, imrow)
    elif nb == 64:
        _g64(eb, xb, a64, imrow)
    if opc == T.MAD_WIDE:
        _g64(ec, xc, a64, imrow)
    if opc == T.MUL_WIDE or opc == T.MAD_WIDE:
        for lane in range(LANES):
            x, y = xa[lane], xb[lane]
            if sgn:
                x, y = _sext(x, 32), _sext(y, 32)
            xr[lane] = x * y + (xc[lane] if opc == T.MAD_WIDE else U0)
    elif opc == T.CVT_II or opc == T.MOV:
        for lane in range(LANES):
            xr[lane] = _sext(xa[lane], 32) if w == 32 and sgn else xa[lane]
    elif opc == T.SHL:
        for lane in range(LANES):
            amt = xb[lane]
            xr[lane] = (xa[lane] << amt) if amt < np.uint64(64) else U0
    elif opc == T.SHR:
        for lane in range(LANES):
            amt = xb[lane]
            xr[lane] = (xa[lane] >> amt) if amt < np.uint64(64) else U0
    elif opc == T.ADD:
        for lane in range(LANES):
            xr[lane] = xa[lane] + xb[lane]
    elif opc == T.SUB:
        for lane in range(LANES):
            xr[lane] = xa[lane] - xb[lane]
    elif opc == T.MUL_LO:
        for lane in range(LANES):
            xr[lane] = xa[lane] * xb[lane]
    elif opc == T.AND:
        for lane in range(LANES):
            xr[lane] = xa[lane] & xb[lane]
    elif opc == T.OR:
        for lane in range(LANES):
            xr[lane] = xa[lane] | xb[lane]
    else:
        for lane in range(LANES):
            xr[lane] = xa[lane] ^ xb[lane]
    if dc == T.R64:
        _s64(ed, xr, em, a64)
    else:
        _s32(ed, xr, em, a32)
    return 1


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG)."""
    a8 = C.u8_1d(parena, n)
    row = C.i64_1d(prow, T.NFIELDS)
    imrow = C.u64_1d(pimm, T.NIMM)
    scratch = C.u64_2d(pscratch, NSCRATCH, LANES)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    opc = row[T.OP]
    if opc == T.MOV_UNPACK:
        _movunpack(row, imrow, em, a8, a16, a32, a64, scratch[3], scratch[6])
        return 0
    # the ALU rows (one function with the entry: a call level less for numba to compile)
    xa, xb, xc, xr, xq = scratch[3], scratch[4], scratch[5], scratch[6], scratch[7]
    fu32 = C.reinterpret(scratch[0], np.uint32)
    ff32 = C.reinterpret(fu32, np.float32)
    fu64 = scratch[1]
    ff64 = C.reinterpret(fu64, np.float64)
    if row[T.W] == 32 and opc != T.MUL_WIDE and opc != T.MAD_WIDE and opc != T.CVT_II:
        if _fast32(opc, row, imrow, em, a8, a32, xa, xb, xc, xr, xq, fu32, ff32, fu64, ff64):
            return 0
    elif _fast64(opc, row, imrow, em, a32, a64, xa, xb, xc, xr):
        return 0
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
            _gather(ec, I1, I0, xc, a8, a16, a32, a64, imrow)
        code, flt, cneg = row[T.X], row[T.FLT], row[T.CNEG] == 1
        for lane in range(LANES):
            r = _cmp(code, xa[lane], xb[lane], w, sgn, flt, fu32, ff32, fu64, ff64)
            c = (xc[lane] != U0) != cneg if bop != 0 else False
            xr[lane] = U1 if _bool(bop, r, c) else U0
            xq[lane] = U1 if _bool(bop, not r, c) else U0
        _scatter(row[T.D], xr, em, I1, I0, a8, a16, a32, a64)
        _scatter(row[T.Z], xq, em, I1, I0, a8, a16, a32, a64)
        return 0
    _gather(ea, w, sgn, xa, a8, a16, a32, a64, imrow)
    if opc == T.MOV:
        _scatter(row[T.D], xa, em, w, sgn, a8, a16, a32, a64)
        return 0
    if opc == T.CVT_II:
        tw = row[T.X]
        mt = _mask(tw)
        for lane in range(LANES):
            x = xa[lane]
            if sgn:
                x = _sext(x, w)
            xr[lane] = x & mt
        _scatter(row[T.D], xr, em, tw, row[T.Y], a8, a16, a32, a64)
        return 0
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
        _gather(eb, I32, I0, xb, a8, a16, a32, a64, imrow)
        _gather(ec, I32, I0, xc, a8, a16, a32, a64, imrow)
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
    elif opc == T.PRMT:                           # ops.intx.compile_prmt, no mode
        _gather(eb, I32, I0, xb, a8, a16, a32, a64, imrow)
        _gather(ec, I32, I0, xc, a8, a16, a32, a64, imrow)
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
        _gather(eb, I32, I0, xb, a8, a16, a32, a64, imrow)
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
        else:                                       # SELP
            _gather(ec, I1, I0, xc, a8, a16, a32, a64, imrow)
            cneg = row[T.CNEG] == 1
            for lane in range(LANES):
                xr[lane] = xa[lane] if (xc[lane] != U0) != cneg else xb[lane]
    _scatter(row[T.D], xr, em, tw, sgn, a8, a16, a32, a64)
    return 0


def entry_f32(em, prow, pimm, parena, n, pscratch):
    """The ``alu_f32`` family's C-callable body (ccall.SIG): add/sub/mul/fma .rn.f32 (FADD32 .. FFMA32) and
    cvt.rna{.satfinite}.tf32.f32 (TF32_RNA), a family apart so that kernels without them (an f16 matmul's
    integer address arithmetic) do not compile their code."""
    a8 = C.u8_1d(parena, n)
    row = C.i64_1d(prow, T.NFIELDS)
    imrow = C.u64_1d(pimm, T.NIMM)
    scratch = C.u64_2d(pscratch, NSCRATCH, LANES)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    opc = row[T.OP]
    xa, xb, xc, xr = scratch[3], scratch[4], scratch[5], scratch[6]
    fu32 = C.reinterpret(scratch[0], np.uint32)
    ff32 = C.reinterpret(fu32, np.float32)
    fu64 = scratch[1]
    ff64 = C.reinterpret(fu64, np.float64)
    w = row[T.W]
    sgn = row[T.SGN]
    ed = row[T.D]
    # 32-bit registers and immediates (every f32 row but a mixed-width one): plain copies in and out
    fast = w == 32 and _is32(row[T.A]) and ed >= 0 and ed >> T.CLASS_SHIFT == T.R32 and \
        (opc == T.TF32_RNA or _is32(row[T.B]) and (opc != T.FFMA32 or _is32(row[T.C])))
    if fast:
        _g32(row[T.A], xa, a32, imrow)
    else:
        _gather(row[T.A], w, sgn, xa, a8, a16, a32, a64, imrow)
    if opc == T.TF32_RNA:                           # ops.cvt_narrow._to_tf32, rna
        for lane in range(LANES):
            x = xa[lane]
            r = (x if (x & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000) else x + np.uint64(0x1000)) \
                & np.uint64(0xFFFFE000)
            if row[T.X] == 1 and (r & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000):
                r -= np.uint64(0x2000)
            xr[lane] = r
    else:                                           # binary32 arithmetic
        if fast:
            _g32(row[T.B], xb, a32, imrow)
            if opc == T.FFMA32:
                _g32(row[T.C], xc, a32, imrow)
        else:
            _gather(row[T.B], w, sgn, xb, a8, a16, a32, a64, imrow)
            if opc == T.FFMA32:
                _gather(row[T.C], w, sgn, xc, a8, a16, a32, a64, imrow)
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
    if fast:
        _s32(ed, xr, em, a32)
    else:
        _scatter(ed, xr, em, w, sgn, a8, a16, a32, a64)
    return 0
