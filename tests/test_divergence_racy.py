"""Racy kernels against the H100 (tests/data/divergence/h100_racy.npz, tools/hwcapture/divergence).

The lane groups of one diverged warp read and write one shared (or global) word with no ``__syncwarp`` between
them, so the bits depend on the order in which the H100 runs the groups:

* ``racy.cu``: order probes (a volatile shared clock read and advanced by each group: if/else, loops with
  exits, a switch, lane ranges, a global clock, early returns, plain shared memory), each PTX module also with
  its blocks reversed and shuffled;
* ``hammock.cu``: if/else with each side ending in a store of its own mark to one word, sides from 0 to 16
  arithmetic instructions long and of other shapes; CTA 0 sends 24 lanes to the first side, CTA 1 sends 8, so the
  word read after the join tells which side ran last for either lane count;
* ``stores.cu``: several lanes of one instruction storing to one address (8 to 128 bits, shared and global).

Where ptxas keeps a divergent branch (``BSSY``/``BRA``/``BSYNC`` in the SASS), the emulator's order is the H100's:
the smaller lane group first. Where ptxas predicates the sides of a short branch (no ``BSSY``; both sides run
under predicates, in the order ptxas laid them out), the H100 runs the sides in that order whatever the lane
counts: those cases are ``PREDICATED`` below, and the sanitizer reports every one of these kernels (the result
depends on the interleaving of the lane groups).
"""
import os

import numpy as np
import pytest

import corpus_lib
from emulator import load_ptx, GlobalMemory

DATA = os.path.join(os.path.dirname(__file__), "data", "divergence", "h100_racy.npz")
CASES = corpus_lib.load_npz(DATA)

# ptxas predicated the sides whose stores race (read in the SASS of cuobjdump -sass: no BSSY around them): the
# H100 runs the fall-through side first whatever the lane counts, where a kept branch runs the smaller group first
PREDICATED = {
    "div_hammock_0_nvcc", "div_hammock_1_nvcc", "div_shape_marks_only_nvcc", "div_shape_global_nvcc",
    "div_shape_nested_nvcc", "div_shape_loop_nvcc", "div_race_one_side_load_nvcc", "div_race_one_side_load_rev",
    "div_race_one_side_load_shuf", "div_race_nested_short_nvcc", "div_race_nested_short_rev",
}
RUNNABLE = sorted(n for n in CASES if n not in PREDICATED)
SAMPLE = ["div_same_address_stores_nvcc", "div_race_store_first_rev", "div_race_loop_exit_shuf",
          "div_hammock_2_nvcc", "div_hammock_16_nvcc", "div_shape_two_marks_nvcc", "div_race_switch_shuf"]


def _check(name, **launch):
    case = CASES[name]
    got, res, _ = corpus_lib.replay(case, **launch)
    bad = corpus_lib.mismatches(case, got)
    assert not bad, f"{name}: differs from the H100: {bad}"
    return got, res


def test_corpus_is_whole():
    assert len(CASES) == 54 and PREDICATED < set(CASES) and set(SAMPLE) <= set(RUNNABLE)
    for c in CASES.values():
        assert "H100" in c["config"]["gpu"]


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_matches_h100(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_all_match_h100(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PREDICATED))
def test_predicated_differ(name):
    """Keeps PREDICATED true: each differs in its output (the order of the lane groups)."""
    case = CASES[name]
    got, _, _ = corpus_lib.replay(case)
    assert [k for k, _, _ in corpus_lib.mismatches(case, got)] == ["out"], name


def test_kept_branch_runs_the_smaller_group_first():
    """hammock_2 .. hammock_16: the side that ran last is the one with more lanes, in both CTAs (24 lanes on the
    first side, then 8); hammock_0 and hammock_1 (predicated by ptxas): the first side ran last in both."""
    for k in (2, 3, 4, 6, 8, 12, 16):
        out = CASES[f"div_hammock_{k}_nvcc"]["out"]["out"]
        assert (out[32], out[65]) == (1, 2), k
    for k in (0, 1):
        out = CASES[f"div_hammock_{k}_nvcc"]["out"]["out"]
        assert (out[32], out[65]) == (1, 1), k


