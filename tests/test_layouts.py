"""check_layout (CuTe TV layouts vs the fragment tables), TiledCopy and TiledMMA partitions."""
import itertools

import numpy as np
import pytest

import emulator
from emulator import EmulatorError
from emulator.cute import Layout, LayoutError
from emulator.layouts.fragments import CUTE_SM80, TiledCopy, TiledMMA, check_layout, fragment_cells, tv_layout, variant
from isa.mma import VARIANTS

F16_K8 = "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"
F16_K16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def test_api_example():
    r = emulator.check_layout(F16_K8, "A", "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))")
    assert r.ok and r.mismatches == [] and bool(r)


@pytest.mark.parametrize("atom,op", [(a, op) for a in CUTE_SM80 for op in "ABCD"])
def test_cute_sm80_traits_confirmed(atom, op):
    d = CUTE_SM80[atom]
    r = check_layout(d["instr"], op, Layout.parse(d["C" if op == "D" else op]))
    assert r.ok, str(r)


def test_published_16x8x16_layouts_literally():
    assert check_layout(F16_K16, "A", "((_4,_8),(_2,_2,_2)):((_32,_1),(_16,_8,_128))").ok
    assert check_layout(F16_K16, "B", "((_4,_8),(_2,_2)):((_16,_1),(_8,_64))").ok
    assert check_layout(F16_K16, "C", "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))").ok
    assert check_layout(F16_K8, "B", "((4,8),2):((16,1),8)").ok  # without underscores


def test_wrong_layout_points_at_exact_cells():
    # value modes swapped: values 1 and 2 trade places, values 0 and 3 stay
    r = check_layout(F16_K8, "A", "((_4,_8),(_2,_2)):((_32,_1),(_8,_16))")
    assert not r.ok and len(r.mismatches) == 64
    assert {v for _, v, _, _ in r.mismatches} == {1, 2}
    assert (0, 1, (0, 1), (8, 0)) in r.mismatches and (31, 2, (15, 6), (7, 7)) in r.mismatches
    assert "thread  0 value  1: hardware holds (0, 1), layout says (8, 0)" in str(r)


def test_every_single_cell_error_is_found():
    """Move one thread's value anywhere else: exactly the cells that changed are reported."""
    good = Layout.parse(CUTE_SM80["SM80_16x8x8_F32F16F16F32_TN"]["C"])
    cells = fragment_cells(variant(F16_K8), "C")
    for t, v in itertools.product(range(32), range(4)):
        idx = {(tt, vv): good((tt, vv)) for tt in range(32) for vv in range(4)}

        class Perturbed(Layout):
            def __call__(self, c):
                i = idx[c]
                return (i + 1) % 128 if c == (t, v) else i
        P = Perturbed(good.shape, good.stride)
        r = check_layout(F16_K8, "C", P)
        assert [(m[0], m[1]) for m in r.mismatches] == [(t, v)]
        assert r.mismatches[0][2] == tuple(cells[t, v])


def test_b_is_n_by_k():
    thread, value = tv_layout(F16_K8, "B")
    assert thread.shape == (8, 8)
    f = VARIANTS[F16_K8].fragment("B")  # (k, n) in the PTX orientation
    for lane, e in itertools.product(range(32), range(2)):
        k, n = f[0, lane, e]
        assert thread[n, k] == lane and value[n, k] == e


@pytest.mark.parametrize("spelling", list(VARIANTS))
def test_tv_layout_is_a_bijection_for_every_variant(spelling):
    v = VARIANTS[spelling]
    for op in "ABCD":
        thread, value = tv_layout(spelling, op)
        assert (thread >= 0).all()
        pairs = set(zip(thread.ravel().tolist(), value.ravel().tolist()))
        assert len(pairs) == thread.size == 32 * fragment_cells(v, op).shape[1]


