"""emulator.cute: replay of pycute reference results, and CuTe's defining properties over whole domains."""
import itertools
import json
import os

import pytest

from emulator import cute
from emulator.cute import (Layout, LayoutError, Swizzle, coalesce, complement, composition, cosize, crd2idx,
                           idx2crd, left_inverse, local_tile, logical_divide, logical_product, make_layout,
                           right_inverse, size, zipped_divide)

DATA = os.path.join(os.path.dirname(__file__), "data", "pycute", "reference.json")
with open(DATA) as f:
    REF = json.load(f)
CASES = REF["cases"]


def _L(t):
    return Layout.parse(t)


def _run(case):
    op, a = case["op"], case["args"]
    if op == "eval":
        L = _L(a[0])
        return [L(i) for i in range(size(L))]
    if op == "idx2crd":
        L = _L(a[0])
        out = [idx2crd(i, L.shape) for i in range(size(L))]
        return json.loads(json.dumps(out))
    if op == "slice_and_offset":
        def crd(c):
            return tuple(crd(e) for e in c) if isinstance(c, list) else c
        S, off = cute.slice_and_offset(crd(a[1]), _L(a[0]))
        return [str(S), off]
    if op == "swizzle":
        sw = Swizzle(*a)
        return [sw(i) for i in range(1 << (a[0] + a[1] + a[2]))]
    fn = {"coalesce": lambda x: coalesce(_L(x)),
          "complement": lambda x, m: complement(_L(x), m),
          "right_inverse": lambda x: right_inverse(_L(x)),
          "left_inverse": lambda x: left_inverse(_L(x)),
          "composition": lambda x, y: composition(_L(x), _L(y)),
          "logical_divide": lambda x, y: logical_divide(_L(x), _L(y)),
          "logical_divide_tuple": lambda x, t: logical_divide(_L(x), tuple(_L(e) for e in t)),
          "zipped_divide_tuple": lambda x, t: zipped_divide(_L(x), tuple(_L(e) for e in t)),
          "logical_product": lambda x, y: logical_product(_L(x), _L(y)),
          "tiled_divide_tuple": lambda x, t: cute.tiled_divide(_L(x), tuple(_L(e) for e in t)),
          "zipped_product_tuple": lambda x, t: cute.zipped_product(_L(x), tuple(_L(e) for e in t)),
          "tiled_product_tuple": lambda x, t: cute.tiled_product(_L(x), tuple(_L(e) for e in t))}[op]
    return str(fn(*a))


def test_reference_is_big_enough():
    assert REF["layouts"] >= 300 and len(CASES) >= 1000


@pytest.mark.parametrize("op", sorted({c["op"] for c in CASES}))
def test_matches_pycute(op):
    bad = []
    for c in CASES:
        if c["op"] == op:
            got = _run(c)
            if got != c["result"]:
                bad.append((c["args"], c["result"], got))
    assert not bad, f"{len(bad)} {op} cases differ from pycute, first: {bad[:3]}"


# ---- the API examples ------------------------------------------------------------------------------

def test_api_examples():
    L = Layout.parse("((_16,_8),_8):((_64,_1),_8)")
    assert L(((3, 1), 2)) == 209
    assert str(L) == "((_16,_8),_8):((_64,_1),_8)"
    assert idx2crd(209, (8, 128)) == (1, 26)
    L2 = Layout.parse("((16,8),8):((64,1),8)")
    assert str(L2) == "((16,8),8):((64,1),8)" and L2 == L
    assert Layout.parse(" ( ( _4 , _8 ) , ( _2 , _2 ) ) : ( ( _32 , _1 ) , ( _16 , _8 ) ) ").shape == ((4, 8), (2, 2))
    assert str(Layout((4, 8))) == "(4,8):(1,4)"
    assert str(Layout.parse("8")) == "8:1"


@pytest.mark.parametrize("bad", ["(4,8):(1,", "(4,8):(1,2,3)", "(4,8)x", "(4,8):(1,4) junk", "", ":(1)"])
def test_parse_errors(bad):
    with pytest.raises(LayoutError):
        Layout.parse(bad)


def test_incongruent_coordinate_is_an_error():
    L = Layout.parse("((4,8),2):((1,4),32)")
    with pytest.raises(LayoutError):
        L((1, 2, 3))
    with pytest.raises(LayoutError):
        L(((1, 2, 3), 0))


# ---- defining properties over whole domains --------------------------------------------------------

