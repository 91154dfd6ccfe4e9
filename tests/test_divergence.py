"""Divergence and reconvergence as ptxas compiles them and the H100 runs them (tests/data/divergence).

The corpus (tools/hwcapture/divergence) holds kernels whose lanes split and meet again: joins placed before the
branch that reaches them, loops with break and continue, nested and data-dependent branches, switches,
elect.sync after a loop, named barriers after divergent code, libdevice functions with internal branches,
producer/consumer lane groups that wait on each other, early returns before a barrier, and order probes
(a shared ticket per lane group) whose output is the order in which the H100 ran the lane groups. Each nvcc
module is also stored with its basic blocks laid out reversed and shuffled: the H100 gives the same bits for
every layout, and so must the emulator.
"""
import os

import numpy as np
import pytest

import corpus_lib
from emulator import WarpSyncError, load_ptx, GlobalMemory
from emulator.machine.convergence import EXIT, Convergence, successors

DATA = os.path.join(os.path.dirname(__file__), "data", "divergence", "h100.npz")


CASES = corpus_lib.load_npz(DATA)

# cases that run but do not give the H100's bits, with why; test_known_differences keeps the list true (none:
# the order probes div_order_* copy out slots they never write, which hold what earlier kernels left in shared
# memory; their configs list those bytes as nondeterministic, and test_skipped_bytes_are_unwritten_shared proves it)
KNOWN = {}
RUNNABLE = sorted(n for n in CASES if n not in KNOWN)
SAMPLE = ["div_order_if_else_rev", "div_order_loop_exit_nvcc", "div_join_before_named_bar_rev", "div_elect_after_loop_rev", "div_early_return_bar_nvcc",
          "div_ticket_if_else_shuf", "div_ticket_switch_rev", "div_ticket_loop_rev", "div_triton_softcap_ce_rev",
          "div_named_bars_after_divergence_shuf", "div_producer_consumer_rev"]


def _check(name, **launch):
    case = CASES[name]
    got, res, _ = corpus_lib.replay(case, **launch)
    bad = corpus_lib.mismatches(case, got)
    assert not bad, f"{name}: differs from the H100: {bad}"
    return got, res


