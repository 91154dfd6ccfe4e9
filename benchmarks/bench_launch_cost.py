"""The fixed cost of a launch on the fast engine: CPU time per launch and per further CTA of a kernel of 6
instructions (it stores ``%tid.x``), warm, for CTAs of one and four warps, with the default ``keep`` and with
``keep="none"``; a new ``GlobalMemory`` with three uploads, a download; then a few small corpus launches split
into the jitted CTA loop's time and the rest, and each on the same ``GlobalMemory`` as the launch before and on a
new one (made with its inputs just before the launch, untimed).

    python benchmarks/bench_launch_cost.py [--reps N] [--corpus NAME ...] [--no-grid-loop]

CPU time (``time.process_time``), best of ``--reps`` rounds of 10-2000 launches, each launch's result dropped
before the next. "per further CTA" is (time of 64 CTAs - time of 1 CTA) / 63.
"""
import argparse
import io
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from emulator import GlobalMemory, load_ptx  # noqa: E402

KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
CORPUS = ["triton_join_split_sm80", "triton_math_rsqrt_sm80", "triton_trans_f16_sm80", "triton_atomic_cas_lock_sm80",
          "triton_softmax_sm80", "triton_matmul_f16_64x64_sm80", "triton_matmul_bf16_64x64_sm80"]


def best(f, n, reps):
    f()
    out = float("inf")
    for _ in range(reps):
        t = time.process_time()
        for _ in range(n):
            f()
        out = min(out, (time.process_time() - t) / n)
    return out


def trivial(reps):
    m = load_ptx(KERNEL)
    g = GlobalMemory()
    o = g.upload(np.zeros(64 * 128, np.uint32))
    print("kernel of 6 instructions, fast engine (us, CPU time)")
    for keep in (None, "none"):
        for bw in (32, 128):
            t = {grid: best(lambda: m.launch("k", grid, bw, [o], gmem=g, engine="fast", keep=keep),
                            200 if grid == 1 else 10, reps) for grid in (1, 64)}
            print(f"  keep={keep or 'default'!s:8s} {bw // 32} warp(s): a launch of one CTA {t[1] * 1e6:7.1f}, "
                  f"each further CTA {(t[64] - t[1]) / 63 * 1e6:6.1f}")


def memory(reps):
    """A new GlobalMemory with three uploads of 512 bytes, and a download of 2 KB."""
    arrs = [np.arange(128, dtype=np.float32), np.arange(128, dtype=np.float32), np.arange(128, dtype=np.int32)]

    def three():
        g = GlobalMemory()
        for a in arrs:
            g.upload(a)
    g = GlobalMemory()
    a = g.upload(np.zeros(512, np.float32))
    print(f"global memory (us, CPU time): GlobalMemory() + 3 uploads {best(three, 2000, reps) * 1e6:6.1f}, "
          f"a download of 2 KB {best(lambda: g.download(a, 2048), 2000, reps) * 1e6:5.1f}")


def fresh_launch(f_new, n, reps):
    """The best time of ``f_new(g, args)`` over ``reps`` rounds of ``n`` new GlobalMemory objects made just before
    each call (the making untimed)."""
    out = float("inf")
    for _ in range(reps):
        spent = 0.0
        for _ in range(n):
            g, args = f_new()
            t = time.process_time()
            g.launch(args)
            spent += time.process_time() - t
        out = min(out, spent / n)
    return out


def corpus(names, reps):
    import corpus_lib
    from emulator.machine.fastcore import engine as E
    from emulator.machine.fastcore import loop as L
    cases = corpus_lib.load_all()
    spent = [0.0]

    from emulator.machine.fastcore import gridloop
    grid_loop = gridloop.grid_loop

    def timed(*a):
        t = time.process_time()
        try:
            return L.run_cta(*a)
        finally:
            spent[0] += time.process_time() - t

    def timed_grid(*a):                     # (the grid loop: CTAs run in the CTA loop it calls)
        t = time.process_time()
        try:
            return grid_loop(*a)
        finally:
            spent[0] += time.process_time() - t
    print("corpus launches, fast engine (us per launch, CPU time; 'loop': the CTA loop's and grid loop's calls)")
    for name in names:
        c = cases[name]
        cfg = c["config"]
        m = load_ptx(c["ptx"])
        g = GlobalMemory()
        args, _ = corpus_lib.launch_args(c, g)

        def f():
            return m.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=g, out=io.StringIO(),
                            shared_bytes=cfg.get("shared", 0), engine="fast")
        n = f().instructions
        total = best(f, 10, reps)
        loops = E._LOOPS[:] if E._LOOPS else None
        E._LOOPS[:] = [L.run, timed]        # (the CTA loop timed: FastLaunch takes its loops from this list)
        gridloop.grid_loop = timed_grid
        try:
            spent[0] = 0.0
            k = 10
            f()
            spent[0] = 0.0
            for _ in range(k):
                f()
            loop = spent[0] / k
        finally:
            gridloop.grid_loop = grid_loop
            if loops is not None:
                E._LOOPS[:] = loops
        ctas = int(np.prod(cfg["grid"]))

        class New:                      # a new GlobalMemory with the case's inputs, and its launch
            def __init__(self):
                self.g = GlobalMemory()
                self.args = corpus_lib.launch_args(c, self.g)[0]

            def launch(self, args):
                m.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=self.g, out=io.StringIO(),
                         shared_bytes=cfg.get("shared", 0), engine="fast")

        def new():
            x = New()
            return x, x.args
        fresh = fresh_launch(new, 10, reps)
        print(f"  {name:32s} {ctas:3d} CTA(s) {n:6d} instr: {total * 1e6:8.1f} (loop {loop * 1e6:8.1f}, "
              f"outside {max(total - loop, 0) * 1e6:7.1f}) = {n / total / 1e6:.2f} M/s; on a new GlobalMemory "
              f"{fresh * 1e6:8.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--corpus", nargs="*", default=CORPUS)
    ap.add_argument("--no-grid-loop", action="store_true", help="every CTA through the Python path (before/after)")
    a = ap.parse_args()
    if a.no_grid_loop:
        from emulator.machine.fastcore import gridloop
        gridloop.ON = False
    trivial(a.reps)
    memory(a.reps)
    if a.corpus:
        corpus(a.corpus, a.reps)
