"""The fast engine's CTA loop runs a CTA on its arrays alone and builds the warp objects (``KernelWarp``,
``FastWarp``) only when something reads them: an instruction handed back to the executors, the Python scheduler
taking the CTA over, the sanitizer, or ``result.ctas`` (docs/speed.md, "The fixed cost of a launch"). Warps built
late must equal warps built before the CTA ran: registers, PCs, exit and wait masks, issue and branch counts,
executed instructions, special registers, parameters, bank records."""
import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.machine import cta as cta_mod
from emulator.machine import kernel_warp

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# shared stores and loads around a barrier (bank records), a loop (backward branches), and in CTA 1 an instruction
# the loop hands back to the executors (mov of %clock64) in warp 1 only
KERNEL = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 stride)
{
    .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
    .shared .align 4 .b8 sm[8192];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [stride];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r1, %r9, 0;
    mov.u32 %r4, sm;
    add.u32 %r4, %r4, %r3;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    ld.shared.u32 %r5, [%r4];
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
LOOP:
    add.u32 %r6, %r6, %r7;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, %r1;
    @%p1 bra LOOP;
    cvt.rn.f32.u32 %f1, %r6;
    mul.f32 %f2, %f1, 0f3F000000;
    shr.u32 %r8, %r1, 5;
    setp.eq.u32 %p2, %r8, 1;
    setp.eq.u32 %p3, %r2, 1;
    and.pred %p2, %p2, %p3;
    @!%p2 bra DONE;
    mov.u64 %rd6, %clock64;
    cvt.u32.u64 %r10, %rd6;
    add.u32 %r6, %r6, %r10;
DONE:
    mad.lo.u32 %r13, %r2, 4, %r4;
    add.u32 %r14, %r6, 1;
    st.shared.u32 [%r13+4096], %r14;                      // (each CTA at its own offset)
    mul.wide.u32 %rd2, %r1, 4;
    mad.lo.u32 %r11, %r2, 80, %r1;
    mul.wide.u32 %rd3, %r11, 4;
    add.s64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r6;
    ret;
}
"""
GRID, BLOCK = 3, 80         # three warps a CTA, the last one half full


def _state(res):
    """Everything a reader of ``result.ctas`` sees of each warp, as plain values."""
    out = []
    for cid, ws in res.ctas:
        for w in ws:
            regs = {n: np.array(w.regs[n]).tobytes() for n in sorted(w.regs)}
            out.append({
                "cta": tuple(cid), "warp": w.warp_id, "regs": regs, "pc": w.pc.tolist(), "exited": w.exited.tolist(),
                "waiting": w.waiting.tolist(), "present": w.present.tolist(), "held": w.held.tolist(),
                "issued": w.issued, "clock": w.clock, "back_taken": w.back_taken, "executed": w.fast.executed if w.fast else None,
                "specials": {n: np.asarray(v).tolist() for n, v in sorted(w.special_values.items())},
                "param": w.param.tobytes(), "committed": np.asarray(w.cp_async.committed).tolist(),
                "banks": [(r.op, r.addrs[r.mask].tolist(), r.mask.tolist()) for r in w._smem_log],
                "dropped": w.smem_log_dropped, "depth": w.depth, "smem": w.smem.tobytes()})
    return out


def _launch(module, stride=4, grid=GRID, keep=None, options=None):
    g = GlobalMemory()
    out = g.upload(np.zeros(grid * 80 + 256, np.uint32))
    res = module.launch("k", grid, BLOCK, [out, stride], gmem=g, engine="fast", keep=keep, options=options)
    return res, g.download(out, (grid * 80 + 256) * 4).tobytes()


def _eager(monkeypatch):
    """Build every CTA's warps before it runs (what the engine did before warps were built on demand)."""
    real = cta_mod.CTA.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        self.warps
    monkeypatch.setattr(cta_mod.CTA, "__init__", init)


class _Built:
    def __init__(self, monkeypatch):
        self.n = 0
        real = kernel_warp.KernelWarp.__init__

        def init(w, *a, **k):
            self.n += 1
            real(w, *a, **k)
        monkeypatch.setattr(kernel_warp.KernelWarp, "__init__", init)


