"""The fast engine's HOPX rows (``fastcore/asyncx.py``): ``elect.sync``, ``mapa``, ``tensormap.replace.tile`` on a
shared tensor map, ``fence.proxy.async`` and the Hopper instructions with nothing to do, run in the loop and proved
equal to the reference executors bit for bit (``engines.compare_engines``: memory, registers, shared memory, PCs,
instruction counts, the shared-memory log, errors), on directed kernels over their rules and on the corpus's
TMA, mbarrier and cluster kernels (whose outputs are the H100's)."""
import collections

import numpy as np
import pytest

import corpus_lib
from emulator import load_ptx
from emulator.machine import cta as cta_mod
from emulator.machine.fastcore import table as T, translation
from emulator.memory.tensormap import replace_field
from engines import compare_engines, differences, replay_outcome

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def _rows(module, kernel="k"):
    """{opcode text: fast-engine opcode} of a kernel's instructions."""
    prog = module.program(kernel)
    tr = translation(prog)
    return {prog.code[p].instr.text: int(tr.code[p, T.OP]) for p in range(len(prog.code))
            if prog.code[p].kind == "op"}


# -- elect.sync ---------------------------------------------------------------------------------------------------

ELECT = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 split, .param .u32 mode)
{
    .reg .pred %p<8>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r8, [split];
    ld.param.u32 %r9, [mode];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    shl.b32 %r10, 1, %r8;
    add.s32 %r10, %r10, -1;
    setp.eq.u32 %p5, %r8, 32;
    selp.b32 %r10, -1, %r10, %p5;          // lanes below split: mask (1 << split) - 1
    not.b32 %r11, %r10;                     // the others
    setp.lt.u32 %p3, %r2, %r8;
    selp.b32 %r12, %r10, %r11, %p3;         // each lane's own group
    setp.eq.u32 %p6, %r9, 1;
    selp.b32 %r12, -1, %r12, %p6;           // mode 1: the full mask (names lanes that do not execute)
    setp.eq.u32 %p6, %r9, 2;
    xor.b32 %r13, %r12, 1;
    selp.b32 %r12, %r13, %r12, %p6;         // mode 2: lane 0 flipped
    mov.u32 %r3, 99;
    mov.u32 %r4, 77;
    setp.ne.u32 %p1, %r1, %r1;
    setp.ne.u32 %p2, %r1, %r1;
    @%p3 bra LOW;
    bar.warp.sync %r12;
    elect.sync %r3|%p1, %r12;
    bra.uni JOIN;
LOW:
    elect.sync _|%p1, %r12;
JOIN:
    bar.warp.sync -1;
    and.b32 %r14, %r1, 1;
    setp.eq.u32 %p4, %r14, 0;
    @%p4 elect.sync %r4|%p2, 0x55555555;
    elect.sync %r5|%p7, -1;
    mul.wide.u32 %rd2, %r1, 32;
    add.s64 %rd3, %rd1, %rd2;
    selp.u32 %r6, 1, 0, %p1;
    selp.u32 %r7, 1, 0, %p2;
    st.global.v4.u32 [%rd3], {%r3, %r6, %r4, %r7};
    st.global.u32 [%rd3+16], %r5;
    ret;
}
"""


@pytest.mark.parametrize("split", [0, 5, 31, 32])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_elect_sync_runs_in_the_loop(split, mode):
    """Divergent groups each elect their lowest lane, a guarded elect its lowest guarded lane, ``_`` sinks; a
    membermask that names a lane not executing (mode 1) or leaves out an executing lane (mode 2) is the same
    WarpSyncError on both engines (the loop hands it back)."""
    module = load_ptx(ELECT)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 8, np.uint32)], [split, mode])
    assert not diffs, diffs
    assert all(v == T.HOPX for k, v in _rows(module).items() if k.startswith(("elect", "@%p4 elect", "bar.warp"))), \
        _rows(module)
    if mode == 0 or (mode == 1 and split in (0, 32)):
        assert "error" not in ref, ref["error"]
        got = ref["memory"][0][1].view(np.uint32).reshape(2, 32, 8)
        lane = np.arange(32)
        low = lane < split
        lead = np.where(low, 0, split if split < 32 else 0)
        for w in range(2):
            assert (got[w, ~low, 0] == lead[~low]).all() and (got[w, low, 0] == 99).all()
            assert (got[w, :, 1] == (lane == lead)).all()
            assert (got[w, ::2, 2] == 0).all() and (got[w, 1::2, 2] == 77).all()
            assert (got[w, :, 3] == (lane == 0)).all() and (got[w, :, 4] == 0).all()
    elif mode == 2 or split not in (0, 32):
        assert ref["error"][0] == "WarpSyncError", ref


@pytest.mark.parametrize("nthreads", [32, 48, 64, 80])
def test_bar_warp_sync_runs_in_the_loop(nthreads):
    """bar.warp.sync (in the elect kernel): in a partial last warp its membermask names lanes that do not exist,
    which the executor leaves out: the loop hands it back, and the elect.sync after it (which keeps them) raises;
    the same memory, registers, counts and errors on both engines."""
    module = load_ptx(ELECT)
    ref, fast, diffs = compare_engines(module, "k", 1, nthreads, [np.zeros(nthreads * 8, np.uint32)], [0, 0])
    assert not diffs, diffs
    if nthreads % 32 == 0:
        assert "error" not in ref, ref["error"]
    else:
        assert ref["error"][0] == "WarpSyncError" and "elect.sync" in ref["error"][1], ref["error"]


# -- mapa -----------------------------------------------------------------------------------------------------------

MAPA = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 mode)
{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<10>;
    .shared .align 16 .b8 buf[1024];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [mode];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    add.u32 %r4, %r2, %r1;
    rem.u32 %r4, %r4, %r3;                    // a rank of the cluster, per lane
    setp.eq.u32 %p1, %r9, 1;
    @%p1 add.u32 %r4, %r3, %r1;               // mode 1: ranks outside the cluster
    mov.u32 %r5, buf;
    shl.b32 %r6, %r1, 3;
    add.u32 %r5, %r5, %r6;
    mapa.shared::cluster.u32 %r7, %r5, %r4;
    cvt.u64.u32 %rd3, %r5;
    setp.eq.u32 %p2, %r9, 2;
    @%p2 add.u64 %rd3, %rd3, 4096;            // mode 2: a generic address past this CTA's shared memory
    mapa.u64 %rd4, %rd3, %r4;
    mapa.u64 %rd5, %rd4, 0;                   // an address of the cluster window, mapped again
    mapa.shared::cluster.u32 %r8, %r7, %r2;
    mov.u64 %rd9, %rd4;
    mul.wide.u32 %rd6, %r1, 32;
    mov.u32 %r10, %ctaid.x;
    mul.wide.u32 %rd7, %r10, 2048;
    add.s64 %rd6, %rd6, %rd7;
    add.s64 %rd6, %rd1, %rd6;
    st.global.v2.u32 [%rd6], {%r7, %r8};
    st.global.u64 [%rd6+8], %rd4;
    st.global.u64 [%rd6+16], %rd5;
    st.global.u64 [%rd6+24], %rd9;
    ret;
}
"""


