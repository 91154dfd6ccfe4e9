"""The plain-Python reference (emulator.numerics.reference, the readable spec) and the jitted path agree
bit for bit; the hand-made distinguishing vectors give the documented results on sm_90 (measured) and
sm_80 (the Ampere model); and the captures reject the neighbouring parameter values."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from emulator.ops.mma import get_mma
from emulator.tiles import mma
from emulator.numerics.reference import mma_tiles
from isa.fragments import pack, unpack
from isa.mma import VARIANTS

from mma_captures import all_captures

CAPS = all_captures()


def _reference_regs(v, a, b, c, arch):
    A, B, C = unpack(v, "A", a), unpack(v, "B", b), unpack(v, "C", c)
    D = np.array(mma_tiles(v, A.tolist(), B.tolist(), C.tolist(), arch), dtype=np.uint64)
    return pack(v, "D", D)


def _one_per_dist(cap):
    seen = {}
    for i, d in enumerate(cap["dist"].tolist()):
        if d not in seen:
            seen[d] = i
    return list(seen.values())


@pytest.mark.parametrize("spelling", sorted(s for s in CAPS if VARIANTS[s].family in ("tc", "fp8")))
def test_reference_equals_fast_and_hardware_tensor_core(spelling):
    v, cap = VARIANTS[spelling], CAPS[spelling]
    op = get_mma(spelling)
    for i in _one_per_dist(cap) + [int(np.nonzero(cap["dist"] == "handmade")[0][-1])]:
        ref = _reference_regs(v, cap["a"][i], cap["b"][i], cap["c"][i], "sm_90")
        fast = op.execute(cap["a"][i], cap["b"][i], cap["c"][i])
        assert np.array_equal(ref, fast), f"{spelling}: warp {i} ({cap['dist'][i]})"
        assert np.array_equal(ref, cap["d"][i]), f"{spelling}: reference differs from the H100, warp {i}"


@pytest.mark.parametrize("family", ["int", "f64", "m8n8k4_f16"])
def test_reference_equals_fast_other_families(family):
    for spelling in sorted(s for s in CAPS if VARIANTS[s].family == family)[::2]:
        v, cap = VARIANTS[spelling], CAPS[spelling]
        op = get_mma(spelling)
        picks = _one_per_dist(cap)[:2]
        if family != "int":
            picks.append(int(np.nonzero(cap["dist"] == "rawbits")[0][0]))
        for i in picks:
            ref = _reference_regs(v, cap["a"][i], cap["b"][i], cap["c"][i], "sm_90")
            assert np.array_equal(ref, op.execute(cap["a"][i], cap["b"][i], cap["c"][i])), spelling
            assert np.array_equal(ref, cap["d"][i]), spelling


TC = [s for s, v in VARIANTS.items() if v.family == "tc"]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spelling=st.sampled_from(TC), arch=st.sampled_from(["sm_80", "sm_90"]),
       mix=st.sampled_from(["bits", "near", "tiny"]))
def test_reference_equals_fast_random(seed, spelling, arch, mix):
    """Random raw bits (NaN, Inf, subnormals), cancelling-heavy and tiny tiles, on both parameter rows
    (sm_80 is not captured, so this equality is its check)."""
    v = VARIANTS[spelling]
    rng = np.random.default_rng(seed)
    regs = {}
    for o in "ABC":
        w = v.elem_bits(o)
        rows, cols = v.tile_shape(o)
        x = rng.integers(0, 1 << w, size=(rows, cols), dtype=np.uint64)
        if mix != "bits":
            e_bits = {"f16": 5, "bf16": 8, "tf32": 8, "f32": 8}[{"A": v.atype, "B": v.btype, "C": v.ctype}[o]]
            shift = w - 1 - e_bits
            bias = (1 << (e_bits - 1)) - 1
            lo = 0 if mix == "tiny" else bias - 3
            hi = 3 if mix == "tiny" else bias + 3
            e = rng.integers(lo, hi, size=x.shape).astype(np.uint64)
            x = (x & ~(np.uint64((1 << e_bits) - 1) << np.uint64(shift))) | (e << np.uint64(shift))
        regs[o] = pack(v, o, x)
    op = get_mma(spelling, arch)
    ref = _reference_regs(v, regs["A"], regs["B"], regs["C"], arch)
    assert np.array_equal(ref, op.execute(regs["A"], regs["B"], regs["C"]))


# NUMERICS.md section 11: dot products in row 0 of A / column 0 of B, C at [0, 0].
# (instruction, a, b, c, H100 bits, A100-model bits)
F16K16_F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
F16K16_F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
BF16K16 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
VECTORS = [
    (F16K16_F32, {0: 128, 1: 128}, {0: 128, 1: -128}, 2.0**-11, 0x3A000000, 0x00000000),
    (F16K16_F32, {0: 128, 1: 128, 8: 2.0**-6}, {0: 128, 1: -128, 8: 2.0**-7}, 0, 0x00000000, 0x39000000),
    (F16K16_F32, {0: 1, 8: 2.0**-12}, {0: 1, 8: 2.0**-12}, 1.5 * 2.0**-24, 0x3F800001, 0x3F800000),
    (F16K16_F32, {0: 128, 1: 0.046875}, {0: 128, 1: 2.0**-5}, 0, 0x46800000, 0x46800000),
    (F16K16_F32, {0: 192, 1: -192, 2: 2.0**-5}, {0: 192, 1: 192, 2: 2.0**-6}, 0, 0x3A000000, 0x00000000),
    (BF16K16, {0: 2.0**-23, 1: -2.0**-32}, {0: 2.0**-126, 1: 2.0**-126}, 0, 0x00000000, 0x00000001),
    (F16K16_F16, {0: 2.0**-11, 1: 2.0**-24}, {0: 2.0**-14, 1: 2.0**-22}, 0, 0x0001, 0x0000),
    (F16K16_F16, {0: 8, 1: 0.25}, {0: 8, 1: 0.125}, 0, 0x5400, 0x5400),
    (F16K16_F32, {0: 1}, {0: 1}, -(1 - 2.0**-24), 0x33800000, 0x33800000),
    (BF16K16, {0: 2.0**127, 1: 2.0**127}, {0: 2, 1: -2}, 1.0, 0x00000000, 0x00000000),
    (BF16K16, {0: 2.0**127}, {0: 2}, 0, 0x7F800000, 0x7F800000),
    (F16K16_F32, {0: -0.0, 1: -0.0}, {0: 0.0, 1: 0.0}, -0.0, 0x00000000, 0x00000000),
]


def _tiles(instr, a, b, c):
    import ml_dtypes
    v = VARIANTS[instr]
    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
    A = np.zeros(v.tile_shape("A"), dt[v.atype])
    B = np.zeros(v.tile_shape("B"), dt[v.btype])
    C = np.zeros(v.tile_shape("C"), dt[v.ctype])
    for k, x in a.items():
        A[0, k] = x
    for k, x in b.items():
        B[k, 0] = x
    C[0, 0] = c
    return A, B, C


@pytest.mark.parametrize("instr,a,b,c,h100,a100", VECTORS)
def test_distinguishing_vectors(instr, a, b, c, h100, a100):
    A, B, C = _tiles(instr, a, b, c)
    width = np.uint32 if VARIANTS[instr].dtype == "f32" else np.uint16
    assert int(mma(instr, A, B, C, arch="sm_90")[0, 0].view(width)) == h100
    assert int(mma(instr, A, B, C, arch="sm_80")[0, 0].view(width)) == a100


def test_fp8_vectors():
    import ml_dtypes
    instr = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
    A = np.zeros((16, 32), ml_dtypes.float8_e4m3fn)
    B = np.zeros((32, 8), ml_dtypes.float8_e4m3fn)
    C = np.zeros((16, 8), np.float32)
    A[0, 0], B[0, 0], C[0, 0] = 3 * 2.0**-9, 2.0**-9, 128.0          # final add rounds to nearest
    A[1, :3], B[:3, 1] = [128, 128, 2.0**-9], [128, -128, 2.0**-9]     # k%4 grouping keeps 2^-18
    D = mma(instr, A, B, C).view(np.uint32)
    assert int(D[0, 0]) == 0x43000001 and int(D[1, 1]) == 0x36800000


@pytest.mark.parametrize("change,index,values", [("F", 16, (24, 26)), ("e_zero", 17, (-132, -134)),
                                                  ("L", 15, (8,))])
def test_captures_reject_neighbouring_parameters(change, index, values):
    """The tests can fail: the same replay with one parameter moved gives mismatches."""
    for spelling in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                     "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"):
        cap = CAPS[spelling]
        op = get_mma(spelling)
        for value in values:
            if change == "e_zero" and "f16.f16" in spelling:
                continue          # f16 products never reach the floor
            prm = op._prm.copy()
            prm[index] = value
            d = np.empty_like(cap["d"])
            op._kern(cap["a"], cap["b"], cap["c"], d, op._maps, prm, *op._extra)
            assert (d != cap["d"]).sum() > 0, f"{spelling}: {change}={value} is not rejected"
