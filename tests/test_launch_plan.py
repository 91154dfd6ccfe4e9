"""A launch shape's plan (``machine.module._LaunchPlan``): a repeated launch of a kernel in the same shape takes what
depends only on the shape from the plan made at its first planned launch, and makes the rest (arguments, memory,
options, result) anew. These tests fail if a plan hands a launch anything stale: launches of one module that change
the grid, the block, the shared bytes, the arguments, the memory, ``keep`` or the options, one after the other, give
what the same launch gives on a fresh module and on the reference engine; errors stay the general path's."""
import gc
import io
import weakref

import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, WarpOptions, load_ptx
from emulator.errors import OperandError, WarpSyncError
from emulator.machine import module as M
from emulator.machine.cta import CTA

from test_gridloop import KERNEL       # modes: 0 hands back, 1 prints, 2 deadlocks, 3 breaks a rule, 4 nothing
from test_coresident import SPIN_SHARED


@pytest.fixture
def planned(monkeypatch):
    """Count the launches that took a plan."""
    seen = []
    run = M.Module._launch_planned

    def counted(self, plan, *a):
        seen.append(plan.nctas)
        return run(self, plan, *a)
    monkeypatch.setattr(M.Module, "_launch_planned", counted)
    return seen


def _outcome(m, engine, grid, block, k, mode, keep=None, gmem=None, **kw):
    g = gmem if gmem is not None else GlobalMemory()
    n = int(np.prod(grid)) * block
    out = g.upload(np.full(n, 0xFFFFFFFF, np.uint32))
    printed = io.StringIO()
    try:
        r = m.launch("g", grid, block, [out, k, mode], gmem=g, engine=engine, keep=keep, out=printed, **kw)
        got = ("ok", r.instructions, r.notes, [(c, [w.regs["%r10"].tolist() for w in ws]) for c, ws in r.ctas],
               [type(u).__name__ for u in r.async_units])
    except EmulatorError as e:
        got = ("error", type(e).__name__, str(e))
    return got, printed.getvalue(), g.download(out, 4 * n).view(np.uint32).tolist()


# (grid, block, k, mode, keep): one CTA and several, the CTA that needs Python at each place
SEQUENCE = [((1, 1, 1), 64, 0, 4, None), ((1, 1, 1), 64, 0, 4, None), ((1, 1, 1), 64, 0, 1, "all"),
            ((1, 1, 1), 32, 0, 0, "none"), ((3, 2, 1), 64, 4, 1, None), ((1, 1, 1), 64, 0, 3, "last"),
            ((3, 2, 1), 64, 9, 4, "none"), ((1, 1, 1), 96, 0, 2, None), ((1, 1, 1), 64, 0, 4, "all"),
            ((2, 1, 1), 64, 1, 0, "last"), ((1, 1, 1), 64, 5, 4, None), ((1, 1, 1), 64, 0, 0, None)]


@pytest.mark.parametrize("engine", ["fast", "auto"])
def test_launches_that_change_shape_arguments_and_keep_match_a_fresh_module_and_the_reference(engine, planned):
    m = load_ptx(KERNEL)
    for grid, block, k, mode, keep in SEQUENCE:
        got = _outcome(m, engine, grid, block, k, mode, keep)
        fresh = _outcome(load_ptx(KERNEL, cache=False), "fast", grid, block, k, mode, keep)
        ref = _outcome(load_ptx(KERNEL, cache=False), "reference", grid, block, k, mode, keep)
        assert got == ref, (grid, block, k, mode, keep)
        assert fresh == ref, (grid, block, k, mode, keep)
    assert 1 in planned and 6 in planned and 2 in planned, planned     # one CTA and grids took their plans
    assert len(planned) >= len(SEQUENCE) - 4, planned


def test_each_launch_has_its_own_memory_parameters_and_local_depots(planned):
    # the kernel has a .global format string and a .local buffer: every memory gets its own addresses
    m = load_ptx(KERNEL)
    mems = [GlobalMemory() for _ in range(3)]
    mems[1].alloc(4096)                      # (another layout: the variables and depots land elsewhere)
    for rnd in range(2):
        for i, g in enumerate(mems):
            for mode in (1, 4):
                got = _outcome(m, "fast", (1, 1, 1), 64, 0, mode, gmem=g)
                ref = _outcome(load_ptx(KERNEL, cache=False), "reference", (1, 1, 1), 64, 0, mode,
                               gmem=_copy(g) if rnd else None)
                assert got[0] == ref[0] and got[1] == ref[1], (rnd, i, mode)
                assert got[2] == ref[2]
    assert len(planned) >= 10


def _copy(g):
    """A new memory laid out as ``g`` (the same allocations), so that addresses printed or stored match."""
    h = GlobalMemory()
    for a, size in g.allocations():
        got = h.alloc(size)
        assert got == a
    return h


def test_shared_bytes_and_block_make_other_plans():
    text = """.version 8.0
.target sm_90
.address_size 64
.visible .entry s(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>;
    .shared .align 4 .b8 buf[64];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %dynamic_smem_size;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %total_smem_size;
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
    ret;
}
"""
    m = load_ptx(text)
    for shared, block in [(0, 32), (0, 32), (512, 32), (512, 32), (0, 64), (4096, 64), (0, 32)]:
        for engine in ("fast", "reference"):
            g = GlobalMemory()
            out = g.upload(np.zeros(4 * block, np.uint32))
            m.launch("s", 1, block, [out], gmem=g, shared_bytes=shared, engine=engine)
            got = g.download(out, 16 * block).view(np.uint32).reshape(block, 4)
            assert got[:, 0].tolist() == list(range(block))
            assert (got[:, 1] == shared).all() and (got[:, 2] == block).all() and (got[:, 3] == 64 + shared).all()