@pytest.mark.parametrize("cluster", [1, 2, 4])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mapa_runs_in_the_loop(cluster, mode):
    """Both forms (shared::cluster and generic, u32 and u64) for every rank of clusters of 1, 2 and 4 CTAs, the
    cluster window mapped again; a rank outside the cluster and a generic address outside both shared windows are
    the same MemoryAccessError on both engines."""
    module = load_ptx(MAPA)
    ref, fast, diffs = compare_engines(module, "k", 4, 64, [np.zeros(4 * 2048, np.uint8)], [mode],
                                       cluster=(cluster, 1, 1))
    assert not diffs, diffs
    assert all(v == T.HOPX for k, v in _rows(module).items() if k.startswith("mapa")), _rows(module)
    if mode == 0:
        assert "error" not in ref, ref["error"]
        raw = ref["memory"][0][1]
        u32, u64 = raw.view(np.uint32).reshape(4, 64, 8), raw.view(np.uint64).reshape(4, 64, 4)
        for c in range(4):
            me = c % cluster
            for t in range(64):
                r = (me + t) % cluster
                want = ((r - me) & 0xFF) << 24 | (t * 8)
                assert u32[c, t, 0] == want and u32[c, t, 1] == t * 8
                assert u64[c, t, 1] == want and u64[c, t, 3] == want
                assert u64[c, t, 2] == ((0 - me) & 0xFF) << 24 | t * 8
    else:
        assert ref["error"][0] == "MemoryAccessError", ref


# -- tensormap.replace -------------------------------------------------------------------------------------------

