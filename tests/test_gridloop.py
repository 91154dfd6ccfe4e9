"""The grid loop (emulator/machine/fastcore/gridloop.py): a launch's CTAs that nobody keeps run in one jitted call
until one needs Python, which then takes that CTA over where the loop left it. Every outcome (memory, printf
lines and their order, errors naming the same CTA, warp and lane, the instruction count, the CTAs ``keep``
returns, notes) is the same with the grid loop on and off and on the reference engine."""
import io

import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, load_ptx
from emulator.machine.fastcore import gridloop

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
FMT = b"cta %d tid %d\n\0"

# every thread stores ctaid * 1000 + tid + (the CTA's %smid ^ %ctaid.z) at its global index; CTA ``k`` (linear id)
# does something that needs Python, by ``mode``: 0 reads %smid (handed back to the executors), 1 prints from two
# lanes of each warp, 2 deadlocks (warp 0 waits at barrier 1, warp 1 at barrier 2), 3 has lane 5 of warp 1 load
# from address 0 (an error naming the lane), 4 nothing
KERNEL = HEAD + f".global .align 1 .b8 fmt[{len(FMT)}] = {{{', '.join(map(str, FMT))}}};\n" + """
.extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);
.visible .entry g(.param .u64 out, .param .u32 k, .param .u32 mode)
{
    .reg .b32 %r<24>; .reg .b64 %rd<8>; .reg .pred %p<4>;
    .local .align 8 .b8 buf[8];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    ld.param.u32 %r2, [mode];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ctaid.y;
    mov.u32 %r5, %tid.x;
    mov.u32 %r6, %ntid.x;
    mov.u32 %r7, %nctaid.x;
    mov.u32 %r12, %ctaid.z;
    mov.u32 %r13, %nctaid.y;
    mov.u32 %r14, %clusterid.x;
    mov.u32 %r15, %clusterid.y;
    mad.lo.s32 %r16, %r12, %r13, %r4;
    mad.lo.s32 %r8, %r16, %r7, %r3;
    mad.lo.s32 %r9, %r8, %r6, %r5;
    mad.lo.s32 %r10, %r8, 1000, %r5;
    xor.b32 %r17, %r14, %r3;
    add.u32 %r10, %r10, %r17;
    xor.b32 %r17, %r15, %r4;
    add.u32 %r10, %r10, %r17;
    setp.ne.u32 %p1, %r8, %r1;
    @%p1 bra STORE;
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bra SMID;
    setp.eq.u32 %p2, %r2, 1;
    @%p2 bra PRINT;
    setp.eq.u32 %p2, %r2, 2;
    @%p2 bra BAR;
    setp.eq.u32 %p2, %r2, 3;
    @%p2 bra BAD;
    bra STORE;
SMID:
    mov.u32 %r11, %smid;
    add.u32 %r10, %r10, %r11;
    bra STORE;
PRINT:
    and.b32 %r11, %r5, 30;
    setp.ne.u32 %p3, %r11, 0;
    @%p3 bra STORE;
    mov.u64 %rd4, fmt;
    cvta.global.u64 %rd4, %rd4;
    mov.u64 %rd5, buf;
    cvta.local.u64 %rd5, %rd5;
    st.local.u32 [buf], %r8;
    st.local.u32 [buf+4], %r5;
    {
        .param .b64 p0; st.param.b64 [p0], %rd4;
        .param .b64 p1; st.param.b64 [p1], %rd5;
        .param .b32 r; call.uni (r), vprintf, (p0, p1);
    }
    bra STORE;
BAR:
    setp.lt.u32 %p3, %r5, 32;
    @%p3 bar.sync 1;
    @!%p3 bar.sync 2;
    bra STORE;
BAD:
    setp.ne.u32 %p3, %r5, 37;
    @%p3 bra STORE;
    mov.u64 %rd6, 0;
    ld.global.u32 %r11, [%rd6];
STORE:
    mul.wide.u32 %rd2, %r9, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    ret;
}
"""

_MODULE = []


def _module():
    if not _MODULE:
        _MODULE.append(load_ptx(KERNEL))
    return _MODULE[0]


def _outcome(engine, loop, grid, k, mode, keep, block=64, **kw):
    was = gridloop.ON
    gridloop.ON = loop
    m = _module()
    g = GlobalMemory()
    n = int(np.prod(grid)) * block
    out = g.upload(np.full(n, 0xFFFFFFFF, np.uint32))
    printed = io.StringIO()
    try:
        r = m.launch("g", grid, block, [out, k, mode], gmem=g, engine=engine, keep=keep, out=printed, **kw)
        got = ("ok", r.instructions, r.notes, r.stdout if hasattr(r, "stdout") else None,
               [(c, [w.regs["%r10"].tolist() for w in ws]) for c, ws in r.ctas])
    except EmulatorError as e:
        got = ("error", type(e).__name__, str(e))
    finally:
        gridloop.ON = was
    return got, printed.getvalue(), g.download(out, 4 * n).view(np.uint32).tolist()


