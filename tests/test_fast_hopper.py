"""The fast engine on Hopper kernels: what it runs in its loop instead of handing back, proved equal to the
reference executors bit for bit (``engines.compare_engines``), errors included."""
import numpy as np
import pytest

from emulator import load_ptx
from emulator.machine.fastcore import table as T, translation
from engines import compare_engines
from test_wgmma import DA, DB, HEAD, MMA, TAIL

BULK = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 fence, .param .u32 vec)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 128 .b8 buf[2048];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.u32 %r4, %r2, %r3;
    ld.param.u32 %r9, [vec];
    setp.ne.u32 %p3, %r9, 0;
    @%p3 bra VEC;
    st.shared.u32 [%r4], %r1;
    st.shared.u16 [%r4+4], %r1;
    st.shared.u8 [%r4+6], %r1;
    cvta.shared.u64 %rd2, %rd1;
    bra.uni DONE;
VEC:
    add.u32 %r5, %r1, 1;
    st.shared.v4.b32 [%r4], {%r1, %r5, %r1, %r5};
    cvt.u64.u32 %rd3, %r4;
    st.u64 [%rd3+8], %rd1;
DONE:
    ld.param.u32 %r6, [fence];
    setp.ne.u32 %p2, %r6, 0;
    @%p2 fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 2048;
    @%p1 cp.async.bulk.commit_group;
    @%p1 cp.async.bulk.wait_group.read 0;
    ret;
}
"""


def _slow_rows(module, kernel="k"):
    prog = module.program(kernel)
    tr = translation(prog)
    return tr, [prog.code[p].instr.text for p in np.flatnonzero(tr.code[:, T.OP] == T.SLOW)
                if prog.code[p].kind == "op"]


@pytest.mark.parametrize("vec", [0, 1])
@pytest.mark.parametrize("fence", [0, 1])
def test_shared_stores_beside_a_bulk_store_run_in_the_loop(fence, vec):
    """Shared stores (every width, vectors, generic addresses) in a kernel whose bulk copy reads shared memory:
    the loop runs them and marks their bytes for the fence.proxy.async check, so a missing fence is the same
    ProxyError on both engines, and a fenced store the same bytes."""
    module = load_ptx(BULK)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(2048, np.uint8)], [fence, vec])
    assert not diffs, diffs
    if fence:
        assert "error" not in ref, ref["error"]
        got = ref["memory"][0][1]
        assert got.view(np.uint32).reshape(128, 4)[:, 0].tolist() == list(range(128))
    else:
        assert ref["error"][0] == "ProxyError" and "written by a generic-proxy store" in ref["error"][1]
    tr, slow = _slow_rows(module)
    assert tr.async_readers and not any(s.startswith("st.") for s in slow), slow


def _beside_in_flight_wgmma(instr):
    """Lane 96 runs ``instr`` (``OFF`` its byte offset into ``smem``: ``%r2`` a shared address, ``%rd3`` a generic
    one, ``%r3`` 7) while a wgmma.mma_async reads shared memory: into the bytes it reads (4100) the reference's
    AsyncHazardError on both engines, beside them (8000) no error. Yields each case's module."""
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "mov.u32 %r2, smem;\ncvta.shared.u64 %rd3, smem;\nmov.b32 %r3, 7;\n@%p0 " + instr + "\n"
            "wgmma.wait_group.sync.aligned 0;")
    text = HEAD + "setp.eq.u32 %p0, %r1, 96;\n" + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + "\n" + TAIL
    for off, hazard in ((4100, True), (8000, False)):
        module = load_ptx(text.replace("OFF", str(off)))
        ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(128, np.float32)])
        assert not diffs, diffs
        assert ("error" in ref) == hazard
        if hazard:
            assert ref["error"][0] == "AsyncHazardError" and "in-flight wgmma.mma_async reads" in ref["error"][1]
        yield module


def test_a_store_into_bytes_an_in_flight_wgmma_reads_is_handed_back():
    """The loop checks the CTA's wgmma read counts: a store into the bytes an in-flight wgmma.mma_async reads
    raises the reference's AsyncHazardError on both engines; a store beside them runs."""
    for module in _beside_in_flight_wgmma("st.shared.u32 [%r2+OFF], %r3;"):
        _, slow = _slow_rows(module)
        assert not any(s.startswith("st.shared") for s in slow)


