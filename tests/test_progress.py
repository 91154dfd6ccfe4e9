"""Forward progress under independent thread scheduling, replayed from H100 captures
(tools/hwcapture/progress): lanes that spin with changing registers (a try counter, a timeout, a nanosleep
backoff) while the lanes that must set their flag wait where the paths meet. The H100 ends every one of
these kernels; so must both engines, with the H100's outputs bit for bit. How many times a lane polled is
the scheduler's timing: the H100 lets the waiting lanes run after one or two polls, the emulator after
SPIN_CHECK backward branches (the same count in both engines)."""
import glob
import os

import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.errors import EmulatorError
from emulator.machine import cta as C
from emulator.machine.spin import SPIN_CHECK

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "progress")
CASES = sorted(os.path.basename(f)[:-4] for f in glob.glob(os.path.join(HERE, "*.npz")))
BLOCKS = 2
LIMIT = 1 << 22                 # spin_timeout / fp_timeout: the tries before a lane gives up


def _capture(name):
    with np.load(os.path.join(HERE, name + ".npz"), allow_pickle=False) as z:
        return z["ptx"].tobytes().decode(), z[name + "__out"], z[name + "__tries"]


def _run(name, engine, max_instructions=2_000_000):
    ptx, hw_out, _ = _capture(name)
    blocks = BLOCKS                 # the first CTAs of the capture (each CTA is an independent trial)
    g = GlobalMemory()
    out, tries = g.alloc(blocks * 128), g.alloc(blocks * 128)
    args = [out, tries]
    if name in ("spin_backoff", "fp_global"):
        args.append(g.alloc(blocks * 4, fill=0))
    if name in ("spin_timeout", "fp_timeout"):
        args.append(LIMIT)
    r = load_ptx(ptx).launch(name, grid=(blocks, 1, 1), block=(32, 1, 1), args=args, gmem=g, engine=engine,
                             max_instructions=max_instructions)
    return g.download(out, blocks * 128).view(np.uint32), g.download(tries, blocks * 128).view(np.uint32), r


def test_captures_present():
    assert {"fp_count", "fp_global", "fp_timeout", "fp_backoff", "fp_one", "spin_join"} <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_spins_end_as_on_the_h100(name):
    _, hw_out, hw_tries = _capture(name)
    assert (hw_out == hw_out[0]).all()                 # the H100 gave the same outputs in every trial
    hw_out, hw_tries = hw_out[:, :BLOCKS * 32], hw_tries[:, :BLOCKS * 32]
    runs = {e: _run(name, e) for e in ("reference", "fast")}
    for engine, (out, tries, _) in runs.items():
        assert (out == hw_out[0]).all(), (engine, out[:8], hw_out[0][:8])
        # the lanes that polled on the H100 polled here; the lanes that did not, did not
        assert ((tries > 0) == (hw_tries[0] > 0)).all(), engine
        assert tries.max() <= SPIN_CHECK + 2
    (o1, t1, r1), (o2, t2, r2) = runs["reference"], runs["fast"]
    assert (t1 == t2).all() and r1.instructions == r2.instructions


def test_the_replay_can_fail(monkeypatch):
    """Without the step-aside rule the counting spin never ends: the launch stops at the instruction limit."""
    monkeypatch.setattr(C, "_reads_memory", lambda prog, lo, hi: False)
    with pytest.raises(EmulatorError, match="instruction limit"):
        _run("fp_count", "fast", max_instructions=100_000)


def test_a_loop_that_reads_no_memory_runs_on():
    """A diverged loop without loads cannot be waiting for anyone: it keeps the warp (and here it ends)."""
    ptx = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra JOIN;
LOOP:
    add.s32 %r2, %r2, %r1;
    add.s32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, 1000;
    @%p2 bra LOOP;
JOIN:
    ld.param.u64 %rd1, [pout];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""
    counts = []
    for engine in ("reference", "fast"):
        g = GlobalMemory()
        out = g.alloc(128)
        r = load_ptx(ptx).launch("k", args=[out], gmem=g, engine=engine)
        got = g.download(out, 128).view(np.uint32)
        lanes = np.arange(32, dtype=np.uint32)
        assert (got == np.where(lanes < 16, 0, lanes * 1000)).all()
        counts.append(r.instructions)
    assert counts[0] == counts[1]
