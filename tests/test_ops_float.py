"""Scalar floating-point instructions and cvt against an independent exact reference.

The reference computes every result as an exact rational (``fractions.Fraction``) and rounds it with
integer arithmetic to the destination format in the instruction's mode: nothing in it shares code with
the emulator's float64-based implementation. Special values (NaN, infinities, signed zeros) are checked
against the H100 in ``test_kernel_hw.py``; the few rules they follow are spelled out here too.
"""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from emulator import OperandError, UnsupportedError, Warp

FMT = {"f32": (24, -126, 127, np.float32, np.uint32), "f16": (11, -14, 15, np.float16, np.uint16),
       "bf16": (8, -126, 127, ml_dtypes.bfloat16, np.uint16), "f64": (53, -1022, 1023, np.float64, np.uint64)}
MODES = ("rn", "rz", "rm", "rp")


def ref_round(q, fmt, mode):
    """Round a nonzero Fraction to ``fmt`` in ``mode``; returns the float value (Python float)."""
    p, emin, emax = FMT[fmt][:3]
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    m = a * Fraction(2) ** (p - 1 - e)
    n = m.numerator // m.denominator
    rem = m - n
    up = {"rn": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1), "rz": False,
          "rm": neg and rem > 0, "rp": (not neg) and rem > 0}[mode]
    n += up
    if n == 2 ** p:
        n, e = 2 ** (p - 1), e + 1
    if e > emax:
        to_inf = mode == "rn" or (mode == "rm" and neg) or (mode == "rp" and not neg)
        v = float("inf") if to_inf else float((2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax)
    else:
        v = float(n * Fraction(2) ** (e - (p - 1)))
    return -v if neg else v


def bits(v, fmt):
    return int(np.array(v, FMT[fmt][3]).view(FMT[fmt][4]))


def rand_f32(rng, n):
    """Finite nonzero f32 values over a wide exponent range, subnormals included."""
    m = rng.standard_normal(n)
    e = rng.integers(-150, 128, n).astype(float)
    with np.errstate(over="ignore"):
        v = (m * 2.0 ** e).astype(np.float32)
    v[(v == 0) | ~np.isfinite(v)] = np.float32(1.5)
    return v


def run1(instr, ptype, *inputs, dst_type=None):
    w = Warp()
    names = []
    w.declare(dst_type or ptype, ["%out"])
    for i, x in enumerate(inputs):
        w.declare(ptype, [f"%in{i}"])
        w.write(f"%in{i}", np.ascontiguousarray(x, FMT[ptype][3]))
        names.append(f"%in{i}")
    w.run(f"{instr} %out, {', '.join(names)};")
    return w.read("%out")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "fma", "div", "sqrt"])
def test_f32_arithmetic_matches_exact_reference(op, mode):
    rng = np.random.default_rng(hash((op, mode)) % 2 ** 32)
    for _ in range(8):
        a, b, c = rand_f32(rng, 32), rand_f32(rng, 32), rand_f32(rng, 32)
        if op == "fma":                      # many near-cancellations: c close to -a*b
            t = -(a[::2].astype(np.float64) * b[::2])
            c[::2] = np.where(np.abs(t) < 3e38, t, 1.5).astype(np.float32)
        if op == "sqrt":
            a = np.abs(a)
        srcs = {"add": (a, b), "sub": (a, b), "mul": (a, b), "fma": (a, b, c), "div": (a, b), "sqrt": (a,)}[op]
        got = run1(f"{op}.{mode}.f32", "f32", *srcs)
        for lane in range(32):
            x = [Fraction(float(s[lane])) for s in srcs]
            q = {"add": lambda: x[0] + x[1], "sub": lambda: x[0] - x[1], "mul": lambda: x[0] * x[1],
                 "fma": lambda: x[0] * x[1] + x[2], "div": lambda: x[0] / x[1], "sqrt": None}[op]
            if op == "sqrt":
                want = _ref_sqrt(x[0], "f32", mode)
            else:
                q = q()
                want = ref_round(q, "f32", mode) if q != 0 else (-0.0 if mode == "rm" else 0.0)
            assert int(got[lane]) == bits(want, "f32"), (op, mode, lane, [float(s[lane]) for s in srcs])


