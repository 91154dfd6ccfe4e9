"""The fast engine's integer, bit and warp-collective rows (table.XROW): lop3, popc, clz, brev, bfind, bfi,
prmt with a mode, shf, div/rem, bmsk, szext, the carry chains (add.cc/addc/sub.cc/subc/mad.cc/madc), vote,
activemask, match and redux, lane by lane as the executors of ``ops.intx``, ``ops.simd``, ``ops.carry`` and
``ops.warpops`` define them.

The executors are the definition; the functions here transcribe them step for step on raw bits held in
uint64, and ``tests/test_fastcore_scalarx.py`` checks both engines equal on edge values and random bits. A row
whose lanes break a rule (a membermask that names a lane not executing the instruction) returns 1: the loop
hands the instruction back and the executor raises the error it defines.

Like the float rows (``fcall.py``), the rows are compiled apart from the loops, as one C-callable function the
loops call through its address (``xcall.py``, through ``call_x``; the translation puts the address in its
table-pointer array), so the loops' compile time stays what it was and this code is compiled (or loaded from
numba's cache) only for kernels that have such a row.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ...numerics.fast import _fma64, f2i, i2f
from .atomics import _bits_of32, _f32_of as i2f32
from .raw import _mask, _mulhi_u64, _sext

LANES = 32
U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
M32 = np.uint64(0xFFFFFFFF)

# row field X of XROW rows (Y, Z: the kind's parameters, listed with each)
(K_LOP3,        # Y: the truth table
 K_POPC, K_CLZ, K_BREV,
 K_BFIND,       # Y: 1 = .shiftamt
 K_BFI,         # A: f, B: b, C: position, D: length
 K_PRMT,        # Y: the mode (PRMT_MODES order)
 K_SHF,         # Y: 1 = .l, Z: 1 = .clamp
 K_DIV, K_REM,
 K_BMSK,        # Y: 1 = .clamp
 K_SZEXT,       # Y: 1 = .clamp, Z: 1 = .s32
 K_CARRY,       # Y: CY_* bits; D: the carry flag in; second destination: the carry flag out
 K_VOTE,        # Y: 0 all, 1 any, 2 uni, 3 ballot; D: membermask
 K_ACTIVEMASK,
 K_MATCH,       # Y: 0 any, 1 all; D: membermask; second destination: the predicate of .all
 K_REDUX,       # Y: REDUX_OPS index; D: membermask
 K_PACK,        # mov.bW d, {a, b(, c, d)}: Y: the part's width, Z: the number of parts
 K_UNPACK,      # mov.bW {d, d2}, a: Y: the part's width (the low part to the destination, the high one to the second)
 K_HALF,        # add/sub/mul/fma{.rn}.{f16,bf16,f16x2,bf16x2}: Y: HALF_OPS index (fma: + 16 the product negated,
                # + 32 the addend negated: a contracted mul and add), Z: 0 f16, 1 bf16; W: 16 or 32
 K_CVTF,        # cvt{.rn} between f16, bf16, f32 and f64: Y: the source's format, Z: the destination's (F_*)
 K_FP8,         # cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2}: Y: 0 e4m3, 1 e5m2; Z: 1 = .relu
 K_F64,         # add/sub/mul/fma/div/rcp/sqrt/neg/abs/min/max .f64: Y: F64_OPS index, Z: MODES index
 K_TOFP8,       # cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32,f16x2}: Y: 1 = e5m2, + 2 an f16x2 source; Z: 1 = .relu
 K_F2I,         # cvt.{rni,rzi,rmi,rpi}{.ftz}{.sat}.int.float: Y: the source's format (F_*) + 4 * IRND index
                # + 16 .ftz; Z: the destination's width + 256 if signed
 K_HMISC,       # min/max{.ftz}{.NaN}{.xorsign.abs}, neg/abs{.ftz} of .f16/.bf16/.f16x2/.bf16x2 (and
                # min/max.xorsign.abs.f32): Y: HMISC_OPS index + 4 .NaN + 8 .xorsign.abs + 16 .ftz;
                # Z: 0 f16, 1 bf16, 2 f32 (F_*); W: 16 or 32
 K_F32,         # add/sub/mul/fma/div/rcp/sqrt .f32 in every rounding, .ftz, .sat: Y: F32_OPS index + 8 * MODES
                # index + 32 .ftz + 64 .sat
 K_MMAX,        # mma.sync of the f64 and integer (and .b1 AND) families: V0: the address of the mma's table
                # (MMA_* layout), V0 + 1 its length, V0 + 2 the address of mmatile.mma_c
 K_DP,          # dp4a / dp2a.lo / dp2a.hi: Y: 1 a signed + 2 b signed + 4 * (0 dp4a, 1 dp2a.lo, 2 dp2a.hi)
 K_SAD,         # sad: c + |a - b| of the row's type
 K_CVTF2,       # the other float -> float cvt forms (ops.cvt): Y: CVT_* bits; the loop's and K_CVTF's go first
 K_I2F,         # cvt.{rn,rz,rm,rp}{.ftz}{.sat}.float.int: Y: the destination's format (F_*) + 16 * MODES index
                # + CVT_FTZ + CVT_SAT; the source's type: W, SGN
 K_VIDEO,       # vadd/vsub/vavrg/vabsdiff/vmin/vmax/vset 2 and 4 (ops.simd): Y: VIDEO_OPS index (vset: 6 + its
                # comparison) + 16 (4 parts) + 32 a signed + 64 b signed + 128 d signed + 256 .add + 512 .sat
                # + 1024 * the destination's mask bits; Z: the part of {b, a} each element of a (bits 3i) and
                # of b (bits 12 + 3i) takes
 ) = range(33)
VIDEO_OPS = ("add", "sub", "avrg", "absdiff", "min", "max", "eq", "ne", "lt", "le", "gt", "ge")
# K_CVTF2's Y: the source's format + 4 * the destination's (F_*) + 16 * MODES (or IRND) index + the flags
CVT_FTZ, CVT_SAT, CVT_RELU, CVT_SATFINITE, CVT_RND, CVT_IRND = 64, 128, 256, 512, 1024, 2048
# the table of a K_MMAX row (int64): kind (0 f64, 1 integer), na, nb, nc, nd, 20 register slots (D, A, B, C),
# then the maps' length and the maps, then the parameters' length and the parameters (ops.mma.MmaOp)
MMA_REGS, MMA_MAPS = 5, 25
HMISC_OPS = ("min", "max", "neg", "abs")
F32_OPS = ("add", "sub", "mul", "fma", "div", "rcp", "sqrt")
IRND = ("rni", "rzi", "rmi", "rpi")
F64_OPS = ("add", "sub", "mul", "fma", "div", "rcp", "sqrt", "neg", "abs", "min", "max")
MODES = ("rn", "rz", "rm", "rp")
HALF_OPS = ("add", "sub", "mul", "fma")
F_F16, F_BF16, F_F32, F_F64 = range(4)
FMT_BITS = (16, 16, 32, 64)
CY_IN, CY_SUB, CY_MAD, CY_HI, CY_SIGNED = 1, 2, 4, 8, 16
PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
REDUX_OPS = ("add", "min", "max", "and", "or", "xor")
_PRMT = np.array([   # ops.intx._PRMT_MODES: selector (c & 3) -> source byte of result bytes 0..3
    [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]], np.int64)


@njit(cache=True)
def _bitlen(x):
    n = 0
    while x != U0:
        x >>= U1
        n += 1
    return n


@njit(cache=True)
def _popc(x):
    n = 0
    while x != U0:
        x &= x - U1
        n += 1
    return n


@njit(cache=True)
def _field(v, w):
    """ops.intx._field: the 32-bit forms read a position/length's low 8 bits, the 64-bit forms clamp it at 255."""
    return np.int64(v & np.uint64(0xFF)) if w == 32 else np.int64(min(v, np.uint64(0xFF)))


