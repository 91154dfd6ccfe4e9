"""gemm() against numpy's float32 BLAS, and the corpus's mma.sync and wgmma kernels, with the jitted code compiled
for other x86 CPUs than this one, in one run: a child process per target (``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` as ``tests/test_cpu_targets.py`` sets them; ``host``: neither, numba's default), each with
its own numba cache (``--cache``, kept between runs: the first run of a target includes its compile, reported
apart). numpy's BLAS is the same library in every child (it picks its kernels at run time), so the ratio shows
what the target costs the emulator. Times are CPU time (``time.process_time``), best of ``--repeat``; the BLAS
runs on one thread (``OPENBLAS_NUM_THREADS=1``: on a busy machine its idle threads spin, and their CPU time,
up to eight times the work's at 512^3 on two shared cores, is no measure of the matmul), ``--blas-threads``
changes that; ``gemm()`` runs on one thread too (``NUMBA_NUM_THREADS=1``: its threads, on two cores that other
work shares, cost CPU time of their own), ``--threads`` changes that.

    python benchmarks/bench_cpu_targets.py [--cpu host,haswell,x86-64] [--sizes 512,1024] [--repeat 3] [--threads 1]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

# corpus kernels by class (each replayed and compared with the H100's bits; the rate is of the second launch)
MMA = ["triton_matmul_f16_sm80", "triton_matmul_bf16_sm80", "triton_matmul_tf32_sm80", "triton_matmul_f16_acc16_sm80",
       "triton_matmul_fp8e4_sm90a", "triton_matmul_int8_sm80", "triton_matmul_f64_sm80", "triton_flash_attention_sm80"]
WGMMA = ["triton_matmul_f16_64x64_sm90a", "triton_matmul_bf16_64x64_sm90a", "triton_matmul_tf32_64x64_sm90a",
         "triton_matmul_fp8e4_64x64_sm90a", "triton_matmul_int8_64x64_sm90a", "triton_matmul_f16_w8_sm90a"]


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def child(sizes, repeat):
    import numpy as np
    from numba.core.registry import cpu_target
    t0 = time.process_time()
    from emulator import gemm
    out = {"cpu": list(cpu_target.target_context.codegen().magic_tuple()[1:2])}
    rng = np.random.default_rng(0)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    gemm(f16(32, 32), f16(32, 16), np.zeros((32, 16), np.float32))       # compile or load
    out["gemm_first_s"] = time.process_time() - t0
    for s in sizes:
        A, B = f16(s, s), f16(s, s)
        C = rng.standard_normal((s, s)).astype(np.float32)
        tg = best(lambda: gemm(A, B, C), repeat)
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        tn = best(lambda: A32 @ B32 + C, max(repeat, 10))
        out[f"gemm_{s}"] = (tg, tn)
    import corpus_lib
    cases = corpus_lib.load_all(["triton.npz"])
    for label, names in (("mma", MMA), ("wgmma", WGMMA)):
        t = time.process_time()
        for n in names:                                     # first launches: compile or load, translate
            got, _, _ = corpus_lib.replay(cases[n], engine="fast")
            assert not corpus_lib.mismatches(cases[n], got), n
        first = time.process_time() - t
        instr, cpu = 0, 0.0
        for n in names:
            t = time.process_time()
            got, res, _ = corpus_lib.replay(cases[n], engine="fast")
            cpu += time.process_time() - t
            instr += res.instructions
            assert not corpus_lib.mismatches(cases[n], got), n
        out[label] = (instr, cpu, first)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", default="host,haswell,x86-64",
                    help="targets: host and the keys of tests/test_cpu_targets.TARGETS")
    ap.add_argument("--sizes", default="512,1024")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "warpemu-cpu-targets"),
                    help="a numba cache directory per target is made under it")
    ap.add_argument("--blas-threads", default="1", help="the BLAS's threads (OPENBLAS_NUM_THREADS, MKL_NUM_THREADS)")
    ap.add_argument("--threads", default="1", help="the emulator's threads (NUMBA_NUM_THREADS); 0: numba's default")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.child:
        child(sizes, a.repeat)
        return
    from test_cpu_targets import target_env
    rows = []
    for target in a.cpu.split(","):
        cache = os.path.join(a.cache, target)
        if target == "host":
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, WARPEMU_BACKGROUND_COMPILE="0")
            for k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
                env.pop(k, None)
            env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        else:
            env = target_env(target, cache)
        for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = a.blas_threads
        env.pop("NUMBA_NUM_THREADS", None)
        if a.threads != "0":
            env["NUMBA_NUM_THREADS"] = a.threads
        r = subprocess.run([sys.executable, __file__, "--child", "--sizes", a.sizes, "--repeat", str(a.repeat)],
                           env=env, cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            print(f"{target}: failed\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
            continue
        res = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append((target, res))
        cells = [f"{target:12s} ({res['cpu'][0]})", f"first gemm {res['gemm_first_s']:.1f} s"]
        for s in sizes:
            tg, tn = res[f"gemm_{s}"]
            cells.append(f"gemm {s}^3 {tg * 1e3:.0f} ms / BLAS {tn * 1e3:.1f} ms = {tg / tn:.1f}x")
        for label in ("mma", "wgmma"):
            instr, cpu, first = res[label]
            cells.append(f"{label} {instr / cpu / 1e6:.2f} M warp-instr/s (first launches {first:.1f} s)")
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
