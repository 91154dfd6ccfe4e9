"""gemm()'s binary64 path for f32-accumulator forms (numerics.gemm_fast._tc_gemm_f32) against the integer
path it replaced, bit for bit, on random bits: subnormals, zeros, huge exponents, infs and NaNs (the rows and
columns holding them are redone by the scalar chain), accumulators that overflow."""
import os
import platform
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from emulator.numerics import gemm_fast as G
from emulator.ops.mma import get_mma

FORMS = {"f16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
         "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
         "tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
         "e4m3": "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"}


def _bits(rng, shape, kind, special):
    if kind == "tf32":
        x = rng.integers(0, 1 << 32, shape, dtype=np.uint64) & np.uint64(0xFFFFE000)
        exp = np.uint64(0x7F800000)
    elif kind == "e4m3":
        return rng.integers(0, 256, shape, dtype=np.uint64)
    else:
        x = rng.integers(0, 1 << 16, shape, dtype=np.uint64)
        exp = np.uint64(0x7C00 if kind == "f16" else 0x7F80)
    if not special:                      # keep inf/NaN rare: clear one exponent bit where all are set
        x[(x & exp) == exp] &= ~(exp & ~(exp - np.uint64(1)) << np.uint64(1))
    return x


@pytest.mark.parametrize("kind", sorted(FORMS))
@pytest.mark.parametrize("case", ["random", "zero_c", "subnormal_c", "special"])
def test_binary64_path_equals_the_integer_path(kind, case):
    rng = np.random.default_rng(abs(hash((kind, case))) % 2 ** 32)
    op = get_mma(FORMS[kind], "sm_90")
    M, N, K = 16, 40, 64
    a = _bits(rng, (M, K), kind, case == "special")
    b = _bits(rng, (K, N), kind, case == "special")
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64)
    if case == "zero_c":
        c[:] = 0
    elif case == "subnormal_c":
        c &= np.uint64(0x807FFFFF)
    elif case == "random":
        c[(c & np.uint64(0x7F800000)) == np.uint64(0x7F800000)] = 0
    d64 = G.tc_gemm(a, b, c, op, fast_f32=True)
    dint = G.tc_gemm(a, b, c, op, fast_f32=False)
    assert d64.tobytes() == dint.tobytes(), np.argwhere(d64 != dint)[:5]


def test_the_comparison_can_fail():
    op = get_mma(FORMS["f16"], "sm_90")
    rng = np.random.default_rng(0)
    a, b = _bits(rng, (16, 16), "f16", False), _bits(rng, (16, 8), "f16", False)
    c = np.zeros((16, 8), np.uint64)
    d = G.tc_gemm(a, b, c, op)
    d2 = G.tc_gemm(a, b, c + np.uint64(0x3F800000), op)       # C = 1.0 changes the result
    assert d.tobytes() != d2.tobytes()


# The kernel's own edges: panels of _W columns (the last one partial), tasks of _FBR rows, the step lengths
# L (16, 8, 4 here, 32 in the wgmma test: one compiled kernel each), terms on both sides of the truncation
# point F bits below emax, results below 2**-126 (cut again to the subnormal grid only in the row steps whose
# emax allows one), zero rows and columns, sums cancelling to zero, signed zeros, overflow.
FORMS_L = [("f16", "sm_90"), ("tf32", "sm_90"), ("f16", "sm_80"), ("tf32", "sm_80"), ("bf16", "sm_80")]


def _with_exponents(rng, shape, kind, lo, hi):
    """Random finite bits of ``kind`` whose biased exponent field lies in [lo, hi] (random signs and fractions)."""
    eb, mb, shift = {"f16": (5, 10, 0), "bf16": (8, 7, 0), "tf32": (8, 10, 13)}[kind]
    e = rng.integers(lo, hi + 1, shape, dtype=np.uint64)
    frac = rng.integers(0, 1 << mb, shape, dtype=np.uint64)
    sign = rng.integers(0, 2, shape, dtype=np.uint64)
    return ((sign << np.uint64(eb + mb)) | (e << np.uint64(mb)) | frac) << np.uint64(shift)


def _same(kind, arch, a, b, c):
    op = get_mma(FORMS[kind], arch)
    d64 = G.tc_gemm(a, b, c, op, fast_f32=True)
    dint = G.tc_gemm(a, b, c, op, fast_f32=False)
    assert d64.tobytes() == dint.tobytes(), (kind, arch, np.argwhere(d64 != dint)[:5])
    return d64


