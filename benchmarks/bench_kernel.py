"""Speed of whole-kernel emulation, fast engine against the reference executors, in one process.

For each kernel (Triton 3.6 output committed in benchmarks/data/, and the repository's nvcc GEMM), it runs
the same launch on ``engine="fast"`` and ``engine="reference"``, checks that both leave the same bytes in
global memory, and prints warp-instructions per second of each, the speed-up, and the time numpy takes
for the same computation (the baseline a user would otherwise run), then gemm() 1024^3 f16->f32 next to numpy's
float32 matmul. Warm: every kernel runs once before it is timed, so numba's compilation is not counted
(benchmarks/bench_coldstart.py measures that). Times are CPU time of this process (``time.process_time``):
on a machine shared with other jobs that is what one core gives, where wall time is not; gemm and numpy use
every core, and their CPU time sums the cores.

    python benchmarks/bench_kernel.py            # all kernels
    python benchmarks/bench_kernel.py add int    # some
    python benchmarks/bench_kernel.py --wall     # wall-clock time instead (an idle many-core machine, where
                                                 # spinning BLAS/numba threads inflate the process's CPU time)
    python benchmarks/bench_kernel.py dispatch   # only the first table: Warp.run of one instruction

The first table is ``Warp.run``'s cost for one instruction (an m16n8k16 ``mma.sync``, an integer and a float
``add``, a ``mov`` of a special register), warm, best of 5 rounds of 2,000 runs.
"""
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from emulator import GlobalMemory, load_ptx  # noqa: E402