@njit(cache=True)
def _amount(v, clamp):
    """ops.intx._amount: .clamp limits a bmsk/szext count to 32, .wrap takes it modulo 32."""
    return np.int64(min(v, np.uint64(32))) if clamp else np.int64(v & np.uint64(31))


@njit(cache=True)
def _divrem(a, b, w, sgn, rem):
    """ops.intx.compile_intdiv: truncating division (C), all ones for a zero divisor, results wrapped."""
    mk = _mask(w)
    if b & mk == U0:
        return mk
    if not sgn:
        q = (a & mk) // (b & mk)
        return ((a & mk) - q * (b & mk)) & mk if rem else q
    x, y = _sext(a, w), _sext(b, w)
    nx, ny = np.int64(x) < 0, np.int64(y) < 0
    ux = (U0 - x) if nx else x                    # magnitudes (|INT64_MIN| = 2^63 as uint64)
    uy = (U0 - y) if ny else y
    q = ux // uy
    if nx != ny:
        q = U0 - q
    if rem:
        return (x - q * y) & mk
    return q & mk


@njit(cache=True)
def _carry(a, b, c, cin, w, flags):
    """ops.carry.compile_carry for one lane: (result, carry or borrow out)."""
    mk = _mask(w)
    if flags & CY_MAD:
        if w == 64:
            if flags & CY_HI:
                p = _mulhi_u64(a, b)
                if flags & CY_SIGNED:
                    if np.int64(a) < 0:
                        p -= b
                    if np.int64(b) < 0:
                        p -= a
            else:
                p = a * b
        else:
            x, y = a, b
            if flags & CY_SIGNED:
                x, y = _sext(a, w), _sext(b, w)
            p = x * y                              # the low 64 bits hold the 2w-bit product
            p = (p >> np.uint64(w)) & mk if flags & CY_HI else p & mk
        a, b = p, c
    if flags & CY_SUB:
        t = a - b
        s = t - cin
        if w == 64:
            out = U1 if (a < b or t < cin) else U0
        else:
            out = U1 if np.int64(a) - np.int64(b) - np.int64(cin) < 0 else U0
        return s & mk, out
    t = a + b
    s = t + cin
    if w == 64:
        out = U1 if (t < a or s < t) else U0
    else:
        out = s >> np.uint64(w)
    return s & mk, out


@njit(cache=True)
def _members_ok(em, xd):
    """ops.warpops._member_check: each executing lane is in its own membermask, and every lane an executing
    lane names executes the instruction."""
    union = U0
    for lane in range(LANES):
        if (em >> lane) & 1:
            union |= xd[lane]
            if (xd[lane] >> np.uint64(lane)) & U1 == U0:
                return False
    for lane in range(LANES):
        if (union >> np.uint64(lane)) & U1 != U0 and (em >> lane) & 1 == 0:
            return False
    return True


@njit(cache=True)
def x_rows(kind, y, z, w, sgn, em, xa, xb, xc, xd, xr, xq):
    """One XROW on the lanes in ``em``: sources xa, xb, xc, xd (read with their types), results in xr (and the
    second destination's in xq). Returns 0, or 1 when a lane breaks a rule (the loop hands the row back)."""
    mk = _mask(w)
    if kind == K_VIDEO:
        return _video_rows(y, z, em, xa, xb, xc, xr)
    if kind == K_F64:
        return _f64_rows(y, z, em, xa, xb, xc, xr)
    if kind == K_F32:
        return _f32_rows(y, em, xa, xb, xc, xr)
    if kind == K_CVTF2 or kind == K_I2F:
        for lane in range(LANES):
            if (em >> lane) & 1:
                xr[lane] = _cvtf2(y, xa[lane]) if kind == K_CVTF2 else _i2f(y, w, sgn, xa[lane])
        return 0
    if kind == K_DP or kind == K_SAD:
        return _dp_sad(kind, y, w, sgn, em, xa, xb, xc, xr)
    if kind >= K_TOFP8:
        return _convert_rows(kind, y, z, w, em, xa, xb, xr)
    if kind >= K_PACK:
        return _moves_floats(kind, y, z, w, em, xa, xb, xc, xd, xr, xq)
    if kind >= K_VOTE:
        if kind != K_ACTIVEMASK and not _members_ok(em, xd):
            return 1
        bits = U0
        for lane in range(LANES):
            if (em >> lane) & 1:
                bits |= U1 << np.uint64(lane)
        if kind == K_ACTIVEMASK:
            for lane in range(LANES):
                xr[lane] = bits
            return 0
        if kind == K_VOTE:
            ballot = U0
            n = 0
            for lane in range(LANES):
                if (em >> lane) & 1 and xa[lane] != U0:
                    ballot |= U1 << np.uint64(lane)
                    n += 1
            nact = _popc(bits)
            if y == 3:
                r = ballot
            elif y == 0:
                r = U1 if n == nact else U0
            elif y == 1:
                r = U1 if n > 0 else U0
            else:
                r = U1 if (n == nact or n == 0) else U0
            for lane in range(LANES):
                xr[lane] = r
            return 0
        if kind == K_MATCH:
            allsame = True
            first = -1
            for lane in range(LANES):
                if (em >> lane) & 1:
                    if first < 0:
                        first = lane
                    elif xa[lane] != xa[first]:
                        allsame = False
            for lane in range(LANES):
                if y == 1:
                    xr[lane] = bits if allsame else U0
                    xq[lane] = U1 if allsame else U0
                else:
                    same = U0
                    for j in range(LANES):
                        if (em >> j) & 1 and xa[j] == xa[lane]:
                            same |= U1 << np.uint64(j)
                    xr[lane] = same
            return 0
        # K_REDUX
        r = U0
        started = False
        for lane in range(LANES):
            if (em >> lane) & 1:
                v = xa[lane] & M32
                if not started:
                    r = v
                    started = True
                elif y == 0:
                    r = (r + v) & M32
                elif y == 1 or y == 2:
                    if sgn:
                        lt = np.int64(_sext(v, 32)) < np.int64(_sext(r, 32))
                    else:
                        lt = v < r
                    if lt == (y == 1) and v != r:
                        r = v
                elif y == 3:
                    r &= v
                elif y == 4:
                    r |= v
                else:
                    r ^= v
        for lane in range(LANES):
            xr[lane] = r
        return 0
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a = xa[lane]
        b = xb[lane]
        c = xc[lane]
        if kind == K_LOP3:
            r = U0
            for k in range(8):
                if (y >> k) & 1:
                    r |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
            xr[lane] = r & M32
        elif kind == K_POPC:
            xr[lane] = np.uint64(_popc(a & mk))
        elif kind == K_CLZ:
            xr[lane] = np.uint64(w - _bitlen(a & mk))
        elif kind == K_BREV:
            x = a & mk
            r = U0
            for i in range(w):
                r = (r << U1) | ((x >> np.uint64(i)) & U1)
            xr[lane] = r
        elif kind == K_BFIND:
            x = a & mk
            if sgn and (x >> np.uint64(w - 1)) & U1:
                x = ~x & mk
            pos = _bitlen(x) - 1
            if pos < 0:
                xr[lane] = M32
            else:
                xr[lane] = np.uint64(w - 1 - pos if y else pos)
        elif kind == K_BFI:
            pos = _field(c, w)
            ln = _field(xd[lane], w)
            k = min(ln, w - pos) if pos < w else 0
            if k <= 0:
                xr[lane] = b & mk
            else:
                fm = (ALL >> np.uint64(64 - k)) << np.uint64(pos)
                xr[lane] = ((b & ~fm) | ((a << np.uint64(pos)) & fm)) & mk
        elif kind == K_PRMT:
            both = (a & M32) | ((b & M32) << np.uint64(32))
            sel = np.int64(c & np.uint64(3))
            r = U0
            for k in range(4):
                byte = (both >> np.uint64(8 * _PRMT[y, sel, k])) & np.uint64(0xFF)
                r |= byte << np.uint64(8 * k)
            xr[lane] = r
        elif kind == K_SHF:
            n = min(c, np.uint64(32)) if z else c & np.uint64(31)
            both = (a & M32) | ((b & M32) << np.uint64(32))
            if y:
                xr[lane] = ((both << n) >> np.uint64(32)) & M32
            else:
                xr[lane] = (both >> n) & M32
        elif kind == K_DIV or kind == K_REM:
            xr[lane] = _divrem(a, b, w, sgn, kind == K_REM)
        elif kind == K_BMSK:
            pos, n = _amount(a, y), _amount(b, y)
            xr[lane] = (((U1 << np.uint64(n)) - U1) << np.uint64(pos)) & M32
        elif kind == K_SZEXT:
            x = a & M32
            n = _amount(b, y)
            low = x & ((U1 << np.uint64(n)) - U1)
            if z and n > 0 and (x >> np.uint64(n - 1)) & U1:
                low -= U1 << np.uint64(n)
            xr[lane] = low & M32
        elif kind == K_CARRY:
            cin = xd[lane] & U1 if y & CY_IN else U0
            xr[lane], xq[lane] = _carry(a & mk, b & mk, c & mk, cin, w, y)
    return 0


