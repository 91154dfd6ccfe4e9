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

from emulator import EmulatorError, GlobalMemory, OperandError, load_ptx
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


# every parameter an integer (the packing plan's case): widths 1, 2, 4, 8, with padding between them
INTS = HEAD + """
.visible .entry p(.param .u64 out, .param .u8 a, .param .s16 b, .param .u32 c, .param .s64 d, .param .u16 e)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .b16 %h<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u8 %r1, [a];
    ld.param.s16 %h1, [b];
    cvt.s32.s16 %r2, %h1;
    ld.param.u32 %r3, [c];
    ld.param.s64 %rd2, [d];
    cvt.u32.u64 %r4, %rd2;
    shr.u64 %rd3, %rd2, 32;
    cvt.u32.u64 %r5, %rd3;
    ld.param.u16 %h2, [e];
    cvt.u32.u16 %r6, %h2;
    st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
    st.global.v2.u32 [%rd1+16], {%r5, %r6};
    ret;
}
"""


def _ints_launch(m, g, out, vals, engine="fast", **kw):
    m.launch("p", 1, 32, [out, *vals], gmem=g, engine=engine, **kw)
    return g.download(out, 24).view(np.uint32).tolist()


def test_integer_parameters_packed_in_one_go_equal_the_general_path():
    """Plain ints take the packing plan (``module._param_plan``); numpy integers take the general path: same bytes,
    for each width's extremes and random values."""
    from emulator.machine.module import _fill_params
    m = load_ptx(INTS)
    prog = m.program("p")
    assert prog.kernel_params and len(prog.kernel_params) == 6
    from emulator.machine.module import _param_plan
    assert _param_plan(prog.kernel_params, prog.layout.param) is not None      # (the plan's case)
    rng = np.random.default_rng(5)
    widths = [64, 8, 16, 32, 64, 16]
    cases = [[-(1 << (w - 1)) for w in widths], [(1 << w) - 1 for w in widths], [0] * 6]
    cases += [[int(rng.integers(-(1 << (w - 1)), 1 << w, dtype=np.int64)) if w < 64 else
               int(rng.integers(0, 1 << 62)) for w in widths] for _ in range(20)]
    for vals in cases:
        plain = np.zeros(prog.layout.param, np.uint8)
        _fill_params(prog.entry, prog.kernel_params, vals, plain)
        general = np.zeros(prog.layout.param, np.uint8)
        _fill_params(prog.entry, prog.kernel_params, [np.int64(v) if -(1 << 63) <= v < 1 << 63 else np.uint64(v)
                                                      for v in vals], general)
        assert plain.tobytes() == general.tobytes(), vals
    # and the kernel reads them back on both engines
    g = GlobalMemory()
    out = g.upload(np.zeros(6, np.uint32))
    vals = [out, 0xAB, -2, 0xDEADBEEF, -(1 << 40) - 7, 0xFFFF]
    for engine in ("fast", "reference"):
        assert _ints_launch(m, g, out, vals[1:], engine) == [0xAB, 0xFFFFFFFE, 0xDEADBEEF,
                                                             (-(1 << 40) - 7) & 0xFFFFFFFF,
                                                             ((-(1 << 40) - 7) >> 32) & 0xFFFFFFFF, 0xFFFF]
    # out of range, a bool, a float: the general path's rules and messages
    with pytest.raises(OperandError, match=r"256 does not fit parameter a \(\.u8\)"):
        _ints_launch(m, g, out, [256, 0, 0, 0, 0])
    with pytest.raises(OperandError, match=r"-32769 does not fit parameter b \(\.s16\)"):
        _ints_launch(m, g, out, [0, -32769, 0, 0, 0])
    with pytest.raises(OperandError, match=r"parameter c is \.u32, got the float 0\.5"):
        _ints_launch(m, g, out, [0, 0, 0.5, 0, 0])
    assert _ints_launch(m, g, out, [True, 0, 2.0, 0, 0])[:3] == [1, 0, 2]
    with pytest.raises(OperandError, match="expected 6 argument"):
        m.launch("p", 1, 32, [out, 1, 2, 3, 4], gmem=g)