@pytest.mark.parametrize("kind,arch", FORMS_L)
def test_panels_rows_and_step_lengths(kind, arch):
    rng = np.random.default_rng(7)
    M, N, K = 48, G._W * 2 + 8, 64
    a = _bits(rng, (M, K), kind, False)
    b = _bits(rng, (K, N), kind, False)
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64) & np.uint64(0xBFFFFFFF)     # |C| < 2
    _same(kind, arch, a, b, c)


@pytest.mark.parametrize("kind,arch", FORMS_L)
def test_terms_around_the_truncation_point(kind, arch):
    """Operand exponents spread so that each step's products span F +- a few bits below the largest."""
    rng = np.random.default_rng(8)
    M, N, K = 32, 40, 128
    top = 30 if kind == "f16" else 140
    a = _with_exponents(rng, (M, K), kind, top - 14, top)
    b = _with_exponents(rng, (K, N), kind, top - 14, top)
    c = np.zeros((M, N), np.uint64)
    c[::2] = rng.integers(0, 1 << 32, (M // 2, N), dtype=np.uint64) & np.uint64(0x87FFFFFF)
    _same(kind, arch, a, b, c)


@pytest.mark.parametrize("kind,arch", [("bf16", "sm_90"), ("tf32", "sm_90"), ("tf32", "sm_80"), ("f16", "sm_90")])
def test_subnormal_and_vanishing_results(kind, arch):
    """Products and sums around 2**-126 and 2**-149 (for f16 only C can be that small), next to rows whose
    results are all normal, so both the row steps with and without the subnormal cut run."""
    rng = np.random.default_rng(9)
    M, N, K = 40, 24, 64
    if kind == "f16":
        a = _bits(rng, (M, K), kind, False)
        a[: M // 2] = 0
        b = _bits(rng, (K, N), kind, False)
    else:
        a = _with_exponents(rng, (M, K), kind, 40, 64)        # products 2**-174 .. 2**-124
        b = _with_exponents(rng, (K, N), kind, 40, 64)
        a[M // 2:] = _with_exponents(rng, (M - M // 2, K), kind, 120, 130)
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64) & np.uint64(0x80FFFFFF)    # subnormal or < 2**-124
    d = _same(kind, arch, a, b, c)
    f = d.astype(np.uint32).view(np.float32)
    assert (f != 0).any() and (np.abs(f[f != 0]) < np.float32(2.0 ** -126)).any()


@pytest.mark.parametrize("kind,arch", [("f16", "sm_90"), ("bf16", "sm_90"), ("tf32", "sm_80")])
def test_zeros_cancellation_and_signed_zeros(kind, arch):
    rng = np.random.default_rng(10)
    M, N, K = 36, 20, 32
    a = _bits(rng, (M, K), kind, False)
    b = _bits(rng, (K, N), kind, False)
    sign = {"f16": 15, "bf16": 15, "tf32": 31}[kind]
    neg = np.uint64(1 << sign)
    a[0] = 0                                 # +0 rows and columns, -0 ones
    a[1] = neg
    b[:, 0] = 0
    b[:, 1] = neg
    a[2] = a[3]                              # a row whose products cancel exactly in pairs
    b[1::2, 2] = b[0::2, 2] ^ neg
    a[2, 1::2] = a[2, 0::2]
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64) & np.uint64(0x3FFFFFFF)
    c[:4] = 0x80000000                       # -0
    c[4:8] = 0
    d = _same(kind, arch, a, b, c)
    assert (d[:2] == 0).all() and (d[:, :2][:8] == 0).all() and d[2, 2] == 0


@pytest.mark.parametrize("kind,arch", [("bf16", "sm_90"), ("tf32", "sm_80")])
def test_overflow_is_redone(kind, arch):
    """Sums that overflow binary32 in some step (and would come back in later ones) take the scalar chain."""
    rng = np.random.default_rng(11)
    M, N, K = 16, 24, 64
    a = _with_exponents(rng, (M, K), kind, 250, 254)
    b = _with_exponents(rng, (K, N), kind, 120, 130)
    a[:, K // 2:] ^= np.uint64(1 << (15 if kind == "bf16" else 31))      # later steps pull back
    c = np.zeros((M, N), np.uint64)
    d = _same(kind, arch, a, b, c)
    assert ((d & np.uint64(0x7FFFFFFF)) == np.uint64(0x7F800000)).any()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), form=st.sampled_from(FORMS_L), width=st.integers(1, 40),
       mt=st.integers(1, 4), nt=st.integers(1, 40))
def test_random_exponent_windows(seed, form, width, mt, nt):
    kind, arch = form
    rng = np.random.default_rng(seed)
    K = 32
    top = 30 if kind == "f16" else int(rng.integers(width, 255))
    lo = max(1, top - width)
    a = _with_exponents(rng, (16 * mt, K), kind, lo, top)
    b = _with_exponents(rng, (K, 8 * nt), kind, lo, top)
    c = rng.integers(0, 1 << 32, (16 * mt, 8 * nt), dtype=np.uint64)
    c[(c & np.uint64(0x7F800000)) == np.uint64(0x7F800000)] = 0
    _same(kind, arch, a, b, c)


def _bf16(x):
    return np.asarray(x, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint64)


def _edge(a, b):
    """D[0, 0] of a bf16 sm_90 GEMM (L = 16, F = 25, e_zero = -133; K = 32: two steps) with A's row 0 = a,
    B's column 0 = b, C = 0; the panel's other columns get products of 1 in k = 15 and 31 (a and b are 0
    there), so row 0's smallest emax is column 0's."""
    assert a[15] == a[31] == b[15] == b[31] == 0
    A = np.zeros((16, 32))
    B = np.zeros((32, G._W))
    A[0] = a
    A[0, [15, 31]] = 1
    B[:, 0] = b
    B[[15, 31], 1:] = 1
    d = _same("bf16", "sm_90", _bf16(A), _bf16(B), np.zeros((16, G._W), np.uint64))
    return d[:1, :1].astype(np.uint32).view(np.float32)[0, 0]


def test_exact_edges_of_the_f32_steps():
    p = 2.0 ** np.arange(0, -200, -1.0)      # p[k] = 2**-k
    k = np.arange(32)
    # a result in [2**-149, 2**-126) (emax = F - 127: 2**-102 - 2**-102 + 2**-127) takes C's nominal exponent
    # -126 into the next step, whose 15 products 1.25 * 2**-150 are then cut at 2**-151 (to 2**-150 each),
    # not at 2**-152: 2**-127 + 15 * 2**-150, cut to the subnormal grid (not 2**-127 + 9 * 2**-149)
    a = np.zeros(32); b = np.zeros(32)
    a[0], b[0], a[1], b[1], a[2], b[2] = p[51], p[51], -p[51], p[51], p[60], p[67]
    a[16:31], b[16:31] = 1.25 * p[75], p[75]
    assert _edge(a, b) == 2.0 ** -127 + 7 * 2.0 ** -149
    # a sum in [2**-150, 2**-149) rounds toward zero to +0, twice (were the first one kept, the second
    # step's sum would reach 2**-149)
    a = np.where((k == 0) | (k == 16), 1.5 * p[75], 0.0)
    b = np.where((k == 0) | (k == 16), p[75], 0.0)
    assert _edge(a, b) == 0 and np.signbit(_edge(-a, b)) == 0
    # emax is at least e_zero: with C = 0 and every product below 2**-133, terms are cut at 2**-158, so four
    # 1.5 * 2**-159 vanish and (2 - 2**-7) * 2**-150 stays below 2**-149 (+0, not 2**-149)
    a = np.zeros(32); b = np.zeros(32)
    a[0], b[0] = (2 - p[7]) * p[75], p[75]
    a[1:5], b[1:5] = 1.5 * p[80], p[79]
    assert _edge(a, b) == 0
    # 1.125 * 2**128 overflows in the first step; the second step would bring it back below 2**128
    a = np.where(k == 0, 1.5 * 2.0 ** 127, 0.0) + np.where(k == 16, -1.5 * 2.0 ** 127, 0.0)
    b = np.where(k == 0, 1.5, 0.0) + np.where(k == 16, 1.0, 0.0)
    assert np.isinf(_edge(a, b))


@pytest.mark.parametrize("kind,arch", [("f16", "sm_90"), ("tf32", "sm_80")])
def test_gemm_equals_the_instruction_chain_across_panels(kind, arch):
    """gemm() against the instructions issued one by one (each step's D fed back as C), over three panels of
    columns and two row tasks, with an inf in A, a NaN in B, an inf in C."""
    from emulator.tiles import _gemm_by_instructions
    rng = np.random.default_rng(12)
    op = get_mma(FORMS[kind], arch)
    M, N, K = G._FBR + 16, 2 * G._W + 8, 4 * op.variant.tile_shape("A")[1]
    a = _bits(rng, (M, K), kind, False)
    b = _bits(rng, (K, N), kind, False)
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64)
    c[(c & np.uint64(0x7F800000)) == np.uint64(0x7F800000)] = 0
    inf = {"f16": 0x7C00, "tf32": 0x7F800000}[kind]
    a[3, 5] = inf
    b[7, G._W + 3] = inf | 1
    c[M - 1, N - 1] = 0xFF800000
    d = G.tc_gemm(a, b, c, op)
    assert d.tobytes() == _gemm_by_instructions(op, a, b, c).tobytes()