def _ref_sqrt(x, fmt, mode):
    """Round sqrt(x) exactly: bisection on the candidate and its neighbours decides the rounding."""
    approx = float(np.sqrt(float(x)))
    dt = FMT[fmt][3]
    cands = sorted({float(v) for v in (np.nextafter(dt(approx), dt(0)), dt(approx), np.nextafter(dt(approx),
                                                                                              dt(np.inf)))})
    below = max(c for c in cands if Fraction(c) ** 2 <= x)
    above = min(c for c in cands if Fraction(c) ** 2 >= x)
    if below == above:
        return below
    mid = (Fraction(below) + Fraction(above)) / 2
    return {"rz": below, "rm": below, "rp": above,
            "rn": below if mid ** 2 > x or (mid ** 2 == x and int(np.array(below, dt).view(FMT[fmt][4])) % 2 == 0)
            else above}[mode]


@pytest.mark.parametrize("mode", MODES)
def test_f64_add_mul_fma_match_exact_reference(mode):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(32) * 2.0 ** rng.integers(-60, 60, 32)
    b = rng.standard_normal(32) * 2.0 ** rng.integers(-60, 60, 32)
    c = -(a * b) * (1 + 2.0 ** -40)
    for op, srcs in (("add", (a, b)), ("mul", (a, b)), ("fma", (a, b, c))):
        got = run1(f"{op}.{mode}.f64", "f64", *srcs)
        for lane in range(32):
            x = [Fraction(float(s[lane])) for s in srcs]
            q = x[0] + x[1] if op == "add" else x[0] * x[1] if op == "mul" else x[0] * x[1] + x[2]
            assert int(got[lane]) == bits(ref_round(q, "f64", mode), "f64"), (op, mode, lane)


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_half_arithmetic_rounds_once(fmt):
    rng = np.random.default_rng(9)
    dt = FMT[fmt][3]
    a = (rng.standard_normal(64) * 8).astype(dt)
    b = (rng.standard_normal(64) * 8).astype(dt)
    c = (-(a.astype(np.float64) * b.astype(np.float64))).astype(dt)
    pa, pb, pc = (x.view(np.uint16).reshape(32, 2).copy().view(np.uint32).reshape(32) for x in (a, b, c))
    w = Warp()
    w.write("%r1", pa)
    w.write("%r2", pb)
    w.write("%r3", pc)
    w.run(f"fma.rn.{fmt}x2 %r4, %r1, %r2, %r3; mul.rn.{fmt}x2 %r5, %r1, %r2")
    for name, fn in (("%r4", lambda x, y, z: x * y + z), ("%r5", lambda x, y, z: x * y)):
        got = w.read(name).view(np.uint16)
        for k in range(64):
            q = fn(Fraction(float(a[k])), Fraction(float(b[k])), Fraction(float(c[k])))
            want = bits(ref_round(q, fmt, "rn"), fmt) if q != 0 else 0
            assert int(got[k]) == want, (fmt, name, k)


@pytest.mark.parametrize("mode", MODES)
def test_cvt_int_to_float_and_narrowing(mode):
    rng = np.random.default_rng(4)
    ints = rng.integers(-2 ** 62, 2 ** 62, 32, dtype=np.int64)
    ints[:8] = [1, -1, 2 ** 24 + 1, -(2 ** 24 + 3), 2 ** 53 + 1, 7, -(2 ** 62) + 1, 12345678901]
    w = Warp()
    w.write("%rd1", ints)
    w.run(f"cvt.{mode}.f32.s64 %f1, %rd1; cvt.{mode}.f64.s64 %fd1, %rd1")
    for lane in range(32):
        q = Fraction(int(ints[lane]))
        assert int(w.read("%f1")[lane]) == bits(ref_round(q, "f32", mode), "f32")
        assert int(w.read("%fd1")[lane]) == bits(ref_round(q, "f64", mode), "f64")
    f = rand_f32(rng, 32) * np.float32(1e-3)
    w.write("%f2", f)
    w.run(f"cvt.{mode}.f16.f32 %h1, %f2; cvt.{mode}.bf16.f32 %h2, %f2")
    for lane in range(32):
        q = Fraction(float(f[lane]))
        assert int(w.read("%h1")[lane]) == bits(ref_round(q, "f16", mode), "f16"), lane
        assert int(w.read("%h2")[lane]) == bits(ref_round(q, "bf16", mode), "bf16"), lane