def _runs(monkeypatch):
    """Count the grid loop's calls and the CTAs they ran to their end."""
    seen = []
    run = gridloop.run

    def counted(*a, **kw):
        d = run(*a, **kw)
        seen.append(d[0])
        return d
    monkeypatch.setattr(gridloop, "run", counted)
    return seen


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("keep", ["none", "last", "all"])
def test_a_grid_where_one_cta_needs_python_is_the_same_with_and_without_the_grid_loop(mode, keep, monkeypatch):
    grid, k = (5, 2, 2), 7
    ref = _outcome("reference", False, grid, k, mode, keep)
    off = _outcome("fast", False, grid, k, mode, keep)
    seen = _runs(monkeypatch)
    on = _outcome("fast", True, grid, k, mode, keep)
    assert on == off
    assert on == ref
    if mode == 4:
        assert on[0][0] == "ok"
        assert seen == [20 - (keep == "last")], seen          # one call ran every CTA (but a last one kept)
    else:
        assert seen[0] == k, seen                               # the loop stopped at CTA k, Python took it over
    if mode == 1:
        assert on[1].splitlines() == [f"cta {k} tid {t}" for t in (0, 1, 32, 33)]
    if mode == 2:
        assert on[0][0] == "error" and "deadlock" in on[0][2] and "(2, 1, 0)" in on[0][2], on[0]
        assert on[2][:k * 64] != [0xFFFFFFFF] * (k * 64) and on[2][(k + 1) * 64:] == [0xFFFFFFFF] * (12 * 64)
    if mode == 3:
        assert on[0][0] == "error" and "lane 5" in on[0][2] and "ld.global" in on[0][2], on[0]
        assert 0xFFFFFFFF not in on[2][:k * 64] and on[2][(k + 1) * 64:] == [0xFFFFFFFF] * (12 * 64)


