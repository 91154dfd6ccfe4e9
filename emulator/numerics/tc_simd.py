"""The vector operations of the fast engine's mma.sync rows (``tc_row``), as numba intrinsics that emit LLVM vector
IR (``<8 x double>``, ``<8 x i64>``): eight columns of a tile row, or eight operand codes, per operation, whatever
the compiler's vectorisers would make of the scalar loops (numba leaves LLVM's straight-line vectoriser off, and
its loop vectoriser does not fire on loops of eight). Each lane runs the scalar rule's operations in the scalar
rule's order (``tc_row``'s docstring has the rule and why each step is exact in binary64); no fused multiply-add
is emitted. The intrinsics read and write numba arrays through their data pointers: the callers check the bounds
(``tc_row.compute``).

* ``vdecode8``, ``vdecode16``, ``vdecode32``: operand codes into their binary64 values and nominal exponents,
  eight at a time, through the hardware's conversions (e4m3 as an f16 scaled; the formats whose bits are those
  of f16 or f32 once shifted); on a CPU without F16C (``NUMBA_CPU_NAME=x86-64``, ``sandybridge``) the f16 ones
  in integer and exact binary64 operations instead (``_half_bits``);
* ``vstep``: one fused step of one row of D (eight columns): the step's exponent, C and the products aligned to
  it and cut toward zero, their sum, the rounding to the D format;
* ``vencode``: D's binary64 values into the bits of f32 or f16.
* ``vload_f32``: an f32 accumulator's bits into the state of ``gemm_fast``'s binary64 panels (value, biased
  binary64 exponent in int16), eight at a time.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

W = 8                               # lanes: the eight columns of an m16n8 tile
NOEXP = -10000                      # tc_row.NOEXP: the nominal exponent of a zero
_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_I1 = ir.IntType(1)
_VD = ir.VectorType(_F64, W)
_VI = ir.VectorType(_I64, W)
_VB = ir.VectorType(_I1, W)


def _splat(builder, x, vty):
    """x (a scalar of vty's element type) in every lane."""
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), W),
                                                                                 [0] * W))


def _ci(x):
    return ir.Constant(_VI, [x] * W)


def _vfn(builder, name, vty):
    """The LLVM intrinsic ``name`` on vty (llvm.trunc, llvm.rint), unary."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty]), f"{name}.v{W}f64")


def _smax(builder, a, b):
    return builder.select(builder.icmp_signed(">", a, b), a, b)


def _pow2(builder, e):
    """2.0**e, lane by lane, for whole e in binary64's normal range (tc_row._pow2)."""
    return builder.bitcast(builder.shl(builder.add(e, _ci(1023)), _ci(52)), _VD)


def _expo(builder, v):
    """The unbiased binary64 exponent of each lane of v (-1023 for zero; tc_row._exp)."""
    bits = builder.bitcast(v, _VI)
    return builder.sub(builder.and_(builder.lshr(bits, _ci(52)), _ci(0x7FF)), _ci(1023))


def _vptr(builder, data, off, vty):
    return builder.bitcast(builder.gep(data, [off]), vty.as_pointer())


def _load(builder, data, off, vty):
    return builder.load(_vptr(builder, data, off, vty), align=8)


def _store(builder, val, data, off):
    builder.store(val, _vptr(builder, data, off, val.type), align=8)


def _data(context, builder, aryty, ary):
    return context.make_array(aryty)(context, builder, ary).data


def _any(builder, mask):
    """1 (i64) when any lane of the <8 x i1> mask is set."""
    return builder.zext(builder.icmp_unsigned("!=", builder.bitcast(mask, ir.IntType(W)), ir.Constant(ir.IntType(W),
                                                                                                        0)), _I64)


def _has_f16c(context):
    """Whether the CPU numba compiles for converts f16 to f32 itself (F16C, named in numba's target features:
    ``NUMBA_CPU_FEATURES`` or the host's). Without it LLVM turns an f16 ``fpext`` into a call of a runtime helper
    (``__extendhfsf2``) that numba's JIT linker does not resolve: the call would jump to address 0."""
    try:
        feats = context.codegen()._tm_features
    except Exception:                   # noqa: BLE001 (a numba without this field: the portable path)
        return False
    return "+f16c" in str(feats).split(",")