SMALL = [Layout.parse(t) for t in [
    "8:1", "(4,8):(1,4)", "(4,8):(8,1)", "((2,2),(2,4)):((1,8),(2,16))", "(2,3,4):(12,4,1)",
    "((4,8),(2,2)):((32,1),(16,8))", "((4,8),2):((16,1),8)", "(4,2):(0,1)", "(8,(2,2)):(2,(1,16))",
    "((2,4),(2,2),2):((1,2),(8,32),64)"]]


@pytest.mark.parametrize("L", SMALL, ids=str)
def test_int_and_natural_coordinates_agree(L):
    for i in range(size(L)):
        assert L(i) == L(idx2crd(i, L.shape)) == crd2idx(i, L.shape, L.stride)


@pytest.mark.parametrize("L", SMALL, ids=str)
def test_coalesce_keeps_function(L):
    C = coalesce(L)
    assert size(C) == size(L) and all(C(i) == L(i) for i in range(size(L)))


_PAIRS = [(A, B) for A, B in itertools.product(SMALL[:6], [Layout(4, 2), Layout((2, 4), (1, 8)), Layout(8, 1),
                                                           Layout((4, 2), (2, 1))]) if cosize(B) <= size(A)]


@pytest.mark.parametrize("A,B", _PAIRS, ids=str)
def test_composition_property(A, B):
    try:
        R = composition(A, B)
    except LayoutError:
        return  # inadmissible pairs are refused, never answered wrongly
    assert size(R) == size(B)
    assert all(R(i) == A(B(i)) for i in range(size(B)))


@pytest.mark.parametrize("L", [L for L in SMALL if 0 not in cute.flatten((L.stride,))], ids=str)
def test_complement_covers_codomain(L):
    M = cosize(L) * 2
    K = complement(L, M)
    full = make_layout(L, K)
    got = sorted(full(i) for i in range(size(full)))
    assert got[:M] == list(range(M)) or sorted(set(got)) == got  # injective
    assert set(range(M)) <= set(got)


@pytest.mark.parametrize("L", [L for L in SMALL if 0 not in cute.flatten((L.stride,))], ids=str)
def test_inverses(L):
    R = right_inverse(L)
    assert all(L(R(i)) == i for i in range(size(R)))
    Li = left_inverse(L)
    assert all(Li(L(i)) == i for i in range(size(L)))


def test_logical_divide_tiles():
    A = Layout((8, 8))  # 8x8 column-major
    D = zipped_divide(A, (Layout(2, 1), Layout(4, 1)))  # tiles of 2x4, a 4x2 grid of them
    assert str(D) == "((2,4),(4,2)):((1,8),(2,32))"
    for tm, tn, m, n in itertools.product(range(4), range(2), range(2), range(4)):
        assert D(((m, n), (tm, tn))) == A((tm * 2 + m, tn * 4 + n))


def test_local_tile():
    A = Layout((16, 32), (32, 1))  # 16x32 row-major
    for bm, bn in itertools.product(range(2), range(4)):
        T, off = local_tile(A, (8, 8), (bm, bn))
        assert size(T) == 64
        for m, n in itertools.product(range(8), range(8)):
            assert off + T((m, n)) == A((bm * 8 + m, bn * 8 + n))


def test_logical_product_repeats():
    A = Layout((2, 2), (1, 2))
    P = logical_product(A, Layout(3, 1))
    assert [P(i) for i in range(12)] == list(range(12))


@pytest.mark.parametrize("b,m,s", [(1, 0, 1), (2, 1, 3), (3, 4, 3), (3, 3, 3), (2, 4, 3), (1, 4, 3), (2, 0, -2)])
def test_swizzle_is_an_involution_on_its_domain(b, m, s):
    sw = Swizzle(b, m, s)
    n = 1 << (b + m + abs(s))
    img = [sw(i) for i in range(n)]
    assert sorted(img) == list(range(n))
    assert all(sw(sw(i)) == i for i in range(n))


def test_swizzle_composed_with_layout():
    sw = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))  # the 128-byte swizzle of an 8x64 f16 tile
    for r, c in itertools.product(range(8), range(64)):
        chunk = (c // 8) ^ r
        assert sw((r, c)) == r * 64 + chunk * 8 + c % 8


def test_numpy_integers_with_huge_shapes_stay_exact():
    """Found by the fuzz runner: numpy integers met Python integers past 64 bits (OverflowError)."""
    import numpy as np
    from emulator.cute import crd2idx, idx2crd
    assert idx2crd(np.int64(-5), -1180591620717411303424) == -5
    assert crd2idx(np.int64(3), 8, np.int64(2**62)) == 3 * 2**62