@pytest.mark.parametrize("stride", [4, 8])
def test_warps_built_after_the_run_equal_warps_built_before(stride, monkeypatch):
    m = load_ptx(KERNEL)
    lazy, lazy_mem = _launch(m, stride)
    lazy_state = _state(lazy)
    with monkeypatch.context() as mp:
        _eager(mp)
        eager, eager_mem = _launch(m, stride)
    eager_state = _state(eager)
    assert lazy_mem == eager_mem
    assert len(lazy_state) == len(eager_state) == GRID * 3
    for a, b in zip(lazy_state, eager_state):
        for key in a:
            assert a[key] == b[key], f"CTA {a['cta']} warp {a['warp']}: {key} differs"
    # the comparison can fail: a warp of CTA 1 ran the handed-back instruction, the others did not
    w1 = [s for s in lazy_state if s["cta"][0] == 1 and s["warp"] == 1][0]
    w0 = [s for s in lazy_state if s["cta"][0] == 1 and s["warp"] == 0][0]
    assert w1["regs"]["%rd6"] != w0["regs"]["%rd6"]
    assert w1["banks"] and w1["banks"][0][0] == "st" and w1["back_taken"] > 0


def test_the_reference_engine_agrees():
    m = load_ptx(KERNEL)
    fast, fast_mem = _launch(m)
    g = GlobalMemory()
    out = g.upload(np.zeros(GRID * 80 + 256, np.uint32))
    ref = m.launch("k", GRID, BLOCK, [out, 4], gmem=g, engine="reference")
    assert fast_mem == g.download(out, (GRID * 80 + 256) * 4).tobytes()
    for a, b in zip(_state(fast), _state(ref)):
        for key in ("pc", "exited", "waiting", "issued", "banks", "specials", "param", "smem"):
            assert a[key] == b[key], f"CTA {a['cta']} warp {a['warp']}: {key} differs from the reference"
        for name, bits in b["regs"].items():         # (the fast engine's arena holds every register, zero unwritten)
            assert a["regs"].get(name, bits) == bits, f"CTA {a['cta']} warp {a['warp']}: {name} differs"


def test_warps_are_built_only_when_read(monkeypatch):
    m = load_ptx(KERNEL)
    _launch(m)                                  # translated, compiled
    built = _Built(monkeypatch)
    res, _ = _launch(m)
    assert built.n == 3, built.n                # CTA 1's warps, for the instruction handed back to the executors
    res.ctas
    assert built.n == 3 * GRID, built.n         # the others when result.ctas is read
    res.ctas
    assert built.n == 3 * GRID
    res, _ = _launch(m, keep="none")
    assert built.n == 4 * GRID and res.ctas == []


@pytest.mark.parametrize("keep", ["last", "none"])
def test_kept_ctas_keep_their_records_when_others_are_dropped(keep):
    m = load_ptx(KERNEL)
    all_, mem_all = _launch(m, keep="all")
    some, mem_some = _launch(m, keep=keep)
    assert mem_all == mem_some
    want = _state(all_)[-3:] if keep == "last" else []
    assert _state(some) == want


def test_bank_log_bound_and_sanitizer_see_the_same_warps():
    from emulator import WarpOptions
    m = load_ptx(KERNEL)
    capped, _ = _launch(m, options=WarpOptions(bank_log=1))
    for s in _state(capped):
        assert len(s["banks"]) <= 1 and s["dropped"] >= 1
    g = GlobalMemory()
    out = g.upload(np.zeros(GRID * 80 + 256, np.uint32))
    res = m.launch("k", GRID, BLOCK, [out, 4], gmem=g, engine="fast", sanitize="all")
    assert res.reports == []
    plain, _ = _launch(m)
    assert [s["banks"] for s in _state(res)] == [s["banks"] for s in _state(plain)]


def test_launch_shapes_share_no_special_registers():
    """A CTA's initial arrays are kept per launch shape across launches: other grids and blocks get their own."""
    m = load_ptx(HEAD + """
.visible .entry s(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %nctaid.x;
    mov.u32 %r5, %ctaid.y;
    mad.lo.u32 %r6, %r2, %r3, %r1;
    mad.lo.u32 %r6, %r5, 1000, %r6;
    mul.wide.u32 %rd2, %r6, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5};
    ret;
}
""")
    for grid, block in (((3, 1), 64), ((5, 2), 64), ((3, 1), 96), ((2, 2), 33), ((3, 1), 64)):
        got = {}
        for engine in ("fast", "reference"):
            g = GlobalMemory()
            out = g.upload(np.zeros(4 * 3000, np.uint32))
            m.launch("s", grid, block, [out], gmem=g, engine=engine)
            got[engine] = g.download(out, 16 * 3000).view(np.uint32).reshape(-1, 4)
        assert (got["fast"] == got["reference"]).all(), (grid, block)
        row = got["fast"][1000 * (grid[1] - 1) + block * (grid[0] - 1)]
        assert row.tolist() == [grid[0] - 1, block, grid[0], grid[1] - 1], (grid, block)