TMREPLACE = HEAD.replace("8.0", "8.3") + """
.visible .entry k(.param .u64 out, .param .u64 src, .param .u32 off, .param .u64 a, .param .u64 st,
                  .param .u32 v0, .param .u32 v1, .param .u32 v2)
{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<10>;
    .shared .align 128 .b8 tm[512];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [src];
    ld.param.u32 %r9, [off];
    ld.param.u64 %rd5, [a];
    ld.param.u64 %rd6, [st];
    ld.param.u32 %r5, [v0];
    ld.param.u32 %r6, [v1];
    ld.param.u32 %r7, [v2];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    cvt.u64.u32 %rd3, %r2;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r3, [%rd4];
    mov.u32 %r4, tm;
    add.u32 %r8, %r4, %r2;
    st.shared.u32 [%r8], %r3;
    bar.sync 0;
    add.u32 %r10, %r4, %r9;
    cvt.u64.u32 %rd7, %r10;
    setp.lt.u32 %p1, %r1, 3;
    @%p1 tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%rd7], %rd5;
    @%p1 tensormap.replace.tile.rank.shared::cta.b1024.b32 [%rd7], %r6;
    @%p1 tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd7], 0x0, %r5;
    @%p1 tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd7], 0x4, %r6;
    @%p1 tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd7], 0x1, %r5;
    @%p1 tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd7], 0x4, %r7;
    @%p1 tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd7], 0x0, %rd6;
    @%p1 tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd7], 0x3, %rd5;
    @%p1 tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd7], 0x2, %r7;
    @%p1 tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd7], 0x4, %r5;
    @%p1 tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd7], 0x9;
    @%p1 tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%rd7], 0x1;
    @%p1 tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%rd7], 0x3;
    @%p1 tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%rd7], 0x1;
    tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [tm+128], 0x2;
    add.s64 %rd9, %rd1, 512;
    tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd9], [%rd7], 128;
    bar.sync 0;
    ld.shared.u32 %r11, [%r8];
    add.s64 %rd8, %rd1, %rd3;
    st.global.u32 [%rd8], %r11;
    ret;
}
"""


def _replaced(raw, a, v0, v1, v2, off):
    """The tensor map bytes the kernel leaves, by memory.tensormap.replace_field (the readable rule)."""
    sm = raw.copy()
    t = sm[off:off + 128]
    for field, k, v in [("global_address", None, a), ("rank", None, v1), ("box_dim", 0, v0), ("box_dim", 4, v1),
                        ("global_dim", 1, v0), ("global_dim", 4, v2), ("global_stride", 0, None),
                        ("global_stride", 3, a), ("element_stride", 2, v2), ("element_stride", 4, v0),
                        ("elemtype", None, 9), ("interleave_layout", None, 1), ("swizzle_mode", None, 3),
                        ("fill_mode", None, 1)]:
        replace_field(t, field, k, v if v is not None else STRIDE)
    t = sm[128:256]
    replace_field(t, "elemtype", None, 2)
    return sm


STRIDE = 0x123456789A0


@pytest.mark.parametrize("seed", range(4))
def test_tensormap_replace_runs_in_the_loop(seed):
    """Every field of a shared tensor map (ordinals, 64-bit values, an .elemtype constant), three lanes writing
    one map, then tensormap.cp_fenceproxy to global memory: the same bytes on both engines as
    memory.tensormap.replace_field gives them."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, 512, dtype=np.uint8)
    a = int(rng.integers(0, 1 << 63)) & ~15
    v0, v1, v2 = (int(x) for x in rng.integers(0, 1 << 32, 3, dtype=np.uint64))
    module = load_ptx(TMREPLACE)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(640, np.uint8), raw],
                                       [0, a, STRIDE, v0, v1, v2])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert all(v == T.HOPX for k, v in _rows(module).items() if "tensormap" in k), _rows(module)
    want = _replaced(raw, a, v0, v1, v2, 0)
    assert ref["memory"][0][1].tobytes() == want.tobytes() + want[:128].tobytes()     # cp_fenceproxy: a copy


def test_a_tensormap_past_shared_memory_is_handed_back():
    """A tensor map that runs past shared memory: the loop writes nothing and hands the row back, so both engines
    raise the executor's MemoryAccessError with the same memory."""
    module = load_ptx(TMREPLACE)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(640, np.uint8), np.ones(512, np.uint8)],
                                       [448, 0, 0, 1, 2, 3])
    assert not diffs, diffs
    assert ref["error"][0] == "MemoryAccessError" and "runs past shared memory" in ref["error"][1]


