"""One compile per machine: the compile lock in numba's cache directory (numerics/jitcache.py), and the
compile child of machine/fastcore/warmup.py, which stops with the command that started it unless asked not to."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

fcntl = pytest.importorskip("fcntl")

from emulator.numerics import jitcache
from emulator.machine.fastcore import warmup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)


def _holder(directory, seconds=60):
    """A process that takes the compile lock of ``directory`` as CompileLock does (an flock on the lock file;
    plain Python, to start quickly) and keeps it; returns once it holds it."""
    code = textwrap.dedent(f"""
        import fcntl, os, time
        fd = os.open({os.path.join(str(directory), jitcache.LOCK_NAME)!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep({seconds})
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def _gone(pid, within=10.0):
    t = time.monotonic()
    while time.monotonic() - t < within:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_lock_is_exclusive_and_reentrant_in_one_process(tmp_path):
    a, b = jitcache.CompileLock(str(tmp_path)), jitcache.CompileLock(str(tmp_path))
    assert not a.busy()
    assert a.acquire() and a.held
    assert a.acquire()                       # nested: still held after one release
    a.release()
    assert a.held and os.path.exists(tmp_path / jitcache.LOCK_NAME)
    a.release()
    assert not a.held
    with b:
        assert b.held
    assert not b.held and not a.busy()


def test_another_process_holding_the_lock_is_seen_and_a_killed_holder_leaves_no_stale_lock(tmp_path):
    p = _holder(tmp_path)
    try:
        lock = jitcache.CompileLock(str(tmp_path))
        assert lock.busy()
        assert not lock.acquire(blocking=False)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert not lock.busy()                   # the kernel dropped the dead holder's lock
    assert lock.acquire(blocking=False)
    lock.release()


def test_a_blocking_acquire_waits_for_the_holder(tmp_path):
    p = _holder(tmp_path, seconds=1.0)
    t = time.monotonic()
    lock = jitcache.CompileLock(str(tmp_path))
    with lock:
        waited = time.monotonic() - t
    p.wait()
    assert waited > 0.3


def test_a_directory_that_cannot_hold_the_lock_never_blocks(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    lock = jitcache.CompileLock(str(f / "sub"))     # under a regular file: nothing can be created there
    assert not lock.busy()
    assert lock.acquire(blocking=False)
    lock.release()
    assert not jitcache.CompileLock(None).busy()


@pytest.fixture
def fresh_state(monkeypatch, tmp_path):
    """warmup with an empty state, its lock in tmp_path, and the loops reported as not compiled."""
    monkeypatch.setattr(warmup, "_STATE", {"ready": False, "proc": None, "detached": False, "checked": 0.0})
    monkeypatch.setattr(warmup, "_LOCK", [jitcache.CompileLock(str(tmp_path))])
    monkeypatch.setattr(warmup, "_done", lambda disps: False)
    monkeypatch.delenv("WARPEMU_BACKGROUND_COMPILE", raising=False)
    started = []
    monkeypatch.setattr(warmup, "_start_child", lambda detached=False: started.append(detached))
    return started


def test_while_another_process_compiles_no_second_compile_starts(fresh_state, tmp_path):
    p = _holder(tmp_path)
    try:
        assert warmup.ready() is False
        assert warmup.compiling()            # the executors take their numpy paths meanwhile
        warmup._STATE["busy_at"] = -1e9
        assert fresh_state == []             # no child of our own
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    warmup._STATE["checked"] = 0.0
    assert warmup.ready() is False and fresh_state == [False]    # nobody compiles now: one child, attached
    warmup._STATE["busy_at"] = -1e9
    assert not warmup.compiling()


def test_ready_looks_again_only_every_recheck_interval(fresh_state, monkeypatch):
    calls = []
    monkeypatch.setattr(warmup, "_done", lambda disps: calls.append(1) or False)
    warmup.ready()
    warmup.ready()
    assert len(calls) == 1


def test_without_background_compile_the_first_call_compiles_here_under_the_lock(fresh_state, monkeypatch):
    monkeypatch.setenv("WARPEMU_BACKGROUND_COMPILE", "0")
    held = []
    monkeypatch.setattr(warmup, "_compile_loops", lambda *which: held.append(warmup.lock().held))
    assert warmup.ready() is True and fresh_state == [] and held == [True]
    assert not warmup.lock().held


def test_detach_mode_starts_a_detached_child(fresh_state, monkeypatch):
    monkeypatch.setenv("WARPEMU_BACKGROUND_COMPILE", "detach")
    assert warmup.ready() is False and fresh_state == [True]


def test_the_compile_child_stops_with_the_command_that_started_it_unless_detached():
    """A process starts warmup's child twice (a stand-in body that only sleeps), attached and detached, and
    exits: the attached child stops with it, the detached one goes on."""
    code = textwrap.dedent("""
        from emulator.machine.fastcore import warmup
        warmup.MAIN = warmup.WATCH + "import time; time.sleep(60)"
        for detached in (False, True):
            warmup._start_child(detached=detached)
            print(warmup._STATE["proc"].pid, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    attached, detached = map(int, out.stdout.split()[-2:])
    try:
        assert _gone(attached)
        assert not _gone(detached, within=0.5)
    finally:
        os.kill(detached, signal.SIGKILL)
        _gone(detached)


def test_every_wgmma_fragment_is_a_bijection_onto_its_tile():
    """(checked here rather than when isa.wgmma is imported, which every load_ptx does)"""
    from isa.wgmma import VARIANTS
    for v in VARIANTS.values():
        v.check()
    assert len(VARIANTS) > 500


def test_every_mma_fragment_is_a_bijection_onto_its_tile():
    """(idem for isa.mma, the mma.sync table)"""
    from isa.mma import VARIANTS
    for v in VARIANTS.values():
        v.check()
    assert len(VARIANTS) > 90


def test_a_cached_function_that_allocates_loads_first_in_a_new_process(tmp_path):
    """The package's cached functions load without numba's context refresh (jitcache.harden), but with the
    reference-counting runtime's symbols: a process whose first jitted call loads (not compiles) a function that
    allocates arrays runs it and frees them."""
    code = textwrap.dedent("""
        import numpy as np
        from emulator.numerics import gemm_fast
        out = gemm_fast._tc_scratch(np.array([3, 4, 5], np.int64))
        assert out[0].shape == (3, 5) and out[3].sum() == 0
        del out
        print(sum(gemm_fast._tc_scratch.stats.cache_hits.values()))
    """)
    env = dict(ENV, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert [r.stdout.split() for r in runs] == [["0"], ["1"]]            # compiled, then loaded