def _count_fast_ctas(monkeypatch):
    """A list that grows by one each time a CTA loop's arrays are made (``FastCTA.__init__``), with the grid loop off
    (it runs CTAs on one set of arrays: tests/test_gridloop.py)."""
    from emulator.machine.fastcore import engine, gridloop
    monkeypatch.setattr(gridloop, "ON", False)
    made = []
    real = engine.FastCTA.__init__

    def init(self, *a, **k):
        made.append(1)
        real(self, *a, **k)
    monkeypatch.setattr(engine.FastCTA, "__init__", init)
    return made


def test_ctas_nobody_keeps_hand_their_arrays_on(monkeypatch):
    """A CTA the launch does not keep, whose warps were never built, gives its arrays to the next CTA, which sets
    every byte of them again: the same results as CTAs on fresh arrays."""
    from emulator.machine.fastcore import engine
    m = load_ptx(KERNEL)
    _launch(m)
    made = _count_fast_ctas(monkeypatch)
    grid = 7
    engine.translation(m.program("k")).__dict__.pop("_cta_pool", None)     # (arrays of the launch above: fresh ones)
    fresh, fresh_mem = _launch(m, grid=grid)
    assert len(made) == grid
    made.clear()
    last, last_mem = _launch(m, grid=grid, keep="last")
    assert last_mem == fresh_mem
    assert _state(last) == _state(fresh)[-3:]
    # CTA 1 hands an instruction back (its warps are built: its arrays are not passed on), the others pass theirs
    assert len(made) < grid - 2, len(made)
    made.clear()
    none, none_mem = _launch(m, grid=grid, keep="none")
    assert none_mem == fresh_mem and none.ctas == [] and len(made) < grid - 2


def test_arrays_of_dropped_results_go_to_the_next_launch(monkeypatch):
    """A CTA whose warps were never built hands its arrays to the translation's next launch once nothing holds it
    (its LaunchResult dropped); a CTA whose warps were read keeps them. Same results as on fresh arrays."""
    import gc
    from emulator.machine.fastcore import engine
    m = load_ptx(KERNEL)
    tr = engine.translation(m.program("k"))
    made = _count_fast_ctas(monkeypatch)
    grid = 5
    tr.__dict__.pop("_cta_pool", None)
    fresh, fresh_mem = _launch(m, grid=grid)
    want = _state(fresh)                       # (its warps are built: its arrays stay with it)
    assert len(made) == grid
    del fresh
    gc.collect()
    assert not tr.__dict__.get("_cta_pool")
    made.clear()
    for _ in range(3):                          # each launch's result is dropped before the next one
        res, mem = _launch(m, grid=grid)
        assert mem == fresh_mem
        del res
    assert len(tr.__dict__["_cta_pool"]) >= grid - 2
    assert len(made) < 2 * grid, len(made)      # (the first of the three made its own, minus a hand-back's)
    made.clear()
    again, again_mem = _launch(m, grid=grid)
    assert len(made) <= 2, len(made)            # (CTA 1 hands an instruction back: its warps are built)
    assert again_mem == fresh_mem and _state(again) == want


def test_a_block_something_else_views_stays_out_of_the_pool():
    """A CTA's arrays go to the next launch only when nothing outside them views the block: a view of a dropped
    CTA's shared memory (taken without building its warps) keeps its bytes."""
    import gc
    from emulator.machine.fastcore import engine
    m = load_ptx(KERNEL)
    tr = engine.translation(m.program("k"))
    tr.__dict__.pop("_cta_pool", None)
    res, _ = _launch(m, grid=1)
    cta = res._ctas[0].cta
    assert cta.__dict__.get("_warps") is None
    held = cta._fast_arrays.smem[:16]
    held[:] = 7
    del res, cta
    gc.collect()
    assert not tr.__dict__.get("_cta_pool")     # (with the view gone, the same CTA would have been pooled)
    for _ in range(2):
        r, _ = _launch(m, grid=1)
        del r
    assert (held == 7).all()
    del held
    res, _ = _launch(m, grid=1)
    del res
    gc.collect()
    assert tr.__dict__.get("_cta_pool")
