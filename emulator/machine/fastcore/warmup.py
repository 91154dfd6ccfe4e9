"""Compiling the fast engine's loops: once per machine, and never behind the user's back.

The jitted loops (``loop.run_cta``, ``loop.run``) take numba tens of seconds of CPU to compile the first time;
numba then keeps them in its cache (next to the sources, or in the user's cache directory when those are
read-only; ``NUMBA_CACHE_DIR`` chooses) and later processes load them in a fraction of a second.

One compile per machine: the process that compiles holds a lock in the cache directory
(``numerics.jitcache.CompileLock``, an ``flock`` the kernel drops if that process dies). Every other process
sees the lock held and compiles nothing of its own: ``launch(engine="auto")`` runs its CTAs on the reference
executors (the same bits) and switches to the fast engine between two CTAs once the cache holds the loops;
``engine="fast"`` waits for the lock, then loads the loops from the cache.

``launch(..., engine="auto")`` (the default) asks :func:`ready`. When the loops are compiled in this process
or valid in the cache, the launch runs on the fast engine. When nobody compiles them, a child process starts
compiling them (the float rows' function, then the loops, then the executors' tensor-core and integer tiles)
while the launch runs on the reference executors. The child belongs to the command that started it: it stops
when its parent process exits (what it finished is in the cache by then, function by function), so no compile
outlives a user's command unless asked for:

* ``emulator.warmup()`` (or ``python -m emulator warmup``) compiles everything now, in this process, and
  returns when the cache is full;
* ``emulator.warmup(background=True)``, or ``WARPEMU_BACKGROUND_COMPILE=detach``, starts the child detached:
  it finishes even after the command has returned;
* ``WARPEMU_BACKGROUND_COMPILE=0`` starts no child: the first launch compiles the loops in its own process
  (under the lock) and waits for them.
"""
from __future__ import annotations

import os
import sys
import time

from ...numerics import jitcache
from ...numerics.jitcache import in_cache as _cached

_STATE = {"ready": False, "proc": None, "detached": False, "checked": 0.0}
RECHECK_S = 0.25            # how often ready() looks at the cache again while another process compiles


def _loops(which="both"):
    """The fast engine's jitted loops: what a launch on the fast engine needs (``which``: "cta", the CTA loop and
    the warp loop it calls; "warp", the warp loop alone, for kernels the CTA loop cannot run; "both")."""
    from . import loop
    return (loop.run,) if which == "warp" else (loop.run_cta, loop.run)


def _extras():
    """The reference executors' jitted tiles (``ops.mma`` runs them in numpy while a compile runs)."""
    from ...numerics import fast, gemm_fast
    return gemm_fast.tc_batch, fast.int_batch


def _done(disps) -> bool:
    return all(d.signatures or _cached(d) for d in disps)


_LOCK = []


def lock() -> jitcache.CompileLock:
    """The compile lock of the fast engine's numba cache directory."""
    if not _LOCK:
        from . import loop
        _LOCK.append(jitcache.CompileLock(jitcache._cache_dir(loop.__file__)))
    return _LOCK[0]


def _mode():
    return os.environ.get("WARPEMU_BACKGROUND_COMPILE", "1").strip().lower()


def _child_running() -> bool:
    p = _STATE["proc"]
    return p is not None and p.poll() is None


def ready(start=True) -> bool:
    """Whether the fast engine can run now without compiling here while another process compiles the same
    code. Starts the child compile (``start``) when nobody compiles and the loops are not in the cache."""
    if _STATE["ready"]:
        return True
    now = time.monotonic()
    if now - _STATE["checked"] < RECHECK_S:
        return False
    _STATE["checked"] = now
    if _done(_loops()):
        _STATE["ready"] = True
        return True
    if _child_running() or lock().busy():
        return False                       # a compile runs: reference executors until the cache holds the loops
    mode = _mode()
    if _STATE["proc"] is not None or mode in ("0", "off", "no", "false"):
        wait()                             # no child (or ours failed): compile here, under the lock
        return True
    if start:
        _start_child(detached=mode == "detach")
    return False


def compiling() -> bool:
    """True while a process of this machine compiles the jitted code (this process's child, or another
    process holding the lock). Looks at the lock at most every ``RECHECK_S`` seconds (the executors ask
    before every tensor-core instruction)."""
    if _child_running():
        return True
    now = time.monotonic()
    if now - _STATE.get("busy_at", -1e9) >= RECHECK_S:
        _STATE["busy_at"] = now
        _STATE["busy"] = lock().busy()
    return _STATE["busy"]


jitcache.PROBE[0] = compiling


def family(name, wait=True) -> int:
    """The address of the instruction family ``name`` (``families.py``), compiled or loaded now (``wait``:
    engine="fast"); else (engine="auto") 0 while it would have to be compiled here: while another process
    compiles, or after starting the child compile (``background``). Then the loop hands its rows to the
    reference executors until a later launch finds it. Compiles here when no child may run."""
    from . import families
    if wait or families.cached(name) or not (compiling() or background()):
        return families.address(name, lock())
    return 0


def _families_done() -> bool:
    from . import families
    return all(families.cached(name) for name in families.NAMES)


def compile_families():
    """Every instruction family of the fast engine (``emulator.warmup()``, the background compile)."""
    from . import families
    for name in families.ORDER:
        families.address(name, lock())