def test_a_wrong_tensormap_field_is_caught():
    """The comparison can fail: a row that writes another field than its instruction names differs."""
    from emulator.machine.fastcore import asyncx
    module = load_ptx(TMREPLACE)
    prog = module.program("k")
    tr = translation(prog)
    p = next(p for p in range(len(prog.code)) if prog.code[p].kind == "op" and "swizzle_mode" in prog.code[p].instr.text)
    assert tr.code[p, T.Y] == asyncx.F_SWIZZLE
    tr.code[p, T.Y] = asyncx.F_FILL
    try:
        ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(640, np.uint8),
                                                                np.zeros(512, np.uint8)], [0, 0, 0, 1, 2, 3])
    finally:
        tr.code[p, T.Y] = asyncx.F_SWIZZLE
    assert diffs


# -- fence.proxy.async and the no-op instructions ---------------------------------------------------------------

FENCE = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 where)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 128 .b8 buf[4096];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [where];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.u32 %r4, %r2, %r3;
    setmaxnreg.inc.sync.aligned.u32 232;
    griddepcontrol.wait;
    prefetch.global.L2 [%rd1];
    prefetch.tensormap [%rd1];
    fence.mbarrier_init.release.cluster;
    setp.eq.u32 %p1, %r9, 1;
    @%p1 fence.proxy.async.shared::cta;         // 1: a fence before the stores (they stay unfenced)
    st.shared.v4.u32 [%r4], {%r1, %r1, %r2, %r3};
    setp.eq.u32 %p2, %r9, 2;
    @%p2 fence.proxy.async.shared::cta;         // 2: after them
    setp.eq.u32 %p3, %r9, 3;
    @%p3 fence.proxy.async.shared::cta;         // 3: after them, then one more store
    @%p3 st.shared.u32 [buf+2048], %r1;
    setmaxnreg.dec.sync.aligned.u32 40;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 4096;
    @%p1 cp.async.bulk.commit_group;
    @%p1 cp.async.bulk.wait_group.read 0;
    ret;
}
"""


@pytest.mark.parametrize("where", [0, 1, 2, 3])
def test_fence_proxy_async_runs_in_the_loop(where):
    """fence.proxy.async in the loop clears the generic-proxy marks the loop's stores made: a missing fence, one
    before the stores or a store after it is the same ProxyError on both engines as the bulk copy reads; a fence
    after the last store the same bytes. setmaxnreg, griddepcontrol, prefetch and fence.mbarrier_init do nothing."""
    module = load_ptx(FENCE)
    ref, fast, diffs = compare_engines(module, "k", 1, 256, [np.zeros(4096, np.uint8)], [where])
    assert not diffs, diffs
    rows = _rows(module)
    assert all(v == T.HOPX for k, v in rows.items() if k.startswith(("@%p1 fence", "@%p2 fence", "setmaxnreg",
                                                                      "griddep", "fence", "prefetch"))), rows
    if where == 2:
        assert "error" not in ref, ref["error"]
        got = ref["memory"][0][1].view(np.uint32).reshape(256, 4)
        assert got[:, 0].tolist() == list(range(256))
    else:
        assert ref["error"][0] == "ProxyError", ref


# -- mbarriers: random producer/consumer pipelines -----------------------------------------------------------------

def pipeline_program(rng, nwarps):
    """A producer/consumer pipeline over mbarriers, random in its shape: warp 0 consumes, the others produce;
    stages, rounds, how the producers arrive (every thread, arrive.expect_tx with complete_tx, a count, an elected
    lane with expect_tx/complete_tx), how the consumer arrives, try_wait or test_wait spins, the address forms,
    and now and then a broken rule: an extra arrival, a wait for a round nobody produces (a deadlock), an address
    with no barrier."""
    S = int(rng.integers(1, 4))                    # stages
    R = int(rng.integers(S, 3 * S + 2))            # rounds
    P = nwarps - 1
    pform = int(rng.integers(0, 4))                # how producers arrive on full[]
    cform = int(rng.integers(0, 2))                # how the consumer arrives on empty[]
    wform = int(rng.integers(0, 2))                # try_wait or test_wait spins
    aform = int(rng.integers(0, 3))                # [sym], [%r], [%rd]
    inject = int(rng.integers(0, 8))               # 0: over-arrival, 1: deadlock, 2: no barrier there; else none
    full_count = {0: 32 * P, 1: P, 2: 32 * P, 3: P}[pform]
    empty_count = 32 if cform == 0 else 1
    out = []
    L = out.append
    L(".visible .entry k(.param .u64 out)\n{")
    L("    .reg .pred %p<8>;\n    .reg .b32 %r<32>;\n    .reg .b64 %rd<16>;")
    L("    .shared .align 8 .b64 full[4];\n    .shared .align 8 .b64 empty[4];\n    .shared .align 16 .b32 data[128];")
    L("    ld.param.u64 %rd1, [out];\n    mov.u32 %r1, %tid.x;\n    and.b32 %r2, %r1, 31;\n    shr.u32 %r3, %r1, 5;")
    L("    mov.u32 %r10, 0;\n    mov.u64 %rd10, 0;\n    mov.u32 %r20, full;\n    mov.u32 %r21, empty;")
    L("    setp.eq.u32 %p1, %r1, 0;")
    for s in range(S):
        L(f"    @%p1 mbarrier.init.shared::cta.b64 [full+{8 * s}], {full_count};")
        L(f"    @%p1 mbarrier.init.shared::cta.b64 [empty+{8 * s}], {empty_count};")
    L("    fence.mbarrier_init.release.cluster;\n    bar.sync 0;")
    lab = [0]

    def addr(kind, s):
        off = 8 * s
        if aform == 0:
            return f"[{kind}+{off}]"
        reg = "%r20" if kind == "full" else "%r21"
        if aform == 1:
            L(f"    add.u32 %r22, {reg}, {off};")
            return "[%r22]"
        L(f"    add.u32 %r22, {reg}, {off};\n    cvt.u64.u32 %rd12, %r22;")
        return "[%rd12]"

    def wait(kind, s, par):
        lab[0] += 1
        a = addr(kind, s)
        op = "try_wait" if wform == 0 else "test_wait"
        L(f"W{lab[0]}:\n    mbarrier.{op}.parity.shared::cta.b64 %p3, {a}, {par};\n    @!%p3 bra W{lab[0]};")

    L("    setp.ne.u32 %p5, %r3, 0;\n    @%p5 bra PRODUCER;")
    # consumer (warp 0)
    if inject == 0:
        L(f"    mbarrier.arrive.shared::cta.b64 _, {addr('full', 0)};")
    for r in range(R + (1 if inject == 1 else 0)):
        s = r % S
        wait("full", s, (r // S) & 1)
        L(f"    shl.b32 %r5, %r2, 2;\n    mov.u32 %r6, data;\n    add.u32 %r6, %r6, %r5;")
        L(f"    ld.shared.u32 %r7, [%r6+{128 * s}];\n    add.u32 %r10, %r10, %r7;\n    mul.lo.u32 %r10, %r10, 3;")
        if cform == 0:
            L(f"    mbarrier.arrive.shared::cta.b64 %rd2, {addr('empty', s)};\n    xor.b64 %rd10, %rd10, %rd2;")
        else:
            L(f"    setp.eq.u32 %p4, %r2, 0;\n    @%p4 mbarrier.arrive.release.cta.shared::cta.b64 %rd2, {addr('empty', s)};")
            L("    @%p4 xor.b64 %rd10, %rd10, %rd2;")
    L("    bra.uni DONE;\nPRODUCER:")
    for r in range(R):
        s = r % S
        wait("empty", s, ((r // S) & 1) ^ 1)
        L(f"    setp.eq.u32 %p6, %r3, 1;")                # warp 1 writes the data
        L(f"    shl.b32 %r5, %r2, 2;\n    mov.u32 %r6, data;\n    add.u32 %r6, %r6, %r5;")
        L(f"    mad.lo.u32 %r8, %r2, {r + 7}, {r * 13 + 1};")
        L(f"    @%p6 st.shared.u32 [%r6+{128 * s}], %r8;")
        a = addr("full", s)
        if pform == 0:
            L(f"    mbarrier.arrive.shared::cta.b64 %rd3, {a};\n    add.u64 %rd10, %rd10, %rd3;")
        elif pform == 1:
            tx = int(rng.choice([16, 128, 4096]))
            L(f"    setp.eq.u32 %p4, %r2, 0;\n    setp.eq.u32 %p7, %r2, 1;")
            if rng.integers(0, 2):
                L(f"    @%p7 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 {a}, {tx};")
                L(f"    @%p4 mbarrier.arrive.expect_tx.shared::cta.b64 _, {a}, {tx};")
            else:
                L(f"    @%p4 mbarrier.arrive.expect_tx.shared::cta.b64 _, {a}, {tx};")
                L(f"    @%p7 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 {a}, {tx};")
        elif pform == 2:
            L(f"    setp.eq.u32 %p4, %r2, 0;\n    @%p4 mbarrier.arrive.shared::cta.b64 _, {a}, 32;")
        else:
            L(f"    elect.sync %r9|%p4, -1;\n    @%p4 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 {a}, 64;")
            L(f"    @%p4 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 {a}, 64;")
            L(f"    @%p4 mbarrier.arrive.b64 %rd3, {a if aform != 1 else '[%rd13]'};")
            if aform == 1:
                out.insert(len(out) - 1, "    cvt.u64.u32 %rd13, %r22;")
            L("    @%p4 add.u64 %rd10, %rd10, %rd3;")
    if inject == 2:
        L("    mbarrier.arrive.shared::cta.b64 _, [data];")
    L("DONE:\n    mul.wide.u32 %rd4, %r1, 16;\n    add.s64 %rd5, %rd1, %rd4;")
    L("    st.global.u64 [%rd5], %rd10;\n    st.global.u32 [%rd5+8], %r10;\n    ret;\n}")
    return HEAD + "\n".join(out) + "\n"


def _mbar_handbacks(module):
    from emulator.machine.fastcore.engine import handback_counts
    return {k: v for k, v in handback_counts(module.program("k")).items()
            if k.startswith("mbarrier") and "wait" not in k and "init" not in k}


@pytest.mark.parametrize("seed", range(40))
def test_random_mbarrier_pipelines_are_identical_on_both_engines(seed):
    """Producer/consumer pipelines: stalls and wakes, phases, tx-counts, arrival states, errors and deadlock
    reports identical on both engines; the arrivals and tx updates of a pipeline that runs run in the loop."""
    rng = np.random.default_rng(seed)
    nw = int(rng.integers(2, 4))
    module = load_ptx(pipeline_program(rng, nw))
    ref, fast, diffs = compare_engines(module, "k", 1, 32 * nw, [np.zeros(32 * nw * 16, np.uint8)])
    assert not diffs, diffs
    if "error" not in ref:
        assert _mbar_handbacks(module) == {}


def test_mbarrier_pipelines_under_a_timeline_and_a_wrong_model():
    """A timeline follows the barriers' histories: the loop hands the mbarrier rows back and the timelines are
    the same; and the comparison can fail: an arrival that also drops an expected arrival differs."""
    from emulator.machine.fastcore import asyncx
    rng = np.random.default_rng(1)
    module = load_ptx(pipeline_program(rng, 2))
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint8)], timeline=True)
    assert not diffs and "error" not in ref, diffs or ref["error"]
    prog = module.program("k")
    tr = translation(prog)
    rows = np.flatnonzero((tr.code[:, T.OP] == T.HOPX) & (tr.code[:, T.X] == asyncx.K_MB_ARRIVE))
    assert rows.size
    tr.code[rows, T.Y] |= asyncx.MB_DROP
    try:
        ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint8)])
    finally:
        tr.code[rows, T.Y] &= ~asyncx.MB_DROP
    assert diffs


MBAR_RULES = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b64 bar[2];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [n];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 40;
    @%p1 mbarrier.init.shared::cta.b64 [bar+8], 1;
    bar.sync 0;
    mov.u32 %r2, bar;
    add.u32 %r3, %r2, -8;
    mbarrier.arrive.shared::cta.b64 %rd2, [%r3+8];               // a 32-bit address that wraps at 2^32
    BODY
    mbarrier.test_wait.shared::cta.b64 %p2, [bar], %rd2;
    selp.u32 %r4, 1, 0, %p2;
    mul.wide.u32 %rd4, %r1, 16;
    add.s64 %rd5, %rd1, %rd4;
    st.global.u64 [%rd5], %rd2;
    st.global.u32 [%rd5+8], %r4;
    ret;
}
"""
MBAR_BODIES = {
    "fine": "@%p1 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar+8], %r9;\n"
            "    @%p1 mbarrier.arrive.shared::cta.b64 %rd3, [bar+8];",
    "tx overflow": "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], %r9;",
    "tx underflow": "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [bar], %r9;",
    "count": "mbarrier.arrive.shared::cta.b64 _, [bar+8], %r9;",
    "over-arrival": "mbarrier.arrive_drop.shared::cta.b64 _, [bar+8];",
    "no barrier": "mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar+16], %r9;",
    "invalidated": "@%p1 mbarrier.inval.shared::cta.b64 [bar];\n    mbarrier.arrive.shared::cta.b64 %rd3, [bar];",
    "remote": "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rd7];",
}


