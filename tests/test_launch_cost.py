"""What a launch pays once instead of per launch or per CTA (docs/speed.md, "The fixed cost of a launch"), and
that none of it changes a result: the loop arrays a finished launch hands to the next one, the special registers
written into a CTA's arenas in one store from the launch's first CTA, the parameter bytes of a CTA in one block,
the numba-cache check done once per process, the module variables kept per GlobalMemory without keeping it
alive."""
import gc
import struct
import weakref

import numpy as np
import pytest

from emulator import GlobalMemory, OperandError, load_ptx
from emulator.machine.fastcore import warmup

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# every thread writes 12 words: its CTA and thread ids, warp, SM, grid size, the four parameters, %ctaid.y, lane
SPECIALS = HEAD + """
.visible .entry k(.param .u64 out, .param .s32 a, .param .f32 b, .param .u16 c, .param .u64 d)
{
    .reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .f32 %f<2>; .reg .b16 %h<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd2, %r4, 48;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r5, %warpid;
    mov.u32 %r6, %smid;
    mov.u32 %r7, %nctaid.x;
    ld.param.s32 %r8, [a];
    ld.param.f32 %f1, [b];
    mov.b32 %r9, %f1;
    ld.param.u16 %h1, [c];
    cvt.u32.u16 %r10, %h1;
    ld.param.u64 %rd4, [d];
    cvt.u32.u64 %r11, %rd4;
    shr.u64 %rd5, %rd4, 32;
    cvt.u32.u64 %r12, %rd5;
    mov.u32 %r13, %ctaid.y;
    mov.u32 %r14, %laneid;
    st.global.v4.u32 [%rd3], {%r2, %r1, %r5, %r6};
    st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r10};
    st.global.v4.u32 [%rd3+32], {%r11, %r12, %r13, %r14};
    ret;
}
"""

GRID, BLOCK = 5, 80          # three warps a CTA, the last one half full


def _specials_launch(module, args_after_out, engine):
    g = GlobalMemory()
    out = g.upload(np.full(GRID * BLOCK * 12, 0xDEADBEEF, np.uint32))
    module.launch("k", GRID, BLOCK, [out, *args_after_out], gmem=g, engine=engine)
    return g.download(out, GRID * BLOCK * 48).view(np.uint32).reshape(GRID, BLOCK, 12)


def _expected(a, b, c, d):
    want = np.zeros((GRID, BLOCK, 12), np.uint32)
    cta = np.arange(GRID)[:, None]
    tid = np.arange(BLOCK)[None, :]
    want[..., 0] = cta
    want[..., 1] = tid
    want[..., 2] = tid // 32
    want[..., 3] = cta % 132
    want[..., 4] = GRID
    want[..., 5] = a & 0xFFFFFFFF
    want[..., 6] = struct.unpack("<I", struct.pack("<f", b))[0]
    want[..., 7] = c & 0xFFFF
    want[..., 8] = d & 0xFFFFFFFF
    want[..., 9] = (d >> 32) & 0xFFFFFFFF
    want[..., 10] = 0
    want[..., 11] = tid % 32
    return want


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_specials_and_parameters_of_every_cta_over_back_to_back_launches(engine):
    m = load_ptx(SPECIALS)
    # the second and third launches reuse the first's loop arrays and CTA special-register rows
    for a, b, c, d in ((-7, 1.5, 0xBEEF, 0x0123456789ABCDEF), (2 ** 31 - 1, -0.0, 3, 2 ** 64 - 1),
                       (0, float("inf"), 0, 1 << 40)):
        got = _specials_launch(m, [a, b, c, d], engine)
        want = _expected(a, b, c, d)
        bad = np.argwhere(got != want)
        assert bad.size == 0, f"{engine}: first difference at (cta, thread, word) {tuple(bad[0])}: " \
                              f"{got[tuple(bad[0])]:#x} != {want[tuple(bad[0])]:#x}"


def test_a_cta_loop_launch_hands_its_arrays_to_the_next_launch():
    from emulator.machine.fastcore import translation
    m = load_ptx(SPECIALS)
    _specials_launch(m, [1, 2.0, 3, 4], "fast")
    tr = translation(m.program("k"))
    if not tr.cta_ok:
        pytest.fail("the test kernel should run on the CTA loop")
    pool = tr._buffers
    assert len(pool) == 1
    first = pool[0]
    _specials_launch(m, [5, 6.0, 7, 8], "fast")
    assert tr._buffers == [first]             # taken by the second launch and given back