def test_a_launch_shape_checked_once_still_refuses_every_wrong_shape():
    """The checked shape of a launch is kept per module (``Module._shapes``); what is not plain ints is checked each
    time, and a wrong value after a right one is still refused."""
    m = load_ptx(INTS)
    g = GlobalMemory()
    out = g.upload(np.zeros(6, np.uint32))
    args = [out, 1, 2, 3, 4, 5]
    for grid, block in ((1, 32), ((1,), [32]), ([1, 1, 1], (32, 1, 1)), (np.int64(1), (np.int32(32),))):
        assert m.launch("p", grid, block, args, gmem=g).grid == (1, 1, 1)
    for grid, block, msg in ((True, 32, "grid must be an int"), (1, (True,), "block must be an int"),
                             (0, 32, "grid dimensions must be 1"), (1, 1025, "1..1024 threads"),
                             ((1, 1, 1, 1), 32, "1 to 3 dimensions"), (1.0, 32, "grid must be an int")):
        with pytest.raises(OperandError, match=msg):
            m.launch("p", grid, block, args, gmem=g)
    with pytest.raises(OperandError, match="shared_bytes must be 0"):
        m.launch("p", 1, 32, args, gmem=g, shared_bytes=-16)
    with pytest.raises(OperandError, match="shared_bytes must be an integer"):
        m.launch("p", 1, 32, args, gmem=g, shared_bytes=True)
    with pytest.raises(OperandError, match="regs_per_thread must be"):
        m.launch("p", 1, 32, args, gmem=g, regs_per_thread=0)
    with pytest.raises(OperandError, match="cluster dimensions"):
        m.launch("p", 1, 32, args, gmem=g, cluster=(0, 1, 1))
    # the same shape with another dynamic shared size or register count: its own occupancy
    a = m.launch("p", 1, 32, args, gmem=g, regs_per_thread=255)
    assert a.grid == (1, 1, 1)
    assert m.occupancy("p", 32, regs_per_thread=255).resident != m.occupancy("p", 32).resident


def test_a_global_memory_table_kept_between_launches_sees_new_allocations():
    """The fast engine keeps a GlobalMemory's allocation table between launches while its allocations stay the same:
    a buffer allocated after a launch is in the next launch's table, and a buffer of another GlobalMemory never."""
    m = load_ptx(INTS)
    g = GlobalMemory()
    first = g.upload(np.zeros(6, np.uint32))
    assert _ints_launch(m, g, first, [1, 2, 3, 4, 5])[0] == 1
    for k in range(3):
        later = g.upload(np.zeros(6, np.uint32))
        assert _ints_launch(m, g, later, [7 + k, 2, 3, 4, 5])[0] == 7 + k
    # another GlobalMemory with as many allocations at the same addresses: its own table, its own buffers
    g2 = GlobalMemory()
    twins = [g2.upload(np.zeros(6, np.uint32)) for _ in range(4)]
    assert twins[-1] == later
    assert _ints_launch(m, g2, later, [99, 2, 3, 4, 5])[0] == 99
    assert g.download(later, 4).view(np.uint32)[0] == 9


def test_kept_ctas_async_units_are_made_when_read():
    """``result.async_units`` has one unit per kept CTA, in the order of ``result.ctas``, made when first read."""
    m = load_ptx(INTS)
    g = GlobalMemory()
    out = g.upload(np.zeros(6, np.uint32))
    for engine in ("fast", "reference"):
        r = m.launch("p", 5, 32, [out, 1, 2, 3, 4, 5], gmem=g, engine=engine)
        units = r.async_units
        assert len(units) == len(r.ctas) == 5
        assert all(type(u).__name__ == "AsyncUnit" and u.mbarriers.used == 0 and not u.pending for u in units)
        assert len({id(u) for u in units}) == 5
        assert r.async_units is units
        r2 = m.launch("p", 5, 32, [out, 1, 2, 3, 4, 5], gmem=g, engine=engine, keep="last")
        assert len(r2.async_units) == 1 and len(r2.ctas) == 1
        assert len(m.launch("p", 5, 32, [out, 1, 2, 3, 4, 5], gmem=g, engine=engine, keep="none").async_units) == 0