def test_a_stmatrix_into_bytes_an_in_flight_wgmma_reads_is_handed_back():
    """stmatrix runs in the loop (``STMATRIX``) beside wgmma.mma_async: into the bytes an in-flight wgmma reads
    it goes back and the reference raises its AsyncHazardError on both engines; beside them it runs."""
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "mov.u32 %r2, smem;\nmov.b32 %r3, 7;\nstmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%r2+OFF], {%r1};\n"
            "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r2+OFF], {%r3, %r1};\n"
            "wgmma.wait_group.sync.aligned 0;")
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + "\n" + TAIL
    for off, hazard in ((4096, True), (8000, False)):     # (every row address the same: 16 bytes beside B)
        module = load_ptx(text.replace("OFF", str(off)))
        ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(128, np.float32)])
        assert not diffs, diffs
        assert ("error" in ref) == hazard
        if hazard:
            assert ref["error"][0] == "AsyncHazardError" and "in-flight wgmma.mma_async reads" in ref["error"][1]
        else:
            assert fast["warps"][((0, 0, 0), 0)][1][8000:8016].any()
        tr, slow = _slow_rows(module)
        assert not any(s.startswith("stmatrix") for s in slow) and T.STMATRIX in tr.code[:, T.OP]


def test_a_wrong_store_mark_is_caught(monkeypatch):
    """The comparison can fail: a loop that forgot the async-proxy marks would let the unfenced store through."""
    from emulator.machine.fastcore import engine
    module = load_ptx(BULK)
    real = engine.FastWarp.run

    def forgetful(self, w, budget):
        out = real(self, w, budget)
        if w._async is not None:
            w._async.dirty[:] = False
            w._async.any_dirty = False
        return out
    monkeypatch.setattr(engine.FastWarp, "run", forgetful)
    monkeypatch.setattr(engine.FastLaunch, "cta_arrays", lambda self, n: None)   # (the warp loop, not run_cta)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(2048, np.uint8)], [0, 0])
    assert diffs and "error" in ref and "error" not in fast


def test_a_wrong_store_mark_is_caught_in_the_cta_loop(monkeypatch):
    """The same in the CTA loop (a kernel whose bulk copies are stores runs there): marks dropped whenever the loop
    returns let the unfenced store through."""
    from emulator.machine.fastcore import engine, translation
    module = load_ptx(BULK)
    assert translation(module.program("k")).cta_ok
    real, real_keep = engine.FastCTA._flush, engine.FastCTA._keep_log

    def forgetful(self, ws, n):
        real(self, ws, n)
        ws[0]._async.dirty[:] = False
        ws[0]._async.any_dirty = False

    def forgetful_keep(self, cta, n):              # (the same, before the CTA's warps are built)
        real_keep(self, cta, n)
        cta.async_unit.dirty[:] = False
        cta.async_unit.any_dirty = False
    monkeypatch.setattr(engine.FastCTA, "_flush", forgetful)
    monkeypatch.setattr(engine.FastCTA, "_keep_log", forgetful_keep)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(2048, np.uint8)], [0, 0])
    assert diffs and "error" in ref and "error" not in fast


def _capture_kernel(i, engine, n=1):
    """The wgmma capture's own kernel (tools/hwcapture/wgmma) on its inputs: the D registers it stores."""
    import wgmma_captures as wc
    from emulator import GlobalMemory
    f = wc.gen.forms()[i]
    inp = wc.gen.form_inputs(i, f)
    g = GlobalMemory()
    args = [g.upload(inp["img"][:n]), g.upload(inp["desc"][:n]), g.upload(inp["a"][:n]), g.upload(inp["c"][:n])]
    d = g.upload(np.zeros_like(inp["c"][:n]))
    misc = g.upload(np.concatenate([inp["scale_d"][:n], np.zeros(n, np.uint32)]))
    load_ptx(wc.gen.ptx(f)).launch("wgmma_cap", grid=(n, 1, 1), block=(128, 1, 1), args=args + [d, misc], gmem=g,
                                   shared_bytes=wc.gen.DYN_SMEM, engine=engine)
    return g.download(d, inp["c"][:n].nbytes).view(np.uint32).reshape(inp["c"][:n].shape)