def _half_bits(builder, h, scale):
    """The binary64 values of the f16 bits ``h`` (an <8 x i64> of 16-bit codes) times 2**scale, in integer and
    exact binary64 operations only (no F16C): the significand (with its leading one for a normal) converted to
    binary64 (exact: 11 bits, through i32, which SSE2 converts a vector at a time) times 2**(exponent - 25 +
    scale), a power of two in binary64's normal range; the sign set on the bits, so -0 stays -0. An inf or NaN
    gives a finite value (the callers find those from the fields and never use their values)."""
    e = builder.and_(builder.lshr(h, _ci(10)), _ci(0x1F))
    f = builder.and_(h, _ci(0x3FF))
    normal = builder.icmp_unsigned("!=", e, _ci(0))
    sig = builder.or_(f, builder.select(normal, _ci(0x400), _ci(0)))
    v = builder.sitofp(builder.trunc(sig, ir.VectorType(ir.IntType(32), W)), _VD)
    v = builder.fmul(v, _pow2(builder, builder.add(_smax(builder, e, _ci(1)), _ci(scale - 25))))
    sign = builder.shl(builder.lshr(h, _ci(15)), _ci(63))
    return builder.bitcast(builder.or_(builder.bitcast(v, _VI), sign), _VD)


def _decoder(hw):
    """The decode intrinsic of one kind of format: ``hw`` 8 for e4m3 (its bits placed in an f16's, converted,
    times 2**8), 16 for those that are f16 bits once shifted up by ``pre`` (f16, e5m2) and 32 for those that are
    f32 bits so (f32, bf16, tf32 with its low bits cleared): converted by the hardware (vcvtph2ps, vcvtps2pd),
    exact, subnormals included. An inf or NaN is found from the fields (and its value not used)."""
    @intrinsic
    def vdecode(typingctx, codes, o, n, vals, exps, low, eb, mb, nanor, bias, tmin, pre):
        """codes[o:o + n] (n a multiple of 8; each shifted down by ``low``) of a format with ``eb`` exponent and
        ``mb`` fraction bits into vals[o:o + n] (binary64, exact) and exps[o:o + n] (the leading binade's
        exponent, never below ``tmin``; NOEXP for zeros), as ``tc_row.decode``'s rule; returns 1 when one of them
        is an inf or NaN (fraction | nanor all ones under an all-ones exponent field). ``bias`` is unused."""
        i64 = types.int64
        sig = types.int64(codes, i64, i64, vals, exps, i64, i64, i64, i64, i64, i64, i64)

        def codegen(context, builder, signature, args):
            codes_, o_, n_, vals_, exps_, low_, eb_, mb_, nanor_, bias_, tmin_, pre_ = args
            f16c = _has_f16c(context)
            tys = signature.args
            pc = _data(context, builder, tys[0], codes_)
            pv = _data(context, builder, tys[3], vals_)
            pe = _data(context, builder, tys[4], exps_)
            low, eb, mb, nanor, pre = (_splat(builder, x, _VI) for x in (low_, eb_, mb_, nanor_, pre_))
            emaxf = builder.sub(builder.shl(_ci(1), eb), _ci(1))
            fmask = builder.sub(builder.shl(_ci(1), mb), _ci(1))
            tmin = _splat(builder, tmin_, _VI)
            bad = cgutils.alloca_once_value(builder, ir.Constant(_VB, [0] * W))
            stop = builder.add(o_, n_)
            with cgutils.for_range_slice(builder, o_, stop, ir.Constant(_I64, W), intp=_I64) as (i, _):
                x = builder.lshr(_load(builder, pc, i, _VI), low)
                e = builder.and_(builder.lshr(x, mb), emaxf)
                f = builder.and_(x, fmask)
                special = builder.and_(builder.icmp_unsigned("==", e, emaxf),
                                       builder.icmp_unsigned("==", builder.or_(f, nanor), fmask))
                builder.store(builder.or_(builder.load(bad), special), bad)
                if hw == 8:
                    # e4m3: S.EEEE.MMM as f16's S.0EEEE.MMM0000000 is the value times 2**-8, subnormals included
                    h = builder.or_(builder.shl(builder.and_(x, _ci(0x80)), _ci(8)),
                                    builder.shl(builder.and_(x, _ci(0x7F)), _ci(7)))
                    if f16c:
                        v = builder.fpext(builder.bitcast(builder.trunc(h, ir.VectorType(ir.IntType(16), W)),
                                                          ir.VectorType(ir.HalfType(), W)), _VD)
                        v = builder.fmul(v, ir.Constant(_VD, [256.0] * W))
                    else:
                        v = _half_bits(builder, h, 8)
                elif hw == 16 and not f16c:
                    v = _half_bits(builder, builder.and_(builder.shl(builder.shl(x, low), pre), _ci(0xFFFF)), 0)
                else:
                    ity = ir.VectorType(ir.IntType(hw), W)
                    fty = ir.VectorType(ir.HalfType() if hw == 16 else ir.FloatType(), W)
                    v = builder.fpext(builder.bitcast(builder.trunc(builder.shl(builder.shl(x, low), pre), ity), fty),
                                      _VD)
                ex = builder.select(builder.fcmp_unordered("!=", v, ir.Constant(_VD, [0.0] * W)),
                                    _smax(builder, _expo(builder, v), tmin), _ci(NOEXP))
                _store(builder, v, pv, i)
                _store(builder, ex, pe, i)
            return _any(builder, builder.load(bad))
        return sig, codegen
    return vdecode