# each thread adds its CTA id n times, then stores; CTA `spin` (a parameter) first waits on a flag nobody sets
GRIDK = HEAD + """
.visible .entry g(.param .u64 out, .param .u32 n, .param .u32 spin, .param .u64 flag)
{
    .reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r2, [spin];
    ld.param.u64 %rd5, [flag];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r6, %r3, %r4, %r5;
    setp.ne.u32 %p1, %r3, %r2;
    @%p1 bra GO;
W:
    ld.volatile.global.u32 %r10, [%rd5];
    setp.eq.u32 %p3, %r10, 0;
    @%p3 bra W;
GO:
    mov.u32 %r7, 0;
    mov.u32 %r8, 0;
L:
    add.u32 %r7, %r7, %r3;
    add.u32 %r8, %r8, 1;
    setp.lt.u32 %p2, %r8, %r1;
    @%p2 bra L;
    mul.wide.u32 %rd2, %r6, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
}
"""


def _grid_outcome(engine, spin, **kw):
    m = load_ptx(GRIDK)
    g = GlobalMemory()
    out = g.upload(np.full(6 * 64, 0xFFFFFFFF, np.uint32))
    flag = g.upload(np.zeros(1, np.uint32))
    try:
        r = m.launch("g", 6, 64, [out, 20, spin, flag], gmem=g, engine=engine, **kw)
        got = ("ok", r.instructions, [(c, [w.regs["%r7"].tolist() for w in ws]) for c, ws in r.ctas])
    except EmulatorError as e:
        got = ("error", type(e).__name__, str(e))
    return got, g.download(out, 6 * 64 * 4).view(np.uint32).tolist()