@pytest.mark.parametrize("atype,btype,dtype", [("e4m3", "e5m2", "f32"), ("f16", "f16", "f32"), ("tf32", "tf32", "f32")])
def test_wgmma_steps_binary64_path_equals_the_integer_path(atype, btype, dtype):
    """wgmma's f32 tiles through tc_gemm (L = 32 and F = 13 for fp8: a kernel of their own)."""
    from emulator.numerics import wgmma as W
    rng = np.random.default_rng(13)
    op = W._Op(W._prm(atype, btype, dtype, W.wgmma_params(atype, dtype)),
               W._Types(W.NATIVE.get(atype, atype), W.NATIVE.get(btype, btype)))
    M, N, K = 64, G._W + 24, 64
    a = _bits(rng, (M, K), atype, False)
    b = _bits(rng, (K, N), btype if btype != "e5m2" else "e4m3", False)
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64)
    c[(c & np.uint64(0x7F800000)) == np.uint64(0x7F800000)] = 0
    d64 = G.tc_gemm(a, b, c, op, fast_f32=True)
    dint = G.tc_gemm(a, b, c, op, fast_f32=False)
    assert d64.tobytes() == dint.tobytes()


@pytest.mark.parametrize("kind,arch", [("f16", "sm_90"), ("tf32", "sm_80")])
def test_narrow_n_runs_transposed(kind, arch):
    """N = 8 (one panel would be mostly padding): the transposed GEMM runs; specials in both operands and C."""
    rng = np.random.default_rng(14)
    M, N, K = 3 * G._W, 8, 64
    a = _bits(rng, (M, K), kind, False)
    b = _bits(rng, (K, N), kind, False)
    c = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64) & np.uint64(0xBFFFFFFF)
    a[5, 3] = {"f16": 0x7C01, "tf32": 0x7F800000}[kind]
    b[9, 2] = {"f16": 0xFC00, "tf32": 0xFF800000}[kind]
    c[M - 2, 7] = 0x7FC00000
    _same(kind, arch, a, b, c)


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="targets an x86 CPU without AVX-512")
def test_the_binary64_truncation_branch(tmp_path):
    """Where the target has no packed binary64 -> int64 conversion (AVX2 here, compiled afresh in a
    subprocess), the terms are truncated and summed in binary64: the same tests pass."""
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CACHE_DIR=str(tmp_path),
               NUMBA_CPU_FEATURES="+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,"
                                  "+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    check = "from emulator.numerics import gemm_fast as G; assert not G._CVT64"
    subprocess.run([sys.executable, "-c", check], env=env, check=True)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                        "exact_edges or panels or subnormal or zeros or overflow or transposed"],
                       env=env, cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_the_decode_tables_are_decode_of_every_code():
    """build_lut (numpy, run at a translation before anything is compiled) gives, for every code of the 8- and
    16-bit formats, what the jitted decode and _decode_matrix_arith give; a wrong table would be caught."""
    from emulator.numerics import fast
    from emulator.numerics.params import FORMATS
    for name, f in FORMATS.items():
        if f.width > 16:
            assert G.build_lut(name).shape == (1, 4)
            continue
        codes = np.arange(1 << f.width, dtype=np.uint64).reshape(1, -1)
        S = np.empty((1, codes.size), np.int64)
        q, t = np.empty_like(S), np.empty_like(S)
        G._decode_matrix_arith(codes, f.code, S, q, t, np.zeros(codes.size, np.bool_), False)
        kind = np.array([fast.decode(int(x), f.code)[0] for x in codes[0]], np.int64)
        want = np.stack([S[0], q[0], t[0], kind], axis=1)
        got = G.build_lut(name)
        assert got.dtype == np.int64 and got.flags.c_contiguous and np.array_equal(got, want), name
        bad = got.copy()
        bad[1, 2] += 1
        assert not np.array_equal(bad, want)