def test_errors_after_a_plan_are_the_general_paths():
    def err(m, *a, **kw):
        try:
            m.launch(*a, **kw)
        except EmulatorError as e:
            return type(e).__name__, str(e)
        return None
    g = GlobalMemory()
    out = g.upload(np.zeros(64, np.uint32))
    bad = [(("g", 1, 64, [out, 0]), {}),                                  # an argument short
           (("g", 1, 64, [out, 1 << 40, 4]), {}),                         # does not fit .u32
           (("g", 1, 64, [out, 1.5, 4]), {}),                             # a float for an integer
           (("g", 1, 64, [out, "0", 4]), {}),
           (("g", 1, 64, [out, 0, 4]), {"keep": "some"}),
           (("g", 1, 64, [out, 0, 4]), {"gmem": "memory"}),
           (("g", 1, 64, [out, 0, 4]), {"out": 3}),
           (("g", 1, 64, [out, 0, 4]), {"max_instructions": -1}),
           (("g", 1, 64, [out, 0, 4]), {"engine": "fastest"}),
           (("g", 1, 64, [out, 0, 4]), {"options": "eager"}),
           (("g", 0, 64, [out, 0, 4]), {}),
           (("g", 1, 2048, [out, 0, 4]), {}),
           (("h", 1, 64, [out, 0, 4]), {}),
           (("g", 1, 64, [out, 0, 4]), {"shared_bytes": 1 << 20}),
           (("g", 1, 64, [out, 0, 4]), {"max_instructions": 10})]         # the budget runs out
    for a, kw in bad:
        kw = {"gmem": g, "engine": "fast", **kw}
        first = err(load_ptx(KERNEL), *a, **kw)             # a module's first launch: the general path
        m = load_ptx(KERNEL)
        for _ in range(2):                                   # the shape planned by good launches first
            assert err(m, "g", 1, 64, [out, 0, 4], gmem=g, engine="fast") is None
        assert first is not None, a
        assert err(m, *a, **kw) == first, (a, kw)
        assert err(m, "g", 1, 64, [out, 0, 4], gmem=g, engine="fast") is None     # and the plan still works


def test_a_lone_cta_that_spins_is_reported_as_the_grid_scheduler_reports_it(planned):
    m = load_ptx(SPIN_SHARED)
    msgs = []
    for _ in range(3):
        with pytest.raises(WarpSyncError, match=r"^CTA \(0, 0, 0\): deadlock: .*warp 0 lanes 0-31 spin") as e:
            m.launch("wait_shared", 1, 32, [0], engine="fast")
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] == msgs[2]
    assert planned


def test_options_printf_to_stdout_and_a_dropped_memory(planned, capsys):
    m = load_ptx(KERNEL)
    for opts in (None, WarpOptions(bank_log=0), WarpOptions(cp_async="eager"), None):
        got = _outcome(m, "fast", (1, 1, 1), 64, 0, 1, options=opts)
        ref = _outcome(load_ptx(KERNEL, cache=False), "reference", (1, 1, 1), 64, 0, 1, options=opts)
        assert got == ref
    g = GlobalMemory()
    out = g.upload(np.zeros(64, np.uint32))
    for _ in range(2):
        m.launch("g", 1, 64, [out, 0, 1], gmem=g, engine="fast")          # printf to sys.stdout
    assert capsys.readouterr().out.splitlines() == [f"cta 0 tid {t}" for t in (0, 1, 32, 33)] * 2
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None                                   # no plan keeps a launch's memory alive
    assert len(planned) >= 4


def test_a_planned_cta_has_the_fields_init_gives():
    m = load_ptx(KERNEL)
    g = GlobalMemory()
    out = g.upload(np.zeros(128, np.uint32))
    for _ in range(2):
        m.launch("g", 1, 64, [out, 0, 4], gmem=g, engine="fast")
    plan = next(p for p in m._plans.values() if p is not None)
    assert plan.ready()
    fast = plan.fast_launch(g)
    made = (g, None, M._param_bytes(plan.entry, plan.prog, [out, 0, 4]), plan.no_local, None, m._variables(g), None,
            fast)
    a = CTA.planned(plan.cta_fields, (0, 0, 0), None, None, [100, 100], made, fast)
    b = CTA(m, plan.prog, (0, 0, 0), plan.grid, plan.block, plan.smem_size, g, made[2], made[5], plan.no_local, None,
            None, None, None, [100, 100], fast)
    da, db = dict(vars(a)), dict(vars(b))
    assert set(da) - {"_start_memo"} == set(db)
    for key in ("fast_cta", "_fast_arrays", "smem", "params", "smem_inflight", "_start_memo", "_make"):
        da.pop(key, None), db.pop(key, None)
    assert da.keys() == db.keys()
    for key in da:
        assert type(da[key]) is type(db[key]), key
        if key == "_cluster":
            assert (da[key].dims, da[key].size, da[key].explicit) == (db[key].dims, db[key].size, db[key].explicit)
        elif not isinstance(da[key], (np.ndarray, dict)) or key in ("barriers",):
            assert da[key] == db[key], key
    assert a.fast_cta.block.tobytes() == b.fast_cta.block.tobytes()      # the same arrays, byte for byte
    fast.release()


def test_a_planned_result_is_the_dataclasss():
    from emulator.machine.result import LaunchResult
    a, b = LaunchResult.made("k", (2, 1, 1), (64, 1, 1)), LaunchResult("k", (2, 1, 1), (64, 1, 1))
    assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))
    assert all(a.__dict__[k] is not b.__dict__[k] for k in ("_ctas", "stdout", "_units", "notes", "reports"))