@njit(cache=True, _nrt=False)
def bit_rows(kind, y, z, w, xa, xb, xc, xd, xr):
    """``x_rows`` of the common bit rows (K_LOP3, K_PRMT, K_SHF, K_BFI) on all 32 lanes, one loop per kind (the
    lanes no instruction runs on are computed and not written). False for the other kinds."""
    if kind == K_LOP3:                  # the truth table's bit (a, b, c), as three levels of selection:
        t0 = ALL if y & 1 else U0       # x0 ^ (s & (x0 ^ x1)) picks x1 where s is set, bit by bit
        t2 = ALL if (y >> 2) & 1 else U0
        t4 = ALL if (y >> 4) & 1 else U0
        t6 = ALL if (y >> 6) & 1 else U0
        k0 = t0 ^ (ALL if (y >> 1) & 1 else U0)
        k1 = t2 ^ (ALL if (y >> 3) & 1 else U0)
        k2 = t4 ^ (ALL if (y >> 5) & 1 else U0)
        k3 = t6 ^ (ALL if (y >> 7) & 1 else U0)
        for lane in range(LANES):
            a, b, c = xa[lane], xb[lane], xc[lane]
            u0 = t0 ^ (c & k0)
            u1 = t2 ^ (c & k1)
            u2 = t4 ^ (c & k2)
            u3 = t6 ^ (c & k3)
            v0 = u0 ^ (b & (u0 ^ u1))
            v1 = u2 ^ (b & (u2 ^ u3))
            xr[lane] = (v0 ^ (a & (v0 ^ v1))) & M32
    elif kind == K_SHF:
        for lane in range(LANES):
            c = xc[lane]
            n = min(c, np.uint64(32)) if z else c & np.uint64(31)
            both = (xa[lane] & M32) | ((xb[lane] & M32) << np.uint64(32))
            xr[lane] = (((both << n) >> np.uint64(32)) if y else (both >> n)) & M32
    elif kind == K_PRMT:                # _PRMT's source byte of result byte k, by the mode's rule
        for lane in range(LANES):
            both = (xa[lane] & M32) | ((xb[lane] & M32) << np.uint64(32))
            s = np.int64(xc[lane] & np.uint64(3))
            r = U0
            for k in range(4):
                if y == 0:
                    src = (s + k) & 7
                elif y == 1:
                    src = (s - k) & 7
                elif y == 2:
                    src = s
                elif y == 3:
                    src = max(s, k)
                elif y == 4:
                    src = min(s, k)
                else:
                    src = 2 * (s & 1) + (k & 1)
                r |= ((both >> np.uint64(8 * src)) & np.uint64(0xFF)) << np.uint64(8 * k)
            xr[lane] = r
    elif kind == K_BFI:
        mk = _mask(w)
        for lane in range(LANES):
            pos = _field(xc[lane], w)
            ln = _field(xd[lane], w)
            k = min(ln, w - pos) if pos < w else 0
            if k <= 0:
                xr[lane] = xb[lane] & mk
            else:
                fm = (ALL >> np.uint64(64 - k)) << np.uint64(pos)
                xr[lane] = ((xb[lane] & ~fm) | ((xa[lane] << np.uint64(pos)) & fm)) & mk
    else:
        return False
    return True


@intrinsic
def call_x(typingctx, fn, em, prow, pimm, parena, n, pscratch):
    """Call the compiled ``xcall.x_c`` at the address ``fn`` (all arguments int64: the lanes, the addresses of
    the row, its immediates, the arena, the arena's length, the loop's scratch); returns its int64."""
    sig = types.int64(*([types.int64] * 7))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        p64, p8 = i64.as_pointer(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [i64, p64, p64, p8, i64, p64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], builder.inttoptr(args[2], p64), builder.inttoptr(args[3], p64),
                                builder.inttoptr(args[4], p8), args[5], builder.inttoptr(args[6], p64)])
    return sig, codegen