STORES = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 16 .b8 s[64];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    mov.u32 %r2, s;
    add.u32 %r3, %r1, 100;
    st.shared.u32 [%r2], %r3;
    st.shared.v2.u32 [%r2+16], {%r3, %r1};
    st.shared.v4.u32 [%r2+32], {%r3, %r1, %r3, %r1};
    bar.warp.sync -1;
    setp.eq.u32 %p1, %r1, 0;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.shared.u32 %r4, [%r2];
    st.global.u32 [%rd3], %r4;
    ld.shared.u32 %r5, [%r2+16];
    st.global.u32 [%rd3+128], %r5;
    ld.shared.u32 %r6, [%r2+32];
    st.global.u32 [%rd3+256], %r6;
    st.global.u32 [%rd1+384], %r3;
    ret;
}
""".replace("    .reg .b64 %rd<4>;", "    .reg .b64 %rd<4>;\n    .reg .pred %p<2>;")


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_same_address_store_keeps_lowest_lane_of_last_phase(engine):
    """32 lanes store to one address: 32 bits keep lane 0, 64 bits lane 16 (lanes 0-15, then 16-31), 128 bits
    lane 24 (four phases of 8 lanes); global memory keeps lane 0 as shared memory does."""
    m = load_ptx(STORES)
    g = GlobalMemory()
    a = g.alloc(512)
    m.launch("k", 1, 32, [a], gmem=g, engine=engine)
    got = g.download(a, 512).view(np.uint32)
    assert got[0] == 100 and got[32] == 116 and got[64] == 124 and got[96] == 100


# -- the sanitizer: racecheck divergent-order --------------------------------------------------------------

def _order_reports(case, engine="fast"):
    got, res, _ = corpus_lib.replay(case, sanitize="racecheck", engine=engine)
    return [r for r in res.reports if r.kind == "divergent-order"], res


def _summary(reports):
    return sorted((r.first.line, r.second.line, r.first.lane, r.second.lane, r.count) for r in reports)


@pytest.mark.parametrize("name", ["div_race_one_side_load_nvcc", "div_hammock_0_nvcc"])
def test_predicated_race_is_reported(name):
    """The kernels whose order ptxas decides by predicating a short branch are reported, with both lines and
    lanes, the same on both engines, and the launch result carries a note."""
    fast, res = _order_reports(CASES[name])
    ref, _ = _order_reports(CASES[name], "reference")
    assert fast and _summary(fast) == _summary(ref)
    r = fast[0]
    assert r.tool == "racecheck" and r.severity == "warning" and r.space == "shared"
    assert f"lines {r.first.line} and {r.second.line}" in r.message and "ptxas decides" in r.message
    assert r.first.warp == r.second.warp and r.first.lane != r.second.lane
    assert any(f"line {r.second.line}:" in n and "order in which the lane groups run" in n for n in res.notes)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PREDICATED))
def test_every_predicated_case_is_reported(name):
    assert _order_reports(CASES[name])[0]


DIVERGENCE = corpus_lib.load_npz(os.path.join(os.path.dirname(__file__), "data", "divergence", "h100.npz"))
RACE_FREE = sorted(n for n in DIVERGENCE if not n.startswith("div_order_if_else"))   # the order probe races
RACE_FREE_SAMPLE = ["div_producer_consumer_rev", "div_warp_lock_nvcc", "div_ticket_if_else_shuf",
                    "div_order_loop_exit_nvcc", "div_elect_after_loop_rev"]


@pytest.mark.parametrize("name", [n if n in RACE_FREE_SAMPLE else pytest.param(n, marks=pytest.mark.slow)
                                  for n in RACE_FREE])
def test_race_free_divergence_is_not_reported(name):
    """No report on the divergence corpus's kernels (volatile flags with a fence, a spin-wait between the two
    halves of a warp, atomics and shuffles), whose bits do not depend on the order of the lane groups."""
    reports, _ = _order_reports(DIVERGENCE[name])
    assert reports == []


def test_order_probe_is_reported():
    """The divergence corpus's order_if_else races on its clock (its bits equal the H100's all the same:
    nvcc loads the clock once above the branch)."""
    assert _order_reports(DIVERGENCE["div_order_if_else_shuf"])[0]


ORDER = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 4 .u32 s;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    mov.u32 %r2, 0;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra LOW;
    ld.volatile.shared.u32 %r2, [s];
    bra.uni JOIN;
LOW:
    st.volatile.shared.u32 [s], %r1;
JOIN:
    BARRIER
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_order_race_between_halves(engine):
    """Lanes 0-15 store to a shared word that lanes 16-31 load while the warp is split: reported (the load
    names lanes 16-31's line, the store lanes 0-15's). Moving the load after a __syncwarp removes the report."""
    for text, want in ((ORDER.replace("BARRIER", ""), 1),
                       (ORDER.replace("    ld.volatile.shared.u32 %r2, [s];\n", "").replace(
                           "BARRIER", "bar.warp.sync -1;\n    ld.volatile.shared.u32 %r2, [s];"), 0)):
        g = GlobalMemory()
        a = g.alloc(128)
        res = load_ptx(text).launch("k", 1, 32, [a], gmem=g, engine=engine, sanitize="racecheck")
        got = [r for r in res.reports if r.kind == "divergent-order"]
        assert len(got) == want, [str(r) for r in res.reports]
        if want:
            lanes = {got[0].first.lane, got[0].second.lane}
            assert min(lanes) < 16 <= max(lanes) and len(res.notes) == 1