@pytest.mark.parametrize("bad,err", [("((_4,_8),(_2,_2)):((_32,_1),(_16,_8))", None),
                                     ("((_4,_4),(_2,_2)):((_32,_1),(_16,_8))", "32 threads"),
                                     ("(_32,_4,_2):(_1,_32,_128)", "two modes")])
def test_layout_shape_rules(bad, err):
    if err is None:
        assert check_layout(F16_K8, "A", bad).ok
    else:
        with pytest.raises(LayoutError, match=err):
            check_layout(F16_K16, "A", bad)


def test_unsupported_instruction_and_operand():
    with pytest.raises(EmulatorError, match="supported"):
        check_layout("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", "A", "(32,8):(1,32)")
    with pytest.raises(EmulatorError, match="operand"):
        check_layout(F16_K8, "E", "(32,4):(1,32)")


# ---- TiledCopy ------------------------------------------------------------------------------------

def test_tiled_copy_column_major_threads():
    tc = TiledCopy(Layout((32, 8)), Layout((4, 1)))
    assert tc.tile_shape == (128, 8)
    for t in range(256):
        tm, tn = t % 32, t // 32
        assert tc.partition(t) == [(4 * tm + v, tn) for v in range(4)]


def test_tiled_copy_row_major_threads_vector_values():
    tc = TiledCopy(Layout((8, 4), (4, 1)), Layout((1, 8)))  # 32 threads, 8 contiguous columns each
    assert tc.tile_shape == (8, 32)
    for t in range(32):
        tm, tn = t // 4, t % 4
        assert tc.partition(t) == [(tm, 8 * tn + v) for v in range(8)]
    # every element copied exactly once
    assert sorted(zip(tc.owner.ravel(), tc.value.ravel())) == [(t, v) for t in range(32) for v in range(8)]


def test_tiled_copy_rejects_non_bijective_layouts():
    with pytest.raises(LayoutError):
        TiledCopy(Layout((4, 8), (0, 1)), Layout((1, 1)))


# ---- TiledMMA -------------------------------------------------------------------------------------

def test_tiled_mma_single_atom_is_the_fragment():
    tm = TiledMMA(F16_K16)
    for op in "ABC":
        t1, v1 = tm.owner(op)
        t2, v2 = tv_layout(F16_K16, op)
        assert (t1 == t2).all() and (v1 == v2).all()


def test_tiled_mma_warps_and_repeats():
    tm = TiledMMA(F16_K16, atom_layout=(2, 2), tile=(64, 32, 16))
    thread, value = tm.owner("C")
    assert thread.shape == (64, 32) and tm.nthreads == 128
    pairs = set(zip(thread.ravel().tolist(), value.ravel().tolist()))
    assert len(pairs) == 64 * 32                     # each (thread, value) names one element
    assert sorted(set(thread.ravel().tolist())) == list(range(128))
    # atom (1, 0) of the 2x2 warp grid belongs to warp 1, atom (2, 0) is warp 0's second repeat
    c_t, c_v = tv_layout(F16_K16, "C")
    assert (thread[16:32, 0:8] == c_t + 32).all() and (value[16:32, 0:8] == c_v).all()
    assert (thread[32:48, 0:8] == c_t).all() and (value[32:48, 0:8] == c_v + 4).all()
    with pytest.raises(LayoutError):
        TiledMMA(F16_K16, atom_layout=(2, 2), tile=(48, 32, 16))


@pytest.mark.parametrize("thr,val", [("(32,8):(1,32)", "(4,1)"), ("(8,4):(4,1)", "(1,8)"), ("(4,8):(1,4)", "(2,2)"),
                                     ("(16,2):(2,1)", "(1,4)")])
def test_tiled_copy_tv_layout_matches_partition(thr, val):
    tc = TiledCopy(thr, val)
    tv = tc.tv_layout
    M, N = tc.tile_shape
    for t, v in itertools.product(range(tc.nthr), range(tc.nval)):
        m, n = tv((t, v)) % M, tv((t, v)) // M
        assert tc.owner[m, n] == t and tc.value[m, n] == v