@pytest.mark.parametrize("body", sorted(MBAR_BODIES))
@pytest.mark.parametrize("n", [0, 1, 40000, (1 << 20) - 1, 1 << 20])
def test_mbarrier_rules_are_the_executors_on_both_engines(body, n):
    """Tx-counts past 2^20 - 1 either way, arrival counts 0 and 2^20, more arrivals than pending, a barrier that
    was never initialised or was invalidated, an address of another CTA of the cluster: the same error (or the
    same state) on both engines, the rows handed back with every barrier as it was."""
    text = MBAR_RULES.replace("BODY", MBAR_BODIES[body])
    if body == "remote":
        text = text.replace("    BODY", "").replace("mov.u32 %r2, bar;", "mov.u32 %r2, bar;\n    mov.u64 %rd7, 0x1000000;")
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint8)], [n])
    assert not diffs, diffs
    if body == "fine" and n < 1 << 20:
        assert "error" not in ref, ref["error"]


NAMED = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 count)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b32 buf[256];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [count];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    shl.b32 %r3, %r1, 2;
    mov.u32 %r4, buf;
    add.u32 %r5, %r4, %r3;
    setp.lt.u32 %p1, %r2, 2;
    @%p1 bra GROUP0;
    st.shared.u32 [%r5], %r1;
    bar.sync 2, 64;                          // warps 2, 3 among themselves
    xor.b32 %r6, %r3, 4;
    add.u32 %r7, %r4, %r6;
    ld.shared.u32 %r8, [%r7];
    mov.u32 %r10, 1;
    barrier.sync %r10, %r9;                  // with warp 0 (a register number and count)
    bra.uni DONE;
