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
