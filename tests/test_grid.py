"""launch(..., workers=N): a grid's CTAs on several processes give the serial run's results exactly."""
import io

import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, load_ptx
from emulator.machine import grid as G

FMT = b"cta %d sum %d\n\0"
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 $str[%d] = {%s};
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 n)
{
    .local .align 8 .b8 depot[8];
    .reg .b32 %%r<12>; .reg .b64 %%rd<12>; .reg .pred %%p<3>;
    .shared .align 4 .b32 acc[1];
    ld.param.u64 %%rd1, [pin];
    ld.param.u64 %%rd2, [pout];
    ld.param.u32 %%r9, [n];
    mov.u32 %%r1, %%ctaid.x;
    mov.u32 %%r2, %%ntid.x;
    mov.u32 %%r3, %%tid.x;
    mad.lo.s32 %%r4, %%r1, %%r2, %%r3;
    setp.ge.u32 %%p1, %%r4, %%r9;
    @%%p1 bra DONE;
    mul.wide.u32 %%rd3, %%r4, 4;
    add.s64 %%rd4, %%rd1, %%rd3;
    ld.global.u32 %%r5, [%%rd4];
    mul.lo.s32 %%r6, %%r5, 3;
    xor.b32 %%r6, %%r6, %%r4;
    add.s64 %%rd5, %%rd2, %%rd3;
    st.global.u32 [%%rd5], %%r6;
    setp.ne.u32 %%p2, %%r3, 0;
    @%%p2 bra DONE;
    mov.u64 %%rd6, depot;
    cvta.local.u64 %%rd7, %%rd6;
    st.local.u32 [%%rd6], %%r1;
    st.local.u32 [%%rd6+4], %%r6;
    mov.u64 %%rd8, $str;
    cvta.global.u64 %%rd9, %%rd8;
    {
    .param .b64 param0;
    st.param.b64 [param0], %%rd9;
    .param .b64 param1;
    st.param.b64 [param1], %%rd7;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    }
DONE:
    ret;
}
""" % (len(FMT), ", ".join(str(b) for b in FMT))


def _launch(module, n, grid, workers, **kw):
    g = GlobalMemory()
    x = np.arange(n, dtype=np.uint32) * 7919
    pin, pout = g.upload(x), g.upload(np.zeros(n, np.uint32))
    out = io.StringIO()
    r = module.launch("k", grid, 64, [pin, pout, n], gmem=g, out=out, workers=workers, **kw)
    return g, r, out.getvalue()


def test_workers_give_the_serial_memory_printf_order_and_registers():
    module = load_ptx(KERNEL)
    n = 64 * 23 - 5
    g1, r1, o1 = _launch(module, n, 23, 1)
    g2, r2, o2 = _launch(module, n, 23, 2)
    assert [b.tobytes() for b in g1._bufs] == [b.tobytes() for b in g2._bufs]
    assert o1 == o2 and r1.stdout == r2.stdout and o1.count("\n") == 23
    assert r1.instructions == r2.instructions
    assert [c for c, _ in r1.ctas] == [c for c, _ in r2.ctas]
    for (_, ws1), (_, ws2) in zip(r1.ctas, r2.ctas):
        for w1, w2 in zip(ws1, ws2):
            assert isinstance(w2, G.WorkerWarp)
            for name in ("%r4", "%r6", "%p1"):
                assert w1.read(name).tobytes() == w2.read(name).tobytes()


def test_chunks_cover_the_grid_in_order():
    ids = list(range(103))
    for workers in (1, 2, 3, 8, 200):
        parts = G.chunks(ids, workers)
        assert [i for p in parts for i in p] == ids and all(parts)


def test_atomics_run_serially():
    module = load_ptx(KERNEL.replace("st.global.u32 [%rd5], %r6;", "atom.global.add.u32 %r7, [%rd2], %r6;"))
    assert G.serial_only(module.program("k")) is not None
    assert G.serial_only(load_ptx(KERNEL).program("k")) is None
    g1, r1, _ = _launch(module, 300, 5, 1)
    g2, r2, _ = _launch(module, 300, 5, 2)
    assert [b.tobytes() for b in g1._bufs] == [b.tobytes() for b in g2._bufs]


@pytest.mark.parametrize("kw", [{"max_instructions": 200}, {}])
def test_errors_and_the_budget_are_the_serial_runs(kw):
    module = load_ptx(KERNEL)
    n = 64 * 9
    errs = []
    for workers in (1, 3):
        g = GlobalMemory()
        pin = g.upload(np.arange(n, dtype=np.uint32))
        pout = g.upload(np.zeros(n - 100, np.uint32)) if not kw else g.upload(np.zeros(n, np.uint32))
        with pytest.raises(EmulatorError) as e:
            module.launch("k", 9, 64, [pin, pout, n], gmem=g, out=io.StringIO(), workers=workers, **kw)
        errs.append((str(e.value), [b.tobytes() for b in g._bufs]))
    assert errs[0] == errs[1]


def test_workers_argument_is_checked():
    with pytest.raises(EmulatorError, match="workers"):
        _launch(load_ptx(KERNEL), 64, 1, 0)


def test_an_executor_runs_the_chunks_with_the_serial_results():
    """The cluster interface: any concurrent.futures-style executor (here a local process pool; Dask's
    Client.get_executor() and Ray's executors plug in the same way) gets picklable tasks."""
    import concurrent.futures
    import multiprocessing
    module = load_ptx(KERNEL)
    n = 64 * 11 - 3
    g1, r1, o1 = _launch(module, n, 11, 1)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as ex:
        g2, r2, o2 = _launch(module, n, 11, 3, executor=ex)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        g3, r3, o3 = _launch(module, n, 11, 2, executor=ex)
    for g, r, o in ((g2, r2, o2), (g3, r3, o3)):
        assert [b.tobytes() for b in g1._bufs] == [b.tobytes() for b in g._bufs]
        assert o1 == o and r1.stdout == r.stdout and r1.instructions == r.instructions
        assert [c for c, _ in r1.ctas] == [c for c, _ in r.ctas]
        assert isinstance(r.ctas[0][1][0], G.WorkerWarp)
        assert r.ctas[4][1][1].read("%r6").tobytes() == r1.ctas[4][1][1].read("%r6").tobytes()