def background() -> bool:
    """Start the child compile (the instruction families a launch needs are missing from the cache and nobody
    compiles them) unless this process already started one or the user asked for none; whether it started."""
    mode = _mode()
    if _STATE["proc"] is not None or mode in ("0", "off", "no", "false"):
        return False
    _start_child(detached=mode == "detach")
    return True


def _start_child(detached=False):
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    env["WARPEMU_BACKGROUND_COMPILE"] = "0"
    kw = {"start_new_session": True} if detached else {}
    # attached: the child reads its stdin (a pipe from this process) and stops at end of file, which comes when
    # this process exits, however it exits
    _STATE["proc"] = subprocess.Popen([sys.executable, "-c", MAIN, "detached" if detached else "attached"],
                                      env=env, stdin=subprocess.DEVNULL if detached else subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    _STATE["detached"] = detached


def wait(which="both"):
    """Block until the fast engine's loops (``which``, as ``_loops`` takes it) can run: wait for this process's
    child to have compiled them, or for another process that holds the compile lock; if the cache still lacks
    them, compile them here under the lock (only those: a kernel the CTA loop cannot run does not wait for it)."""
    if _STATE.get("here"):
        return                             # the warm-up launches of _compile_loops, in this process
    need = _loops(which)
    while _child_running() and not _done(need):
        time.sleep(0.1)                    # this process's child: until it has the loops (it goes on with the rest)
    if not _done(need):
        with lock():                       # another process's compile ends first
            if not _done(need):
                _compile_loops(which)
    if which != "warp" or _done(_loops()):
        _STATE["ready"] = True


def warmup(background=False, extras=True):
    """Compile the fast engine's jitted code into numba's cache now (one process of the machine compiles; the
    others wait for it). ``background=True``: start a detached process that does it and return at once (it
    finishes even after this process exits). ``extras``: also the reference executors' tensor-core and
    integer tiles. Returns the CPU seconds this process spent."""
    t = time.process_time()
    if background:
        if not (_done(_loops()) and _done(_extras()) and _families_done()) and not _child_running() and \
                not lock().busy():
            _start_child(detached=True)
        return time.process_time() - t
    wait()
    compile_families()
    with lock():
        from . import xcall, wgcall, hopcall, bulkcall  # noqa: F401 (compiles or loads the integer rows', atomics',
        #                                                 wgmma, Hopper and TMA rows' functions)
    if extras and not _done(_extras()):
        with lock():
            if not _done(_extras()):
                _compile_extras()
    if extras:
        from . import mmatile  # noqa: F401 (the f64/integer mma rows' function)
    return time.process_time() - t


# set by machine.module (which imports this module): (which) -> None, tiny launches on the fast engine, one the
# CTA loop runs and one it cannot (a call), which make numba compile the loops (``_loops(which)``)
WARM_LAUNCHES = [None]


def _compile_loops(which="both"):
    _STATE["here"] = True
    try:
        if WARM_LAUNCHES[0] is None:
            raise AssertionError("warmup: emulator.machine.module sets WARM_LAUNCHES when it loads")
        WARM_LAUNCHES[0](which)
    finally:
        _STATE["here"] = False


def _compile_extras():
    """One tensor-core and one integer tile through the reference executors' jitted kernels."""
    import numpy as np
    from ...ops.mma import get_mma
    from ...numerics import fast
    for spelling in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                     "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"):
        op = get_mma(spelling)
        z = [np.zeros((1, n, 32), np.uint32) for n in (op.n_a, op.n_b, op.n_c, op.n_d)]
        (fast.int_batch if op.family == "int" else op._kern)(*z, op._maps, op._prm, *op._extra)


KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
    .reg .b32 %a<2>;
    ld.param.b32 %a0, [x];
    add.s32 %a1, %a0, %a0;
    st.param.b32 [r], %a1;
    ret;
}
.visible .entry k(.param .u64 p, .param .u32 call)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    bar.sync 0;
    st.global.u32 [%rd3], %r1;
    ret;
}
.visible .entry kc(.param .u64 p)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 x; st.param.b32 [x], %r1;
    .param .b32 r;
    call.uni (r), twice, (x);
    ld.param.b32 %r2, [r];
    }
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


# the child: attached, it stops when its parent's end of the stdin pipe closes (WATCH); it holds the lock while
# it compiles (a child that finds the lock held leaves at once)
WATCH = """
import os, sys, threading
if sys.argv[1] == "attached":
    def _watch():
        try:
            while sys.stdin.buffer.read(1):
                pass
        finally:
            os._exit(0)
    threading.Thread(target=_watch, daemon=True).start()
"""
BODY = """
import emulator.machine.module
from emulator.machine.fastcore import warmup
if warmup.lock().acquire(blocking=False):
    warmup._compile_loops()
    warmup.compile_families()
    import emulator.machine.fastcore.xcall
    import emulator.machine.fastcore.hopcall
    import emulator.machine.fastcore.bulkcall
    import emulator.machine.fastcore.wgcall
    warmup._compile_extras()
    import emulator.machine.fastcore.mmatile
    from emulator.numerics.wgmma import wgmma_tile
    import numpy as np
    wgmma_tile("f16", "f16", "f32", *(np.zeros(s, np.uint64) for s in ((64, 16), (16, 64), (64, 64))))
"""
MAIN = WATCH + BODY
