"""Warm per-launch time of typical Triton unit-test kernels: the emulator backend vs Triton's interpreter.

Each kernel runs in two processes, one under ``TRITON_INTERPRET=1`` (Triton's interpreter) and one on the
emulator (``emulator.triton.activate()``), on the same torch CPU tensors: two launches to warm up
(compilation, caches), then ``--runs`` timed launches; the table gives the median per-launch time of each,
their ratio, and the median and geometric mean over the kernels.

    python benchmarks/bench_vs_interpreter_triton.py [--runs 5]

Needs the optional extra (Triton 3.6, torch).
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


try:
    import triton.language as tl          # a module global: the interpreter patches it while a kernel runs
except ImportError:                       # pragma: no cover - the optional extra
    tl = None


def kernels():
    """(name, function, grid, make_args(torch), meta) of unit-test-sized kernels."""
    def add(x, y, z, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(z + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    def unary(x, z, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(z + i, tl.exp(tl.load(x + i)) * 0.5 + tl.sqrt(tl.abs(tl.load(x + i))))

    def reduce_sum(x, z, BLOCK: tl.constexpr):
        tl.store(z, tl.sum(tl.load(x + tl.arange(0, BLOCK)), axis=0))

    def softmax(x, z, N: tl.constexpr):
        row = tl.program_id(0)
        v = tl.load(x + row * N + tl.arange(0, N))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(z + row * N + tl.arange(0, N), e / tl.sum(e, axis=0))

    def cumsum(x, z, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(z + i, tl.cumsum(tl.load(x + i), axis=0))

    def transpose(x, z, M: tl.constexpr, N: tl.constexpr):
        r = tl.arange(0, M)[:, None]
        c = tl.arange(0, N)[None, :]
        tl.store(z + c * M + r, tl.load(x + r * N + c))

    def dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        rm = tl.arange(0, M)[:, None]
        rn = tl.arange(0, N)[None, :]
        rk = tl.arange(0, K)
        x = tl.load(a + rm * K + rk[None, :])
        y = tl.load(b + rk[:, None] * N + rn)
        tl.store(c + rm * N + rn, tl.dot(x, y))

    def histogram(x, h, BLOCK: tl.constexpr):
        v = tl.load(x + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
        tl.atomic_add(h + v, 1)

    return [
        ("add 1x1024 (4 programs)", add, (4,), lambda t: (t.randn(1000), t.randn(1000), t.empty(1000), 1000),
         dict(BLOCK=256)),
        ("exp/sqrt 128", unary, (1,), lambda t: (t.randn(128), t.empty(128)), dict(BLOCK=128)),
        ("sum 1024", reduce_sum, (1,), lambda t: (t.randn(1024), t.empty(1)), dict(BLOCK=1024)),
        ("softmax 8x256", softmax, (8,), lambda t: (t.randn(8, 256), t.empty(8, 256)), dict(N=256)),
        ("cumsum 128", cumsum, (1,), lambda t: (t.randn(128), t.empty(128)), dict(BLOCK=128)),
        ("transpose 64x64", transpose, (1,), lambda t: (t.randn(64, 64), t.empty(64, 64)), dict(M=64, N=64)),
        ("dot fp16 32x32x32", dot, (1,), lambda t: (t.randn(32, 32).half(), t.randn(32, 32).half(),
                                                    t.empty(32, 32)), dict(M=32, N=32, K=32)),
        ("dot fp16 128x128x128", dot, (1,), lambda t: (t.randn(128, 128).half(), t.randn(128, 128).half(),
                                                       t.empty(128, 128)), dict(M=128, N=128, K=128)),
        ("histogram 4x256", histogram, (4,), lambda t: (t.randint(0, 64, (1024,), dtype=t.int32),
                                                        t.zeros(64, dtype=t.int32)), dict(BLOCK=256)),
    ]


def timed(fn, runs):
    fn()
    fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run_mode(mode, runs):
    """{kernel name: median seconds per warm launch} in this process, for ``mode`` "emulator" or
    "interpreter" (which must be the process's TRITON_INTERPRET setting)."""
    import torch
    import triton
    if mode == "emulator":
        import emulator.triton as et
        et.activate()
    out = {}
    for name, fn, grid, make, meta in kernels():
        k = triton.jit(fn)
        torch.manual_seed(0)
        a = make(torch)
        out[name] = timed(lambda: k[grid](*a, **meta), runs)
    return out


def main(argv=None):
    import json
    import subprocess
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mode", choices=["emulator", "interpreter"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.runs)))
        return
    res = {}
    for mode in ("emulator", "interpreter"):
        env = dict(os.environ, TRITON_INTERPRET="1" if mode == "interpreter" else "0")
        env.pop("WARPEMU_TRITON", None)
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--mode", mode, "--runs", str(args.runs)],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{mode} run failed:\n{p.stderr[-3000:]}")
        res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    rows = [(name, res["emulator"][name], res["interpreter"][name]) for name in res["emulator"]]
    for name, te, ti in rows:
        print(f"{name:24s} emulator {te * 1e3:9.2f} ms   interpreter {ti * 1e3:9.2f} ms   ratio {te / ti:6.2f}")
    te = [r[1] for r in rows]
    ti = [r[2] for r in rows]
    geo = math.exp(sum(math.log(r[1] / r[2]) for r in rows) / len(rows))
    print(f"median per launch: emulator {statistics.median(te) * 1e3:.2f} ms, interpreter "
          f"{statistics.median(ti) * 1e3:.2f} ms; geometric mean of emulator/interpreter: {geo:.2f}")


if __name__ == "__main__":
    main()
