"""The ALU families of the fast engine: integer arithmetic, logic, shifts, comparisons and selects, moves,
integer conversions, bfe/prmt, the binary32 add/sub/mul/fma and mov unpack (table: MOV .. SELP, CVT_II, BFE,
PRMT, TF32_RNA, FADD32 .. FFMA32, MOV_UNPACK), each as its reference executor in ``emulator.ops`` defines it.

Compiled apart from the loops, each family as one C-callable function (``ccall.SIG``; ``families.py``): ``entry``
("alu": the rows most kernels have), ``entry_x`` ("alu_x": the other integer rows), ``entry_f32`` ("alu_f32").
"""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from .ccall import NSCRATCH
from .raw import _mask, _mulhi_u64, _sext, opaque
from .regs import I0, _copy_dst, _copy_src, _gather, _scatter
from ...numerics.jitcache import INNER

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
CANON32 = np.uint32(0x7FFFFFFF)
LANES = 32


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
def _cmpmask(code, flt):
    """SETP's comparison ``code`` (table.CMPS) as a truth table over the order of a and b: bit 0 a < b, bit 1
    a == b, bit 2 a > b, bit 3 unordered (a NaN); and whether an integer comparison is unsigned whatever the
    type (lo ls hi hs). ``ops.cmp``'s rules: the ordered float comparisons are false on a NaN, the ``u`` ones
    true, ``num``/``nan`` test for one."""
    if flt:
        if code == 16:          # num
            return 7, False
        if code == 17:          # nan
            return 8, False
        base = code if code < 10 else code - 10
        m = (2, 5, 1, 3, 4)[base] if base < 5 else 6
        return (m | 8) if code >= 10 else m, False
    if code == 0:
        return 2, False
    if code == 1:
        return 5, False
    uns = code >= 6             # lo ls hi hs: unsigned
    if uns:
        code -= 4
    return (1 if code == 2 else 3 if code == 3 else 4 if code == 4 else 6), uns


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





