"""Compiling the fast engine's loops without making the first launch wait for it.

The jitted loops (``loop.run_cta``, ``loop.run``) take numba tens of seconds to compile the first time; numba
then keeps them in its cache (next to the sources, or in the user's cache directory when those are
read-only; ``NUMBA_CACHE_DIR`` chooses) and later processes load them in a fraction of a second.

``launch(..., engine="auto")`` (the default) asks :func:`ready`: when the loops are compiled in this process
or valid in the cache, the launch runs on the fast engine. Otherwise a background process compiles them
(``MAIN``, one at a time) while the launch runs its CTAs on the
reference executors, which give the same bits, and switches to the fast engine between two CTAs as soon as
the background compile has finished. A second background process compiles the float rows' function
(``fcall.py``) beside it. ``WARPEMU_BACKGROUND_COMPILE=0`` compiles in the launching process instead (the
first launch then waits for it).
"""
from __future__ import annotations

import os
import subprocess
import sys

from ...numerics import jitcache
from ...numerics.jitcache import in_cache as _cached

_STATE = {"ready": False, "proc": None}


def _loops():
    """The jitted functions the background process compiles: the fast engine's loops, and the reference
    executors' tensor-core and integer tiles (which ``ops.mma`` replaces by numpy while they compile)."""
    from . import loop
    from ...numerics import fast, gemm_fast
    return loop.run_cta, loop.run, gemm_fast.tc_batch, fast.int_batch


def ready(start=True) -> bool:
    """Whether the fast engine can run now without compiling; starts the background compile when not."""
    if _STATE["ready"]:
        return True
    procs = _STATE["proc"]
    if procs is not None:
        if any(p.poll() is None for p in procs):
            return False
        _STATE["ready"] = True             # compiled (or failed: then the first call compiles here)
        return True
    if all(d.signatures or _cached(d) for d in _loops()):
        _STATE["ready"] = True
        return True
    if os.environ.get("WARPEMU_BACKGROUND_COMPILE", "1") == "0":
        _STATE["ready"] = True             # compile here, at the first call
        return True
    if start:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        # the loops, and beside them the float rows' and the integer rows' functions (fcall.py, xcall.py, a few
        # seconds each: on a machine with two cores they do not delay the loops)
        _STATE["proc"] = [subprocess.Popen([sys.executable, "-c", main], env=env, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                          for main in (MAIN, "import emulator.machine.fastcore.fcall, "
                                             "emulator.machine.fastcore.xcall")]
    return False


jitcache.PROBE[0] = lambda: not ready()


def wait():
    """Block until a background compile started by :func:`ready` has finished."""
    for proc in _STATE["proc"] or ():
        proc.wait()
    _STATE["ready"] = True


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


# the background process: two tiny launches, one the CTA loop runs and one it cannot (a call), and one
# tensor-core tile and one integer tile through the reference executors' jitted kernels, and one wgmma tile
MAIN = """
import numpy as np
from emulator import GlobalMemory, load_ptx
from emulator.machine.fastcore.warmup import KERNEL
from emulator.ops.mma import get_mma
m = load_ptx(KERNEL)
g = GlobalMemory()
a = g.alloc(64 * 4)
m.launch("k", 1, 64, [a, 0], gmem=g, engine="fast")
m.launch("kc", 1, 32, [a], gmem=g, engine="fast")
assert (g.download(a, 128).view(np.uint32) == 2 * np.arange(32)).all()
from emulator.numerics import fast
for spelling in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"):
    op = get_mma(spelling)
    z = [np.zeros((1, n, 32), np.uint32) for n in (op.n_a, op.n_b, op.n_c, op.n_d)]
    (fast.int_batch if op.family == "int" else op._kern)(*z, op._maps, op._prm, *op._extra)
from emulator.numerics.wgmma import wgmma_tile
wgmma_tile("f16", "f16", "f32", *(np.zeros(s, np.uint64) for s in ((64, 16), (16, 64), (64, 64))))
"""