@pytest.mark.parametrize("at", [0, 3, 7, 19])
def test_the_instruction_budget_runs_out_in_the_same_cta_at_the_same_count(at, monkeypatch):
    grid = (5, 2, 2)
    whole = _outcome("reference", False, grid, 99, 4, "none")[0][1]
    per = whole // 20
    for extra in (0, 1, per // 2, per - 1):
        limit = at * per + extra
        ref = _outcome("reference", False, grid, 99, 4, "none", max_instructions=limit)
        seen = _runs(monkeypatch)
        on = _outcome("fast", True, grid, 99, 4, "none", max_instructions=limit)
        assert on == ref, (at, extra)
        assert on[0][0] == "error" and "instruction limit" in on[0][2]
        assert sum(seen) == at - (extra == 0 and at > 0 and False), seen
    # a budget that is just enough: no error, the same count
    ref = _outcome("reference", False, grid, 99, 4, "none", max_instructions=whole)
    assert _outcome("fast", True, grid, 99, 4, "none", max_instructions=whole) == ref
    assert ref[0][:2] == ("ok", whole)


def test_many_ctas_over_chunks_and_back_to_back_launches(monkeypatch):
    """More CTAs than one call of the loop takes (``CHUNK``), a hand-back in the second chunk, then a launch of
    another shape on the same arrays: the same memory as the reference engine."""
    monkeypatch.setattr(gridloop, "CHUNK", 8)
    monkeypatch.setattr(gridloop, "KEPT_BYTES", 3 << 12)      # (kept CTAs: a few blocks a call)
    for keep in ("none", "all"):
        for grid, k, mode, block in (((23, 1, 1), 13, 0, 64), ((7, 3, 1), 99, 4, 40), ((3, 2, 2), 5, 1, 96)):
            ref = _outcome("reference", False, grid, k, mode, keep, block=block)
            assert _outcome("fast", True, grid, k, mode, keep, block=block) == ref


def test_random_small_kernels_agree_with_the_grid_loop_on_and_off():
    """Random grids, blocks, hand-back CTAs and modes."""
    rng = np.random.default_rng(26)
    for _ in range(6):
        grid = tuple(int(x) for x in rng.integers(1, 4, 3))
        n = int(np.prod(grid))
        block = int(rng.integers(1, 97))
        mode = int(rng.choice([0, 1, 4]))
        k = int(rng.integers(0, n + 1))
        keep = str(rng.choice(["none", "last", "all"]))
        off = _outcome("fast", False, grid, k, mode, keep, block=block)
        assert _outcome("fast", True, grid, k, mode, keep, block=block) == off, (grid, block, mode, k, keep)


SHARED = HEAD + """
.visible .entry s(.param .u64 out, .param .u32 iters, .param .u32 k)
{
    .reg .b32 %r<16>; .reg .b64 %rd<6>; .reg .pred %p<3>;
    .shared .align 4 .b8 sm[1024];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [iters];
    ld.param.u32 %r12, [k];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ctaid.x;
    mov.u32 %r11, %ntid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, sm;
    add.u32 %r4, %r3, %r2;
    mov.u32 %r6, 0;
    mov.u32 %r5, %r10;
L:
    add.u32 %r5, %r5, %r6;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    xor.b32 %r13, %r2, 4;
    add.u32 %r13, %r3, %r13;
    ld.shared.u32 %r5, [%r13];
    bar.sync 0;
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p1, %r6, %r9;
    @%p1 bra L;
    setp.ne.u32 %p2, %r10, %r12;
    @%p2 bra OUT;
    mov.u32 %r14, %smid;
    add.u32 %r5, %r5, %r14;
OUT:
    mad.lo.s32 %r7, %r10, %r11, %r1;
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
}
"""


def _shared_outcome(engine, loop, iters, k, keep, grid=9, block=64):
    was = gridloop.ON
    gridloop.ON = loop
    try:
        m = load_ptx(SHARED)
        g = GlobalMemory()
        out = g.upload(np.zeros(grid * block, np.uint32))
        r = m.launch("s", grid, block, [out, iters, k], gmem=g, engine=engine, keep=keep)
        kept = [(c, [(w.regs["%r5"].tolist(), w.smem.tobytes(), int(w.issued),
                      [(x.op, x.addrs[x.mask].tolist()) for x in w._smem_log]) for w in ws]) for c, ws in r.ctas]
        return r.instructions, kept, len(r.async_units), g.download(out, 4 * grid * block).tobytes()
    finally:
        gridloop.ON = was


@pytest.mark.parametrize("iters", [3, 9, 300])
def test_kept_ctas_shared_memory_and_bank_records_are_the_same(iters, monkeypatch):
    """Kept CTAs the grid loop ran (their blocks and logs kept, the CTA objects made when read): registers, shared
    memory, issue counts and bank records as the reference keeps them; a log that fills inside a CTA (300
    iterations: more records than the loop's log holds) and kept logs that fill a call's room (``KEPT_LOG``)."""
    monkeypatch.setattr(gridloop, "KEPT_LOG", 2)
    ref = _shared_outcome("reference", False, iters, 4, "all")
    off = _shared_outcome("fast", False, iters, 4, "all")
    seen = _runs(monkeypatch)
    on = _shared_outcome("fast", True, iters, 4, "all")
    assert on == off
    assert on == ref
    assert sum(seen) >= (8 if iters < 300 else 0), seen
    assert len(ref[1]) == 9 and ref[1][0][1][0][3][:2] == [("st", [4 * t for t in range(32)]),
                                                           ("ld", [4 * (t ^ 1) for t in range(32)])]


CPASYNC = HEAD + """
.visible .entry c(.param .u64 out, .param .u64 src, .param .u32 k, .param .u32 nowait)
{
    .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<3>;
    .shared .align 16 .b8 sm[512];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd4, [src];
    ld.param.u32 %r12, [k];
    ld.param.u32 %r13, [nowait];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ctaid.x;
    mov.u32 %r11, %ntid.x;
    mad.lo.s32 %r7, %r10, %r11, %r1;
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd5, %rd4, %rd2;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, sm;
    add.u32 %r4, %r3, %r2;
    cp.async.ca.shared.global [%r4], [%rd5], 4;
    cp.async.commit_group;
    setp.eq.u32 %p1, %r10, %r12;
    setp.ne.u32 %p2, %r13, 0;
    and.pred %p1, %p1, %p2;
    @%p1 bra OUT;
    cp.async.wait_group 0;
    bar.sync 0;
    xor.b32 %r5, %r2, 4;
    add.u32 %r5, %r3, %r5;
    ld.shared.u32 %r6, [%r5];
    add.u32 %r6, %r6, %r10;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
OUT:
    ret;
}
"""


def _cp_outcome(engine, loop, k, nowait, keep, grid=7, block=64):
    was = gridloop.ON
    gridloop.ON = loop
    try:
        m = load_ptx(CPASYNC)
        g = GlobalMemory()
        out = g.upload(np.zeros(grid * block, np.uint32))
        src = g.upload(np.arange(grid * block, dtype=np.uint32) * 7 + 3)
        r = m.launch("c", grid, block, [out, src, k, nowait], gmem=g, engine=engine, keep=keep)
        kept = [(c, [(w.regs["%r7"].tolist(), w.regs["%r4"].tolist(), w.smem.tobytes(), w.cp_async.committed.tolist(),
                      [(x.op, x.addrs[x.mask].tolist()) for x in w._smem_log]) for w in ws]) for c, ws in r.ctas]
        return r.instructions, kept, g.download(out, 4 * grid * block).tobytes()
    finally:
        gridloop.ON = was


@pytest.mark.parametrize("nowait", [0, 1])
@pytest.mark.parametrize("keep", ["none", "all"])
def test_cp_async_ctas_are_the_same_with_and_without_the_grid_loop(nowait, keep, monkeypatch):
    """cp.async copies, committed groups and their bank records (with the source addresses) per kept CTA; CTA 3
    ending with its copy in flight (``nowait``) stops the grid loop, which starts again after it."""
    ref = _cp_outcome("reference", False, 3, nowait, keep)
    off = _cp_outcome("fast", False, 3, nowait, keep)
    seen = _runs(monkeypatch)
    on = _cp_outcome("fast", True, 3, nowait, keep)
    assert on == off
    assert on == ref
    assert seen[0] == (3 if nowait else 7), seen
