"""Thread-block clusters: launch, special registers, distributed shared memory, barrier.cluster, remote
mbarriers, TMA multicast, and their errors. The bit-exact proof against the H100 is in the corpus
(``nvcc_cluster_*``, ``cute_tutorial_wgmma_tma_*``); these tests pin the rules one at a time."""
import numpy as np
import pytest

import corpus_lib
from emulator import GlobalMemory, TensorMap, load_ptx
from emulator.errors import MemoryAccessError, OperandError, WarpSyncError

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"

SREGS = HEAD + """
.visible .entry sregs(.param .u64 out)
{
    .reg .b32 %r<20>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ctaid.y;
    mov.u32 %r3, %nctaid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd2, %r4, 48;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r5, %cluster_ctaid.x;
    mov.u32 %r6, %cluster_ctaid.y;
    mov.u32 %r7, %cluster_nctaid.x;
    mov.u32 %r8, %cluster_nctaid.y;
    mov.u32 %r9, %clusterid.x;
    mov.u32 %r10, %clusterid.y;
    mov.u32 %r11, %nclusterid.x;
    mov.u32 %r12, %cluster_ctarank;
    mov.u32 %r13, %cluster_nctarank;
    mov.pred %p1, %is_explicit_cluster;
    selp.u32 %r14, 1, 0, %p1;
    st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%rd3+16], {%r9, %r10, %r11, %r12};
    st.global.v2.u32 [%rd3+32], {%r13, %r14};
    ret;
}
"""


def _sregs(grid, cluster=None, text=SREGS):
    g = GlobalMemory()
    n = grid[0] * grid[1]
    out = g.alloc(n * 48)
    load_ptx(text).launch("sregs", grid=grid, block=32, args=[out], gmem=g,
                          **({} if cluster is None else {"cluster": cluster}))
    return g.download(out, n * 48).view(np.uint32).reshape(grid[1], grid[0], 12)[..., :10]


