"""The CTAs of a cluster in the fast engine's CTA loop (``machine.cluster.Cluster._run_loops``): each CTA runs in
the jitted loop until it waits on the others; remote mbarrier arrivals run in the loop (``hopcall.py``, the
cluster's table); the warp-by-warp scheduler takes over only when a pass over the CTAs changes nothing (it then
reports the deadlock). Checked against the H100's outputs (corpus) and the reference engine, with the
instructions handed back to the executors counted."""
import collections

import numpy as np
import pytest

import corpus_lib
import test_cluster
from emulator import GlobalMemory, load_ptx
from emulator.errors import MBarrierError, WarpSyncError
from emulator.machine import cluster as cluster_mod
from emulator.machine import cta as cta_mod

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"


class Watch:
    """Counts what a launch hands back to the executors (by base opcode and space) and the cluster passes the
    warp-by-warp scheduler took over."""

    def __init__(self, monkeypatch):
        self.back = collections.Counter()
        self.handed_over = 0
        self.loops = 0
        step, over, loops = cta_mod.CTA._step, cluster_mod.Cluster._hand_over, cluster_mod.Cluster._run_loops

        def _step(cta, w, p, mask, together):
            op = cta.prog.code[p]
            self.back[op.kind if op.kind != "op" else ".".join((op.instr.base,) + tuple(op.instr.mods[:1]))] += 1
            return step(cta, w, p, mask, together)

        def _hand_over(cl, done):
            self.handed_over += 1
            return over(cl, done)

        def _run_loops(cl):
            self.loops += 1
            return loops(cl)
        monkeypatch.setattr(cta_mod.CTA, "_step", _step)
        monkeypatch.setattr(cluster_mod.Cluster, "_hand_over", _hand_over)
        monkeypatch.setattr(cluster_mod.Cluster, "_run_loops", _run_loops)


# CTA 1 (and 2, 3) arrive on CTA 0's mbarrier through mapa + mbarrier.arrive.shared::cluster; CTA 0 waits on it
# and writes what the others stored into its shared memory beforehand (st.shared::cluster)
REMOTE = HEAD + """
.visible .entry remote(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b8 bar[8];
    .shared .align 4 .b8 box[64];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, box;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r1, 0;
    and.pred %p3, %p1, %p2;
    @%p3 mbarrier.init.shared::cta.b64 [%r3], 96;
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    @%p2 bra WAIT;
    mapa.shared::cluster.u32 %r5, %r3, 0;
    mapa.shared::cluster.u32 %r6, %r4, 0;
    shl.b32 %r7, %r1, 4;
    add.u32 %r8, %r6, %r7;
    mad.lo.u32 %r9, %r1, 1000, %r2;
    setp.lt.u32 %p1, %r2, 4;
    shl.b32 %r10, %r2, 2;
    add.u32 %r11, %r8, %r10;
    @%p1 st.shared::cluster.u32 [%r11], %r9;
    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];
    bra DONE;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r3], 0;
    @!%p1 bra WAIT;
    ld.param.u64 %rd1, [out];
    setp.lt.u32 %p1, %r2, 16;
    @!%p1 bra DONE;
    shl.b32 %r12, %r2, 2;
    add.u32 %r13, %r4, %r12;
    ld.shared.u32 %r14, [%r13];
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r14;
DONE:
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    ret;
}
"""


def _remote(engine, nobar=False, **kw):
    g = GlobalMemory()
    out = g.alloc(64)
    text = REMOTE if not nobar else REMOTE.replace("shared::cluster.b64 _, [%r5]", "shared::cluster.b64 _, [%r6+4]")
    load_ptx(text).launch("remote", grid=4, block=32, args=[out], gmem=g, cluster=(4, 1, 1), engine=engine, **kw)
    return g.download(out, 64).view(np.uint32)


def test_remote_arrive_runs_in_the_cta_loop(monkeypatch):
    want = np.array([0] * 4 + [1000 * r + t for r in (1, 2, 3) for t in range(4)], np.uint32)
    assert (_remote("reference") == want).all()
    watch = Watch(monkeypatch)
    assert (_remote("fast") == want).all()
    assert watch.loops == 1 and watch.handed_over == 0, (watch.loops, watch.handed_over)
    # the remote arrivals, mapa, the waits, barrier.cluster (fastcore/clusterx.py) and the remote store
    # (fastcore/dsmemx.py) ran in the loop
    assert not watch.back, watch.back


