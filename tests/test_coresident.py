"""CTAs resident together: kernels whose CTAs wait on each other through global memory, replayed against the
H100 bit for bit (tests/data/kernels/coresident.ptx, compiled from tools/hwcapture/kernels/coresident.cu with
CUTLASS's cutlass/barrier.h; captured by tools/hwcapture/kernels/coresident_run.py), the occupancy model against
the driver's occupancy calculator, and the grid deadlock report."""
import json
import os

import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.errors import OperandError, WarpSyncError
from emulator.machine import residency
from emulator.machine.residency import occupancy

HERE = os.path.join(os.path.dirname(__file__), "data", "kernels")
CAP = np.load(os.path.join(HERE, "coresident_h100.npz"), allow_pickle=False)
META = json.loads(str(CAP["meta"]))
CASES = {name: launches for name, launches in META["cases"]}
SLOW = {"cas_ring"}


@pytest.fixture(scope="module")
def module():
    return load_ptx(open(os.path.join(HERE, "coresident.ptx")).read())


def _inputs(name):
    out, i = [], 0
    while f"{name}/in{i}" in CAP:
        out.append(CAP[f"{name}/in{i}"])
        i += 1
    return out


def replay(module, name, **kw):
    bufs = _inputs(name)
    g = GlobalMemory()
    addrs = [g.upload(b) for b in bufs]
    res = None
    for kernel, grid, block, smem, args, _pdl in CASES[name]:
        res = module.launch(kernel, tuple(grid), tuple(block), [addrs[v] if k == "b" else v for k, v in args],
                            gmem=g, shared_bytes=smem, **kw)
    return [g.download(a, b.nbytes).view(b.dtype).reshape(b.shape) for a, b in zip(addrs, bufs)], res


def _check(name, outs):
    assert bool(CAP[f"{name}/same"]), f"{name}: the GPU's three runs differ"
    for i, o in enumerate(outs):
        want = CAP[f"{name}/out{i}"]
        bad = np.flatnonzero(o.view(np.uint8) != want.view(np.uint8))
        assert bad.size == 0, f"{name} buffer {i}: {bad.size} bytes differ from the H100, first at byte {bad[0]}"


@pytest.mark.parametrize("name", [n for n in CASES if n not in SLOW])
def test_replay_matches_h100(module, name):
    outs, _ = replay(module, name, engine="fast")
    _check(name, outs)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_replay_matches_h100_slow(module, name):
    outs, _ = replay(module, name, engine="fast")
    _check(name, outs)


def test_the_replay_can_fail():
    # the order of the split-K additions is the semaphore's: the same sums in another order differ in bits
    fwd, rev = CAP["splitk_sem_forward/out2"], CAP["splitk_sem_reverse/out2"]
    a, b = _inputs("splitk_sem_forward")[:2]
    a2, b2 = _inputs("splitk_sem_reverse")[:2]
    assert not np.array_equal(fwd.view(np.uint32), (a @ b).astype(np.float32).view(np.uint32))
    assert np.allclose(fwd, a @ b, atol=1e-3) and np.allclose(rev, a2 @ b2, atol=1e-3)


def test_reference_engine_and_seeded_schedule(module):
    ref, _ = replay(module, "nap_chain", engine="reference")
    _check("nap_chain", ref)
    s1, a = replay(module, "nap_chain", schedule=("random", 5))
    s2, b = replay(module, "nap_chain", schedule=("random", 5))
    _check("nap_chain", s1)
    assert a.instructions == b.instructions and [x.tobytes() for x in s1] == [x.tobytes() for x in s2]


def test_occupancy_equals_the_drivers():
    rows = CAP["occupancy"]
    assert META["sms"] == residency.SMS and len(rows) > 300
    for k, threads, dyn, regs, static, active in rows.tolist():
        occ = occupancy(threads, dyn + static, regs)
        assert occ.per_sm == active, (META["occupancy_kernels"][k], threads, dyn, regs, occ.limits)
    # every limit is hit somewhere in the table
    hit = {min(occupancy(t, d + s, r).limits.items(), key=lambda kv: kv[1])[0] for _, t, d, r, s, _ in rows.tolist()}
    assert {"registers", "shared memory", "warps", "CTAs"} <= hit