def _spread_forms(k):
    """``k`` capture forms spread over the list (every type pair, ss and rs, scale-d, transposes appear)."""
    import wgmma_captures as wc
    safe, _ = wc.load("h100_safe.npz")
    have = [i for i in range(len(wc.gen.forms())) if f"d{i}" in safe]
    return [have[j * len(have) // k] for j in range(k)], safe


def test_the_warpgroup_tile_equals_the_h100_on_both_engines(monkeypatch):
    """The four warps' shares of a wgmma.mma_async computed as one 64-row tile (ops/wgmma/state.issue on the
    reference engine, fastcore/wgmmax.py in the fast engine's CTA loop) give the H100's registers, as the
    per-warp computation does."""
    from emulator.ops.wgmma import op as wop
    forms, safe = _spread_forms(12)
    sizes = []
    real = wop.WgmmaOp.compute

    def spy(self, A, B, C, *a):
        sizes.append(A.shape[0])
        return real(self, A, B, C, *a)
    monkeypatch.setattr(wop.WgmmaOp, "compute", spy)
    for i in forms:
        want = safe[f"d{i}"][:1]
        for engine in ("fast", "reference"):
            assert (_capture_kernel(i, engine) == want).all(), (i, engine)
    assert sizes and set(sizes) == {64}       # (the reference's; the CTA loop computes its tiles itself)
    # without the batch: one 16-row tile per warp, the same bits
    from emulator.ops.wgmma import state as S
    issue = S.issue

    def single(warp, cst, ws, record, group, number):
        record.pop("batch", None)
        return issue(warp, cst, ws, record, group, number)
    monkeypatch.setattr(S, "issue", single)
    sizes.clear()
    assert (_capture_kernel(forms[0], "reference") == safe[f"d{forms[0]}"][:1]).all()
    assert set(sizes) == {16}


def test_a_wrong_warpgroup_tile_is_caught(monkeypatch):
    """The H100 comparison can fail: warps' rows put in the wrong order mismatch."""
    from emulator.ops.wgmma import op as wop
    forms, safe = _spread_forms(1)
    real = wop.WgmmaOp.compute

    def swapped(self, A, B, C, *a):
        D = real(self, A, B, C, *a)
        return np.concatenate([D[16:32], D[:16], D[32:]]) if D.shape[0] == 64 else D
    monkeypatch.setattr(wop.WgmmaOp, "compute", swapped)
    assert not (_capture_kernel(forms[0], "reference") == safe[f"d{forms[0]}"][:1]).all()



@pytest.mark.parametrize("name", ["triton_matmul_f16_w8_sm90a", "triton_tma_matmul_sm90a", "cute_wgmma_tn_sm90a"])
def test_sm90a_corpus_kernels_keep_barriers_stores_and_copies_in_the_loop(name, monkeypatch):
    """Triton's and CuTe's wgmma kernels (and Triton's TMA matmul) on both engines equal the H100's outputs, and
    the fast engine hands back none of their barriers, shared stores or cp.async copies, nor (where the CTA loop
    runs the CTA) their wgmma instructions; Triton's TMA matmul hands back nothing at all."""
    import collections
    import corpus_lib
    from emulator.machine import cta as cta_mod
    case = corpus_lib.load_all()[name]
    count = collections.Counter()
    real = cta_mod.CTA._step

    def step(cta, w, p, mask, together):
        op = cta.prog.code[p]
        count[op.kind if op.kind != "op" else ".".join((op.instr.base,) + tuple(op.instr.mods[:2]))] += 1
        return real(cta, w, p, mask, together)
    monkeypatch.setattr(cta_mod.CTA, "_step", step)
    for engine in ("reference", "fast"):
        count.clear()
        got, res, _ = corpus_lib.replay(case, engine=engine)
        assert corpus_lib.mismatches(case, got) == [], engine
    if "tma" in name:               # TMA copies, mbarrier waits and bulk async-groups: all in the CTA loop
        assert not count, count
    assert not any(k == "bar" or k.startswith(("st.", "cp.async.ca", "cp.async.cg")) for k in count), count
    if translation(load_ptx(case["ptx"]).program(case["config"]["kernel"])).cta_ok:
        assert not any(k.startswith("wgmma") for k in count), count


MOVS = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b16 %h<8>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mad.lo.u32 %r2, %r1, -1640531535, 12345;
    xor.b32 %r3, %r2, 0x5A5A5A5A;
    mov.b32 {%h1, %h2}, %r2;
    mov.b32 {%h3, _}, %r3;
    mov.b32 %r4, {%h2, %h3};
    mov.b64 %rd2, {%r2, %r3};
    mov.b64 {%r5, %r6}, %rd2;
    mov.b64 %rd3, {%h1, %h2, %h3, %h1};
    mov.b64 {%h4, %h5, %h6, %h7}, %rd3;
    mov.b32 %r7, {%h7, %h4};
    setp.lt.u32 %p1, %r1, 20;
    @%p1 mov.b64 %rd3, {%r6, %r4};
    mul.wide.u32 %rd4, %r1, 32;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v4.u32 [%rd5], {%r4, %r5, %r6, %r7};
    st.global.v2.u64 [%rd5+16], {%rd2, %rd3};
    ret;
}
"""


def test_mov_pack_and_unpack_run_in_the_loop():
    """mov.bW pack and unpack of 2 and 4 parts (a sink, a guard) on both engines: the same bits, as the
    readable rule gives them, and no hand-back."""
    module = load_ptx(MOVS)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 32, np.uint8)])
    assert not diffs, diffs
    got = ref["memory"][0][1].view(np.uint32).reshape(64, 8)
    t = np.arange(64, dtype=np.uint64)
    r2 = (t * np.uint64(2654435761) + np.uint64(12345)) & np.uint64(0xFFFFFFFF)
    r3 = r2 ^ np.uint64(0x5A5A5A5A)
    h1, h2, h3 = r2 & np.uint64(0xFFFF), r2 >> np.uint64(16), r3 & np.uint64(0xFFFF)
    r4 = h2 | h3 << np.uint64(16)
    assert (got[:, 0] == r4).all() and (got[:, 1] == r2).all() and (got[:, 2] == r3).all()
    assert (got[:, 3] == (h1 | h1 << np.uint64(16))).all()
    assert (got[:, 4] == r2).all() and (got[:, 5] == r3).all()
    rd3 = np.where(t < 20, r3 | r4 << np.uint64(32), h1 | h2 << np.uint64(16) | h3 << np.uint64(32) |
                   h1 << np.uint64(48))
    assert (got[:, 6] == rd3 & np.uint64(0xFFFFFFFF)).all() and (got[:, 7] == rd3 >> np.uint64(32)).all()
    _, slow = _slow_rows(module)
    assert not slow, slow
    tr = translation(module.program("k"))
    assert {T.XROW, T.MOV_UNPACK} <= set(tr.code[:, T.OP].tolist())


ASSERT_WGMMA = r"""
.version 8.5
.target sm_90a
.address_size 64
.extern .func __assertfail
(
    .param .b64 __assertfail_param_0,
    .param .b64 __assertfail_param_1,
    .param .b32 __assertfail_param_2,
    .param .b64 __assertfail_param_3,
    .param .b64 __assertfail_param_4
);
.global .align 1 .b8 $str$msg[13] = {116, 105, 100, 32, 60, 61, 32, 108, 105, 109, 105, 116, 0};
.global .align 1 .b8 $str$file[5] = {107, 46, 99, 117, 0};
.global .align 1 .b8 $str$fn[2] = {107, 0};
.shared .align 1024 .b8 smem[8192];
.visible .entry k(.param .u64 out, .param .u64 in, .param .u32 limit)
{
    .reg .pred %p<4>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<24>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [in];
    mul.wide.u32 %rd2, %r1, 64;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r2, smem;
    shl.b32 %r3, %r1, 6;
    add.u32 %r4, %r2, %r3;
    ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3];
    st.shared.v4.u32 [%r4], {%r5, %r6, %r7, %r8};
    ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3+16];
    st.shared.v4.u32 [%r4+16], {%r5, %r6, %r7, %r8};
    ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3+32];
    st.shared.v4.u32 [%r4+32], {%r5, %r6, %r7, %r8};
    ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3+48];
    st.shared.v4.u32 [%r4+48], {%r5, %r6, %r7, %r8};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    ld.param.u32 %r9, [limit];
    setp.le.u32 %p1, %r1, %r9;
    @%p1 bra OK;
    mov.u64 %rd10, $str$msg;
    cvta.global.u64 %rd11, %rd10;
    mov.u64 %rd12, $str$file;
    cvta.global.u64 %rd13, %rd12;
    mov.u64 %rd14, $str$fn;
    cvta.global.u64 %rd15, %rd14;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd11;
    .param .b64 param1;
    st.param.b64 [param1+0], %rd13;
    .param .b32 param2;
    st.param.b32 [param2+0], 7;
    .param .b64 param3;
    st.param.b64 [param3+0], %rd15;
    .param .b64 param4;
    st.param.b64 [param4+0], 1;
    call.uni __assertfail, (param0, param1, param2, param3, param4);
    }
