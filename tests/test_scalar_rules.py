"""Properties of the scalar forms added with the H100 differential capture, checked against independent
references over fuzzed inputs (the capture itself is replayed in test_scalar_diff.py)."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from emulator import EmulatorError, Warp

u32s = st.lists(st.integers(0, 2 ** 32 - 1), min_size=32, max_size=32)


def run(text, **regs):
    w = Warp()
    for name, v in regs.items():
        w.write("%" + name, np.array(v, np.uint64).astype(np.uint32) if "rd" not in name else np.array(v, np.uint64))
    w.run(text)
    return w


def _f32(bits):
    return Fraction(float(np.uint32(bits).view(np.float32)))


def _tf32_rn(bits):
    """Round an f32 (finite, nonzero magnitude below the largest tf32) to 10 fraction bits, ties to even, by
    integer arithmetic on the exact value."""
    x = _f32(bits)
    if x == 0:
        return bits & 0x80000000
    e = abs(x).numerator.bit_length() - abs(x).denominator.bit_length()
    if Fraction(2) ** e > abs(x):
        e -= 1
    e = max(e, -126)
    q = abs(x) / Fraction(2) ** (e - 10)
    n, rem = divmod(q.numerator, q.denominator)
    if 2 * rem > q.denominator or (2 * rem == q.denominator and n & 1):
        n += 1
    v = float(n * Fraction(2) ** (e - 10))
    return int(np.float32(-v if x < 0 else v).view(np.uint32))


@settings(max_examples=30, deadline=None)
@given(u32s)
def test_cvt_rn_tf32_rounds_to_nearest_even(bits):
    bits = [b if (b & 0x7F800000) not in (0x7F800000, 0x7F000000) else b & 0x807FFFFF for b in bits]
    w = run("cvt.rn.tf32.f32 %r2, %r1;", r1=bits)
    got = w.read("%r2")
    assert all(int(g) == _tf32_rn(b) for g, b in zip(got, bits))
    assert not (got & 0x1FFF).any()


E4M3 = sorted({float(Fraction(8 + m, 8) * Fraction(2) ** (e - 7)) if e else float(Fraction(m, 8) * Fraction(2) ** -6)
               for e in range(16) for m in range(8) if not (e == 15 and m == 7)})


def _e4m3_rn_satfinite(x):
    """Nearest e4m3 value (ties to the even code), clamped to +-448: by search over the value list."""
    if np.isnan(x):
        return 0x7F
    a = min(abs(x), 448.0)
    best = min(E4M3, key=lambda v: (abs(v - a), E4M3.index(v) & 1))
    code = E4M3.index(best)
    return code | (0x80 if np.signbit(x) else 0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-600, 600, width=32), min_size=64, max_size=64))
def test_cvt_e4m3x2_pack_rounds_and_saturates(vals):
    a, b = np.array(vals[:32], np.float32), np.array(vals[32:], np.float32)
    w = run("cvt.rn.satfinite.e4m3x2.f32 %rs1, %r1, %r2;", r1=a.view(np.uint32), r2=b.view(np.uint32))
    got = w.read("%rs1")
    for g, x, y in zip(got, a, b):
        assert int(g) >> 8 == _e4m3_rn_satfinite(float(x)) and int(g) & 0xFF == _e4m3_rn_satfinite(float(y))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 2 ** 128 - 1), min_size=64, max_size=64))
def test_carry_chain_adds_128_bit_integers(vals):
    x, y = vals[:32], vals[32:]
    regs = {}
    for k, v in (("a", x), ("b", y)):
        for part in range(2):
            regs[f"rd{k}{part}"] = [(n >> (64 * part)) & (2 ** 64 - 1) for n in v]
    w = Warp()
    for name, v in regs.items():
        w.write("%" + name, np.array(v, np.uint64))
    w.run("add.cc.u64 %rdc0, %rda0, %rdb0; addc.u64 %rdc1, %rda1, %rdb1;")
    got = [int(lo) | (int(hi) << 64) for lo, hi in zip(w.read("%rdc0"), w.read("%rdc1"))]
    assert got == [(p + q) % 2 ** 128 for p, q in zip(x, y)]


@settings(max_examples=30, deadline=None)
@given(u32s, st.lists(st.integers(0, 40), min_size=32, max_size=32))
def test_szext_and_bmsk_against_integer_reference(a, n):
    w = run("szext.clamp.s32 %r3, %r1, %r2; szext.wrap.u32 %r4, %r1, %r2; bmsk.clamp.b32 %r5, %r2, %r2;",
            r1=a, r2=n)
    for lane in range(32):
        k = min(n[lane], 32)
        low = a[lane] & ((1 << k) - 1)
        s = low - (1 << k) if k and low >> (k - 1) else low
        assert int(w.read("%r3")[lane]) == s & 0xFFFFFFFF
        assert int(w.read("%r4")[lane]) == a[lane] & ((1 << (n[lane] % 32)) - 1)
        assert int(w.read("%r5")[lane]) == (((1 << k) - 1) << k) & 0xFFFFFFFF


@pytest.mark.parametrize("text", [
    "cvt.rna.f16.f32 %rs1, %r1;",                  # .rna exists for tf32 only
    "cvt.rn.e4m3x2.f32 %rs1, %r1, %r2;",           # the fp8 packs need .satfinite
    "cvt.rn.satfinite.e4m3x2.f32 %rs1, %r1;",      # two f32 sources
    "cvt.rn.relu.f32.f64 %r1, %rd1;",              # .relu only for f16/bf16 destinations
    "add.sat.u32 %r1, %r2, %r3;",                  # .sat only for .s32
    "min.relu.u32 %r1, %r2, %r3;",
    "mad.lo.sat.s32 %r1, %r2, %r3, %r4;",          # .sat only for mad.hi
    "sub.u16x2 %r1, %r2, %r3;",
    "set.lt.f32 %r1, %r2, %r3;",                   # set needs two types
    "setp.lt.f16x2 %p1, %r2, %r3;",                # x2 compares write p|q
    "bmsk.b32 %r1, %r2, %r3;",                     # .clamp or .wrap
])
def test_malformed_forms_are_refused_with_an_emulator_error(text):
    with pytest.raises(EmulatorError):
        Warp().run(text)


def test_division_by_zero_gives_all_ones():
    w = run("div.u32 %r3, %r1, %r2; rem.s32 %r4, %r1, %r2;", r1=list(range(32)), r2=[0] * 32)
    assert (w.read("%r3") == 0xFFFFFFFF).all() and (w.read("%r4") == 0xFFFFFFFF).all()