@pytest.mark.parametrize("case", ["whole", "budget", "spin"])
def test_a_grid_where_one_cta_runs_out_or_waits_is_the_same_on_both_engines(case):
    """A grid of 6 CTAs of 2 warps: whole; the budget running out inside CTA 3; CTA 2 spinning on a flag nobody
    sets (a grid deadlock, reported after the other CTAs ran). The same result, error text, memory and
    instruction count on both engines."""
    whole, _ = _grid_outcome("reference", 99)
    per_cta = whole[1] // 6
    kw = {"max_instructions": 3 * per_cta + per_cta // 2} if case == "budget" else {}
    spin = 2 if case == "spin" else 99
    ref = _grid_outcome("reference", spin, **kw)
    fast = _grid_outcome("fast", spin, **kw)
    assert ref == fast
    if case == "whole":
        assert ref[0][0] == "ok" and ref[0][1] == whole[1]
    elif case == "budget":
        assert ref[0][0] == "error" and "instruction limit" in ref[0][2] and "CTA (3, 0, 0)" in ref[0][2]
        assert ref[1][:3 * 64] == [20 * c for c in range(3) for _ in range(64)]
        # (half a CTA's budget: CTA 3's first warp ran to its end, its second warp ran out)
        assert ref[1][3 * 64:] == [60] * 32 + [0xFFFFFFFF] * (32 + 2 * 64)
    else:
        assert ref[0][0] == "error" and "deadlock" in ref[0][2]
        assert ref[1][2 * 64:3 * 64] == [0xFFFFFFFF] * 64


def _full_table(g):
    """The global table built from scratch: (base, size, data pointer) of every allocation, sorted by base."""
    rows = sorted((b, buf.size, buf.ctypes.data) for b, buf in zip(g._bases, g._bufs))
    return np.array(rows, np.int64).reshape(-1, 3)


def test_a_global_table_grown_by_appending_equals_one_built_anew():
    """The table a GlobalMemory's launches share is appended to as allocations come (room kept after its rows):
    after each allocation it equals a table built from scratch, a table handed out earlier keeps its rows, and an
    allocation placed below the others (``map(at=)``) gives a table made anew, still sorted."""
    from emulator.machine.fastcore.engine import global_table, _pointer
    g = GlobalMemory()
    assert global_table(g).tolist() == [[-1, 0, 0]]          # no allocation: a row no address matches
    tables = []
    for k in range(11):                                       # (past the first block's room: it grows)
        g.upload(np.arange(k + 1, dtype=np.uint16)) if k % 3 else g.alloc(40 + k)
        t = global_table(g)
        assert t is global_table(g)                           # kept while nothing is allocated
        assert t.flags.c_contiguous and t.dtype == np.int64
        assert (t == _full_table(g)).all()
        assert _pointer(t) == t.ctypes.data
        tables.append((t, t.copy()))
    for t, was in tables:                                     # the rows a launch was given stay as they were
        assert (t == was).all()
    below = g.map(np.zeros(16, np.uint8), at=0x1000)         # below every other allocation
    t = global_table(g)
    assert (t == _full_table(g)).all() and t[0, 0] == below
    g.alloc(8)                                                # and appending again after that
    assert (global_table(g) == _full_table(g)).all()
    # a copy of the memory with its own allocation list (as an executor's task makes): its own table
    own = GlobalMemory()
    own.__dict__.update(g.__dict__)
    own._bases, own._bufs = list(g._bases), [b.copy() for b in g._bufs]
    assert (global_table(own) == _full_table(own)).all()
    assert (global_table(own)[:, 2] != global_table(g)[:, 2]).all()


@pytest.mark.parametrize("arr", [np.arange(7, dtype=np.float32), np.arange(12, dtype=np.int64).reshape(3, 4),
                                 np.array(5, np.uint8), np.zeros(0, np.float64), np.arange(8, dtype=np.int16)[::2],
                                 np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
                                 np.array([True, False]), b"\x01\x02\x03", [1.5, 2.5]])
def test_upload_and_download_fast_paths_give_the_same_bytes(arr):
    """``upload`` copies a C-contiguous array's bytes in one go, other inputs the general way: the same bytes, the
    same placement (256-byte aligned, a gap after each), and the uploaded buffer is the memory's own copy."""
    g = GlobalMemory()
    a = g.upload(arr)
    b = g.upload(arr)
    want = np.ascontiguousarray(arr if not isinstance(arr, bytes) else np.frombuffer(arr, np.uint8))
    raw = want.reshape(-1).view(np.uint8)
    assert a % 256 == 0 and b >= a + max(raw.size, 1) + GlobalMemory.GAP
    assert g.download(a, raw.size).tobytes() == raw.tobytes()
    assert g.download(np.int64(a), np.int32(raw.size)).tobytes() == raw.tobytes()   # (numpy integers: as before)
    if raw.size and isinstance(arr, np.ndarray):
        before = np.ascontiguousarray(arr).tobytes()
        g.view(a, 1)[0] ^= 0xFF                         # the memory's bytes are its own, not the array's
        assert np.ascontiguousarray(arr).tobytes() == before
    assert a not in g._uninit                           # uploaded bytes count as written (initcheck)


def test_alloc_and_upload_still_refuse_what_they_refused():
    from emulator.errors import MemoryAccessError
    g = GlobalMemory()
    for nbytes, fill, msg in ((-1, None, "negative"), (1.5, None, "must be an integer"), (True, None, "integer"),
                              (8, 256, "fill must be"), (8, -1, "fill must be"), (8, 1.5, "fill"),
                              (1 << 40, None, "more than one allocation")):
        with pytest.raises(MemoryAccessError, match=msg):
            g.alloc(nbytes, fill)
    assert g.allocations() == []
    a = g.alloc(np.int64(8), np.uint8(7))              # numpy integers, a float with an integer value: as before
    assert g.download(a, 8).tolist() == [7] * 8 and a not in g._uninit
    c = g.alloc(4.0)
    assert g.download(c, 4).tolist() == [0] * 4 and c in g._uninit
    with pytest.raises(MemoryAccessError, match="no device bytes"):
        g.upload(np.array(["x"]))
    with pytest.raises(MemoryAccessError, match="no device bytes"):
        g.upload(np.array([object()]))
    with pytest.raises(MemoryAccessError, match="must be an integer"):
        g.download(a, 1.5)
    with pytest.raises(MemoryAccessError, match="outside every global allocation"):
        g.download(a, 9)