DATA = os.path.join(ROOT, "benchmarks", "data")
META = json.load(open(os.path.join(DATA, "triton_kernels.json")))["kernels"]
rng = np.random.default_rng(0)
CLOCK = time.process_time


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def case_add(scale):
    n = 1024 * 16 * scale
    x, y = _f32(n), _f32(n)
    return ("add", (n // 1024,), [x, y, np.zeros(n, np.float32)], [n], 2, lambda: x * np.float32(2) + y)


def case_int(scale):
    n = 1024 * 16 * scale
    x = rng.integers(-1 << 20, 1 << 20, n).astype(np.int32)
    y = rng.integers(-1 << 20, 1 << 20, n).astype(np.int32)

    def numpy():
        r = (x * 3 + (y >> 2)) ^ (x & 0xFF)
        return np.where(x > y, r, r - y)
    return ("int", (n // 1024,), [x, y, np.zeros(n, np.int32)], [n], 2, numpy)


def case_sum(scale):
    rows = 16 * scale
    x = _f32(rows, 1000)
    return ("sum", (rows,), [x, np.zeros(rows, np.float32)], [1000], 1, lambda: x.sum(axis=1))


def case_cumsum(scale):
    rows = 8 * scale
    x = _f32(rows, 1024)
    return ("cumsum", (rows,), [x, np.zeros((rows, 1024), np.float32)], [], 1, lambda: np.cumsum(x, axis=1))


def case_softmax(scale):
    rows = 8 * scale
    x = _f32(rows, 1000)

    def numpy():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return ("softmax", (rows,), [x, np.zeros((rows, 1000), np.float32)], [1000], 1, numpy)


def case_matmul(scale):
    M = N = 64 * scale
    K = 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    return ("matmul", (M // 64, N // 64), [a, b, np.zeros((M, N), np.float32)], [M, N, K, K, 1, N, 1, N, 1], 2,
            lambda: af @ bf)


CASES = {"add": case_add, "int": case_int, "sum": case_sum, "cumsum": case_cumsum, "softmax": case_softmax,
         "matmul": case_matmul}


def run(module, kernel, grid, block, arrays, scalars, shared, engine):
    g = GlobalMemory()
    addrs = [g.upload(a) for a in arrays]
    t = CLOCK()
    r = module.launch(kernel, grid, block, addrs + scalars, gmem=g, shared_bytes=shared, engine=engine)
    dt = CLOCK() - t
    return dt, r.instructions, [g.download(a, x.nbytes) for a, x in zip(addrs, arrays)]


def best(fn, n=3):
    time.sleep(0.2)        # a BLAS call just before (numpy's baseline) leaves threads spinning for a while
    out = [fn() for _ in range(n)]
    return min(out, key=lambda o: o[0])


def numpy_time(fn):
    fn()
    t = CLOCK()
    k = 0
    while CLOCK() - t < 0.05:
        fn()
        k += 1
    return (CLOCK() - t) / k


def dispatch():
    """``Warp.run`` of one instruction, warm (µs of CLOCK per run)."""
    from emulator import Warp
    w = Warp()
    for i in range(6):
        w.write(f"%r{i}", rng.standard_normal(64).astype(np.float16).view(np.uint32))
    for i in range(4, 8):
        w.write(f"%f{i}", rng.standard_normal(32).astype(np.float32))
    texts = {"mma.sync m16n8k16 f16->f32": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, "
                                         "{%r0,%r1,%r2,%r3}, {%r4,%r5}, {%f4,%f5,%f6,%f7};",
             "add.s32": "add.s32 %r10, %r1, %r2;", "add.rn.f32": "add.rn.f32 %f10, %f4, %f5;",
             "mov.u32 %tid.x": "mov.u32 %r11, %tid.x;"}
    print("Warp.run of one instruction, warm (us)")
    for name, text in texts.items():
        for _ in range(300):
            w.run(text)
        t = []
        for _ in range(5):
            t0 = CLOCK()
            for _ in range(2000):
                w.run(text)
            t.append((CLOCK() - t0) / 2000)
        print(f"  {name:28s}{min(t) * 1e6:8.1f}")
    sys.stdout.flush()


def main(names):
    if "dispatch" in names or names == list(CASES):
        dispatch()
        names = [n for n in names if n != "dispatch"]
        if not names:
            return
    print(f"{'kernel':<10}{'warp-instr':>11}{'fast instr/s':>14}{'reference':>12}{'speed-up':>10}"
          f"{'numpy':>11}{'fast/numpy':>12}")
    for name in names:
        meta = META[name]
        module = load_ptx(open(os.path.join(DATA, f"triton_{name}.ptx")).read())
        _, grid, arrays, scalars, scale_ref, numpy = CASES[name](4)
        scalars = scalars + [0] * meta["extra_params"]
        block = 32 * meta["num_warps"]
        args = (module, meta["kernel"], grid, block, arrays, scalars, meta["shared"])
        try:
            run(*args, "fast")                                   # warm: numba compiles here
        except Exception as e:                                   # a kernel this build cannot run yet
            print(f"{name:<10} not run: {type(e).__name__}: {str(e)[:90]}")
            continue
        tf, n, out_f = best(lambda: run(*args, "fast"))
        # the reference on a smaller grid of the same kernel (same per-CTA work), checked on that grid
        _, grid_r, arrays_r, scalars_r, _, _ = CASES[name](1)
        args_r = (module, meta["kernel"], grid_r, block, arrays_r, scalars_r + [0] * meta["extra_params"],
                  meta["shared"])
        run(*args_r, "reference")                            # warm: the executors' jitted kernels compile
        tr, nr, out_r = run(*args_r, "reference")
        _, _, out_fr = run(*args_r, "fast")
        same = all(x.tobytes() == y.tobytes() for x, y in zip(out_r, out_fr))
        tn = numpy_time(numpy)
        print(f"{name:<10}{n:>11,}{n / tf:>14,.0f}{nr / tr:>12,.0f}{(n / tf) / (nr / tr):>9.1f}x"
              f"{tn * 1e3:>9.2f}ms{tf / tn:>11.0f}x" + ("" if same else "   ENGINES DIFFER"))
    sys.stdout.flush()
    gemm_tiled()
    matmul_wgmma()
    gemm_whole()


def gemm_tiled():
    """The nvcc tiled GEMM of tests/data/kernels (cp.async double buffer, ldmatrix, mma.sync)."""
    M = N = 128
    K = 64
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    module = load_ptx(open(os.path.join(ROOT, "tests", "data", "kernels", "gemm_tiled.ptx")).read())
    _matmul_row("gemm_nvcc", A, B, (module, "gemm_tiled", (N // 64, M // 64, 1), 128,
                                    [A, B, np.zeros((M, N), np.float32)], [M, N, K], 0))


def matmul_wgmma():
    """Triton's sm_90a matmul (8 warps: two warpgroups, wgmma.mma_async from shared memory fed by cp.async,
    the corpus case triton_matmul_f16_w8_sm90a, run from its own PTX) on 256 x 256 x 128."""
    z = np.load(os.path.join(ROOT, "tests", "data", "corpus", "triton.npz"), allow_pickle=False)
    module = load_ptx(z["triton_matmul_f16_w8_sm90a__ptx"].tobytes().decode())
    M = N = 256
    K = 128
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    _matmul_row("mm_wgmma", A, B, (module, "matmul_kernel", (M // 64, N // 64, 1), 256,
                                   [A, B, np.zeros((M, N), np.float16)], [M, N, K, K, N, N, 0, 0], 24576))


def _matmul_row(name, A, B, args):
    """One table row for a matmul kernel launched with ``args`` (run's arguments but the engine): both engines
    on the same grid, checked equal, beside numpy's float32 A @ B."""
    run(*args, "fast")
    tf, n, out_f = best(lambda: run(*args, "fast"))
    run(*args, "reference")
    tr, nr, out_r = run(*args, "reference")
    same = all(x.tobytes() == y.tobytes() for x, y in zip(out_r, out_f))
    Af, Bf = A.astype(np.float32), B.astype(np.float32)
    tn = numpy_time(lambda: Af @ Bf)
    print(f"{name:<10}{n:>11,}{n / tf:>14,.0f}{nr / tr:>12,.0f}{tr / tf:>9.1f}x"
          f"{tn * 1e3:>9.2f}ms{tf / tn:>11.0f}x" + ("" if same else "   ENGINES DIFFER"))


def gemm_whole(n=1024):
    """gemm() of the tensor-core form, 1024^3 f16 -> f32, next to numpy's float32 matmul (both use every core)."""
    from emulator import gemm
    instr = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    A = rng.standard_normal((n, n)).astype(np.float16)
    B = rng.standard_normal((n, n)).astype(np.float16)
    C = np.zeros((n, n), np.float32)
    gemm(A[:64, :64], B[:64, :64], C[:64, :64], instr=instr)
    Af, Bf = A.astype(np.float32), B.astype(np.float32)
    tg = min(_timed(lambda: gemm(A, B, C, instr=instr)) for _ in range(2))
    tn = numpy_time(lambda: Af @ Bf)
    time.sleep(0.2)                                      # numpy's BLAS threads settle
    wall = _timed(lambda: gemm(A, B, C, instr=instr), time.perf_counter)
    kind = "CPU" if CLOCK is time.process_time else "wall"
    print(f"gemm() {n}^3 f16->f32: {tg:.3f} s {kind} ({n ** 3 / tg / 1e9:.2f} G MAC per {kind}-second; wall "
          f"{wall:.3f} s, {n ** 3 / wall / 1e9:.2f} G MAC/s); numpy float32 matmul {tn * 1e3:.1f} ms {kind}: "
          f"{tg / tn:.1f}x")


def _timed(fn, clock=None):
    clock = clock or CLOCK
    t = clock()
    fn()
    return clock() - t


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--wall" in args:
        args.remove("--wall")
        CLOCK = time.perf_counter
    main(args or list(CASES))