def test_special_registers_rank_x_fastest():
    v = _sregs((4, 2, 1), (2, 2, 1))
    for y in range(2):
        for x in range(4):
            cx, cy = x % 2, y % 2
            assert v[y, x].tolist() == [cx, cy, 2, 2, x // 2, y // 2, 2, cx + 2 * cy, 4, 1], (x, y)


def test_special_registers_without_a_cluster():
    v = _sregs((3, 2, 1))
    assert (v[..., 0:4] == [0, 0, 1, 1]).all() and (v[..., 8:] == [1, 0]).all()
    assert (v[..., 4] == np.arange(3)).all() and (v[..., 5] == np.arange(2)[:, None]).all()


def test_reqnctapercluster_sets_the_cluster():
    text = SREGS.replace("(.param .u64 out)", "(.param .u64 out)\n.explicitcluster\n.reqnctapercluster 2, 1, 1")
    v = _sregs((4, 1, 1), text=text)
    assert v[0, :, 7].tolist() == [0, 1, 0, 1] and (v[..., 8:] == [2, 1]).all()
    with pytest.raises(OperandError, match="differ from the kernel's .reqnctapercluster"):
        _sregs((4, 1, 1), (4, 1, 1), text=text)


def test_launch_checks_the_cluster_shape():
    with pytest.raises(OperandError, match="not a whole number of clusters"):
        _sregs((3, 1, 1), (2, 1, 1))
    with pytest.raises(OperandError, match="at most 16"):
        _sregs((32, 1, 1), (32, 1, 1))


RING = HEAD + """
.visible .entry ring(.param .u64 out)
{
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .pred %p<4>;
    .shared .align 16 .b8 buf[256];
    .shared .align 8 .b8 cnt[16];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %cluster_nctarank;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, buf;
    shl.b32 %r5, %r3, 2;
    add.u32 %r6, %r4, %r5;
    st.shared.u32 [%r6], 0;
    mov.u32 %r20, cnt;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 st.shared.v2.u32 [%r20], {0, 0};
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    add.u32 %r7, %r1, 1;
    rem.u32 %r8, %r7, %r2;
    mapa.shared::cluster.u32 %r9, %r6, %r8;
    mad.lo.u32 %r10, %r1, 1000, %r3;
    st.shared::cluster.u32 [%r9], %r10;
    mapa.shared::cluster.u32 %r11, %r20, 0;
    red.shared::cluster.add.u32 [%r11], %r10;
    cvt.u64.u32 %rd2, %r20;
    cvta.shared.u64 %rd3, %rd2;
    mapa.u64 %rd4, %rd3, 0;
    atom.add.u32 %r12, [%rd4+4], 1;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    ld.shared.u32 %r13, [%r6];
    mov.u32 %r14, %ctaid.x;
    mad.lo.u32 %r15, %r14, 64, %r3;
    mul.wide.u32 %rd5, %r15, 20;
    add.s64 %rd6, %rd1, %rd5;
    ld.shared.u32 %r16, [%r20];
    ld.shared.u32 %r17, [%r20+4];
    sub.u32 %r18, %r9, %r6;
    getctarank.shared::cluster.u32 %r19, %r9;
    st.global.u32 [%rd6], %r13;
    st.global.u32 [%rd6+4], %r16;
    st.global.u32 [%rd6+8], %r17;
    st.global.u32 [%rd6+12], %r18;
    st.global.u32 [%rd6+16], %r19;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


@pytest.mark.parametrize("kw", [{}, {"engine": "reference"}, {"schedule": ("random", 3)}])
def test_distributed_shared_memory_ring(kw):
    g = GlobalMemory()
    out = g.alloc(8 * 64 * 20)
    load_ptx(RING).launch("ring", grid=8, block=64, args=[out], gmem=g, cluster=(4, 1, 1), **kw)
    v = g.download(out, 8 * 64 * 20).view(np.uint32).reshape(8, 64, 5)
    tid = np.arange(64)
    for c in range(8):
        r = c % 4
        prev, nxt = (r + 3) % 4, (r + 1) % 4
        assert (v[c, :, 0] == prev * 1000 + tid).all()
        total = (64 * 1000 * 6 + 4 * tid.sum()) if r == 0 else 0
        assert (v[c, :, 1] == total).all() and (v[c, :, 2] == (256 if r == 0 else 0)).all()
        # mapa(a, r) - a is (r - own rank) << 24 (mod 2^32), as on the H100; getctarank names the rank
        assert (v[c, :, 3] == ((nxt - r) % 256) << 24).all() and (v[c, :, 4] == nxt).all()


def test_dsmem_case_under_seeded_schedules_and_the_reference_engine():
    """The 4-CTA DSMEM/multicast/remote-mbarrier kernel captured on the H100 gives the H100's bytes whatever
    the interleaving of its CTAs."""
    case = corpus_lib.load_all()["nvcc_cluster_dsmem_sm90a"]
    for kw in ({"schedule": ("random", 1)}, {"schedule": ("random", 2)}, {"engine": "reference"}):
        got, _, _ = corpus_lib.replay(case, **kw)
        assert not corpus_lib.mismatches(case, got), kw


DEADLOCK = HEAD + """
.visible .entry dl()
{
    .reg .b32 %r<8>;
    .reg .pred %p<4>;
    .shared .align 8 .b8 bar[8];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, bar;
    setp.eq.u32 %p1, %r1, 1;
    @%p1 bra STUCK;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
STUCK:
    mbarrier.init.shared::cta.b64 [%r2], 1;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
    @!%p2 bra WAIT;
    ret;
}
"""


def test_cluster_deadlock_names_ctas_warps_and_what_they_wait_for():
    with pytest.raises(WarpSyncError) as e:
        load_ptx(DEADLOCK).launch("dl", grid=2, block=64, cluster=(2, 1, 1))
    msg = str(e.value)
    assert msg.startswith("cluster (0, 0, 0) (2 CTAs): deadlock")
    assert "CTA (0, 0, 0) (rank 0): warp 0 lanes 0-31" in msg and "warp 1 lanes 0-31" in msg
    assert "barrier.cluster.wait: waits for every thread of the cluster to arrive" in msg
    assert "not arrived: CTA (1, 0, 0) (rank 1) warp 0 lanes 0-31" in msg
    assert "CTA (1, 0, 0) (rank 1): warp 0 lanes 0-31" in msg and "mbarrier at shared 0x0" in msg


def test_barrier_cluster_misuse():
    body = HEAD + ".visible .entry k()\n{\n%s\n    ret;\n}\n"
    with pytest.raises(WarpSyncError, match="has not arrived"):
        load_ptx(body % "barrier.cluster.wait;").launch("k", grid=2, block=32, cluster=2)
    with pytest.raises(WarpSyncError, match="again before"):
        load_ptx(body % "barrier.cluster.arrive;\nbarrier.cluster.arrive;").launch("k", grid=2, block=32, cluster=2)
    with pytest.raises(WarpSyncError, match="every non-exited lane"):
        load_ptx(body % ".reg .b32 %r<2>;\n.reg .pred %p<2>;\nmov.u32 %r1, %laneid;\nsetp.lt.u32 %p1, %r1, 8;\n"
                         "@%p1 barrier.cluster.arrive.aligned;").launch("k", grid=2, block=32, cluster=2)
    # without .aligned, and with threads that exit, the barrier still completes
    load_ptx(body % ".reg .b32 %r<2>;\n.reg .pred %p<2>;\nmov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 40;\n"
                    "@!%p1 ret;\nbarrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;").launch(
        "k", grid=2, block=64, cluster=2)


def test_an_address_of_a_rank_outside_the_cluster_is_an_error():
    def body(code):
        return HEAD + ".visible .entry k()\n{\n    .reg .b32 %r<4>;\n    .reg .b64 %rd<4>;\n" + code + "\n    ret;\n}\n"
    with pytest.raises(MemoryAccessError, match=r"names CTA rank 3 of the cluster, but the cluster has 2 CTA"):
        load_ptx(body("mov.u32 %r1, 0x3000010;\nld.shared::cluster.u32 %r2, [%r1];")).launch(
            "k", grid=2, block=32, cluster=2)
    with pytest.raises(MemoryAccessError, match=r"CTA rank 2 is outside the cluster \(2 CTA"):
        load_ptx(body("mapa.shared::cluster.u32 %r2, 16, 2;")).launch("k", grid=2, block=32, cluster=2)
    with pytest.raises(MemoryAccessError, match=r"names CTA rank 1 of the cluster, but the cluster has 1 CTA"):
        load_ptx(body("mov.u64 %rd1, 0x1000010;\nst.u32 [%rd1], 5;")).launch("k", grid=2, block=32)


MULTICAST = HEAD + """
.visible .entry mc(.param .align 64 .b8 tmap[128], .param .u64 out, .param .u32 mask)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .b16 %h<2>;
    .reg .pred %p<4>;
    .reg .f32 %f<2>;
    .shared .align 128 .b8 tile[1024];
    .shared .align 8 .b8 bar[8];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 1024;
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    setp.eq.u32 %p2, %r1, 0;
    and.pred %p3, %p1, %p2;
    ld.param.u32 %r5, [mask];
    cvt.u16.u32 %h1, %r5;
    mov.b64 %rd1, tmap;
    cvta.param.u64 %rd2, %rd1;
    @%p3 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r4], [%rd2, {0, 16}], [%r3], %h1;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r3], 0;
    @!%p1 bra WAIT;
    ld.param.u64 %rd3, [out];
    mov.u32 %r6, %ctaid.x;
    mad.lo.u32 %r7, %r6, 32, %r2;
    mul.wide.u32 %rd4, %r7, 32;
    add.s64 %rd5, %rd3, %rd4;
    shl.b32 %r8, %r2, 5;
    add.u32 %r9, %r4, %r8;
    ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r9];
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
    ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r9+16];
    st.global.v4.u32 [%rd5+16], {%r10, %r11, %r12, %r13};
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_tma_multicast_reaches_every_cta_of_the_mask():
    g = GlobalMemory()
    src = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    a = g.upload(src)
    tm = bytes(TensorMap.encode_tiled("FLOAT32", 2, a, [16, 64], [64], [16, 16]))
    out = g.alloc(2 * 1024)
    load_ptx(MULTICAST).launch("mc", grid=2, block=32, args=[tm, out, 3], gmem=g, cluster=(2, 1, 1))
    got = g.download(out, 2 * 1024).view(np.float32).reshape(2, 16, 16)
    assert (got[0] == src[16:32]).all() and (got[1] == src[16:32]).all()
    with pytest.raises(MemoryAccessError, match="names CTA rank 2 of the cluster"):
        load_ptx(MULTICAST).launch("mc", grid=2, block=32, args=[tm, out, 5], gmem=g, cluster=(2, 1, 1))
    # a CTA whose barrier expects bytes that never come: the deadlock report names it
    with pytest.raises(WarpSyncError, match=r"CTA \(1, 0, 0\) \(rank 1\): warp 0 lanes 0-31 .*tx-count 1024"):
        load_ptx(MULTICAST).launch("mc", grid=2, block=32, args=[tm, out, 1], gmem=g, cluster=(2, 1, 1))