def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): the common integer rows (``_ALU`` of families.py)."""
    a8 = C.u8_1d(parena, n)
    row = C.i64_1d(prow, T.NFIELDS)
    imrow = C.u64_1d(pimm, T.NIMM)
    scratch = C.u64_2d(pscratch, NSCRATCH, LANES)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    opc = row[T.OP]
    nl = opaque(np.int64(LANES))      # (the lanes: a count LLVM vectorises over, not one it unrolls)
    xa, xb, xc, xr, xq = scratch[3], scratch[4], scratch[5], scratch[6], scratch[7]
    w = row[T.W]
    sgn = row[T.SGN]
    mk = _mask(w)
    # the sources A, B, C into scratch rows 3, 4, 5, each at its width and signedness (0: not read), in one loop:
    # one copy of the reads (``regs._copy_src``: a register of that width, an immediate or a predicate by a plain
    # copy, else ``_gather``)
    tb, tc, sb, sc = w, 0, sgn, sgn
    if opc == T.MOV or opc == T.CVT_II:
        tb = 0
    elif opc == T.BFE:
        tb, tc, sb, sc = 32, 32, 0, 0
    elif opc == T.SHL or opc == T.SHR:
        tb, sb = 32, 0
    elif opc == T.SELP:
        if row[T.C] < 0 or row[T.C] >> T.CLASS_SHIFT != T.PRED:      # (a predicate register: read in its loop)
            tc, sc = 1, 0
    elif opc == T.SETP and row[T.Y] != 0:
        tc, sc = 1, 0
    elif opc == T.MAD_LO:
        tc = w
    elif opc == T.MAD_WIDE:
        tc = 2 * w
    # (as many as the row reads)
    for k in range(3 if tc != 0 else 2 if tb != 0 else 1):
        tk = w if k == 0 else tb if k == 1 else tc
        ek, out = row[T.A + k], scratch[3 + k]
        if tk != 0 and not _copy_src(ek, np.int64(tk), out, a8, a32, a64, imrow):
            _gather(ek, np.int64(tk), np.int64(sgn if k == 0 else sb if k == 1 else sc), out, a8, a16, a32, a64, imrow)
    tw, ts = w, sgn                     # the result's width and signedness
    # a signed operand's sign bit (0 unsigned): ((x & mk) ^ sm) - sm sign-extends its w bits to 64, and
    # (x & mk) ^ sm orders signed values as unsigned ones
    sm = (U1 << np.uint64(w - 1)) if sgn else U0
    if opc == T.SETP:
        flt = row[T.FLT]
        tab, uns = _cmpmask(row[T.X], flt)
        # each lane's order of a and b (0 <, 1 ==, 2 >, 3 unordered) into xr, then its bit of the truth table
        if flt != 0:                                # binary32 (the low 32 bits' values, exactly) or binary64
            f32 = flt == 1
            ha, hb = C.reinterpret(xa, np.float32), C.reinterpret(xb, np.float32)
            fa, fb = C.reinterpret(xa, np.float64), C.reinterpret(xb, np.float64)
            for lane in range(nl):
                fx = np.float64(ha[2 * lane]) if f32 else fa[lane]
                fy = np.float64(hb[2 * lane]) if f32 else fb[lane]
                xr[lane] = 0 if fx < fy else 1 if fx == fy else 2 if fx > fy else 3
        else:
            bias = U0 if uns else sm                # as signed w-bit values: biased, the unsigned order is theirs
            for lane in range(nl):
                x, y = (xa[lane] & mk) ^ bias, (xb[lane] & mk) ^ bias
                xr[lane] = 0 if x < y else 1 if x == y else 2
        # the boolean operator's truth table over (r, c), bit 2r + c (none: r itself), for D and, with r
        # negated, for the second destination
        bop = row[T.Y]
        btab = 12 if bop == 0 else 8 if bop == 1 else 14 if bop == 2 else 6
        cneg = U1 if row[T.CNEG] == 1 else U0
        for lane in range(nl):
            r = (np.uint64(tab) >> xr[lane]) & U1
            c = (U1 if xc[lane] != U0 else U0) ^ cneg
            xr[lane] = (np.uint64(btab) >> (r + r + c)) & U1
            xq[lane] = (np.uint64(btab) >> (U1 + U1 - r - r + c)) & U1
        tw, ts = 1, 0
    elif opc == T.MOV:
        for lane in range(nl):
            xr[lane] = xa[lane]
    elif opc == T.SELP:
        flip = row[T.CNEG] == 1
        if tc == 0:                             # c: the bytes of a predicate register
            i = row[T.C] & T.INDEX_MASK
            for lane in range(LANES):           # (unrolled: faster than the vector loop over the bytes)
                xr[lane] = xa[lane] if (a8[i + lane] != 0) != flip else xb[lane]
        else:
            for lane in range(nl):
                xr[lane] = xa[lane] if (xc[lane] != U0) != flip else xb[lane]
    elif opc == T.CVT_II:
        tw, ts = row[T.X], row[T.Y]
        mt = _mask(tw)
        for lane in range(nl):
            xr[lane] = (((xa[lane] & mk) ^ sm) - sm) & mt
    elif opc == T.BFE:                            # ops.intx.compile_bfe
        for lane in range(nl):
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
    elif opc == T.SHL or opc == T.SHR:            # an amount of w or more: 0 (shr.s: the sign)
        uw = np.uint64(w)
        if opc == T.SHR and sgn:
            for lane in range(nl):
                amt = min(xb[lane], uw)
                s = amt if amt < np.uint64(63) else np.uint64(63)
                xr[lane] = np.uint64(np.int64(((xa[lane] & mk) ^ sm) - sm) >> np.int64(s)) & mk
        elif opc == T.SHL:
            for lane in range(nl):
                amt = xb[lane]
                xr[lane] = ((xa[lane] << amt) & mk) if amt < uw else U0
        else:
            for lane in range(nl):
                amt = xb[lane]
                xr[lane] = (xa[lane] >> amt) if amt < uw else U0
    elif opc == T.ADD:
        for lane in range(nl):
            xr[lane] = (xa[lane] + xb[lane]) & mk
    elif opc == T.SUB:
        for lane in range(nl):
            xr[lane] = (xa[lane] - xb[lane]) & mk
    elif opc == T.MAD_LO:
        for lane in range(nl):
            xr[lane] = (xa[lane] * xb[lane] + xc[lane]) & mk
    elif opc == T.AND or opc == T.OR or opc == T.XOR:     # one loop, the operator as masks
        kand = ALL if opc == T.AND else U0
        kor = ALL if opc == T.OR else U0
        kxor = ALL if opc == T.XOR else U0
        for lane in range(nl):
            x, y = xa[lane], xb[lane]
            xr[lane] = (x & y & kand) | ((x | y) & kor) | ((x ^ y) & kxor)
    else:                                       # MUL_LO, MUL_WIDE, MAD_WIDE: one loop, the operands extended
        wide = opc != T.MUL_LO
        if wide:
            tw = 2 * w
        else:
            sm = U0
        mt = _mask(tw)
        mad = opc == T.MAD_WIDE
        for lane in range(nl):
            x, y = ((xa[lane] & mk) ^ sm) - sm, ((xb[lane] & mk) ^ sm) - sm
            xr[lane] = (x * y + (xc[lane] if mad else U0)) & mt
    # the result into D (and SETP's second into Z), in one loop: one copy of the writes (``regs._copy_dst``)
    for k in range(2 if opc == T.SETP else 1):
        ek, res = row[T.D] if k == 0 else row[T.Z], xr if k == 0 else xq
        if not _copy_dst(ek, res, em, np.int64(tw), a8, a32, a64):
            _scatter(ek, res, em, np.int64(tw), np.int64(ts), a8, a16, a32, a64)
    return 0


def entry_x(em, prow, pimm, parena, n, pscratch):
    """The ``alu_x`` family's C-callable body (ccall.SIG): the integer rows fewer kernels have (``_ALU_X`` of
    families.py: mul.hi, mad.hi, not, neg, abs, min, max, prmt without a mode, mov unpack), a family apart so that
    the others do not compile their code."""
    a8 = C.u8_1d(parena, n)
    row = C.i64_1d(prow, T.NFIELDS)
    imrow = C.u64_1d(pimm, T.NIMM)
    scratch = C.u64_2d(pscratch, NSCRATCH, LANES)
    a16, a32, a64 = C.reinterpret(a8, np.uint16), C.reinterpret(a8, np.uint32), C.reinterpret(a8, np.uint64)
    opc = row[T.OP]
    if opc == T.MOV_UNPACK:
        _movunpack(row, imrow, em, a8, a16, a32, a64, scratch[3], scratch[6])
        return 0
    xa, xb, xc, xr = scratch[3], scratch[4], scratch[5], scratch[6]
    w = row[T.W]
    sgn = row[T.SGN]
    mk = _mask(w)
    # the sources at the row's width and signedness: A; B but for not, neg, abs; C of mad.hi and prmt
    nsrc = 1 if opc == T.NOT or opc == T.NEG or opc == T.ABS else 3 if opc == T.MAD_HI or opc == T.PRMT else 2
    for k in range(nsrc):
        ek, out = row[T.A + k], scratch[3 + k]
        if not _copy_src(ek, w, out, a8, a32, a64, imrow):
            _gather(ek, w, sgn, out, a8, a16, a32, a64, imrow)
    sm = (U1 << np.uint64(w - 1)) if sgn else U0
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
    elif opc == T.PRMT:                           # ops.intx.compile_prmt, no mode
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
    elif opc == T.MUL_HI or opc == T.MAD_HI:
        mad = opc == T.MAD_HI
        for lane in range(LANES):
            xr[lane] = (_mulhi(xa[lane], xb[lane], w, sgn) + (xc[lane] if mad else U0)) & mk
    else:                                       # MIN, MAX: signed values biased, in the unsigned order
        for lane in range(LANES):
            x, y = xa[lane], xb[lane]
            lt = ((x & mk) ^ sm) < ((y & mk) ^ sm)
            xr[lane] = x if lt == (opc == T.MIN) else y
    if not _copy_dst(row[T.D], xr, em, w, a8, a32, a64):
        _scatter(row[T.D], xr, em, w, sgn, a8, a16, a32, a64)
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
    if not _copy_src(row[T.A], w, xa, a8, a32, a64, imrow):
        _gather(row[T.A], w, sgn, xa, a8, a16, a32, a64, imrow)
    if opc != T.TF32_RNA and not _copy_src(row[T.B], w, xb, a8, a32, a64, imrow):
        _gather(row[T.B], w, sgn, xb, a8, a16, a32, a64, imrow)
    if opc == T.FFMA32 and not _copy_src(row[T.C], w, xc, a8, a32, a64, imrow):
        _gather(row[T.C], w, sgn, xc, a8, a16, a32, a64, imrow)
    if opc == T.TF32_RNA:                           # ops.cvt_narrow._to_tf32, rna
        for lane in range(LANES):
            x = xa[lane]
            r = (x if (x & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000) else x + np.uint64(0x1000)) \
                & np.uint64(0xFFFFE000)
            if row[T.X] == 1 and (r & np.uint64(0x7FFFFFFF)) >= np.uint64(0x7F800000):
                r -= np.uint64(0x2000)
            xr[lane] = r
    else:                                           # binary32 arithmetic
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
    if not _copy_dst(ed, xr, em, w, a8, a32, a64):
        _scatter(ed, xr, em, w, sgn, a8, a16, a32, a64)
    return 0
