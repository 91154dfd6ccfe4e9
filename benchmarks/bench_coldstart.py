"""Cold start: ``import emulator`` + ``load_ptx`` + the first launch of a Triton kernel in a fresh process,
with an empty numba cache (a fresh install) and with the cache filled by a previous process; and the time
``load_ptx`` takes for a 5,000-line PTX file. Each measurement runs in its own subprocess. With an empty cache
the default engine ("auto") runs the first launch on the reference executors while a background process
compiles the fast engine's loops (machine.fastcore.warmup); the table says which engine ran it, when the fast
engine was ready, and how long a second launch took.

    python benchmarks/bench_coldstart.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, ROOT)
import numpy as np
import emulator
from emulator import GlobalMemory, load_ptx
t1 = time.perf_counter()
text = open(PTX).read()
m = load_ptx(text)
t2 = time.perf_counter()
g = GlobalMemory()
ARGS
r = m.launch(KERNEL, GRID, BLOCK, args, gmem=g, shared_bytes=SHARED)
t3 = time.perf_counter()
first = r.ctas[0][1][0].fast is not None
from emulator.machine.fastcore import warmup
warmup.wait()                      # the background compile (if one was started) finishes
t4 = time.perf_counter()
g2 = GlobalMemory()
g = g2
ARGS
r2 = m.launch(KERNEL, GRID, BLOCK, args, gmem=g2, shared_bytes=SHARED)
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load_ptx": t2 - t1, "launch": t3 - t2, "total": t3 - t0,
                  "lines": text.count("\n"), "instructions": r.instructions, "first_fast": first,
                  "ready": t4 - t0, "second": t5 - t4, "second_fast": r2.ctas[0][1][0].fast is not None}))
"""

CASES = {
    "triton_matmul": ("benchmarks/data/triton_matmul.ptx", "matmul_kernel", (1, 1), 128, 16384, """
a = g.upload(np.ones((64, 64), np.float16)); b = g.upload(np.ones((64, 64), np.float16))
c = g.upload(np.zeros((64, 64), np.float32))
args = [a, b, c, 64, 64, 64, 64, 1, 64, 1, 64, 1, 0, 0]"""),
    "nvcc_gemm": ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled", (1, 1), 128, 0, """
a = g.upload(np.ones((64, 64), np.float16)); b = g.upload(np.ones((64, 64), np.float16))
c = g.upload(np.zeros((64, 64), np.float32))
args = [a, b, c, 64, 64, 64]"""),
}


def child(case, cache_dir):
    ptx, kernel, grid, block, shared, args = CASES[case]
    code = (CHILD.replace("ROOT", repr(ROOT)).replace("PTX", repr(os.path.join(ROOT, ptx)))
            .replace("KERNEL", repr(kernel)).replace("GRID", repr(grid)).replace("BLOCK", repr(block))
            .replace("SHARED", repr(shared)).replace("ARGS", args))
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["process"] = wall
    return r


def big_ptx(lines=5000):
    """A 5,000-line kernel: the nvcc GEMM's body repeated under fresh labels and registers."""
    src = open(os.path.join(ROOT, "tests", "data", "kernels", "gemm_tiled.ptx")).read()
    return src, src.count("\n")


def main():
    print("first launch with engine='auto' (the default); 'fast ready': seconds from the start until the fast\n"
          "engine's loops were compiled (by a background process when the cache was empty), then a second launch")
    print(f"{'case':<15}{'numba cache':<13}{'import':>8}{'load_ptx':>10}{'launch':>9}{'total':>8}  {'engine':<10}"
          f"{'fast ready':>11}{'2nd launch':>11}")
    for case in CASES:
        with tempfile.TemporaryDirectory() as cache:
            for label in ("empty", "filled"):
                r = child(case, cache)
                if "error" in r:
                    print(f"{case:<15}{label:<13} error: {r['error']}")
                    continue
                print(f"{case:<15}{label:<13}{r['import']:>7.2f}s{r['load_ptx']:>9.2f}s{r['launch']:>8.2f}s"
                      f"{r['total']:>7.2f}s  {'fast' if r['first_fast'] else 'reference':<10}{r['ready']:>10.2f}s"
                      f"{r['second']:>10.2f}s")
    sys.path.insert(0, ROOT)
    from emulator import load_ptx
    text = _many_lines()
    t = time.perf_counter()
    load_ptx(text)
    dt = time.perf_counter() - t
    print(f"load_ptx of a {text.count(chr(10)):,}-line PTX file: {dt:.2f} s")


def _many_lines(target=5000):
    """A module of about ``target`` lines: copies of the nvcc GEMM kernel under distinct names."""
    src = open(os.path.join(ROOT, "tests", "data", "kernels", "gemm_tiled.ptx")).read()
    head, _, body = src.partition(".visible .entry")
    parts = [head]
    k = 0
    while sum(p.count("\n") for p in parts) < target:
        parts.append(".visible .entry" + body.replace("gemm_tiled", f"gemm_tiled_{k}"))
        k += 1
    return "".join(parts)


if __name__ == "__main__":
    main()