def test_remote_arrive_without_a_barrier_raises_the_executors_error():
    """A remote arrival at an address of the other CTA where no mbarrier lives goes back from the loop; the
    executor names the instruction and the lane, on both engines alike."""
    msgs = []
    for engine in ("reference", "fast"):
        with pytest.raises(MBarrierError) as e:
            _remote(engine, nobar=True)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "mbarrier.arrive" in msgs[0] and "lane 0" in msgs[0], msgs


# (the deadlock kernel of test_cluster: rank 1 waits on an mbarrier nobody arrives on, rank 0 on the cluster barrier)
DEADLOCK = test_cluster.DEADLOCK


def test_cluster_deadlock_from_the_cta_loop_names_every_warp(monkeypatch):
    """Each CTA runs in the loop until it waits; when nothing moves, the scheduler takes the loops' state over
    and reports the deadlock with the reference's words (what each warp of each CTA waits for)."""
    msgs = []
    for engine in ("reference", "fast"):
        watch = Watch(monkeypatch)
        with pytest.raises(WarpSyncError) as e:
            load_ptx(DEADLOCK).launch("dl", grid=2, block=64, cluster=(2, 1, 1), engine=engine)
        msgs.append(str(e.value))
        assert watch.handed_over == (engine == "fast"), (engine, watch.handed_over)
    assert msgs[0] == msgs[1], msgs
    msg = msgs[1]
    assert msg.startswith("cluster (0, 0, 0) (2 CTAs): deadlock")
    assert "CTA (0, 0, 0) (rank 0): warp 0 lanes 0-31" in msg and "warp 1 lanes 0-31" in msg
    assert "not arrived: CTA (1, 0, 0) (rank 1) warp 0 lanes 0-31" in msg
    assert "CTA (1, 0, 0) (rank 1): warp 0 lanes 0-31" in msg and "mbarrier at shared 0x0" in msg


@pytest.mark.parametrize("keep", ["all", "last", "none"])
def test_keep_with_clusters_in_the_loop(keep):
    g = GlobalMemory()
    out = g.alloc(64)
    res = load_ptx(REMOTE).launch("remote", grid=8, block=32, args=[out], gmem=g, cluster=(4, 1, 1), engine="fast",
                                  keep=keep)
    kept = [tuple(c) for c, _ in res.ctas]
    assert kept == {"all": [(i, 0, 0) for i in range(8)], "last": [(7, 0, 0)], "none": []}[keep]
    for _, warps in res.ctas:
        assert all(w.exited.all() for w in warps)


# corpus kernels with clusters of 2: the H100's bytes, every CTA in the loop, nothing Hopper-specific handed back
LOOP_CASES = ["cute_tutorial_wgmma_tma_tn_sm90a", "cutlass_cluster1x2_f16_sm90a",
              "nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_b"]


@pytest.mark.parametrize("name", LOOP_CASES)
def test_corpus_cluster_kernels_in_the_cta_loop(name, monkeypatch):
    case = corpus_lib.load_all()[name]
    watch = Watch(monkeypatch)
    got, res, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    ncl = int(np.prod(case["config"]["grid"])) // int(np.prod(case["config"]["cluster"]))
    assert watch.loops == ncl and watch.handed_over == 0, (watch.loops, watch.handed_over)
    # wgmma, mbarrier waits and remote arrivals, mapa, elect.sync, barrier.cluster and the multicast TMA loads all
    # stay in the loop: nothing goes back
    assert not watch.back, watch.back


def test_dsmem_kernel_on_both_engines_in_the_loop(monkeypatch):
    """The 4-CTA DSMEM kernel (remote loads, stores, atomics, multicast, remote mbarriers) on the fast engine with
    its CTAs in the loop: the H100's bytes."""
    case = corpus_lib.load_all()["nvcc_cluster_dsmem_sm90a"]
    watch = Watch(monkeypatch)
    got, _, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    assert watch.loops == 2 and watch.handed_over == 0, (watch.loops, watch.handed_over)
