"""The wgmma f32 tile's jitted kernels (numerics.gemm_fast's binary64 panels, which the fast engine's tile
functions call: C decoded and D encoded eight columns at a time by tc_simd) against the readable rule
(numerics.wgmma.reference_element), on operands drawn to hit the edges: NaN payloads, infinities, signed zeros,
subnormals, the largest finites, and exponents spread across the formats' whole ranges."""
import numpy as np
from hypothesis import given, settings, strategies as st

from emulator.numerics import gemm_fast as G
from emulator.numerics import wgmma as num

WIDTH = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8}
EDGES = {   # zeros, infs, NaNs with payloads, subnormals, the extreme finites
    16: [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFD55, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF,
         0x3C00, 0x7F80, 0xFF80, 0x7FC1, 0x0080, 0x807F, 0x7F7F],
    32: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC0DEAD, 0x00000001,
         0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0x0000E000, 0x33800000],
    8: [0x00, 0x80, 0x7F, 0xFF, 0x7C, 0xFC, 0x7D, 0x01, 0x87, 0x08, 0x7E, 0x7B, 0xFB, 0x38],
}
FORMS = [("f16", "f16"), ("bf16", "bf16"), ("tf32", "tf32"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]
K_OF = {"f16": 16, "bf16": 16, "tf32": 8}


def _elements(draw, n, w, edge_rate):
    """n codes of width w: uniform bits (every exponent equally likely), edge cases at about edge_rate."""
    out = []
    for _ in range(n):
        if draw(st.integers(0, 99)) < edge_rate:
            out.append(draw(st.sampled_from(EDGES[w])))
        else:
            out.append(draw(st.integers(0, (1 << w) - 1)))
    return np.array(out, np.uint64)


@st.composite
def tiles(draw):
    at, bt = draw(st.sampled_from(FORMS))
    K = K_OF.get(at, 32)                                  # one instruction (the rule is one instruction's)
    M = draw(st.integers(1, 3))
    N = draw(st.sampled_from([8, 16, 21, 24, 40]))       # whole vectors of eight columns, and a tail
    rate = draw(st.sampled_from([0, 3, 15]))
    A = _elements(draw, M * K, WIDTH[at], rate).reshape(M, K)
    B = _elements(draw, K * N, WIDTH[bt], rate).reshape(K, N)
    C = _elements(draw, M * N, 32, draw(st.sampled_from([0, 5, 30]))).reshape(M, N)
    if draw(st.booleans()):                                   # a row of zero products: C passes through
        A[draw(st.integers(0, M - 1))] = 0
    if at == "tf32":
        A &= np.uint64(0xFFFFE000)
        B &= np.uint64(0xFFFFE000)
    return at, bt, A, B, C


def _fast(at, bt, A, B, C):
    """num.wgmma_tile with the jitted binary64 kernels (never the numpy path taken while they compile)."""
    keep = G.NUMPY_MAX
    G.NUMPY_MAX = -1
    try:
        return num.wgmma_tile(at, bt, "f32", A, B, C)
    finally:
        G.NUMPY_MAX = keep


def _reference(at, bt, A, B, C):
    M, K = A.shape
    N = B.shape[1]
    return np.array([[num.reference_element(at, bt, "f32", [int(x) for x in A[m]], [int(B[k, n]) for k in range(K)],
                                            int(C[m, n])) for n in range(N)] for m in range(M)], np.uint64)


@settings(max_examples=60, deadline=None)
@given(tiles())
def test_f32_tile_equals_the_reference(case):
    at, bt, A, B, C = case
    d, r = _fast(at, bt, A, B, C), _reference(at, bt, A, B, C)
    bad = np.argwhere(d != r)
    assert bad.size == 0, [(tuple(i), hex(int(d[tuple(i)])), hex(int(r[tuple(i)]))) for i in bad[:4]]


def test_signed_zero_c_and_nan_rows_in_one_tile():
    """-0 and +0 in C with zero products give +0 (vector columns and the tail); a row with a NaN in C is decoded
    one element at a time (the NaN by the scalar chain), its other columns exact; subnormal Cs survive."""
    A = np.zeros((3, 16), np.uint64)
    B = np.zeros((16, 21), np.uint64)
    C = np.full((3, 21), 0x80000000, np.uint64)
    C[1, 4] = 0x7FC0BEEF
    C[1, 5] = 0x00000003
    C[0, 3] = 0x00000005
    C[2, 2] = 0x807FFFFF
    C[2, 20] = 0x807FFFFF
    d = _fast("f16", "f16", A, B, C)
    assert (d == _reference("f16", "f16", A, B, C)).all()
    assert d[0].tolist() == [0] * 3 + [5] + [0] * 17 and d[1, 5] == 3
    assert d[2, 2] == d[2, 20] == 0x807FFFFF
