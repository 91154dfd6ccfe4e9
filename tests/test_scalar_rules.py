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
    "cvt.pack.sat.u16.u32 %r1, %r2, %r3;",         # the sources are .s32
    "cvt.pack.sat.u8.s32 %r1, %r2, %r3;",          # the fields below 16 bits need .b32 c
    "cvt.pack.u16.s32 %r1, %r2, %r3;",             # .sat is part of the form
    "vadd2.sat.u32.u32.u32.add %r1, %r2, %r3, %r4;",   # .sat and .add exclude each other
    "vadd4.u32.u32 %r1, %r2, %r3, %r4;",           # three types
    "vset2.u32.u32.ne.sat %r1, %r2, %r3, %r4;",
    "vadd2.u32.u32.u32 %r1, 5, %r3, %r4;",         # a, b, c are registers
    "vadd2.u32.u32.u32 %r1.h01, %r2, %r3, %r4;",   # a mask lists halves from the top
    "vadd4.u32.u32.u32 %r1, %r2.b8210, %r3, %r4;", # byte selectors 0-7
    "vmax2.u32.u32.u32 %r1, %r2, %r3, %r4.h32;",   # c takes no selector
])
def test_malformed_forms_are_refused_with_an_emulator_error(text):
    with pytest.raises(EmulatorError):
        Warp().run(text)


def test_division_by_zero_gives_all_ones():
    w = run("div.u32 %r3, %r1, %r2; rem.s32 %r4, %r1, %r2;", r1=list(range(32)), r2=[0] * 32)
    assert (w.read("%r3") == 0xFFFFFFFF).all() and (w.read("%r4") == 0xFFFFFFFF).all()


# ----------------------------------------------------------------------------------------------
# cvt.pack.sat and the SIMD video instructions: independent integer references (the ISA's pseudocode,
# element by element), over masks, selectors and mixed types the capture did not cover

@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=64, max_size=64), u32s)
def test_cvt_pack_sat_against_integer_reference(ab, c):
    a, b = ab[:32], ab[32:]
    for t, n, signed in (("u16", 16, 0), ("s16", 16, 1), ("u8", 8, 0), ("s8", 8, 1), ("u4", 4, 0), ("s4", 4, 1),
                         ("u2", 2, 0), ("s2", 2, 1)):
        tail = ".b32 %r10, %r1, %r2, %r3;" if n < 16 else " %r10, %r1, %r2;"
        w = run(f"cvt.pack.sat.{t}.s32{tail}", r1=[x & 0xFFFFFFFF for x in a], r2=[x & 0xFFFFFFFF for x in b], r3=c)
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
        clamp = lambda x: min(max(x, lo), hi) & ((1 << n) - 1)       # noqa: E731
        for lane in range(32):
            want = (clamp(a[lane]) << n) | clamp(b[lane]) | ((c[lane] << 2 * n) if n < 16 else 0)
            assert int(w.read("%r10")[lane]) == want & 0xFFFFFFFF, (t, lane)


def _video_reference(op, n, types, sat, add, mask, asel, bsel, a, b, c):
    w = 32 // n
    pool = a | (b << 32)

    def elem(sel, i, signed):
        x = (pool >> (w * sel[n - 1 - i])) & ((1 << w) - 1)
        return x - (1 << w) if signed and x >> (w - 1) else x
    ds, as_, bs = types
    t = []
    for i in range(n):
        x, y = elem(asel, i, as_ == "s32"), elem(bsel, i, bs == "s32")
        t.append({"add": x + y, "sub": x - y, "absdiff": abs(x - y), "min": min(x, y), "max": max(x, y),
                  "avrg": (x + y + 1) // 2 if x + y >= 0 else -((-(x + y) + 1) // 2),
                  "lt": int(x < y), "ne": int(x != y)}[op])
    if add:
        return (c + sum(t[i] for i in range(n) if i in mask)) & 0xFFFFFFFF
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if ds == "s32" else (0, (1 << w) - 1)
    out = 0
    for i in range(n):
        v = (min(max(t[i], lo), hi) if sat else t[i]) if i in mask else c >> (w * i)
        out |= (v & ((1 << w) - 1)) << (w * i)
    return out


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_video_instructions_against_integer_reference(data):
    n = data.draw(st.sampled_from([2, 4]))
    op = data.draw(st.sampled_from(["add", "sub", "absdiff", "min", "max", "avrg", "lt", "ne"]))
    ty = st.sampled_from(["u32", "s32"])
    types = [data.draw(ty) for _ in range(3)]
    is_set = op in ("lt", "ne")
    add = data.draw(st.booleans())
    sat = not add and not is_set and data.draw(st.booleans())
    top = 3 if n == 2 else 7
    asel = data.draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    bsel = data.draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    mask = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)), reverse=True)
    a, b, c = (data.draw(u32s) for _ in range(3))
    L = "h" if n == 2 else "b"
    sel = lambda s: L + "".join(map(str, s))                         # noqa: E731
    if is_set:
        opcode = f"vset{n}.{types[1]}.{types[2]}.{op}" + (".add" if add else "")
        types[0] = "u32"
    else:
        opcode = f"v{op}{n}.{'.'.join(types)}" + (".add" if add else ".sat" if sat else "")
    text = f"{opcode} %r10.{sel(mask)}, %r1.{sel(asel)}, %r2.{sel(bsel)}, %r3;"
    got = run(text, r1=a, r2=b, r3=c).read("%r10")
    for lane in range(32):
        want = _video_reference(op, n, types, sat, add, mask, asel, bsel, a[lane], b[lane], c[lane])
        assert int(got[lane]) == want, (text, lane)


