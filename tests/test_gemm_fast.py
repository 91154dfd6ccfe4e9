"""gemm()'s binary64 path for f32-accumulator forms (numerics.gemm_fast._gemm_f32_par) against the integer
path it replaced, bit for bit, on random bits: subnormals, zeros, huge exponents, infs and NaNs (the rows and
columns holding them are redone by the scalar chain), accumulators that overflow."""
import numpy as np
import pytest

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