def test_cvt_float_to_int_rounding_saturation_and_nan():
    vals = np.array([2.5, -2.5, 3.5, -0.5, 0.49999997, 1e10, -1e10, np.nan, np.inf, -np.inf, 4294967295.0,
                     -1.0] + [0.0] * 20, np.float32)
    w = Warp()
    w.write("%f1", vals)
    w.run("cvt.rni.s32.f32 %r1, %f1; cvt.rzi.s32.f32 %r2, %f1; cvt.rmi.u32.f32 %r3, %f1; "
          "cvt.rpi.s64.f32 %rd1, %f1")
    s32 = lambda r: w.read(r).view(np.int32)[:12].tolist()  # noqa: E731
    assert s32("%r1") == [2, -2, 4, 0, 0, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -1]
    assert s32("%r2") == [2, -2, 3, 0, 0, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -1]
    assert w.read("%r3")[:12].tolist() == [2, 0, 3, 0, 0, 2 ** 32 - 1, 0, 0, 2 ** 32 - 1, 0, 2 ** 32 - 1, 0]
    # .s64 from NaN: the integer indefinite 0x8000000000000000 (measured on an H100)
    assert w.read("%rd1")[7] == 1 << 63


def test_min_max_nan_and_signed_zero_rules():
    a = np.array([1.0, np.nan, np.nan, 0.0, -0.0, -3.0] + [0.0] * 26, np.float32)
    b = np.array([2.0, 5.0, np.nan, -0.0, 0.0, np.inf] + [0.0] * 26, np.float32)
    w = Warp()
    w.write("%f1", a)
    w.write("%f2", b)
    w.run("min.f32 %f3, %f1, %f2; max.f32 %f4, %f1, %f2; min.NaN.f32 %f5, %f1, %f2")
    f = lambda r: [hex(x) for x in w.read(r)[:6]]  # noqa: E731
    assert f("%f3") == ["0x3f800000", "0x40a00000", "0x7fffffff", "0x80000000", "0x80000000", "0xc0400000"]
    assert f("%f4") == ["0x40000000", "0x40a00000", "0x7fffffff", "0x0", "0x0", "0x7f800000"]
    assert f("%f5")[:3] == ["0x3f800000", "0x7fffffff", "0x7fffffff"]


def test_ftz_flushes_inputs_and_results():
    w = Warp()
    w.write("%f1", np.full(32, 1e-39, np.float32))
    w.write("%f2", np.full(32, 1.0, np.float32))
    w.run("add.rn.f32 %f3, %f1, %f2; mul.rn.ftz.f32 %f4, %f1, %f2; mul.rn.f32 %f5, %f1, %f2")
    assert w.read("%f4")[0] == 0 and w.read("%f5")[0] == np.float32(1e-39).view(np.uint32)


def test_nan_results_are_canonical_and_neg_abs_canonicalise():
    w = Warp()
    w.write("%f1", np.full(32, np.inf, np.float32))
    w.write("%f2", np.full(32, 0x7FA00001, np.uint32))
    w.run("sub.rn.f32 %f3, %f1, %f1; neg.f32 %f4, %f2; abs.f32 %f5, %f2; neg.f32 %f6, %f1")
    assert w.read("%f3")[0] == 0x7FFFFFFF and w.read("%f4")[0] == 0x7FFFFFFF and w.read("%f5")[0] == 0x7FFFFFFF
    assert w.read("%f6")[0] == 0xFF800000


def test_float_errors_list_the_alternatives():
    w = Warp()
    with pytest.raises(UnsupportedError, match=r"ex2.approx.f64: not an approximate-math form.*ex2.approx.ftz.f32"):
        w.run("ex2.approx.f64 %fd1, %fd2;")
    with pytest.raises(UnsupportedError, match=r"div.approx.rn.f32: .*supported: div.approx.f32"):
        w.run("div.approx.rn.f32 %f1, %f2, %f3;")
    with pytest.raises(OperandError, match=r"div.f32 needs .rn/.rz/.rm/.rp"):
        w.run("div.f32 %f1, %f2, %f3;")
    with pytest.raises(UnsupportedError, match=r"unsupported qualifier .rx; supported: "):
        w.run("add.rx.f32 %f1, %f2, %f3;")
    with pytest.raises(OperandError, match=r"takes 3 operands, found 2"):
        w.run("add.rn.f32 %f1, %f2;")