# -- mov pack/unpack, half-precision arithmetic, float conversions ---------------------------------------------

@njit(cache=True)
def _f16_value(h):
    """The binary16 ``h`` (raw bits) as a float64 (exact)."""
    e = np.int64((h >> np.uint64(10)) & np.uint64(0x1F))
    f = np.int64(h & np.uint64(0x3FF))
    neg = (h >> np.uint64(15)) & U1
    if e == 31:
        v = np.inf if f == 0 else np.nan
    elif e == 0:
        v = np.float64(f) * 2.0 ** -24
    else:
        v = np.float64(1024 + f) * 2.0 ** (e - 25)
    return -v if neg else v


@njit(cache=True)
def _value(bits, fmt):
    """Raw bits of format ``fmt`` (F_*) as a float64 (exact)."""
    if fmt == F_F16:
        return _f16_value(bits & np.uint64(0xFFFF))
    if fmt == F_BF16:
        return np.float64(i2f32((bits & np.uint64(0xFFFF)) << np.uint64(16)))
    if fmt == F_F32:
        return np.float64(i2f32(bits & M32))
    return i2f(np.int64(bits))


@njit(cache=True)
def _rne(x, fmt):
    """The float64 ``x`` (not a NaN) rounded to nearest even in ``fmt`` (F_*): raw bits (overflow: inf)."""
    if fmt == F_F64:
        return np.uint64(f2i(x))
    eb, mb = (5, 10) if fmt == F_F16 else ((8, 7) if fmt == F_BF16 else (8, 23))
    return _rne_bits(x, eb, mb, True)


@njit(cache=True)
def _rne_bits(x, eb, mb, cap):
    """The float64 ``x`` (not a NaN) rounded to nearest even in the binary format of ``eb`` exponent and ``mb``
    fraction bits: raw bits. ``cap``: the top exponent holds infinities (an overflow gives one); without it
    (e4m3, whose top exponent holds numbers) the caller has clamped ``x`` into range."""
    wd = 1 + eb + mb
    bits = np.uint64(f2i(x))
    sign = bits >> np.uint64(63)
    ex = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
    frac = bits & np.uint64(0xFFFFFFFFFFFFF)
    top = sign << np.uint64(wd - 1)
    expmax = np.uint64((1 << eb) - 1)
    if ex == 0x7FF:
        return top | (expmax << np.uint64(mb))
    if ex == 0:                              # zero, or a float64 subnormal: far below every format here
        return top
    mant = frac | (U1 << np.uint64(52))
    e = ex - 1023
    bias = (1 << (eb - 1)) - 1
    emin = 1 - bias
    shift = 52 - mb + (emin - e if e < emin else 0)
    if shift >= 64:
        return top
    r = mant >> np.uint64(shift)
    rem = mant & ((U1 << np.uint64(shift)) - U1)
    half = U1 << np.uint64(shift - 1)
    if rem > half or (rem == half and (r & U1)):
        r += U1
    big = e if e > emin else emin
    if r >> np.uint64(mb + 1):
        r >>= U1
        big += 1
    if (r >> np.uint64(mb)) == U0:
        return top | r                       # subnormal (or zero)
    biased = big + bias
    if cap and biased >= (1 << eb) - 1:
        return top | (expmax << np.uint64(mb))
    return top | (np.uint64(biased) << np.uint64(mb)) | (r & ((U1 << np.uint64(mb)) - U1))


@njit(cache=True)
def _fold_odd(s, e):
    """fround.round_odd: the float64 neighbour of s + e whose last bit is odd (s when e is 0)."""
    if e == 0.0 or s - s != 0.0:
        return s
    b = f2i(s)
    if b & 1:
        return s
    if (e > 0.0) == (s > 0.0):
        return i2f(b + 1)
    return i2f(b - 1)


@njit(cache=True)
def _half_op(op, fmt, a, b, c):
    """ops.falu add/sub/mul/fma .rn of one f16/bf16 element (raw bits): the exact result (products are exact in
    float64, sums carry their TwoSum error), one rounding; a NaN result is the canonical 0x7FFF."""
    negp, negc = (op >> 4) & 1, (op >> 5) & 1    # a fused (contracted) product or addend negated
    op &= 15
    x = _value(a, fmt)
    y = _value(b, fmt)
    if op == 1:
        y = -y
    if negp:
        x = -x
    e = 0.0
    if op == 2:
        s = x * y
    else:
        if op == 3:
            p = x * y
            cc = _value(c, fmt)
            if negc:
                cc = -cc
        else:
            p = x
            cc = y
        s = p + cc
        if s - s == 0.0:
            bb = s - p
            e = (p - (s - bb)) + (cc - bb)
    if s != s:
        return np.uint64(0x7FFF)
    return _rne(_fold_odd(s, e), fmt)


@njit(cache=True)
def _nan_convert(bits, af, df):
    """ops.cvt.nan_convert (no .ftz): the NaN cvt makes of the NaN ``bits`` of format ``af`` in format ``df``."""
    aw, dw = FMT_BITS[af], FMT_BITS[df]
    if af == F_BF16 and df == F_F32:
        return (bits & np.uint64(0xFFFF)) << np.uint64(16)
    if af == F_F64 or df == F_F64:
        afb = 10 if af == F_F16 else (7 if af == F_BF16 else (23 if af == F_F32 else 52))
        dfb = 10 if df == F_F16 else (7 if df == F_BF16 else (23 if df == F_F32 else 52))
        sign = ((bits >> np.uint64(aw - 1)) & U1) << np.uint64(dw - 1)
        pay = bits & ((U1 << np.uint64(afb)) - U1)
        pay = pay << np.uint64(dfb - afb) if dfb > afb else pay >> np.uint64(afb - dfb)
        ex = np.uint64(((1 << (dw - 1 - dfb)) - 1)) << np.uint64(dfb)
        return sign | ex | pay | (U1 << np.uint64(dfb - 1))
    return np.uint64(0x7FFF) if dw == 16 else np.uint64(0x7FFFFFFF)


@njit(cache=True)
def _fp8_to_f16(b, e5m2):
    """ops.cvt_narrow._from_fp8 of one byte: exact widening to binary16, a NaN gives 0x7FFF."""
    if e5m2:
        if (b & np.uint64(0x7F)) > np.uint64(0x7C):
            return np.uint64(0x7FFF)
        return b << np.uint64(8)
    if (b & np.uint64(0x7F)) == np.uint64(0x7F):
        return np.uint64(0x7FFF)
    e = np.int64((b >> np.uint64(3)) & np.uint64(0xF))
    m = np.float64(b & np.uint64(7))
    v = m * 2.0 ** -9 if e == 0 else (8.0 + m) * 2.0 ** (e - 10)
    if (b >> np.uint64(7)) & U1:
        v = -v
    return _rne(v, F_F16)