def test_occupancy_of_a_kernel(module):
    occ = module.occupancy("grid_barrier", block=64, shared_bytes=200 * 1024)
    assert (occ.per_sm, occ.resident, occ.regs_from) == (1, 132, "default")
    assert "limited by shared memory" in occ.describe()
    assert module.occupancy("streamk_fixup", block=1024, regs_per_thread=40).per_sm == 1
    with pytest.raises(OperandError, match="regs_per_thread must be 1..255"):
        module.occupancy("streamk_fixup", block=128, regs_per_thread=256)
    with pytest.raises(OperandError, match="too many resources"):
        module.launch("grid_barrier", 1, 1024, [0, 0, 0], regs_per_thread=72)


def test_maxnreg_sets_the_register_count():
    text = open(os.path.join(HERE, "coresident.ptx")).read()
    assert load_ptx(text).occupancy("cas_lock", 1024).regs_from == "default"
    j = text.index("{", text.index(".visible .entry cas_lock("))
    occ = load_ptx(text[:j] + ".maxnreg 64\n" + text[j:]).occupancy("cas_lock", 1024)
    assert (occ.regs_per_thread, occ.regs_from, occ.per_sm) == (64, ".maxnreg", 1)
    assert load_ptx(text[:j] + ".maxnreg 64\n" + text[j:]).occupancy("cas_lock", 1024, regs_per_thread=16).per_sm == 2
    # Triton's warp-specialized kernels say .maxnreg 256; ptxas allocates at most 255 (the kernel runs on an H100)
    occ = load_ptx(text[:j] + ".maxnreg 256\n" + text[j:]).occupancy("cas_lock", 256)
    assert (occ.regs_per_thread, occ.regs_from, occ.per_sm) == (255, ".maxnreg", 1)


def test_grid_barrier_beyond_residency_is_a_deadlock(module, monkeypatch):
    # 5 CTAs on a grid barrier, 200 KB of shared memory each (1 per SM), on an H100 of 4 SMs: the fifth
    # never becomes resident. (The 132-SM case is test_grid_barrier_deadlock_on_132_sms.)
    monkeypatch.setattr(residency, "SMS", 4)
    g = GlobalMemory()
    x = g.upload(np.ones(5 * 2, np.float32))
    c = g.upload(np.zeros(1, np.int32))
    with pytest.raises(WarpSyncError) as e:
        module.launch("grid_barrier", 5, 64, [x, c, 1], gmem=g, shared_bytes=200 * 1024, engine="fast")
    msg = str(e.value)
    assert "grid deadlock: 4 resident CTA(s)" in msg
    assert "CTA (4, 0, 0) could not be resident" in msg
    assert "4 CTAs (1 per SM on 4 SMs, limited by shared memory" in msg
    for k in range(4):           # every waiting CTA, and the loop it spins in
        assert f"CTA ({k}, 0, 0): warp 0 lanes 0 spin: the loop from line" in msg
    assert "ld.global.acquire.gpu.b32" in msg
    # with one SM more, all five are resident and the barrier completes
    monkeypatch.setattr(residency, "SMS", 5)
    c2 = g.upload(np.zeros(1, np.int32))
    module.launch("grid_barrier", 5, 64, [x, c2, 1], gmem=g, shared_bytes=200 * 1024, engine="fast")
    assert g.download(c2, 4).view(np.int32)[0] == 5


def test_grid_barrier_deadlock_on_132_sms(module):
    g = GlobalMemory()
    x = g.upload(np.ones(133 * 2, np.float32))
    c = g.upload(np.zeros(1, np.int32))
    with pytest.raises(WarpSyncError, match=r"CTA \(132, 0, 0\) could not be resident: the H100 holds at most 132 "
                                            r"CTAs \(1 per SM on 132 SMs, limited by shared memory"):
        module.launch("grid_barrier", 133, 64, [x, c, 1], gmem=g, shared_bytes=200 * 1024, engine="fast")