def test_cvt_saturation_pack_relu_and_testp():
    v = np.array([-2.0, 0.25, 3.0, np.nan, 70000.0, -70000.0, 1e-45, -0.0] * 4, np.float32)
    w = Warp()
    w.write("%f1", v)
    w.write("%f2", v[::-1].copy())
    w.run("cvt.sat.f32.f32 %f3, %f1; cvt.rn.relu.f16x2.f32 %r1, %f1, %f2; cvt.rn.satfinite.f16x2.f32 %r2, %f1, %f2; "
          "testp.finite.f32 %p1, %f1; testp.subnormal.f32 %p2, %f1; testp.notanumber.f32 %p3, %f1")
    assert w.read("%f3").view(np.float32)[:8].tolist()[:3] == [0.0, 0.25, 1.0]
    assert w.read("%f3")[3] == 0                       # NaN saturates to +0
    hi = (w.read("%r1") >> 16).astype(np.uint16).view(np.float16)
    assert hi[:8].astype(np.float32).tolist()[:3] == [0.0, 0.25, 3.0] and hi[4] == np.inf
    assert w.read("%r1")[3] >> 16 == 0x7FFF            # NaN stays (canonical) NaN under .relu
    sat = (w.read("%r2") >> 16).astype(np.uint16).view(np.float16)
    assert sat[4] == np.float16(65504) and sat[5] == np.float16(-65504)
    assert w.read("%p1")[:8].tolist() == [True, True, True, False, True, True, True, True]
    assert w.read("%p2")[:8].tolist() == [False, False, False, False, False, False, True, False]
    assert w.read("%p3")[:8].tolist() == [False, False, False, True, False, False, False, False]


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_the_short_f32_path_gives_the_general_rules_bits(op, monkeypatch):
    """add/sub/mul.rn.f32 on numpy's float32 arithmetic (ops/falu.py ``_addmul_f32``) against the general rule
    (FAST_F32 off): random bit patterns (NaNs of every payload and sign, infinities, subnormals, signed zeros),
    near-cancellations, overflows, an immediate operand, and a flush-to-zero FPU falling back to the general rule."""
    from emulator.ops import falu
    rng = np.random.default_rng(7)
    special = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
                        0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F800000, 0xBF800000, 0x34000000],
                       np.uint32)
    cases = [(rng.integers(0, 2 ** 32, 32, dtype=np.uint64).astype(np.uint32),
              rng.integers(0, 2 ** 32, 32, dtype=np.uint64).astype(np.uint32)) for _ in range(40)]
    cases.append((np.tile(special, 2), np.repeat(special, 2)))
    cases.append((np.repeat(special, 2), np.tile(special, 2)))
    a = rand_f32(rng, 32)
    with np.errstate(over="ignore"):
        inv = 1 / a
    cases.append((a.view(np.uint32), (-a if op != "mul" else inv).astype(np.float32).view(np.uint32)))
    cases.append((a.view(np.uint32), (np.nextafter(a, np.float32(0)) if op == "sub" else
                                      -np.nextafter(a, np.float32(0))).astype(np.float32).view(np.uint32)))

    def run(x, y, text):
        w = Warp()
        w.declare("f32", ["%out", "%a", "%b"])
        w.write("%a", x.view(np.float32))
        w.write("%b", y.view(np.float32))
        w.run(text)
        return w.read("%out").view(np.uint32)

    for text in (f"{op}.rn.f32 %out, %a, %b;", f"{op}.f32 %out, %a, 0f3F800001;"):
        for x, y in cases:
            monkeypatch.setattr(falu, "FAST_F32", True)
            short = run(x, y, text)
            monkeypatch.setattr(falu, "FAST_F32", False)
            general = run(x, y, text)
            assert np.array_equal(short, general), (text, x, y, short, general)
    # a flush-to-zero FPU (a library may set it): the short path hands the instruction to the general rule
    calls = []
    finish = falu._finish
    monkeypatch.setattr(falu, "_finish", lambda *a, **k: calls.append(1) or finish(*a, **k))
    monkeypatch.setattr(falu, "FAST_F32", True)
    x = np.full(32, 1, np.uint32)             # subnormal inputs: kept by the general rule
    want = {"add": 2, "sub": 0, "mul": 0}[op]
    assert np.array_equal(run(x, x, f"{op}.rn.f32 %out, %a, %b;"), np.full(32, want, np.uint32)) and not calls
    monkeypatch.setattr(falu, "_TWO32", np.float32(0.0))      # (the probe as under flush-to-zero)
    assert np.array_equal(run(x, x, f"{op}.rn.f32 %out, %a, %b;"), np.full(32, want, np.uint32)) and calls