@njit(cache=True)
def _moves_floats(kind, y, z, w, em, xa, xb, xc, xd, xr, xq):
    pm = _mask(y) if kind <= K_UNPACK else U0
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a = xa[lane]
        if kind == K_PACK:
            r = (a & pm) | ((xb[lane] & pm) << np.uint64(y))
            if z == 4:
                r |= ((xc[lane] & pm) << np.uint64(2 * y)) | ((xd[lane] & pm) << np.uint64(3 * y))
            xr[lane] = r
        elif kind == K_UNPACK:
            xr[lane] = a & pm
            xq[lane] = (a >> np.uint64(y)) & pm
        elif kind == K_HALF:
            r = U0
            for i in range(w // 16):
                sh = np.uint64(16 * i)
                h = _half_op(y, z, (a >> sh) & np.uint64(0xFFFF), (xb[lane] >> sh) & np.uint64(0xFFFF),
                             (xc[lane] >> sh) & np.uint64(0xFFFF))
                r |= h << sh
            xr[lane] = r
        elif kind == K_CVTF:
            x = _value(a, y)
            xr[lane] = _nan_convert(a, y, z) if x != x else _rne(x, z)
        else:                                         # K_FP8
            r = U0
            for i in range(2):
                h = _fp8_to_f16((a >> np.uint64(8 * i)) & np.uint64(0xFF), y == 1)
                if z and h != np.uint64(0x7FFF) and (h >> np.uint64(15)) & U1:
                    h = U0                            # .relu: negative values and -0 give +0
                r |= h << np.uint64(16 * i)
            xr[lane] = r
    return 0


Q64 = np.uint64(0x8000000000000)
SIGN64 = np.uint64(0x8000000000000000)
MAX64 = np.uint64(0x7FEFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _isnan64(b):
    return (b & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)


@njit(cache=True)
def _video_rows(y, z, em, xa, xb, xc, xr):
    """ops.simd.compile_video, lane by lane: each element of a and b is the n-bit part of {b, a} its selector
    names, extended by its type; t_i = op(a_i, b_i) exactly (vset: 1 or 0); merge (d's element i is t_i, clamped
    with .sat, else its low bits, where the mask names i, c's element elsewhere) or accumulate (c + the masked
    t_i), modulo 2^32."""
    op = y & 15
    n = 4 if (y >> 4) & 1 else 2
    w = 32 // n
    mw = (np.int64(1) << w) - 1
    half = np.int64(1) << (w - 1)
    sa, sb, sd = (y >> 5) & 1, (y >> 6) & 1, (y >> 7) & 1
    acc, sat = (y >> 8) & 1, (y >> 9) & 1
    lo, hi = (-half, half - 1) if sd else (np.int64(0), mw)
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        pair = (xa[lane] & M32) | ((xb[lane] & M32) << np.uint64(32))
        c = np.int64(xc[lane] & M32)
        r = c if acc else np.int64(0)
        for i in range(n):
            x = np.int64((pair >> np.uint64(w * ((z >> (3 * i)) & 7))) & np.uint64(mw))
            v = np.int64((pair >> np.uint64(w * ((z >> (12 + 3 * i)) & 7))) & np.uint64(mw))
            if sa and x >= half:
                x -= np.int64(1) << w
            if sb and v >= half:
                v -= np.int64(1) << w
            if op == 0:
                t = x + v
            elif op == 1:
                t = x - v
            elif op == 2:
                t = (x + v + 1) >> 1 if x + v >= 0 else (x + v) >> 1
            elif op == 3:
                t = abs(x - v)
            elif op == 4:
                t = min(x, v)
            elif op == 5:
                t = max(x, v)
            else:
                k = op - 6
                hit = (x == v) if k == 0 else (x != v) if k == 1 else (x < v) if k == 2 else \
                    (x <= v) if k == 3 else (x > v) if k == 4 else (x >= v)
                t = np.int64(1) if hit else np.int64(0)
            on = (y >> (10 + i)) & 1
            if acc:
                if on:
                    r += t
            else:
                if sat:
                    t = min(max(t, lo), hi)
                part = t if on else c >> (w * i)
                r |= (part & mw) << (w * i)
        xr[lane] = np.uint64(r & np.int64(0xFFFFFFFF))
    return 0


@njit(cache=True)
def _f64_sum(x, y, mode):
    """fround: x + y rounded once in ``mode`` (MODES index): the TwoSum error steps the nearest result
    (_directed_f64), an exact zero takes IEEE's sign (zero_sum_sign), an overflow of finite operands gives the
    largest finite value where the mode rounds away from infinity. Raw bits."""
    s = x + y
    if mode == 0:
        return np.uint64(f2i(s))
    e = 0.0
    fin = s - s == 0.0
    if fin:
        bb = s - x
        e = (x - (s - bb)) + (y - bb)
    if s == 0.0 and mode == 2 and not (x == 0.0 and y == 0.0 and f2i(x) >= 0 and f2i(y) >= 0):
        s = -0.0
    b = np.uint64(f2i(s))
    if fin and e != 0.0:                             # s is not zero: step one ulp (sign-magnitude bits)
        if mode == 1:
            if (e > 0.0) != (s > 0.0):
                b -= U1                                  # toward zero
        elif mode == 2:
            if e < 0.0:
                b = b + U1 if s < 0.0 else b - U1        # toward -inf
        elif e > 0.0:
            b = b + U1 if s > 0.0 else b - U1            # toward +inf
    elif not fin and s == s and x - x == 0.0 and y - y == 0.0:      # overflow of finite operands
        neg = s < 0.0
        keep = (mode == 2 and neg) or (mode == 3 and not neg)
        if not keep:
            b = MAX64 | (SIGN64 if neg else U0)
    return b


@njit(cache=True, error_model="numpy")           # x / 0 is IEEE's, not ZeroDivisionError
def _f64_rows(op, mode, em, xa, xb, xc, xr):
    """ops.falu's .f64 forms: one IEEE operation (products, quotients, roots and fma correctly rounded by the
    machine's binary64), NaN operands give the first NaN in the reference's order quieted (f64_nan: b then a;
    fma: b, c, a; neg/abs: a), a NaN made of numbers the machine's. div/rcp/sqrt keep the machine's NaN."""
    if mode != 0 and (op == 2 or op == 4 or op == 5 or op == 6):
        return _f64_directed(op, mode, em, xa, xb, xr)
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a, b, c = xa[lane], xb[lane], xc[lane]
        x, yv = i2f(np.int64(a)), i2f(np.int64(b))
        if op == 9 or op == 10:                          # min, max: -0 below +0; one NaN: the other operand; two:
            if _isnan64(a) or _isnan64(b):               # the second's, quieted
                r = (b | Q64) if _isnan64(b) and _isnan64(a) else (b if _isnan64(a) else a)
            elif x == yv:
                r = (a | b) if (op == 9) else (a & b)    # (equal values differ at most in the zero's sign)
            else:
                r = a if (x < yv) == (op == 9) else b
        elif op == 7 or op == 8:                         # neg, abs
            r = (a ^ SIGN64) if op == 7 else (a & ~SIGN64)
            if _isnan64(a):
                r = a | Q64
        elif op == 4:
            r = np.uint64(f2i(x / yv))
        elif op == 5:
            r = np.uint64(f2i(1.0 / x))
        elif op == 6:
            r = np.uint64(f2i(np.sqrt(x)))
        elif op == 3:
            r = np.uint64(f2i(_fma64(x, yv, i2f(np.int64(c)))))
            if _isnan64(b):
                r = b | Q64
            elif _isnan64(c):
                r = c | Q64
            elif _isnan64(a):
                r = a | Q64
        else:
            if op == 2:
                r = np.uint64(f2i(x * yv))
            else:
                r = _f64_sum(x, -yv if op == 1 else yv, mode)
            if _isnan64(b):
                r = b | Q64
            elif _isnan64(a):
                r = a | Q64
        xr[lane] = r
    return 0


# -- cvt to the fp8 pairs, cvt float -> integer, half-precision min/max/neg/abs ---------------------------------

@njit(cache=True)
def _fp8_of(x, e5m2, relu):
    """ops.cvt_narrow._fp8 of one float64: clamped to the largest finite value, rounded to nearest even, a NaN
    gives 0x7F, .relu gives +0 for a negative value or -0."""
    if x != x:
        return np.uint64(0x7F)
    big = 57344.0 if e5m2 else 448.0
    c = x
    if c > big:
        c = big
    elif c < -big:
        c = -big
    if relu and f2i(c) < 0:
        return U0
    return _rne_bits(c, 5, 2, False) if e5m2 else _rne_bits(c, 4, 3, False)


@njit(cache=True)
def _flush16(h, fmt):
    """fround.flush of one f16/bf16 (raw bits): a subnormal becomes the zero of its sign."""
    mb = np.uint64(10) if fmt == F_F16 else np.uint64(7)
    if (h >> mb) & np.uint64(0xFF if fmt == F_BF16 else 0x1F) == U0 and h & ((U1 << mb) - U1) != U0:
        return h & np.uint64(0x8000)
    return h


@njit(cache=True)
def _hmisc(y, fmt, a, b):
    """ops.falu _compile_minmax / _compile_negabs of one f16/bf16 element, or of an f32 (raw bits)."""
    op = y & 3
    sign = np.uint64(0x80000000) if fmt == F_F32 else np.uint64(0x8000)
    absm = sign - U1
    if y & 16:
        a = _flush_fmt(a, fmt)
        b = _flush_fmt(b, fmt)
    if op >= 2:
        r = (a ^ sign) if op == 2 else (a & absm)
        return absm if _value(r, fmt) != _value(r, fmt) else r
    sgn = (a ^ b) & sign
    if y & 8:                                   # .xorsign.abs: min/max of |a| and |b|, the sign a ^ b
        a &= absm
        b &= absm
    fa, fb = _value(a, fmt), _value(b, fmt)
    na, nb = fa != fa, fb != fb
    sa = a & sign != U0
    if op == 0:
        pick_a = fa < fb or (fa == fb and sa)
    else:
        pick_a = fa > fb or (fa == fb and not sa)
    r = a if pick_a else b
    if na and not nb:
        r = b
    elif nb and not na:
        r = a
    if (na and nb) or ((y & 4) != 0 and (na or nb)):
        r = absm
    if y & 16:
        r = _flush_fmt(r, fmt)
    if y & 8 and _value(r, fmt) == _value(r, fmt):
        r = (r & absm) | sgn
    return r


@njit(cache=True)
def _f2i(y, dw, dsg, a):
    """ops.cvt float -> integer of one lane: rounded to an integer in float64, NaN -> 0 (the 'integer
    indefinite' 0x80..0 from .f64 and to 64-bit types), saturated to the destination's range."""
    af = y & 3
    irnd = (y >> 2) & 3
    v = _value(a, af)
    if y & 16 and af == F_F32 and (a & np.uint64(0x7F800000)) == U0:
        v = -0.0 if (a >> np.uint64(31)) & U1 else 0.0
    if irnd == 0:
        f = np.rint(v)
    elif irnd == 1:
        f = np.trunc(v)
    elif irnd == 2:
        f = np.floor(v)
    else:
        f = np.ceil(v)
    mk = _mask(dw)
    if f != f:
        return (U1 << np.uint64(dw - 1)) if (af == F_F64 or dw == 64) else U0
    if dsg:
        hi = np.float64((1 << (dw - 1)) - 1) if dw < 64 else 9223372036854775807.0
        lo = -np.float64(1 << (dw - 1)) if dw < 64 else -9223372036854775808.0
        if f >= hi:
            return np.uint64(np.int64(hi) if dw < 64 else np.int64(9223372036854775807)) & mk
        if f <= lo:
            return np.uint64(np.int64(lo)) & mk
        return np.uint64(np.int64(f)) & mk
    hi = np.float64((1 << dw) - 1) if dw < 64 else 18446744073709551615.0
    if f >= hi:
        return mk
    if f <= 0.0:
        return U0
    return np.uint64(f) & mk


@njit(cache=True)
def _convert_rows(kind, y, z, w, em, xa, xb, xr):
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a = xa[lane]
        if kind == K_TOFP8:
            e5m2, relu = (y & 1) != 0, z != 0
            if y & 2:                                   # f16x2: the upper half to the upper byte
                lo = _fp8_of(_f16_value(a & np.uint64(0xFFFF)), e5m2, relu)
                hi = _fp8_of(_f16_value((a >> np.uint64(16)) & np.uint64(0xFFFF)), e5m2, relu)
            else:                                       # d = fp8(a) << 8 | fp8(b)
                hi = _fp8_of(np.float64(i2f32(a & M32)), e5m2, relu)
                lo = _fp8_of(np.float64(i2f32(xb[lane] & M32)), e5m2, relu)
            xr[lane] = (hi << np.uint64(8)) | lo
        elif kind == K_F2I:
            xr[lane] = _f2i(y, z & 255, z >> 8, a)
        elif z == F_F32:                                # K_HMISC of an f32
            xr[lane] = _hmisc(y, z, a & M32, xb[lane] & M32)
        else:                                           # K_HMISC
            r = U0
            for i in range(w // 16):
                sh = np.uint64(16 * i)
                r |= _hmisc(y, z, (a >> sh) & np.uint64(0xFFFF), (xb[lane] >> sh) & np.uint64(0xFFFF)) << sh
            xr[lane] = r
    return 0


# -- .f32 arithmetic in every rounding mode (ops.falu through fround.round_to) ------------------------------------

TINY32 = 2.0 ** -126


@njit(cache=True)
def _step32(b, up):
    """fround._bits_step for f32: the next value toward +inf (up) or -inf, on sign-magnitude bits."""
    neg = (b >> np.uint64(31)) & U1 != U0
    if b & np.uint64(0x7FFFFFFF) == U0:
        return U1 if up else np.uint64(0x80000001)
    return b + U1 if up != neg else b - U1


@njit(cache=True)
def _round32_raw(x, e, mode):
    """fround.round_to(x, "f32", mode, e) without .ftz/.sat/NaN canonicalisation: raw bits."""
    fin = x - x == 0.0
    if e != 0.0 and fin:
        x = _fold_odd(x, e)
    r = _bits_of32(np.float32(x))
    if mode != 0 and fin:
        back = np.float64(i2f32(r))
        if mode == 1:
            if abs(back) > abs(x):
                r = _step32(r, back < 0.0)
        elif mode == 2:
            if back > x:
                r = _step32(r, False)
        elif back < x:
            r = _step32(r, True)
    return r


@njit(cache=True)
def _round32(x, e, mode, ftz, sat):
    """fround.round_to(x, "f32", mode, e, ftz, sat): raw bits of the f32 result."""
    if ftz and x != 0.0 and abs(x) < 2.0 * TINY32:                # _ftz_tiny: tiny with an unbounded exponent
        rs = np.float64(i2f32(_round32_raw(x * 2.0 ** 100, e * 2.0 ** 100, mode)))
        if abs(rs) < TINY32 * 2.0 ** 100:
            x = -0.0 if x < 0.0 else 0.0
            e = 0.0
    r = _round32_raw(x, e, mode)
    if sat:                                         # [0, 1]; NaN and -0 give +0
        rf = np.float64(i2f32(r))
        if rf != rf or rf == 0.0:
            r = U0
        elif rf > 1.0:
            r = np.uint64(0x3F800000)
        elif rf < 0.0:
            r = U0
    if ftz and (r & np.uint64(0x7F800000)) == U0:
        r &= np.uint64(0x80000000)
    if (r & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000):
        r = np.uint64(0x7FFFFFFF)
    return r


@njit(cache=True)
def _val32(bits, ftz):
    """An f32 operand as a float64 (flushed under .ftz)."""
    if ftz and (bits & np.uint64(0x7F800000)) == U0:
        bits &= np.uint64(0x80000000)
    return np.float64(i2f32(bits & M32))


@njit(cache=True, error_model="numpy")
def _f32_rows(y, em, xa, xb, xc, xr):
    """ops.falu's .f32 add/sub/mul/fma/div/rcp/sqrt: the exact result (sums with their TwoSum error, products
    exact, quotients and roots of float64 correct for the f32 rounding), one rounding in the mode."""
    op = y & 7
    mode = (y >> 3) & 3
    ftz = (y & 32) != 0
    sat = (y & 64) != 0
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a = _val32(xa[lane], ftz)
        e = 0.0
        if op == 5:
            s = 1.0 / a
        elif op == 6:
            s = np.sqrt(a) if a >= 0.0 or a != a else np.nan
        elif op == 4:
            s = a / _val32(xb[lane], ftz)
        elif op == 2:
            s = a * _val32(xb[lane], ftz)
        else:
            if op == 3:
                p = a * _val32(xb[lane], ftz)
                c = _val32(xc[lane], ftz)
            else:
                p = a
                c = _val32(xb[lane], ftz)
                if op == 1:
                    c = -c
            s = p + c
            if s - s == 0.0:
                bb = s - p
                e = (p - (s - bb)) + (c - bb)
            if s == 0.0 and mode == 2 and not (p == 0.0 and c == 0.0 and f2i(p) >= 0 and f2i(c) >= 0):
                s = -0.0                            # fround.zero_sum_sign
        xr[lane] = _round32(s, e, mode, ftz, sat)
    return 0


@njit(cache=True)
def _dp_sad(kind, y, w, sgn, em, xa, xb, xc, xr):
    """ops.simd dp4a/dp2a (products of signed or unsigned parts summed onto the u32 c, wrapped to 32 bits) and
    ops.intx sad (c + |a - b|, wrapped to the type's width)."""
    mk = _mask(w)
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        a, b, c = xa[lane], xb[lane], xc[lane]
        if kind == K_SAD:
            if sgn:
                x, z = np.int64(_sext(a, w)), np.int64(_sext(b, w))
                d = np.uint64(x) - np.uint64(z) if x >= z else np.uint64(z) - np.uint64(x)
            else:
                x, z = a & mk, b & mk
                d = x - z if x >= z else z - x
            xr[lane] = (c + d) & mk
            continue
        mode = y >> 2
        s = np.int64(c & M32)
        npart = 4 if mode == 0 else 2
        for k in range(npart):
            if mode == 0:
                pa = np.int64((a >> np.uint64(8 * k)) & np.uint64(0xFF))
                if y & 1 and pa >= 128:
                    pa -= 256
            else:
                pa = np.int64((a >> np.uint64(16 * k)) & np.uint64(0xFFFF))
                if y & 1 and pa >= 32768:
                    pa -= 65536
            kb = k if mode <= 1 else k + 2
            pb = np.int64((b >> np.uint64(8 * kb)) & np.uint64(0xFF))
            if y & 2 and pb >= 128:
                pb -= 256
            s += pa * pb
        xr[lane] = np.uint64(s) & M32
    return 0


# -- the other float -> float conversions (ops.cvt's float -> float paths, fround.round_to) -------------------------

@njit(cache=True)
def _step16(b, up):
    """fround._bits_step for a 16-bit format."""
    neg = (b >> np.uint64(15)) & U1 != U0
    if b & np.uint64(0x7FFF) == U0:
        return U1 if up else np.uint64(0x8001)
    return b + U1 if up != neg else b - U1


@njit(cache=True)
def _round16(x, fmt, mode, sat):
    """fround.round_to(x, f16/bf16, mode, sat=sat) of a float64 that is not a NaN: raw bits."""
    r = _rne(x, fmt)
    if mode != 0 and x - x == 0.0:
        back = _value(r, fmt)
        if mode == 1:
            if abs(back) > abs(x):
                r = _step16(r, back < 0.0)
        elif mode == 2:
            if back > x:
                r = _step16(r, False)
        elif back < x:
            r = _step16(r, True)
    if sat:
        rf = _value(r, fmt)
        if rf != rf or rf <= 0.0:
            r = U0
        elif rf > 1.0:
            r = np.uint64(0x3C00 if fmt == F_F16 else 0x3F80)
    return r


@njit(cache=True)
def _nan_convert2(bits, af, df, ftz, rnd):
    """ops.cvt.nan_convert of one NaN (raw bits of format af) into format df."""
    aw, dw = FMT_BITS[af], FMT_BITS[df]
    if af == df and (af == F_F32 or af == F_F64) and not ftz and not rnd:
        return bits
    if af == F_BF16 and df == F_F32 and not ftz:
        return (bits & np.uint64(0xFFFF)) << np.uint64(16)
    if (af == F_F64 or df == F_F64) and not (ftz and af == F_F32 and df == F_F32):
        if ftz and af == F_F32:
            bits = np.uint64(0x7FFFFFFF)
        return _nan_convert(bits, af, df)
    return np.uint64(0x7FFF) if dw == 16 else (np.uint64(0x7FFFFFFF) if dw == 32 else np.uint64(0x7FF8000000000000))


@njit(cache=True)
def _flush_fmt(bits, fmt):
    """fround.flush of one value of ``fmt`` (raw bits): a subnormal becomes the zero of its sign."""
    if fmt == F_F32:
        return bits & np.uint64(0x80000000) if (bits & np.uint64(0x7F800000)) == U0 else bits
    if fmt == F_F64:
        return bits & SIGN64 if (bits & np.uint64(0x7FF0000000000000)) == U0 else bits
    return _flush16(bits, fmt)


@njit(cache=True)
def _cvtf2(y, a):
    """ops.cvt's float -> float conversion of one lane (raw bits in, raw bits out)."""
    af, df, mode = y & 3, (y >> 2) & 3, (y >> 4) & 3
    ftz, sat = (y & CVT_FTZ) != 0, (y & CVT_SAT) != 0
    if y & CVT_IRND:                                # cvt.{rni,rzi,rmi,rpi}{.ftz}{.sat}.f.f: an integral value
        v = _flush_fmt(a, af) if ftz else a
        x = _value(v, af)
        if mode == 0:
            f = np.rint(x)
        elif mode == 1:
            f = np.trunc(x)
        elif mode == 2:
            f = np.floor(x)
        else:
            f = np.ceil(x)
        if df == F_F64:
            r = np.uint64(f2i(f))
            if f != f:                              # a signalling NaN quieted, its payload kept (the H100; x86's
                r |= np.uint64(0x0008000000000000)  # roundsd too, but floor/ceil/trunc without SSE4.1 keep it)
        elif f != f:
            r = np.uint64(0x7FFFFFFF) if df == F_F32 else np.uint64(0x7FFF)
        else:
            r = _rne(f, df)                         # exact: an integral value of the format
        if sat:
            rf = _value(r, df)
            if rf != rf or rf <= 0.0:
                r = U0
            elif rf > 1.0:
                r = _rne(1.0, df)
        return _flush_fmt(r, df) if ftz else r
    v = a
    if ftz and af == F_F32 and df != F_F16:
        v = _flush_fmt(v, F_F32)
        if (v & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000):
            v = np.uint64(0x7FFFFFFF)
    x = _value(v, af)
    if x != x:
        return U0 if sat else _nan_convert2(v, af, df, ftz, (y & CVT_RND) != 0)
    if df == F_F32:
        r = _round32(x, 0.0, mode, ftz, sat)
    elif df == F_F64:
        r = np.uint64(f2i(x))
        if sat:
            r = U0 if x <= 0.0 else (np.uint64(f2i(1.0)) if x > 1.0 else r)
    else:
        r = _round16(x, df, mode, sat)
    if df == F_F16 or df == F_BF16:
        if y & CVT_SATFINITE and (r & np.uint64(0x7FFF)) == (np.uint64(0x7C00) if df == F_F16 else
                                                            np.uint64(0x7F80)):
            r = (r & np.uint64(0x8000)) | (np.uint64(0x7BFF) if df == F_F16 else np.uint64(0x7F7F))
        if y & CVT_RELU and not _value(r, df) > 0.0:
            r = U0
    return r


@njit(cache=True)
def _i2f(y, w, sgn, a):
    """ops.cvt integer -> float of one lane: the integer rounded once in the mode (exactly: the nearest float64
    and the integer remainder), an integer zero gives +0, then .sat."""
    df, mode = (y >> 2) & 3, (y >> 4) & 3
    sat = (y & CVT_SAT) != 0
    mk = _mask(w)
    v = a & mk
    if sgn:
        iv = _sext(v, w)
        x = np.float64(np.int64(iv))
        if x >= 9223372036854775808.0:               # rounded up to 2^63: iv - 2^63, a few units below zero
            e = -np.float64((np.int64(0x7FFFFFFFFFFFFFFF) - np.int64(iv)) + 1)
        else:
            e = np.float64(np.int64(iv) - np.int64(x))
    else:
        x = np.float64(v)
        if x >= 18446744073709551616.0:
            e = -np.float64(np.int64(~v) + 1)            # v - 2^64: a few units below zero
        else:
            e = np.float64(np.int64(v - np.uint64(x)))
    if df == F_F32:
        return _round32(x, e, mode, (y & CVT_FTZ) != 0, sat)
    if df == F_F64:
        r = np.uint64(f2i(x))
        if e != 0.0 and mode != 0:
            if mode == 1:
                if (e > 0.0) != (x > 0.0):
                    r -= U1                                   # toward zero (x is not zero)
            elif mode == 2:
                if e < 0.0:
                    r = r + U1 if x < 0.0 else r - U1
            elif e > 0.0:
                r = r + U1 if x > 0.0 else r - U1
        if sat:
            rf = i2f(np.int64(r))
            r = U0 if rf <= 0.0 else (np.uint64(f2i(1.0)) if rf > 1.0 else r)
        return r
    return _round16(_fold_odd(x, e), df, mode, sat)


LO64, HI64 = 2.0 ** -900, 2.0 ** 900


@njit(cache=True, error_model="numpy")
def _f64_directed(op, mode, em, xa, xb, xr):
    """mul/div/rcp/sqrt .f64 in a directed mode (ops.falu: the exact rational rounded once): the nearest result
    and the sign of its exact error (an fma gives the product's error, the quotient's and the root's remainder
    exactly while nothing is near the ends of the exponent range), then one step toward the mode. A lane with an
    operand or a result that is zero, not finite, or beyond 2^+-900 returns 1: the executor rounds it."""
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        x, y = i2f(np.int64(xa[lane])), i2f(np.int64(xb[lane]))
        if op == 2 and (x == 0.0 or y == 0.0) and x - x == 0.0 and y - y == 0.0:
            xr[lane] = (xa[lane] ^ xb[lane]) & SIGN64     # a finite product with a zero: exact, the signs' XOR
            continue
        if op == 2:
            q = x * y
            d = _fma64(x, y, -q)
            args_ok = LO64 <= abs(x) <= HI64 and LO64 <= abs(y) <= HI64
        elif op == 4:
            q = x / y
            d = _fma64(-q, y, x) * (1.0 if y > 0.0 else -1.0)
            args_ok = LO64 <= abs(x) <= HI64 and LO64 <= abs(y) <= HI64
        elif op == 5:
            q = 1.0 / x
            d = _fma64(-q, x, 1.0) * (1.0 if x > 0.0 else -1.0)
            args_ok = LO64 <= abs(x) <= HI64
        else:
            q = np.sqrt(x) if x > 0.0 else 0.0
            d = _fma64(-q, q, x)
            args_ok = LO64 <= x <= HI64
        if not (args_ok and LO64 <= abs(q) <= HI64):
            return 1
        r = np.uint64(f2i(q))
        if d != 0.0:
            if mode == 1:
                if (d > 0.0) != (q > 0.0):
                    r -= U1                              # toward zero
            elif mode == 2:
                if d < 0.0:
                    r = r + U1 if q < 0.0 else r - U1
            elif d > 0.0:
                r = r + U1 if q > 0.0 else r - U1
        xr[lane] = r
    return 0