vdecode16 = _decoder(16)
vdecode32 = _decoder(32)
vdecode8 = _decoder(8)


@intrinsic
def vstep(typingctx, vals, exps, a, b, c, L, F, e_zero, mb, tlo, bias, rne):
    """One step of one row of D, eight columns (``tc_row.tile``): C's values and nominal exponents at vals/exps[c:c
    + 8], A's L operands at [a:a + L], B's at [b + 8 j:b + 8 j + 8] for j < L (L a multiple of 4). The step's
    exponent e = max(C's, e_zero, A's + B's of each product), s = 2**(F - e); the sum of trunc(C * s) and of
    trunc(A * B * s) over the products (whole numbers: exact in any order), times 2**(e - F), rounded to the D
    format's grid (mb fraction bits, smallest normal exponent tlo) toward zero, or to nearest even when ``rne``,
    replaces C. Returns 1 when a lane's result is above the format's range (exponent above ``bias``)."""
    i64 = types.int64
    sig = types.int64(vals, exps, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        vals_, exps_, a_, b_, c_, L_, F_, ez_, mb_, tlo_, bias_, rne_ = args
        tys = signature.args
        pv = _data(context, builder, tys[0], vals_)
        pe = _data(context, builder, tys[1], exps_)
        four = ir.Constant(_I64, 4)
        zero = ir.Constant(_I64, 0)
        cv = _load(builder, pv, c_, _VD)
        e = cgutils.alloca_once_value(builder, _smax(builder, _load(builder, pe, c_, _VI), _splat(builder, ez_, _VI)))

        def operands(j):
            """A's scalar and B's row of product j (offsets in the arrays)."""
            return builder.add(a_, j), builder.add(b_, builder.mul(j, ir.Constant(_I64, W)))
        with cgutils.for_range_slice(builder, zero, L_, four, intp=_I64) as (j, _):
            t = []
            for u in range(4):
                ja, jb = operands(builder.add(j, ir.Constant(_I64, u)))
                ta = _splat(builder, builder.load(builder.gep(pe, [ja])), _VI)
                t.append(builder.add(ta, _load(builder, pe, jb, _VI)))
            m = _smax(builder, _smax(builder, t[0], t[1]), _smax(builder, t[2], t[3]))
            builder.store(_smax(builder, builder.load(e), m), e)
        e = builder.load(e)
        F = _splat(builder, F_, _VI)
        s = _pow2(builder, builder.sub(F, e))
        trunc = _vfn(builder, "llvm.trunc", _VD)
        acc = cgutils.alloca_once_value(builder, builder.call(trunc, [builder.fmul(cv, s)]))
        with cgutils.for_range_slice(builder, zero, L_, four, intp=_I64) as (j, _):
            p = []
            for u in range(4):
                ja, jb = operands(builder.add(j, ir.Constant(_I64, u)))
                va = _splat(builder, builder.load(builder.gep(pv, [ja])), _VD)
                p.append(builder.call(trunc, [builder.fmul(builder.fmul(va, _load(builder, pv, jb, _VD)), s)]))
            builder.store(builder.fadd(builder.load(acc), builder.fadd(builder.fadd(p[0], p[1]),
                                                                       builder.fadd(p[2], p[3]))), acc)
        # the rounding to the D format: v scaled to the last place of its binade (never below the format's
        # smallest normal's: t), cut (RZ) or rounded (RNE) to a whole number, scaled back
        mb = _splat(builder, mb_, _VI)
        tlo = _splat(builder, tlo_, _VI)
        v = builder.fmul(builder.load(acc), _pow2(builder, builder.sub(e, F)))
        tv = _expo(builder, v)
        rr = cgutils.alloca_once(builder, _VD)
        # RZ with every lane zero or normal in the D format: the same as clearing the binary64 fraction's bits
        # below the format's last place
        normal = builder.or_(builder.icmp_signed(">=", tv, tlo),
                             builder.fcmp_ordered("==", v, ir.Constant(_VD, [0.0] * W)))
        quick = builder.and_(builder.icmp_unsigned("==", rne_, zero),
                             builder.icmp_unsigned("==", builder.bitcast(normal, ir.IntType(W)),
                                                   ir.Constant(ir.IntType(W), (1 << W) - 1)))
        with builder.if_else(quick, likely=True) as (then, other):
            with then:
                keep = builder.not_(builder.sub(builder.shl(_ci(1), builder.sub(_ci(52), mb)), _ci(1)))
                builder.store(builder.bitcast(builder.and_(builder.bitcast(v, _VI), keep), _VD), rr)
            with other:
                t = _smax(builder, tv, tlo)
                x = builder.fmul(v, _pow2(builder, builder.sub(mb, t)))
                q = builder.select(builder.icmp_unsigned("!=", rne_, zero),
                                   builder.call(_vfn(builder, "llvm.rint", _VD), [x]), builder.call(trunc, [x]))
                builder.store(builder.fmul(q, _pow2(builder, builder.sub(t, mb))), rr)
        r = builder.load(rr)
        te = _expo(builder, r)
        ce = builder.select(builder.fcmp_unordered("!=", r, ir.Constant(_VD, [0.0] * W)), _smax(builder, te, tlo),
                            _ci(NOEXP))
        _store(builder, r, pv, c_)
        _store(builder, ce, pe, c_)
        return _any(builder, builder.icmp_signed(">", te, _splat(builder, bias_, _VI)))
    return sig, codegen


@intrinsic
def vencode(typingctx, vals, o, n, codes, p, w, mb, bias):
    """vals[o:o + n] (n a multiple of 8; values on the grid of a format of width w, mb fraction bits, exponent
    bias ``bias``) into its bits at codes[p:p + n] (+0 for zeros; ``tc_row.encode``)."""
    i64 = types.int64
    sig = types.void(vals, i64, i64, codes, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        vals_, o_, n_, codes_, p_, w_, mb_, bias_ = args
        tys = signature.args
        pv = _data(context, builder, tys[0], vals_)
        pc = _data(context, builder, tys[3], codes_)
        mb = _splat(builder, mb_, _VI)
        bias = _splat(builder, bias_, _VI)
        top = builder.sub(_splat(builder, w_, _VI), _ci(1))
        fmask = builder.sub(builder.shl(_ci(1), mb), _ci(1))
        sub_scale = _pow2(builder, builder.add(builder.sub(bias, _ci(1)), mb))
        lo = builder.sub(_ci(1), bias)
        with cgutils.for_range_slice(builder, o_, builder.add(o_, n_), ir.Constant(_I64, W), intp=_I64) as (i, _):
            v = _load(builder, pv, i, _VD)
            bits = builder.bitcast(v, _VI)
            sign = builder.shl(builder.lshr(bits, _ci(63)), top)
            abits = builder.and_(bits, _ci(0x7FFFFFFFFFFFFFFF))
            a = builder.bitcast(abits, _VD)
            e = _expo(builder, a)
            normal = builder.icmp_signed(">=", e, lo)
            nb = builder.or_(builder.shl(builder.add(e, bias), mb),
                             builder.and_(builder.lshr(abits, builder.sub(_ci(52), mb)), fmask))
            sb = builder.fptosi(builder.fmul(builder.select(normal, ir.Constant(_VD, [0.0] * W), a), sub_scale), _VI)
            out = builder.or_(sign, builder.select(normal, nb, sb))
            out = builder.select(builder.fcmp_ordered("==", v, ir.Constant(_VD, [0.0] * W)), _ci(0), out)
            _store(builder, out, pc, builder.add(builder.sub(i, o_), p_))
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def vimac(typingctx, A, B, C, a, b, c, K):
    """C[c:c + 8] (int64) += sum over k < K of A[a + k] * B[b + 8 k:b + 8 k + 8] (int32 arrays), one row of an
    integer tile: the products and their sum in int32 (exact: 8-bit or narrower operands, K <= 256, so every
    partial sum stays below 2**25 in magnitude), added to C in int64."""
    i64 = types.int64
    sig = types.void(A, B, C, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        A_, B_, C_, a_, b_, c_, K_ = args
        tys = signature.args
        pa, pb, pc = (_data(context, builder, tys[i], args[i]) for i in range(3))
        i32 = ir.IntType(32)
        v32 = ir.VectorType(i32, W)
        acc = cgutils.alloca_once_value(builder, ir.Constant(v32, [0] * W))
        with cgutils.for_range_slice(builder, ir.Constant(_I64, 0), K_, ir.Constant(_I64, 1), intp=_I64) as (k, _):
            x = _splat(builder, builder.load(builder.gep(pa, [builder.add(a_, k)])), v32)
            y = _load(builder, pb, builder.add(b_, builder.mul(k, ir.Constant(_I64, W))), v32)
            builder.store(builder.add(builder.load(acc), builder.mul(x, y)), acc)
        _store(builder, builder.add(_load(builder, pc, c_, _VI), builder.sext(builder.load(acc), _VI)), pc, c_)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def vfma(typingctx, A, B, C, a, b, c, K, nan):
    """One row of an f64 tile, eight columns: for k < K in turn, C[c:c + 8] = fma(A[a + k], B[b + 8 k:b + 8 k +
    8], C[c:c + 8]) (``llvm.fma``: one rounding), a NaN result replaced by the bits ``nan`` (binary64 values in
    float64 arrays; the caller has checked that no operand is a NaN)."""
    i64 = types.int64
    sig = types.void(A, B, C, i64, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        A_, B_, C_, a_, b_, c_, K_, nan_ = args
        tys = signature.args
        pa, pb, pc = (_data(context, builder, tys[i], args[i]) for i in range(3))
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VD, [_VD, _VD, _VD]),
                                             f"llvm.fma.v{W}f64")
        qnan = builder.bitcast(_splat(builder, nan_, _VI), _VD)
        acc = cgutils.alloca_once_value(builder, _load(builder, pc, c_, _VD))
        with cgutils.for_range_slice(builder, ir.Constant(_I64, 0), K_, ir.Constant(_I64, 1), intp=_I64) as (k, _):
            x = _splat(builder, builder.load(builder.gep(pa, [builder.add(a_, k)])), _VD)
            y = _load(builder, pb, builder.add(b_, builder.mul(k, ir.Constant(_I64, W))), _VD)
            r = builder.call(fma, [x, y, builder.load(acc)])
            builder.store(builder.select(builder.fcmp_unordered("uno", r, r), qnan, r), acc)
        _store(builder, builder.load(acc), pc, c_)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def vload_f32(typingctx, codes, o, n, vals, exps, p):
    """codes[o:o + n] (n a multiple of 8; binary32 bits in the low 32 of each element) into vals[p:p + n] (their
    binary64 values, exact, +0.0 for either zero) and exps[p:p + n] (int16: the binary64 exponent field of the
    value, at least 1023 - 126 for the subnormals, 0 for zeros: ``gemm_fast._f32_panel``'s state). Returns 1
    when one of them is an inf or NaN (its lanes then hold unusable values: the caller decodes that row again)."""
    i64 = types.int64
    sig = types.int64(codes, i64, i64, vals, exps, i64)

    def codegen(context, builder, signature, args):
        codes_, o_, n_, vals_, exps_, p_ = args
        tys = signature.args
        pc = _data(context, builder, tys[0], codes_)
        pv = _data(context, builder, tys[3], vals_)
        pe = _data(context, builder, tys[4], exps_)
        i16 = ir.VectorType(ir.IntType(16), W)
        bad = cgutils.alloca_once_value(builder, ir.Constant(_VB, [0] * W))
        zero = ir.Constant(_VD, [0.0] * W)
        with cgutils.for_range_slice(builder, o_, builder.add(o_, n_), ir.Constant(_I64, W), intp=_I64) as (i, _):
            x = builder.trunc(_load(builder, pc, i, _VI), ir.VectorType(ir.IntType(32), W))
            field = builder.and_(builder.lshr(x, ir.Constant(x.type, [23] * W)), ir.Constant(x.type, [0xFF] * W))
            special = builder.icmp_unsigned("==", field, ir.Constant(x.type, [0xFF] * W))
            builder.store(builder.or_(builder.load(bad), special), bad)
            # the hardware's conversion (exact, subnormals included); adding +0.0 makes -0.0 +0.0
            v = builder.fadd(builder.fpext(builder.bitcast(x, ir.VectorType(ir.FloatType(), W)), _VD), zero)
            E = builder.and_(builder.lshr(builder.bitcast(v, _VI), _ci(52)), _ci(0x7FF))
            ex = builder.select(builder.fcmp_ordered("==", v, zero), _ci(0), _smax(builder, E, _ci(1023 - 126)))
            j = builder.add(builder.sub(i, o_), p_)
            _store(builder, v, pv, j)
            builder.store(builder.trunc(ex, i16), _vptr(builder, pe, j, i16), align=2)
        return _any(builder, builder.load(bad))
    return sig, codegen