GROUP0:
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bar.arrive 1, 96;                   // warp 0: arrives, does not wait
    mul.lo.u32 %r8, %r1, 3;
    bar.sync 3, 32;                          // warp 1 alone (warp 0 too: its own barrier 3 of 32 threads)
DONE:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
    ret;
}
"""


@pytest.mark.parametrize("count", [96, 128, 100])
def test_named_barriers_with_a_thread_count_stop_the_loop_as_barriers(count, monkeypatch):
    """bar.sync / bar.arrive / barrier.sync with a thread count (immediate or register; the barrier number too)
    are BAR rows: the loop stops there and the scheduler arrives with the count; a count that is not a multiple
    of 32, or a second count for one barrier, is the same error (or deadlock report) on both engines. The CTA
    loop takes such kernels (it arrives with the count itself: tests/test_fast_ctaloop.py)."""
    module = load_ptx(NAMED)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(128, np.uint32)], [count])
    assert not diffs, diffs
    assert all(v == T.BAR for k, v in _rows(module).items() if k.startswith(("bar", "@%p2 bar"))), _rows(module)
    assert translation(module.program("k")).cta_ok
    if count == 96:
        assert "error" not in ref, ref["error"]
        got = ref["memory"][0][1].view(np.uint32)
        t = np.arange(128)
        assert (got[64:] == (t[64:] ^ 1)).all() and (got[:64] == 3 * t[:64]).all()
    else:
        assert ref["error"][0] in ("OperandError", "WarpSyncError"), ref


PARAMS = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 off, .param .align 16 .b8 blob[64])
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [off];
    mov.u64 %rd2, blob;                       // CUTLASS reads its Params through a register like this
    ld.param.u64 %rd3, [%rd2+8];
    ld.param.v2.u32 {%r1, %r2}, [%rd2+16];
    ld.param.u32 %r3, [%rd2+-0];
    cvt.u64.u32 %rd4, %r9;
    add.s64 %rd5, %rd2, %rd4;
    ld.param.v4.u32 {%r4, %r5, %r6, %r7}, [%rd5];   // off: in range, past the end, misaligned
    mov.u32 %r8, %tid.x;
    mul.wide.u32 %rd6, %r8, 48;
    add.s64 %rd7, %rd1, %rd6;
    st.global.u64 [%rd7], %rd3;
    st.global.v2.u32 [%rd7+8], {%r1, %r2};
    st.global.u32 [%rd7+16], %r3;
    st.global.v4.u32 [%rd7+32], {%r4, %r5, %r6, %r7};
    ret;
}
"""