def test_video_defaults_are_the_whole_register():
    """Without selectors a is halves/bytes of a and b of b; without a mask every element is written."""
    a, b, c = [0x8001FF7F] * 32, [0x7FFF0181] * 32, [0x12345678] * 32
    w = run("vadd2.u32.u32.u32 %r10, %r1, %r2, %r3; vadd2.u32.u32.u32 %r11.h10, %r1.h10, %r2.h32, %r3;"
            "vsub4.sat.s32.s32.s32 %r12, %r1, %r2, %r3; vsub4.sat.s32.s32.s32 %r13.b3210, %r1.b3210, %r2.b7654, %r3;",
            r1=a, r2=b, r3=c)
    assert int(w.read("%r10")[0]) == int(w.read("%r11")[0]) == 0x00000100
    # bytes -128-127, -1-1, 1-(-1), 127-(-127), clamped to [-128, 127]
    assert int(w.read("%r12")[0]) == int(w.read("%r13")[0]) == 0x8002FE7F


def test_vavrg_rounds_half_away_from_zero():
    w = run("vavrg4.s32.s32.s32 %r10, %r1, %r2, %r3; vavrg4.u32.u32.u32 %r11, %r1, %r2, %r3;",
            r1=[0x01FF03FD] * 32, r2=[0] * 32, r3=[0] * 32)
    assert int(w.read("%r10")[0]) == 0x01FF02FE     # 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, -1.5 -> -2
    assert int(w.read("%r11")[0]) == 0x0180027F     # unsigned: (x + y + 1) >> 1


# ----------------------------------------------------------------------------------------------
# what ptxas makes of immediate operands (measured on the H100: tests/data/scalar/scalar_sm90_extra.npz)

def test_f64_immediates_take_the_second_slot():
    nan_reg = [0x7FF4000000000002] * 32                      # a register NaN (signalling)
    imm = "0d7FF0000000000001"                               # a signalling NaN immediate
    w = run(f"add.f64 %rd10, {imm}, %rd1; sub.f64 %rd11, %rd1, {imm}; sub.f64 %rd12, {imm}, %rd1;"
            f"max.f64 %rd13, {imm}, %rd1; add.f64 %rd14, %rd1, %rd2; fma.rn.f64 %rd15, {imm}, %rd1, %rd1;",
            rd1=nan_reg, rd2=[0x7FF0000000000005] * 32)
    assert (w.read("%rd10") == 0x7FF8000000000001).all()    # the immediate wins, quieted
    assert (w.read("%rd11") == 0xFFF8000000000001).all()    # ptxas adds the negated constant
    assert (w.read("%rd12") == 0x7FF8000000000001).all()    # -reg + imm: the immediate, not negated
    assert (w.read("%rd13") == 0x7FF8000000000001).all()
    assert (w.read("%rd14") == 0x7FF8000000000005).all()    # registers: b wins
    assert (w.read("%rd15") == 0x7FF8000000000001).all()    # DFMA reg, imm, c: the immediate is b
    w = run(f"sub.f64 %rd10, %rd1, {imm}; sub.f64 %rd11, 0d4000000000000000, %rd1;",
            rd1=[0x3FF0000000000000] * 32)
    assert (w.read("%rd10") == 0xFFF8000000000001).all()
    assert (w.read("%rd11") == 0x3FF0000000000000).all()    # 2 - 1: numbers are unaffected


def test_bfe_s32_immediate_position_past_the_register_folds_to_ones():
    zeros = [0] * 32
    w = run("bfe.s32 %r10, %r1, 32, 1; bfe.s32 %r11, %r1, 255, 255; bfe.s32 %r12, %r1, 40, 0;"
            "bfe.s32 %r13, %r1, %r2, 1; bfe.s32 %r14, 5, 32, 1; bfe.u32 %r15, %r1, 32, 1;", r1=zeros, r2=[32] * 32)
    assert (w.read("%r10") == 0xFFFFFFFF).all() and (w.read("%r11") == 0xFFFFFFFF).all()
    assert (w.read("%r12") == 0).all()                        # length 0: 0
    assert (w.read("%r13") == 0).all()                        # a register position: the sign of a
    assert (w.read("%r14") == 0).all()                        # all constant: folded right
    assert (w.read("%r15") == 0).all()