def test_dsmem_encoding_is_the_h100s_minus_the_own_base():
    from emulator.memory import dsmem
    for own in range(16):
        for target in range(16):
            for off in (0, 0x10, 0x414, 0xFFFFF0):
                a = dsmem.encode(target, own, off)
                assert dsmem.target_rank(a, own) == target and dsmem.offset(a) == off
                assert a == ((target << 24 | off) - (own << 24)) % (1 << 32)      # H100: target << 24 | off


def test_fuzz_cluster_shapes():
    rng = np.random.default_rng(11)
    for _ in range(6):
        cd = (int(rng.choice([1, 2, 4])), int(rng.choice([1, 2])), 1)
        grid = (cd[0] * int(rng.integers(1, 3)), cd[1] * int(rng.integers(1, 3)), 1)
        v = _sregs(grid, cd)
        for y in range(grid[1]):
            for x in range(grid[0]):
                cx, cy = x % cd[0], y % cd[1]
                assert v[y, x].tolist() == [cx, cy, cd[0], cd[1], x // cd[0], y // cd[1], grid[0] // cd[0],
                                            cx + cd[0] * cy, cd[0] * cd[1], 1], (cd, grid, x, y)


def test_access_to_an_exited_cta_is_an_error():
    """Rank 0 exits at once (it runs first); rank 1 then stores into its shared memory: on the GPU that memory
    may already belong to another CTA."""
    text = HEAD + """
.visible .entry k()
{
    .reg .b32 %r<4>;
    .reg .pred %p<2>;
    .shared .align 4 .b8 v[4];
    mov.u32 %r1, %cluster_ctarank;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 ret;
    mov.u32 %r2, v;
    mapa.shared::cluster.u32 %r3, %r2, 0;
    st.shared::cluster.u32 [%r3], 7;
    ret;
}
"""
    with pytest.raises(MemoryAccessError, match=r"CTA \(0, 0, 0\) \(rank 0\) of the cluster, whose threads have all "
                                                 r"exited"):
        load_ptx(text).launch("k", grid=2, block=32, cluster=2)


def test_barrier_cluster_on_a_lone_warp_is_an_error():
    """Found by the fuzz runner: Warp.run of barrier.cluster.wait.aligned raised an AttributeError."""
    import pytest
    from emulator import Warp
    from emulator.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="needs a kernel launch"):
        Warp().run("barrier.cluster.wait.aligned;")