# ------------------------------------------------------------------------------------------------
# the narrow kernel (_f16_terms): f16 products in binary32, the L terms summed in int32
def _three_ways(arch, a, b, c):
    """D by the narrow kernel, by the binary64 kernel and by the integer path: all three bit for bit."""
    op = get_mma(FORMS["f16"], arch)
    L, F = int(op._prm[15]), int(op._prm[16])
    assert G._narrow(0, 0, L, F)
    d32 = G.tc_gemm(a, b, c, op, fast_f32=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(G, "_narrow", lambda *args: False)
        d64 = G.tc_gemm(a, b, c, op, fast_f32=True)
    dint = G.tc_gemm(a, b, c, op, fast_f32=False)
    assert d32.tobytes() == dint.tobytes(), np.argwhere(d32 != dint)[:5]
    assert d64.tobytes() == dint.tobytes(), np.argwhere(d64 != dint)[:5]
    return d32


def test_narrow_only_where_the_products_and_sums_fit():
    assert G._narrow(0, 0, 16, 25) and G._narrow(0, 0, 8, 24)
    assert not G._narrow(1, 1, 16, 25) and not G._narrow(2, 2, 8, 25) and not G._narrow(0, 1, 16, 25)
    assert not G._narrow(0, 0, 32, 25)           # 32 terms below 2**27 could pass 2**31


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("av,bv,cv", [
    (0x7BFF, 0x7BFF, 0), (0x7BFF, 0xFBFF, 0), (0x3BFF, 0x3BFF, 0x3F800000),     # largest terms, either sign
    (0x7BFF, 0x7BFF, 0x4F7FFFFF), (0xFBFF, 0x7BFF, 0xCF7FFFFF),                # ... and C about as large
    (0x0001, 0x0001, 0x00000001), (0x03FF, 0x8001, 0),                        # subnormal products: 2**-48
    (0x0001, 0x7BFF, 0x7F7FFFFF), (0x3C00, 0x3C00, 0x80000000)])              # the scale clamped; -0 + 1
def test_narrow_int32_sums_and_scale_limits(arch, av, bv, cv):
    a = np.full((32, 64), av, np.uint64)
    b = np.full((64, 24), bv, np.uint64)
    c = np.full((32, 24), cv, np.uint64)
    a[1::3, ::5] = 0x3C00
    a[2::7, 3::4] = 0x8000
    b[::6, 1::3] = 0x8001
    _three_ways(arch, a, b, c)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), arch=st.sampled_from(["sm_90", "sm_80"]), mt=st.integers(1, 3),
       nt=st.integers(1, 20), special=st.booleans(), cexp=st.integers(0, 255))
def test_narrow_kernel_fuzz(seed, arch, mt, nt, special, cexp):
    """Random f16 bits (subnormals, signed zeros, the extremes; infs and NaNs where ``special``: their rows and
    columns go to the scalar chain) and C around one exponent, against the binary64 kernel and the integer
    path."""
    rng = np.random.default_rng(seed)
    M, N, K = 16 * mt, 8 * nt, 48
    a = _bits(rng, (M, K), "f16", special)
    b = _bits(rng, (K, N), "f16", special)
    a[rng.random((M, K)) < 0.05] = 0x8000
    b[rng.random((K, N)) < 0.05] = 0x7BFF
    c = (rng.integers(0, 1 << 23, (M, N), dtype=np.uint64) | np.uint64(min(cexp, 254) << 23)
         | (rng.integers(0, 2, (M, N), dtype=np.uint64) << np.uint64(31)))
    if special:
        c[rng.random((M, N)) < 0.02] = 0x7FC00001
    _three_ways(arch, a, b, c)