OK:
    mov.b64 %rd4, DA;
    mov.b64 %rd5, DB;
    mov.b32 %r10, 0;
    mov.b32 %r11, 0;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r10, %r11}, %rd4, %rd5, 0, 1, 1, 0, 0;
    wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r10, %r11}, %rd4, %rd5, 1, -1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    ld.param.u64 %rd6, [out];
    mul.wide.u32 %rd7, %r1, 8;
    add.s64 %rd8, %rd6, %rd7;
    st.global.v2.u32 [%rd8], {%r10, %r11};
    ret;
}
""".replace("DA;", f"{DA};").replace("DB;", f"{DB};")


def test_a_device_assert_keeps_wgmma_in_the_cta_loop():
    """A kernel with a device assert (a call of ``__assertfail`` it does not take, as CuTe's and nvcc's kernels
    carry) runs its CTA in the CTA loop: its f16-accumulator wgmma rows are not handed back, and both engines give
    the same bits; an assert that fails raises the same DeviceAssertError on both."""
    from emulator.machine.fastcore.engine import handback_counts
    module = load_ptx(ASSERT_WGMMA)
    assert translation(module.program("k")).cta_ok
    rng = np.random.default_rng(7)
    src = rng.normal(0, 1, 4096).astype(np.float16).view(np.uint8)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(128 * 8, np.uint8), src], [1000])
    assert not diffs, diffs
    assert handback_counts(module.program("k")) == {}
    d = ref["memory"][0][1].view(np.float16)
    assert np.isfinite(d).all() and (d != 0).sum() > 500          # the tiles were computed: 8 KiB of A and B
    module = load_ptx(ASSERT_WGMMA)
    ref, fast, diffs = compare_engines(module, "k", 1, 128, [np.zeros(128 * 8, np.uint8), src], [100])
    assert not diffs, diffs
    assert ref["error"][0] == "DeviceAssertError" and "lane 5" in ref["error"][1] and "tid <= limit" in ref["error"][1]


def test_cute_cpasync_wgmma_tutorial_hands_back_no_wgmma():
    """CuTe's Hopper tutorial GEMM with cp.async copies (F16F16F16 m64n64k16, its smem pointers checked by device
    asserts) equals the H100's output on the fast engine, which hands back none of its rows (its cp.async
    tables start with a record for each of its copy rows)."""
    import corpus_lib
    from emulator.machine.fastcore.engine import handback_counts
    case = corpus_lib.load_all()["cute_tutorial_wgmma_cpasync_tn_sm90a"]
    got, res, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    back = {}
    for prog in {id(w.program): w.program for _, ws in res.ctas for w in ws}.values():
        for k, v in handback_counts(prog).items():
            back[k] = back.get(k, 0) + v
    assert back == {}, back


def _launch_notes_and_backs(case, engine):
    import corpus_lib
    from emulator.machine.fastcore.engine import handback_counts
    got, res, _ = corpus_lib.replay(case, engine=engine)
    back = {}
    for prog in {id(w.program): w.program for _, ws in res.ctas for w in ws}.values():
        for k, v in handback_counts(prog).items():
            back[k] = back.get(k, 0) + v
    return got, list(res.notes), back


@pytest.mark.parametrize("name", ["triton_matmul_f16acc_64x64_sm90a", "ptx_wgmma_read_before_wait",
                                  "ptx_wgmma_read_uncommitted", "ptx_wgmma_write_before_wait"])
def test_the_injected_wait_keeps_wgmma_in_the_cta_loop(name):
    """Triton's f16-accumulator matmul unpacks its accumulators (mov.b32 {h, h}, r) before wgmma.wait_group, so ptxas
    injects a wait (C7517); the captures' kernels read, or write, an accumulator in flight. The CTA loop makes that
    wait itself (the warp stalls until its warpgroup computed the tile, then every group retires): the outputs
    equal the H100's, the launch's notes and everything else equal the reference engine's, and nothing is handed
    back."""
    import corpus_lib
    from engines import differences, replay_outcome
    case = corpus_lib.load_npz(corpus_lib.os.path.join(corpus_lib.ROOT, "tests", "data", "ctrlflow.npz"))[name]
    got, notes, back = _launch_notes_and_backs(case, "fast")
    assert corpus_lib.mismatches(case, got) == []
    assert back == {}, back
    _, ref_notes, _ = _launch_notes_and_backs(case, "reference")
    assert notes == ref_notes and len(notes) == 1 and "C7517" in notes[0], (notes, ref_notes)
    _, ref = replay_outcome(case, "reference")
    _, fast = replay_outcome(case, "fast")
    assert differences(ref, fast) == []


def test_an_injected_wait_for_a_warp_that_never_issues_is_reported_alike():
    """Warp 3 of the warpgroup skips the wgmma while warps 0-2 read its accumulator before waiting: the CTA loop's
    injected wait stalls them, and the report (the reference's, from the state the loop hands over) is the same
    on both engines."""
    body = ("mov.u32 %r2, %warpid;\nsetp.eq.u32 %p1, %r2, 3;\n@%p1 bra SKIP;\nwgmma.fence.sync.aligned;\n" + MMA +
            "\nwgmma.commit_group.sync.aligned;\nadd.f32 %f5, %f0, %f1;\nwgmma.wait_group.sync.aligned 0;\nSKIP:\n")
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + TAIL
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 128, [np.zeros(4 * 128, np.uint8)])
    assert not diffs, diffs
    assert ref["error"][0] == "WarpSyncError" and "add.f32 %f5, %f0, %f1: waits for" in ref["error"][1], ref["error"]


@pytest.mark.parametrize("use", ["add.f32 %f5, %f1, %f0;", "fma.rn.f32 %f5, %f2, %f3, %f1;",
                                 "mov.b64 %rd5, {%f3, %f2};\nmov.b64 {%f6, %f7}, %rd5;\nadd.f32 %f5, %f6, %f7;"])
def test_an_injected_wait_before_an_instruction_with_several_held_registers(use):
    """An instruction that touches several registers of an in-flight wgmma (or one the loop does not know the
    executor's order of): its executor runs it under the reference's register guard, which names the register it
    touches first in the launch's note and makes the wait; the CTA stays in the loop. Same bits, notes and
    state as the reference engine."""
    from emulator.machine.fastcore.engine import handback_counts
    body = "wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n" + use + \
        "\nwgmma.wait_group.sync.aligned 0;\nmov.f32 %f0, %f5;\n"
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\nmov.u32 %r2, smem;\nmad.lo.u32 %r2, %r1, 64, %r2;\n" \
        "cvt.rn.f32.u32 %f7, %r1;\ncvt.rn.f16x2.f32 %r3, %f7, %f7;\n" + \
        "".join(f"st.shared.u32 [%r2+{4 * i}], %r3;\n" for i in range(16)) + \
        "fence.proxy.async.shared::cta;\nbar.sync 0;\n" + body + TAIL
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 128, [np.zeros(4 * 128, np.uint8)])
    assert not diffs, diffs
    from emulator import GlobalMemory
    module = load_ptx(text)
    res = {}
    for engine in ("reference", "fast"):
        g = GlobalMemory()
        out = g.alloc(4 * 128)
        res[engine] = module.launch("k", (1, 1, 1), (128, 1, 1), [out], gmem=g, engine=engine)
    assert res["fast"].notes == res["reference"].notes and len(res["fast"].notes) == 1, res["fast"].notes
    back = handback_counts(module.program("k"))
    assert not any(k.startswith("wgmma") for k in back) and sum(back.values()) == 4, back


@pytest.mark.parametrize("atom", ["atom.shared.add.u32 %r4, [%r2+OFF], %r3;", "red.shared.add.u32 [%r2+OFF], %r3;",
                                  "atom.add.u32 %r4, [%rd3+OFF], %r3;"])
def test_an_atomic_into_bytes_an_in_flight_wgmma_reads_is_the_same_error(atom):
    """A shared atomic (and a generic one that lands in shared memory) into the bytes an in-flight
    wgmma.mma_async reads: the reference's AsyncHazardError on both engines; beside them it runs."""
    assert len(list(_beside_in_flight_wgmma(atom))) == 2