def test_corpus_is_whole():
    assert len(CASES) == 48
    layouts = {n.rsplit("_", 1)[1] for n in CASES}
    assert layouts == {"nvcc", "rev", "shuf"}
    for c in CASES.values():
        assert "H100" in c["config"]["gpu"] and set(c["out"]) == set(c["config"]["outputs"])
    assert set(SAMPLE) <= set(RUNNABLE)


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_matches_h100(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_all_match_h100(name):
    _check(name)


def _filled(case, pattern):
    """The case's outputs when shared memory starts out holding ``pattern`` (a 32-bit word, repeated) instead of
    zeros, as it holds whatever earlier kernels left on a GPU."""
    from emulator.machine import cta as cta_mod
    orig = cta_mod.CTA.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        self.smem[:] = np.frombuffer(np.uint32(pattern).tobytes(), np.uint8)[np.arange(self.smem.size) % 4]
    cta_mod.CTA.__init__ = init
    try:
        return corpus_lib.replay(case)[0]
    finally:
        cta_mod.CTA.__init__ = orig


@pytest.mark.parametrize("name", ["div_order_if_else_nvcc", "div_order_loop_exit_shuf"])
def test_skipped_bytes_are_unwritten_shared(name):
    """The bytes the order probes' configs skip are exactly those that change with what shared memory held
    before the launch (slots the kernel never writes; on the H100 they read back a pattern written into every
    SM's shared memory by a kernel run just before, tools/hwcapture/divergence/fill_shared.py); every other
    byte equals the H100's."""
    case = CASES[name]
    a, b = _filled(case, 0x5A5A5A5A)["out"], _filled(case, 0x13579BDF)["out"]
    changes = np.flatnonzero(a.view(np.uint8) != b.view(np.uint8)).tolist()
    skipped = [x for lo, hi in case["config"]["nondeterministic"]["out"] for x in range(lo, hi)]
    assert changes == skipped and len(skipped) > 100
    assert not corpus_lib.mismatches(case, {"out": a})
    want = case["out"]["out"].view(np.uint8)
    assert not np.array_equal(a.view(np.uint8)[skipped], want[skipped])    # the H100 read other leftovers


def test_layouts_agree_on_the_emulator():
    """The order probes give the same bits whatever order the PTX lists the blocks in."""
    outs = [corpus_lib.replay(CASES[f"div_ticket_switch_{lay}"])[0]["out"] for lay in ("nvcc", "rev", "shuf")]
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


@pytest.mark.parametrize("name", ["div_ticket_loop_rev", "div_join_before_named_bar_shuf"])
def test_engines_agree(name):
    fast, rf = _check(name, engine="fast")
    ref, rr = _check(name, engine="reference")
    assert all(np.array_equal(fast[k], ref[k]) for k in fast)
    assert rf.instructions == rr.instructions


# -- the model on small programs -------------------------------------------------------------------------

JOIN_FIRST = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    mov.u32 %r2, 0;
    bra.uni START;
JOIN:
    bar.sync 0;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
START:
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra JOIN;
    mov.u32 %r2, 7;
LOOP:
    add.u32 %r2, %r2, %r2;
    setp.lt.u32 %p2, %r2, 1000;
    @%p2 bra LOOP;
    bra.uni JOIN;
}
"""


def test_join_placed_before_the_branch():
    """Lane 0 loops while lanes 1-31 sit at the join, which the PTX lists first: they wait for lane 0, and
    the aligned barrier sees the whole warp (smallest PC first sent them to bar.sync alone)."""
    m = load_ptx(JOIN_FIRST)
    for engine in ("fast", "reference"):
        g = GlobalMemory()
        a = g.alloc(128)
        m.launch("k", (1, 1, 1), (32, 1, 1), [a], gmem=g, engine=engine)
        got = g.download(a, 128).view(np.uint32)
        assert got[0] == 1792 and (got[1:] == 0).all(), engine


def test_post_dominators():
    from emulator.machine.program import Program
    m = load_ptx(JOIN_FIRST)
    prog = Program(m, m.info.functions["k"], m.arch)
    cv = Convergence(prog)
    code = prog.code
    bra = next(i for i, op in enumerate(code) if op.kind == "bra" and op.guard is not None and op.target < i)
    join = code[bra].target                     # the bar.sync
    assert code[join].kind == "bar"
    assert cv.postdominates(join, bra + 1)       # every path from lane 0's side passes the join
    assert cv.postdominates(join, bra)
    assert not cv.postdominates(bra + 1, join)
    assert cv.ipdom[bra] == join
    assert cv.sync[join] != 0 and cv.tail[join + 1] and not cv.tail[join]


class _Op:
    def __init__(self, kind, guard=None, target=0, targets=None):
        self.kind, self.guard, self.target = kind, guard, target
        if targets is not None:
            self.targets = targets


def test_successors_are_generic():
    """A multi-target op (a jump table) names all its targets; a guard adds the fall-through."""
    code = [_Op("bra", None, 0, targets=[3, 5]), _Op("bra", ("%p", False), 0, targets=[1, 2]), _Op("ret"),
            _Op("bra", ("%p", True), 0), _Op("exit", ("%p", False))]
    assert successors(code, 0) == [3, 5]
    assert successors(code, 1) == [1, 2, 2]
    assert successors(code, 2) == [EXIT]
    assert successors(code, 3) == [0, 4]
    assert successors(code, 4) == [EXIT, 5]


DIVERGED_BAR = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %laneid;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra HALF;
    ret;
HALF:
    bar.warp.sync -1;
    ret;
}
"""

DIVERGED_ALIGNED = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %laneid;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra HALF;
    bar.sync 1;
    bra.uni END;
HALF:
    bar.sync 0;
END:
    ret;
}
"""


def test_warp_sync_still_reports_missing_lanes():
    """Lanes that exited are not waited for: bar.warp.sync -1 then names them."""
    m = load_ptx(DIVERGED_BAR)
    for engine in ("fast", "reference"):
        with pytest.raises(WarpSyncError, match=r"bar.warp.sync\s+-1: membermask names lanes 16-31 that are not "
                                                r"executing it"):
            m.launch("k", (1, 1, 1), (32, 1, 1), [], engine=engine)


def test_aligned_barriers_apart_are_an_error():
    """Two halves of a warp at different aligned barriers: each waits for the other; the error names them."""
    m = load_ptx(DIVERGED_ALIGNED)
    for engine in ("fast", "reference"):
        with pytest.raises(WarpSyncError, match=r"bar.sync 1: an .aligned barrier must be executed by every "
                                                r"non-exited lane of the warp; lanes 0-15 are not executing it"):
            m.launch("k", (1, 1, 1), (32, 1, 1), [], engine=engine)