PARAM_ADDRS = HEAD + """
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128])
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out];
    mov.b64 %rd2, tmap;                       // DeepGEMM / CuTe take their tensor maps' addresses like this
    mov.u32 %r1, tmap;
    cvta.param.u64 %rd3, %rd2;
    cvta.to.param.u64 %rd4, %rd3;
    cvta.const.u64 %rd5, %rd1;
    ld.param.u64 %rd6, [%rd4+8];              // through the address converted back
    add.u32 %r2, %r1, 8;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd7, %r3, 48;
    add.s64 %rd8, %rd1, %rd7;
    st.global.v2.u64 [%rd8], {%rd2, %rd3};
    st.global.v2.u64 [%rd8+16], {%rd4, %rd5};
    st.global.v2.u32 [%rd8+32], {%r1, %r2};
    st.global.u64 [%rd8+40], %rd6;
    ret;
}
"""


def test_parameter_addresses_run_in_the_loop():
    """mov of a parameter's address and cvta to and from the parameters' generic window (and .const, a move) in
    the loop: the same registers and memory on both engines."""
    module = load_ptx(PARAM_ADDRS)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 48, np.uint8)],
                                       [np.arange(128, dtype=np.uint8)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    rows = _rows(module)
    assert all(v != T.SLOW for k, v in rows.items() if k.startswith(("mov", "cvta"))), rows


@pytest.mark.parametrize("off", [0, 48, 56, 64, 4])
def test_param_loads_through_a_register_run_in_the_loop(off):
    """ld.param through a register holding a .param address (CUTLASS's Params): the loop reads the thread's .param
    bytes as the executor does; an address past the parameters or misaligned goes back (the same error)."""
    module = load_ptx(PARAMS)
    blob = np.arange(64, dtype=np.uint8)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 48, np.uint8)], [off, blob])
    assert not diffs, diffs
    assert all(v == T.LD for k, v in _rows(module).items() if k.startswith("ld.param")), _rows(module)
    if off in (0, 48):
        assert "error" not in ref, ref["error"]
        got = ref["memory"][0][1].reshape(64, 48)
        assert (got[:, :8] == blob[8:16]).all() and (got[:, 8:16] == blob[16:24]).all()
        assert (got[:, 16:20] == blob[:4]).all() and (got[:, 32:48] == blob[off:off + 16]).all()
    else:
        assert ref["error"][0] in ("MemoryAccessError", "AlignmentError"), ref