SPIN_SHARED = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry wait_shared(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .shared .b32 flag;
L:
    ld.volatile.shared.u32 %r1, [flag];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra L;
    ret;
}
"""


def test_a_cta_spinning_on_its_own_shared_memory_deadlocks_at_once():
    # no other CTA can write this CTA's shared memory: reported by the first CTA, the others never start
    m = load_ptx(SPIN_SHARED)
    with pytest.raises(WarpSyncError, match=r"^CTA \(0, 0, 0\): deadlock: .*warp 0 lanes 0-31 spin"):
        m.launch("wait_shared", 300, 32, [0], engine="fast")


FLAGS = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry relay(.param .u64 flags, .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [flags];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %nctaid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd1, %rd3;
    add.u64 %rd5, %rd2, %rd3;
    add.u32 %r3, %r2, -1;
    setp.eq.u32 %p1, %r1, %r3;
    mov.u32 %r5, 1;
    @%p1 bra DONE;
WAIT:
    ld.acquire.gpu.global.u32 %r4, [%rd4+4];
    setp.eq.u32 %p2, %r4, 0;
    @%p2 bra WAIT;
    ld.global.u32 %r5, [%rd5+4];
    add.u32 %r5, %r5, %r5;
DONE:
    st.global.u32 [%rd5], %r5;
    st.release.gpu.global.u32 [%rd4], 1;
    ret;
}
"""


def test_flags_without_atomics_run_serially_under_workers():
    # CTA k waits for CTA k+1 through ld.acquire / st.release only: workers=2 runs it serially, same bits
    m = load_ptx(FLAGS)
    outs = []
    for workers in (1, 2):
        g = GlobalMemory()
        f = g.upload(np.zeros(9, np.uint32))
        o = g.upload(np.zeros(9, np.uint32))
        m.launch("relay", 8, 32, [f, o], gmem=g, workers=workers, engine="fast")
        outs.append(g.download(o, 32).view(np.uint32).copy())
    assert outs[0].tolist() == [128, 64, 32, 16, 8, 4, 2, 1]
    assert outs[0].tolist() == outs[1].tolist()
    from emulator.machine.grid import serial_only
    assert "acquire" in serial_only(m.program("relay"))


def test_independent_ctas_never_park(module, monkeypatch):
    # the one-after-another path: each CTA runs to its end in one call
    from emulator.machine import cta as cta_mod
    calls = []
    orig = cta_mod.CTA.run

    def run(self, park=False):
        r = orig(self, park)
        calls.append(r is None)
        return r
    monkeypatch.setattr(cta_mod.CTA, "run", run)
    from emulator.machine.fastcore import gridloop
    monkeypatch.setattr(gridloop, "ON", False)      # (the CTA-by-CTA path; the grid loop below)
    replay(module, "pdl", engine="fast")
    assert len(calls) == 16 and not any(calls)
    # the grid loop runs them all, one call a launch: no CTA goes through CTA.run
    monkeypatch.setattr(gridloop, "ON", True)
    ran = []
    real = gridloop.run
    monkeypatch.setattr(gridloop, "run", lambda *a, **k: _record(ran, real(*a, **k)))
    calls.clear()
    replay(module, "pdl", engine="fast")
    assert sum(ran) == 16 and calls == []


def _record(ran, got):
    ran.append(got[0])
    return got


def test_waits_beyond_the_resident_limit(module, monkeypatch):
    # reverse split-K: CTA (0, t) waits for (1, t), (2, t), (3, t). With 200 KB of shared memory a CTA has an
    # SM to itself: on 4 SMs each tile's 4 CTAs are resident together and the grid ends with the H100's bits;
    # on 3 SMs CTA (3, 0) never becomes resident and the three before it wait for it forever.
    monkeypatch.setattr(residency, "SMS", 4)
    outs, _ = _replay_smem(module, "splitk_sem_reverse", 200 * 1024)
    _check("splitk_sem_reverse", outs)
    monkeypatch.setattr(residency, "SMS", 3)
    with pytest.raises(WarpSyncError, match=r"grid deadlock: 3 resident CTA\(s\).*CTAs \(3, 0, 0\) \.\. \(3, 3, 0\) "
                                            r"\(13 CTAs\) could not be resident"):
        _replay_smem(module, "splitk_sem_reverse", 200 * 1024)


def _replay_smem(module, name, smem):
    bufs = _inputs(name)
    g = GlobalMemory()
    addrs = [g.upload(b) for b in bufs]
    for kernel, grid, block, _smem, args, _pdl in CASES[name]:
        module.launch(kernel, tuple(grid), tuple(block), [addrs[v] if k == "b" else v for k, v in args], gmem=g,
                      shared_bytes=smem, engine="fast")
    return [g.download(a, b.nbytes).view(b.dtype).reshape(b.shape) for a, b in zip(addrs, bufs)], None