def test_integer_parameters_are_range_checked_as_before():
    m = load_ptx(SPECIALS)
    g = GlobalMemory()
    out = g.upload(np.zeros(GRID * BLOCK * 12, np.uint32))
    with pytest.raises(OperandError, match=r"does not fit parameter a \(\.s32\)"):
        m.launch("k", GRID, BLOCK, [out, 1 << 32, 1.0, 0, 0], gmem=g)
    with pytest.raises(OperandError, match=r"-32769 does not fit parameter c \(\.u16\)"):
        m.launch("k", GRID, BLOCK, [out, 0, 1.0, -32769, 0], gmem=g)
    with pytest.raises(OperandError, match=r"parameter a is \.s32, got the float 1\.5"):
        m.launch("k", GRID, BLOCK, [out, 1.5, 1.0, 0, 0], gmem=g)
    with pytest.raises(OperandError, match="expected 5 argument"):
        m.launch("k", GRID, BLOCK, [out, 0, 1.0, 0], gmem=g)
    # the largest unsigned and the most negative signed values still fit
    got = _specials_launch(m, [-(1 << 31), 1.0, 0xFFFF, 2 ** 64 - 1], "fast")
    assert (got[..., 5] == 0x80000000).all() and (got[..., 7] == 0xFFFF).all() and (got[..., 8] == 0xFFFFFFFF).all()


SHARED = HEAD + """
.visible .entry s(.param .u64 out, .param .u32 stride)
{
    .reg .b32 %r<12>; .reg .b64 %rd<6>;
    .shared .align 4 .b8 sm[4096];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [stride];
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, %r9;
    mov.u32 %r3, sm;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    ld.shared.u32 %r5, [%r4];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
}
"""


def _bank_records(res):
    return [[(r.op, r.addrs[r.mask].tolist()) for r in w._smem_log] for _, ws in res.ctas for w in ws]


def test_bank_records_of_a_launch_survive_the_next_launch():
    m = load_ptx(SHARED)
    g = GlobalMemory()
    out = g.upload(np.zeros(64, np.uint32))
    first = m.launch("s", 2, 64, [out, 4], gmem=g, engine="fast")       # records kept, built when first read
    m.launch("s", 2, 64, [out, 8], gmem=g, engine="fast")               # same loop arrays, other addresses
    g2 = GlobalMemory()
    want = load_ptx(SHARED).launch("s", 2, 64, [g2.upload(np.zeros(64, np.uint32)), 4], gmem=g2, engine="reference")
    assert _bank_records(first) == _bank_records(want)
    assert _bank_records(first)[0] == [("st", [4 * t for t in range(32)]), ("ld", [4 * t for t in range(32)])]


VARS = HEAD + """
.global .align 4 .u32 counter = 5;
.visible .entry v(.param .u64 out)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.global.u32 %r1, [counter];
    add.u32 %r2, %r1, 1;
    st.global.u32 [counter], %r2;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def test_a_module_does_not_keep_a_dropped_global_memory_alive():
    m = load_ptx(VARS)
    g = GlobalMemory()
    out = g.upload(np.zeros(1, np.uint32))
    m.launch("v", 1, 1, [out], gmem=g)
    m.launch("v", 1, 1, [out], gmem=g)
    assert g.download(out, 4).view(np.uint32)[0] == 6          # the variable lives on in the same memory
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None
    g2 = GlobalMemory()                                        # a new memory gets the initial value again
    out2 = g2.upload(np.zeros(1, np.uint32))
    m.launch("v", 1, 1, [out2], gmem=g2)
    assert g2.download(out2, 4).view(np.uint32)[0] == 5


def test_the_fast_engine_looks_at_numbas_cache_once_per_process(monkeypatch):
    m = load_ptx(SPECIALS)
    _specials_launch(m, [1, 2.0, 3, 4], "fast")              # compiled or loaded: the cache was looked at
    calls = []
    real = warmup._done
    monkeypatch.setattr(warmup, "_done", lambda disps: calls.append(1) or real(disps))
    for _ in range(3):
        _specials_launch(m, [1, 2.0, 3, 4], "fast")
    assert calls == []


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_kernel_warp_has_all_the_state_of_a_warp(engine):
    """KernelWarp sets a Warp's state itself (without Warp.__init__'s checks): nothing may be missing."""
    from emulator import Warp
    plain = set(vars(Warp()))
    m = load_ptx(SHARED)
    g = GlobalMemory()
    res = m.launch("s", 1, 64, [g.upload(np.zeros(64, np.uint32)), 4], gmem=g, engine=engine)
    for _, ws in res.ctas:
        for w in ws:
            missing = sorted(k for k in plain if not hasattr(w, k))
            assert not missing, f"a KernelWarp lacks {missing}"
            assert w.bank_report() and w.cp_async is not None