# -- the corpus: TMA, mbarrier and cluster kernels on both engines --------------------------------------------------

HOPX_SPELLINGS = ("elect.sync", "mapa", "setmaxnreg", "griddepcontrol", "fence.proxy.async",
                  "fence.mbarrier_init", "fence.proxy.tensormap", "tensormap.replace")


def _hopper_cases():
    cases = corpus_lib.load_all()
    return sorted(n for n, c in cases.items() if any(s in c["ptx"] for s in HOPX_SPELLINGS))


FAST_SAMPLE = ["triton_tma_matmul_sm90a", "nvcc_cluster_dsmem_sm90a", "cute_tutorial_wgmma_tma_tn_sm90a"]


def _check_corpus(name, monkeypatch):
    case = corpus_lib.load_all()[name]
    count = collections.Counter()
    real = cta_mod.CTA._step

    def step(cta, w, p, mask, together):
        op = cta.prog.code[p]
        if op.kind == "op":
            count[op.instr.opcode] += 1
        return real(cta, w, p, mask, together)
    monkeypatch.setattr(cta_mod.CTA, "_step", step)
    count.clear()
    got_r, ref = replay_outcome(case, "reference")
    count.clear()
    got_f, fast = replay_outcome(case, "fast")
    if name not in corpus_lib.CANNOT_RUN:          # (cases known to differ from the H100 still compare engines)
        assert corpus_lib.mismatches(case, got_r) == [] and corpus_lib.mismatches(case, got_f) == []
    diffs = differences(ref, fast, clusters=corpus_lib.in_clusters(case))
    if name in corpus_lib.ORDER_DEPENDENT:
        diffs = [d for d in diffs if ": register " not in d]
    assert not diffs, diffs
    back = [k for k in count if k.startswith(HOPX_SPELLINGS) and not k.startswith("fence.proxy.async")]
    assert not back, count


@pytest.mark.parametrize("name", FAST_SAMPLE)
def test_corpus_hopper_kernels_are_identical_on_both_engines(name, monkeypatch):
    """TMA, mbarrier and cluster kernels of the corpus: the H100's outputs on both engines, everything else equal
    between them, and none of the HOPX instructions handed back."""
    _check_corpus(name, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in _hopper_cases() if n not in FAST_SAMPLE])
def test_all_corpus_hopper_kernels_are_identical_on_both_engines(name, monkeypatch):
    _check_corpus(name, monkeypatch)
